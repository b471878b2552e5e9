"""PettingZoo conformance of the parallel env and its AEC conversion."""

import warnings

import numpy as np
import pytest
from helpers import FixedTask, ScriptedSolver
from pettingzoo.test import api_test, parallel_api_test

import deliberation_env as de


@pytest.mark.parametrize("n_agents,max_rounds", [(2, 1), (3, 3), (4, 2), (7, 4)])
@pytest.mark.parametrize("observation,infos", [("vector", "rich"), ("both", "rich"), ("flat", "numeric")])
def test_parallel_api(n_agents, max_rounds, observation, infos):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's test passes an unknown reset option
        parallel_api_test(
            de.parallel_env(team="simulated", n_agents=n_agents, max_rounds=max_rounds, observation=observation,
                            infos=infos),
            num_cycles=40,
        )


@pytest.mark.parametrize("n_agents,max_rounds", [(2, 1), (3, 3), (5, 2)])
@pytest.mark.parametrize("observation,infos", [("vector", "rich"), ("flat", "numeric")])
def test_aec_api(n_agents, max_rounds, observation, infos):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(de.env(team="simulated", n_agents=n_agents, max_rounds=max_rounds, observation=observation,
                        infos=infos), num_cycles=40)


def _play(env, actions_per_round, seed=3):
    """Observations and infos of every reset and step of one episode."""
    obs, infos = env.reset(seed=seed)
    trace = [(obs, infos)]
    for action in actions_per_round:
        obs, _, _, _, infos = env.step({a: action for a in env.agents})
        trace.append((obs, infos))
    return trace


@pytest.mark.parametrize("n_agents", [2, 4])
def test_flat_observation_is_the_dict_flattened_feature_by_feature(n_agents):
    actions = [de.MetaAction.REFINE, de.MetaAction.CONCEDE]
    rich = _play(de.parallel_env(team="simulated", n_agents=n_agents, max_rounds=2), actions)
    flat_env = de.parallel_env(team="simulated", n_agents=n_agents, max_rounds=2, observation="flat")
    flat = _play(flat_env, actions)
    names = de.spaces.flat_features(n_agents)
    assert flat_env.observation_space("agent_0").shape == (len(names),) == (12 + 11 * (n_agents - 1),)
    for (dict_obs, _), (flat_obs, _) in zip(rich, flat, strict=True):
        for agent in flat_env.possible_agents:
            vector = flat_obs[agent]
            assert vector.dtype == np.float32 and flat_env.observation_space(agent).contains(vector)
            np.testing.assert_array_equal(vector, np.concatenate([dict_obs[agent]["self"],
                                                                  dict_obs[agent]["peers"].ravel()]))
            named = dict(zip(names, vector, strict=True))
            assert named["self/confidence"] == dict_obs[agent]["self"][0]
            assert named[f"peer_{n_agents - 1}/agrees_with_me"] == dict_obs[agent]["peers"][-1, 1]


def test_numeric_infos_are_the_rich_infos_as_numbers_under_fixed_keys():
    actions = [de.MetaAction.REFINE, de.MetaAction.CONCEDE, de.MetaAction.PERSIST]
    # Agent 2 refines 5 -> 7: then all agree and CONCEDE would act as PERSIST (target None).
    team = ScriptedSolver(["7", "7", "5"], refine={2: "7"})
    rich = _play(de.parallel_env(task=FixedTask(), team=team, max_rounds=3), actions)
    numeric = _play(de.parallel_env(task=FixedTask(), team=team, max_rounds=3, infos="numeric"), actions)
    keys = set(numeric[0][1]["agent_0"])
    assert {"reward_components/global", "tokens/total", "concede_target", "team_reward"} <= keys
    assert not keys & {"text", "decision", "problem_id", "confidence_method", "reward_components"}
    seen_no_target = False
    for (_, rich_infos), (_, numeric_infos) in zip(rich, numeric, strict=True):
        for agent, info in numeric_infos.items():
            assert set(info) == keys and all(type(value) is float for value in info.values())
            full = rich_infos[agent]
            assert info["reward_components/local"] == full["reward_components"]["local"]
            assert info["tokens/prompt"] == full["tokens"]["prompt"]
            assert info["correct"] == float(full["correct"]) and info["round"] == full["round"]
            target = full["concede_target"]
            assert info["concede_target"] == (-1.0 if target is None else target)
            seen_no_target |= target is None
    assert seen_no_target


def test_vector_env_flat_and_numeric_match_the_parallel_env():
    venv = de.vector_env(2, team="simulated", max_rounds=2, observation="flat", infos="numeric")
    obs, infos = venv.reset(seed=0, options={"problem_index": [4, 9], "episode_seed": [11, 12]})
    env = de.parallel_env(team="simulated", max_rounds=2, observation="flat", infos="numeric")
    for e, (index, seed) in enumerate([(4, 11), (9, 12)]):
        single_obs, single_infos = env.reset(options={"problem_index": index, "episode_seed": seed})
        for agent in env.agents:
            np.testing.assert_array_equal(obs[agent][e], single_obs[agent])
        assert infos[e] == single_infos
    assert obs["agent_0"].shape == (2, len(de.spaces.flat_features(3)))
    assert venv.observation_space("agent_0") == env.observation_space("agent_0")


def test_human_render_prints_the_ansi_table(capsys):
    ansi = de.parallel_env(team="simulated", render_mode="ansi")
    human = de.parallel_env(team="simulated", render_mode="human")
    ansi.reset(seed=5)
    human.reset(seed=5)
    assert human.render() is None
    assert capsys.readouterr().out == ansi.render() + "\n"


def test_max_cycles_is_pettingzoos_name_for_max_rounds():
    env = de.parallel_env(team="simulated", max_cycles=2)
    env.reset(seed=0)
    steps = 0
    while env.agents:
        env.step({a: de.MetaAction.PERSIST for a in env.agents})
        steps += 1
    assert steps == env.max_rounds == 2
    assert de.vector_env(2, team="simulated", max_cycles=4).max_rounds == 4
    assert de.make("deliberation-v1", team="simulated").max_rounds == 3  # neither given


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"infos": "text"}, "infos must be one of"),
        ({"observation": "flat2"}, "observation must be one of"),
        ({"max_rounds": 2, "max_cycles": 2}, "max_rounds or max_cycles"),
        ({"max_cycles": 0}, "max_rounds must be >= 1"),
        ({"render_mode": "rgb_array"}, "render_mode must be"),
    ],
)
def test_bad_integration_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        de.parallel_env(team="simulated", **kwargs)
    if "render_mode" not in kwargs:
        with pytest.raises(ValueError, match=match):
            de.vector_env(2, team="simulated", **kwargs)


def test_make_and_registry():
    env = de.make("deliberation-v1", team="simulated", n_agents=4)
    assert env.possible_agents == [f"agent_{i}" for i in range(4)]
    assert env.observation_space("agent_0") is env.observation_space("agent_3")  # cached, shared
    assert env.metadata["name"] == "deliberation_v1"
    with pytest.raises(ValueError, match="unknown env id"):
        de.make("deliberation-v9")


def test_an_earlier_env_id_is_refused_with_the_new_one():
    with pytest.raises(ValueError, match=r"'deliberation-v0' is an earlier version.*de.make\('deliberation-v1'"):
        de.make("deliberation-v0", team="simulated")


def test_render_and_state():
    env = de.parallel_env(team="simulated", n_agents=3, render_mode="ansi")
    env.reset(seed=1)
    table = env.render()
    assert "agent_2" in table and "round 0/3" in table
    assert env.state().shape == env.state_space.shape
    assert env.state_space.contains(env.state())
    env.step({a: de.MetaAction.REFINE for a in env.agents})
    assert "REFINE" in env.render()


def test_text_observation_is_in_its_space():
    env = de.parallel_env(team="simulated", observation="text")
    obs, infos = env.reset(seed=0)
    assert set(obs["agent_0"]) == {"text"}
    assert env.observation_space("agent_0").contains(obs["agent_0"])
    problem = next(p for p in env.problems if p.id == infos["agent_0"]["problem_id"])
    assert problem.question in obs["agent_0"]["text"]
    assert "answer is" not in obs["agent_0"]["text"]  # no reasoning text, and no ground truth
