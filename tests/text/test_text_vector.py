"""The text vector env: the same results as N single envs, groups, lockstep, bad input,
and the reward bounds under any text (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import FixedTask
from hypothesis import given, settings
from hypothesis import strategies as st
from text_fakes import SeededBackend

from agents.text_policy import TextPolicy
from deliberation_env.text import text_env, text_vector_env

PROBLEMS = [4, 4, 9, 2]
SEEDS = [101, 202, 101, 7]
KWARGS = {"task": "arithmetic", "n_agents": 3, "max_turns": 3}


def run_single(problem_index, episode_seed):
    env = text_env(**KWARGS)
    policy = TextPolicy(SeededBackend())
    obs, infos = env.reset(options={"problem_index": problem_index, "episode_seed": episode_seed})
    history = [(obs, infos)]
    while env.agents:
        obs, rewards, terms, _, infos = env.step(policy.act(obs, infos))
        history.append((obs, rewards, terms, infos))
    return history


def test_the_vector_env_gives_the_results_of_n_single_envs():
    venv = text_vector_env(len(PROBLEMS), **KWARGS)
    policy = TextPolicy(SeededBackend())
    obs, infos = venv.reset(options={"problem_index": PROBLEMS, "episode_seed": SEEDS})
    vector_history = [(obs, infos)]
    while venv.active.any():
        obs, rewards, terms, _, infos = venv.step(policy.act_vector(obs, infos))
        vector_history.append((obs, rewards, terms, infos))
    for e, (problem, seed) in enumerate(zip(PROBLEMS, SEEDS, strict=True)):
        single = run_single(problem, seed)
        assert len(single) == len(vector_history) == 4
        assert single[0] == ({a: o[e] for a, o in vector_history[0][0].items()}, vector_history[0][1][e])
        for (s_obs, s_rew, s_term, s_infos), (v_obs, v_rew, v_term, v_infos) in zip(
            single[1:], vector_history[1:], strict=True
        ):
            assert s_obs == {a: o[e] for a, o in v_obs.items()}
            assert s_rew == pytest.approx({a: float(r[e]) for a, r in v_rew.items()})
            assert s_term == {a: bool(t[e]) for a, t in v_term.items()}
            assert s_infos == v_infos[e]


def test_one_backend_call_per_turn_for_every_agent_of_every_env():
    backend = SeededBackend()
    policy = TextPolicy(backend)
    venv = text_vector_env(4, **KWARGS)
    obs, infos = venv.reset(seed=0)
    while venv.active.any():
        obs, _, _, _, infos = venv.step(policy.act_vector(obs, infos))
    assert [len(call) for call in backend.calls] == [12, 12, 12]


def test_copies_of_one_problem_draw_their_own_seeds_and_sample_different_texts():
    venv = text_vector_env(4, **KWARGS)
    obs, infos = venv.reset(seed=3, options={"problem_index": [5] * 4})
    assert len(set(obs["agent_0"])) == 1  # one problem: one first prompt
    actions = TextPolicy(SeededBackend(modulo=1_000_000)).act_vector(obs, infos)
    assert len(set(actions["agent_0"])) == 4
    again = text_vector_env(4, **KWARGS).reset(seed=3, options={"problem_index": [5] * 4})
    assert again[1] == infos


def test_an_env_that_ended_early_ignores_actions_and_reports_zero_reward():
    venv = text_vector_env(2, task=FixedTask((("What is 3 + 4?", "7"),)), n_agents=2, max_turns=3, stop_threshold=1.0)
    venv.reset(seed=0)
    seven, five = "The answer is 7.", "The answer is 5."
    _, rewards, terms, _, infos = venv.step({"agent_0": [seven, five], "agent_1": [seven, five]})
    assert rewards["agent_0"].tolist() == pytest.approx([1.1, 0.1])
    assert terms["agent_0"].tolist() == [True, False]
    _, rewards, terms, _, infos = venv.step({"agent_0": [None, seven], "agent_1": [None, seven]})
    assert rewards["agent_0"].tolist() == pytest.approx([0.0, 1.1])
    assert terms["agent_0"].tolist() == [True, True]
    assert infos[0]["agent_0"]["turn"] == 1 and infos[0]["agent_0"]["text"] == seven
    with pytest.raises(ValueError, match="every episode has ended"):
        venv.step({"agent_0": ["7", "7"], "agent_1": ["7", "7"]})


@pytest.mark.parametrize(
    ("actions", "error", "match"),
    [
        ({"agent_0": ["7"], "agent_1": ["7", "7"]}, ValueError, "sequence of 2 texts"),
        ({"agent_0": "77", "agent_1": ["7", "7"]}, ValueError, "sequence of 2 texts"),
        ({"agent_0": ["7", 7], "agent_1": ["7", "7"]}, TypeError, r"agent_0 \(env 1\)"),
        ({"agent_0": ["7", "7"]}, ValueError, "missing"),
    ],
)
def test_bad_vector_actions_raise_and_change_nothing(actions, error, match):
    venv = text_vector_env(2, **{**KWARGS, "n_agents": 2})
    venv.reset(seed=1)
    with pytest.raises(error, match=match):
        venv.step(actions)
    _, _, _, _, after = venv.step({a: ["1", "2"] for a in venv.agents})
    assert [info["agent_0"]["turn"] for info in after] == [1, 1]


def test_per_env_options_must_have_one_value_per_env():
    venv = text_vector_env(2, **KWARGS)
    with pytest.raises(ValueError, match="sequence of 2 values"):
        venv.reset(options={"problem_index": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"episode_seed'\]\[1\]"):
        venv.reset(options={"episode_seed": [1, -1]})


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(max_size=300), min_size=3, max_size=3), scale=st.sampled_from([0.5, 1.0, 3.0]))
def test_rewards_and_contributions_stay_in_their_documented_bounds(texts, scale):
    env = text_env(task=FixedTask((("What is 3 + 4?", "7"),)), n_agents=3, reward_scale=scale)
    env.reset(seed=0)
    obs, rewards, _, _, infos = env.step(dict(zip(env.possible_agents, texts, strict=True)))
    low, high = env.protocol.reward_range
    for agent in env.possible_agents:
        assert scale * low <= rewards[agent] <= scale * high
        assert low - high <= infos[agent]["reward_components"]["contribution"] <= high - low
        assert env.observation_space(agent).contains(obs[agent])
    assert np.isfinite(list(rewards.values())).all()
