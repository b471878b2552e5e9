"""The oracle and the env share one CONCEDE rule: on ties, under both concede rules, the
oracle's CONCEDE leads to the answer the env adopts, and its labels are the best actions."""

import numpy as np
import pytest
from helpers import FixedTask, ScriptedSolver

import deliberation_env as de
from algorithms import baselines

P, R, C = de.MetaAction.PERSIST, de.MetaAction.REFINE, de.MetaAction.CONCEDE
RULES = ("most_confident", "plurality")
# Decisions at round 0 on "What is 3 + 4?" (7 is correct); confidence per decision.
# Equal confidences everywhere but the last case, so every CONCEDE choice is a tie broken
# by agent index. In the first, agent 1's peers in relative order are agents 2 (correct)
# and 0 (wrong): a tie broken by relative order would concede to the wrong peer's rival.
TEAMS = [
    (["6", "5", "7"], {}),
    (["5", "6", "7", "7"], {}),
    (["6", "5", "7", "6", "7"], {}),
    (["7", "6", "5", "5"], {}),
    (["5", "6", "7", "7"], {"5": 0.5, "6": 0.9, "7": 0.1}),  # the rules differ for agent 0
]


def vector_env(decisions, confidence, rule):
    solver = ScriptedSolver(decisions, confidence=confidence)
    venv = de.vector_env(1, task=FixedTask(), team=solver, n_agents=len(decisions), concede_rule=rule)
    obs, infos = venv.reset(seed=0, options={"problem_index": [0]})
    return venv, obs, infos


def play_one(decisions, confidence, rule, agent, action):
    """Infos after ``agent`` plays ``action`` and everyone else persists."""
    venv, _, _ = vector_env(decisions, confidence, rule)
    actions = {a: np.array([action if a == agent else P]) for a in venv.agents}
    return venv.step(actions)[4][0]


def brute_force_best(decisions, confidence, rule, agent):
    """PERSIST if the agent is correct; else CONCEDE if conceding makes it correct; else
    REFINE, the only action that can still fix it."""
    if play_one(decisions, confidence, rule, agent, P)[agent]["correct"]:
        return P
    if play_one(decisions, confidence, rule, agent, C)[agent]["correct"]:
        return C
    return R


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("decisions,confidence", TEAMS)
def test_oracle_labels_are_the_brute_force_best_actions(decisions, confidence, rule):
    venv, obs, infos = vector_env(decisions, confidence, rule)
    labels = baselines.Oracle().act(obs, infos)
    for agent in venv.agents:
        assert labels[agent][0] == brute_force_best(decisions, confidence, rule, agent), agent


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("decisions,confidence", TEAMS)
def test_concede_target_is_what_concede_adopts(decisions, confidence, rule):
    venv, obs, infos = vector_env(decisions, confidence, rule)
    labels = baselines.Oracle().act(obs, infos)
    _, _, _, _, after = venv.step({a: np.array([C]) for a in venv.agents})
    for i, agent in enumerate(venv.agents):
        target = infos[0][agent]["concede_target"]
        assert after[0][agent]["decision"] == decisions[i if target is None else target]
        if labels[agent][0] == C:  # the oracle's CONCEDE leads to a correct answer
            assert after[0][agent]["correct"]


def test_ties_go_to_the_lowest_agent_index_under_both_rules():
    for rule in RULES:
        _, _, infos = vector_env(["6", "5", "7"], {}, rule)
        assert [infos[0][a]["concede_target"] for a in ("agent_0", "agent_1", "agent_2")] == [1, 0, 0]
    _, _, infos = vector_env(["7", "7", "7"], {}, "most_confident")
    assert all(info["concede_target"] is None for info in infos[0].values())  # all agree: PERSIST


def test_oracle_follows_the_plurality_rule():
    decisions, confidence = TEAMS[-1]
    _, obs, infos = vector_env(decisions, confidence, "most_confident")
    assert baselines.Oracle().act(obs, infos)["agent_0"][0] == R  # would adopt 6 (0.9), wrong
    _, obs, infos = vector_env(decisions, confidence, "plurality")
    assert baselines.Oracle().act(obs, infos)["agent_0"][0] == C  # adopts 7 (two votes), correct
