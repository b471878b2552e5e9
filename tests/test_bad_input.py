"""Bad input raises a clear error and leaves the env as it was."""

import numpy as np
import pytest
from helpers import FixedTask

import deliberation_env as de

GOOD = {"agent_0": 1, "agent_1": 2, "agent_2": 0}


def fresh():
    env = de.parallel_env(team="simulated", n_agents=3, max_rounds=2)
    env.reset(seed=3)
    return env


def transcript(env, actions):
    obs, rewards, terms, _truncs, infos = env.step(actions)
    return (
        {a: {k: v.tolist() for k, v in o.items()} for a, o in obs.items()},
        rewards,
        terms,
        infos,
    )


@pytest.mark.parametrize(
    "actions,error,message",
    [
        ({"agent_0": 1, "agent_1": 2}, ValueError, "missing \\['agent_2'\\]"),
        ({**GOOD, "agent_9": 0}, ValueError, "unknown \\['agent_9'\\]"),
        ({**GOOD, "agent_1": 3}, ValueError, "action of agent_1 must be 0"),
        ({**GOOD, "agent_1": -1}, ValueError, "action of agent_1"),
        ({**GOOD, "agent_2": 1.5}, TypeError, "action of agent_2 must be an integer"),
        ({**GOOD, "agent_2": "1"}, TypeError, "action of agent_2"),
        ({**GOOD, "agent_2": None}, TypeError, "action of agent_2"),
        ({**GOOD, "agent_2": True}, TypeError, "action of agent_2"),
        ([1, 2, 0], TypeError, "dict keyed by agent"),
    ],
)
def test_bad_actions_raise_and_change_nothing(actions, error, message):
    env = fresh()
    with pytest.raises(error, match=message):
        env.step(actions)
    assert transcript(env, GOOD) == transcript(fresh(), GOOD)


def test_numpy_and_enum_actions_are_accepted():
    env = fresh()
    env.step({"agent_0": np.int64(1), "agent_1": de.MetaAction.CONCEDE, "agent_2": np.array(0)})


def test_step_after_the_episode_ended():
    env = fresh()
    env.step(GOOD)
    env.step(GOOD)
    with pytest.raises(ValueError, match="episode has ended"):
        env.step(GOOD)
    with pytest.raises(ValueError, match="call reset"):
        de.parallel_env(team="simulated").step(GOOD)


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"task": "chess"}, ValueError, "unknown task 'chess'"),
        ({"n_agents": 1}, ValueError, "n_agents must be >= 2"),
        ({"n_agents": 2.5}, TypeError, "n_agents must be an integer"),
        ({"max_rounds": 0}, ValueError, "max_rounds must be >= 1"),
        ({"reward_scale": 0.0}, ValueError, r"reward_scale must lie in \[1e-30, 1e\+30\]"),
        ({"reward_scale": 1e39}, ValueError, r"reward_scale must lie in .* \(rewards are float32\)"),
        ({"w_global": -1.0}, ValueError, "w_global must be >= 0"),
        ({"reward_scale": 1e30, "w_local": 1e9}, ValueError, r"reward_scale x \(w_local \+ w_global \+ lambda_tok\) must be at most 1e\+30"),
        ({"reward_scale": 1e30, "lambda_tok": 1e9}, ValueError, r"\(rewards are float32\), got 1e\+39"),
        ({"lambda_tok": float("nan")}, TypeError, "lambda_tok must be a finite number"),
        ({"concede_rule": "random"}, ValueError, "concede_rule must be one of"),
        ({"observation": "image"}, ValueError, "observation must be one of"),
        ({"split": "dev"}, ValueError, "split must be 'train' or 'test'"),
        ({"team": "gpt-9"}, ValueError, "bad team spec 'gpt-9': use one of simulated, smollm2"),
        ({"team": ["simulated", "simulated"]}, ValueError, "team lists 2 members but n_agents is 3"),
        ({"team": 42}, TypeError, "team must be a spec string"),
        ({"team": ["simulated", 42, "simulated"]}, TypeError, "team member must be"),
        ({"render_mode": "rgb_array"}, ValueError, "render_mode must be None, 'ansi' or 'human'"),
        ({"task": "arithmetic", "task_kwargs": {"difficulty": 9}}, ValueError, "difficulty must be one of"),
        ({"task": FixedTask(), "task_kwargs": {"x": 1}}, ValueError, "task_kwargs are only used"),
    ],
)
def test_bad_config(kwargs, error, message):
    with pytest.raises(error, match=message):
        de.parallel_env(**{"team": "simulated", **kwargs})


def test_numpy_config_values_are_accepted_as_python_values():
    python = de.parallel_env(team="simulated", n_agents=3, max_rounds=2, reward_scale=0.5, stop_on_consensus=True)
    numpy = de.parallel_env(
        team="simulated",
        n_agents=np.int64(3),
        max_rounds=np.int32(2),
        reward_scale=np.float32(0.5),
        w_local=np.int64(1),
        stop_on_consensus=np.bool_(True),
    )
    python.reset(seed=3)
    numpy.reset(seed=3)
    expected, got = transcript(python, GOOD), transcript(numpy, GOOD)
    assert got == expected
    assert all(type(r) is float for r in got[1].values())
    config = de.RewardConfig(np.float32(0.5), np.int64(2), np.float64(1.0), np.float16(0.0))
    assert config == de.RewardConfig(0.5, 2.0, 1.0, 0.0)
    assert all(type(value) is float for value in vars(config).values())
    venv = de.vector_env(np.int64(2), team="simulated", n_agents=np.int8(2), stop_on_consensus=np.bool_(False))
    venv.reset(seed=0)
    assert venv.state().shape == (2, 2 * len(de.SELF_FEATURES))


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        ({"n_agents": np.bool_(True)}, TypeError, "n_agents must be an integer"),
        ({"max_rounds": True}, TypeError, "max_rounds must be an integer"),
        ({"max_rounds": np.float64(2.0)}, TypeError, "max_rounds must be an integer"),
        ({"reward_scale": True}, TypeError, "reward_scale must be a finite number"),
        ({"reward_scale": np.bool_(True)}, TypeError, "reward_scale must be a finite number"),
        ({"reward_scale": np.float32("inf")}, TypeError, "reward_scale must be a finite number"),
        ({"w_local": np.float64("nan")}, TypeError, "w_local must be a finite number"),
        ({"w_local": "1"}, TypeError, "w_local must be a finite number"),
        ({"stop_on_consensus": 1}, TypeError, "stop_on_consensus must be a bool"),
        ({"stop_on_consensus": np.int64(1)}, TypeError, "stop_on_consensus must be a bool"),
        ({"task_kwargs": ["difficulty", 1]}, TypeError, "task_kwargs must be a dict or None"),
    ],
)
def test_numpy_lookalikes_of_the_wrong_kind_are_rejected(kwargs, error, message):
    with pytest.raises(error, match=message):
        de.parallel_env(**{"team": "simulated", **kwargs})


@pytest.mark.parametrize(
    "seed,options,error,message",
    [
        (None, {"problem_index": 10**6}, ValueError, r"options\['problem_index'\] 1000000 out of range \[0, \d+\)"),
        (None, {"problem_index": -1}, ValueError, r"options\['problem_index'\] -1 out of range \[0, \d+\)"),
        (None, {"problem_index": 2.0}, TypeError, r"options\['problem_index'\] must be an integer in \[0, \d+\)"),
        (None, {"problem_index": True}, TypeError, r"options\['problem_index'\] must be an integer"),
        (None, {"problem_id": "nope"}, ValueError, r"options\['problem_id'\]: unknown problem_id 'nope'"),
        (None, {"problem_id": ["x"]}, TypeError, r"options\['problem_id'\] must be a string"),
        (None, {"problem_index": 1, "problem_id": "x"}, ValueError, "not both"),
        (None, {"episode_seed": -1}, ValueError, r"options\['episode_seed'\] must be an integer in \[0, 2\*\*64\)"),
        (None, {"episode_seed": 2**64}, ValueError, r"options\['episode_seed'\] must be an integer in \[0, 2\*\*64\)"),
        (None, {"episode_seed": 1.0}, ValueError, r"options\['episode_seed'\] must be an integer"),
        (None, ["problem_index", 3], TypeError, "reset options must be a dict or None"),
        (-1, None, ValueError, "reset seed must be None or a non-negative integer, got -1"),
        (1.5, None, ValueError, "reset seed must be None or a non-negative integer"),
        ("3", None, ValueError, "reset seed must be None or a non-negative integer"),
        (True, None, ValueError, "reset seed must be None or a non-negative integer"),
    ],
)
def test_bad_reset_arguments_name_the_argument_and_change_nothing(seed, options, error, message):
    env = fresh()
    before = env.state().copy(), list(env.agents)
    with pytest.raises(error, match=message):
        env.reset(seed=seed, options=options)
    np.testing.assert_array_equal(env.state(), before[0])
    assert env.agents == before[1]
    assert transcript(env, GOOD) == transcript(fresh(), GOOD)  # same problem, same RNG, same round


def test_a_failed_reset_does_not_consume_the_rng():
    env, reference = fresh(), fresh()
    with pytest.raises(ValueError, match="episode_seed"):
        env.reset(options={"episode_seed": 2**64})  # the problem is drawn before the seed is checked
    _, infos = env.reset()
    _, expected = reference.reset()
    assert infos == expected


def test_numpy_reset_arguments_are_accepted():
    env = de.parallel_env(team="simulated")
    _, infos = env.reset(seed=np.int64(2), options={"problem_index": np.int32(4), "episode_seed": np.uint64(2**64 - 1)})
    _, expected = de.parallel_env(team="simulated").reset(seed=2, options={"problem_index": 4, "episode_seed": 2**64 - 1})
    assert infos == expected


def test_vector_env_bad_actions():
    venv = de.vector_env(3, team="simulated")
    venv.reset(seed=0)
    good = {a: np.zeros(3, dtype=int) for a in venv.agents}
    with pytest.raises(ValueError, match="must have shape \\(3,\\)"):
        venv.step({**good, "agent_0": np.zeros(2, dtype=int)})
    with pytest.raises(TypeError, match="integer array"):
        venv.step({**good, "agent_0": np.zeros(3)})
    with pytest.raises(ValueError, match="must lie in 0..2"):
        venv.step({**good, "agent_0": np.array([0, 3, 0])})
    with pytest.raises(ValueError, match="one per env"):
        venv.reset(options={"problem_index": [0, 1]})
    with pytest.raises(ValueError, match=r"options\['episode_seed'\]\[2\] must be an integer in \[0, 2\*\*64\)"):
        venv.reset(options={"episode_seed": [0, 1, 2**64]})
    with pytest.raises(ValueError, match=r"options\['problem_index'\]\[2\] -1 out of range"):
        venv.reset(options={"problem_index": [0, 1, -1]})
    with pytest.raises(ValueError, match="reset seed must be None or a non-negative integer"):
        venv.reset(seed=-3)
    _, _rewards, _, _, infos = venv.step(good)
    assert infos[0]["agent_0"]["round"] == 1


@pytest.mark.parametrize(
    "build",
    [
        lambda: de.parallel_env(task="arithmetic", team="simulated"),
        lambda: de.vector_env(2, task="arithmetic", team="simulated"),
        lambda: de.text_env(task="arithmetic", n_agents=3),
        lambda: de.text_vector_env(2, task="arithmetic", n_agents=3),
    ],
    ids=["meta", "meta vector", "text", "text vector"],
)
def test_the_space_of_an_agent_that_is_not_in_the_team_is_a_key_error(build):
    """A real client got a space for ``observation_space("nope")`` from both families."""
    env = build()
    assert env.observation_space("agent_2") is not None and env.action_space("agent_0") is not None
    for space in (env.observation_space, env.action_space):
        with pytest.raises(KeyError, match=r"no agent 'agent_3': the agents are \['agent_0', 'agent_1', 'agent_2'\]"):
            space("agent_3")
