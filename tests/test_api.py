"""PettingZoo conformance of the parallel env and its AEC conversion."""

import warnings

import pytest
from pettingzoo.test import api_test, parallel_api_test

import deliberation_env as de


@pytest.mark.parametrize("n_agents,max_rounds", [(2, 1), (3, 3), (4, 2), (7, 4)])
@pytest.mark.parametrize("observation", ["vector", "both"])
def test_parallel_api(n_agents, max_rounds, observation):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's test passes an unknown reset option
        parallel_api_test(
            de.parallel_env(team="simulated", n_agents=n_agents, max_rounds=max_rounds, observation=observation),
            num_cycles=40,
        )


@pytest.mark.parametrize("n_agents,max_rounds", [(2, 1), (3, 3), (5, 2)])
def test_aec_api(n_agents, max_rounds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(de.env(team="simulated", n_agents=n_agents, max_rounds=max_rounds), num_cycles=40)


def test_make_and_registry():
    env = de.make("deliberation-v0", team="simulated", n_agents=4)
    assert env.possible_agents == [f"agent_{i}" for i in range(4)]
    assert env.observation_space("agent_0") is env.observation_space("agent_3")  # cached, shared
    with pytest.raises(ValueError, match="unknown env id"):
        de.make("deliberation-v9")


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
