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
        ({"reward_scale": 0.0}, ValueError, "reward_scale must be > 0"),
        ({"w_global": -1.0}, ValueError, "w_global must be >= 0"),
        ({"lambda_tok": float("nan")}, TypeError, "lambda_tok must be a finite number"),
        ({"concede_rule": "random"}, ValueError, "concede_rule must be one of"),
        ({"observation": "image"}, ValueError, "observation must be one of"),
        ({"split": "dev"}, ValueError, "split must be 'train' or 'test'"),
        ({"team": "gpt-9"}, ValueError, "unknown team preset 'gpt-9'"),
        ({"team": ["simulated", "simulated"]}, ValueError, "team lists 2 members but n_agents is 3"),
        ({"team": 42}, TypeError, "team must be a preset name"),
        ({"team": ["simulated", 42, "simulated"]}, TypeError, "team member must be"),
        ({"render_mode": "human"}, ValueError, "render_mode must be None or 'ansi'"),
        ({"task": "arithmetic", "task_kwargs": {"difficulty": 9}}, ValueError, "difficulty must be one of"),
        ({"task": FixedTask(), "task_kwargs": {"x": 1}}, ValueError, "task_kwargs are only used"),
    ],
)
def test_bad_config(kwargs, error, message):
    with pytest.raises(error, match=message):
        de.parallel_env(**{"team": "simulated", **kwargs})


@pytest.mark.parametrize(
    "options,message",
    [
        ({"problem_index": 10**6}, "problem_index 1000000 out of range"),
        ({"problem_id": "nope"}, "unknown problem_id 'nope'"),
        ({"problem_index": 1, "problem_id": "x"}, "not both"),
        ({"episode_seed": -1}, "episode_seed must be a non-negative integer"),
    ],
)
def test_bad_reset_options(options, message):
    env = de.parallel_env(team="simulated")
    env.reset(seed=5)
    before = env.state().copy()
    with pytest.raises(ValueError, match=message):
        env.reset(options=options)
    np.testing.assert_array_equal(env.state(), before)


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
    _, _rewards, _, _, infos = venv.step(good)
    assert infos[0]["agent_0"]["round"] == 1
