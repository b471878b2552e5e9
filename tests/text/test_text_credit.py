"""Red team 33: the per-agent credit of the text env, measured on fixed teams.

The leave-one-out ``contribution`` pays a seat only where it is pivotal, so over several
turns it pays a seat for its teammates' errors; the Shapley value (``"shapley"``) does
not. Each test plays fixed texts on arithmetic problems (the math protocol, strict)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algorithms.text.config import TextGRPOConfig
from deliberation_env.text import TextEnvConfig, text_env, text_vector_env
from deliberation_env.text.env import SHAPLEY_MAX_AGENTS, coalitions

PROBLEMS = 20


def credits(n_agents: int, plans: list[str], component: str) -> tuple[list[float], float]:
    """Each seat's credit summed over the turns and averaged over the problems, and the
    team's joint reward likewise; ``plans[i][t]``: R (right), W (wrong) or E (empty)."""
    venv = text_vector_env(PROBLEMS, task="arithmetic", n_agents=n_agents, max_turns=len(plans[0]), shapley=component == "shapley")
    problems = venv.problems[:PROBLEMS]
    venv.reset(seed=0, options={"problem_index": list(range(PROBLEMS))})
    said = {"R": lambda p: f"The answer is {p.answer}.", "W": lambda p: f"The answer is {int(p.answer) + 1}.", "E": lambda p: ""}
    totals, joint = [0.0] * n_agents, 0.0
    for turn in range(len(plans[0])):
        _, _, _, _, infos = venv.step({f"agent_{i}": [said[plan[turn]](p) for p in problems] for i, plan in enumerate(plans)})
        for info in infos:
            joint += info["agent_0"]["reward_components"]["joint"] / PROBLEMS
            for i in range(n_agents):
                totals[i] += info[f"agent_{i}"]["reward_components"][component] / PROBLEMS
    return totals, joint


def test_leave_one_out_credit_pays_a_seat_that_misleads_a_follower_known_limitation():
    """Pinned: agent 0 answers wrongly at turn 0 (which costs it nothing: its two peers
    agree) and rightly at turn 1, where agent 2 has followed its first answer. The team's
    joint reward is the honest team's, and agent 0's leave-one-out credit 0.57 against
    0.07 for answering rightly twice. A fix of the leave-one-out credit flips this."""
    honest, honest_joint = credits(3, ["RR", "RR", "RR"], "contribution")
    misled, misled_joint = credits(3, ["WR", "RR", "RW"], "contribution")
    assert misled_joint == pytest.approx(honest_joint)
    assert misled[0] == pytest.approx(0.5 + 0.2 / 3) and honest[0] == pytest.approx(0.2 / 3)
    assert misled[0] > honest[0]
    lazy, _ = credits(3, ["WW", "RR", "RR"], "contribution")
    assert lazy[0] == pytest.approx(honest[0])  # a seat wrong throughout beside two right ones: no signal


@pytest.mark.parametrize(
    ("n_agents", "honest", "misled"),
    [(3, ["RR", "RR", "RR"], ["WR", "RR", "RW"]), (2, ["RR", "RR"], ["WR", "RW"]), (3, ["RR", "RR", "RR"], ["WW", "RR", "RR"])],
)
def test_the_shapley_credit_pays_the_honest_seat_more(n_agents, honest, misled):
    assert credits(n_agents, honest, "shapley")[0][0] > credits(n_agents, misled, "shapley")[0][0] + 0.2


def test_the_shapley_credit_pays_a_right_answer_most_whatever_the_peers():
    """Where the leave-one-out credit pays a wrong answer as much as a right one (two right
    peers: 0.033 each), the Shapley value pays the right one more; a wrong answer earns at
    most the format part's share over an empty text."""
    for n_agents in (2, 3):
        for peers in itertools.product("RWE", repeat=n_agents - 1):
            right, empty, wrong = (credits(n_agents, [*peers, mine], "shapley")[0][-1] for mine in "REW")
            assert right > max(empty, wrong) + 0.1, (peers, right, empty, wrong)
            assert wrong <= empty + 0.1 / n_agents + 1e-9, (peers, empty, wrong)


@settings(max_examples=25, deadline=None)
@given(texts=st.lists(st.sampled_from(["The answer is 18.", "The answer is 17.", "", "18", "The answer is 18 or 17."]), min_size=3, max_size=3), order=st.permutations(range(3)))
def test_shapley_values_sum_to_the_joint_reward_and_follow_their_seat(texts, order):
    env = text_env(task="arithmetic", n_agents=3, shapley=True)
    env.reset(seed=0, options={"problem_index": 0})  # 9 + 4 + 5
    _, _, _, _, infos = env.step(dict(zip(env.possible_agents, texts, strict=True)))
    values = [infos[a]["reward_components"]["shapley"] for a in env.possible_agents]
    assert sum(values) == pytest.approx(infos["agent_0"]["reward_components"]["joint"])  # the empty team earns 0
    env.reset(seed=0, options={"problem_index": 0})
    _, _, _, _, infos = env.step({f"agent_{k}": texts[i] for k, i in enumerate(order)})
    assert [infos[f"agent_{k}"]["reward_components"]["shapley"] for k in range(3)] == pytest.approx([values[i] for i in order])


def test_the_shapley_values_cost_2_to_the_n_teams_only_where_asked_and_up_to_the_limit():
    """The env scores n + 1 teams a turn (the leave-one-out credit); with ``shapley`` every
    subset of the agents, 2^n, for teams of at most SHAPLEY_MAX_AGENTS (a bigger one is
    refused by the config)."""
    assert len(coalitions(3, shapley=False)) == 4 and len(coalitions(3)) == 8
    assert len(coalitions(SHAPLEY_MAX_AGENTS)) == 2**SHAPLEY_MAX_AGENTS
    for shapley in (False, True):
        env = text_env(task="arithmetic", n_agents=3, shapley=shapley)
        env.reset(seed=0, options={"problem_index": 0})
        _, _, _, _, infos = env.step({a: "The answer is 18." for a in env.possible_agents})
        assert ("shapley" in infos["agent_0"]["reward_components"]) == shapley
        assert "contribution" in infos["agent_0"]["reward_components"]
    with pytest.raises(ValueError, match=f"teams of at most {SHAPLEY_MAX_AGENTS} agents"):
        text_env(task="arithmetic", n_agents=SHAPLEY_MAX_AGENTS + 1, shapley=True)


def test_learners_take_the_shapley_credit():
    config = TextGRPOConfig(credit="shapley")
    assert config.credit == "shapley" and config.env.shapley  # the credit asks the env for it
    assert not TextGRPOConfig().env.shapley
    with pytest.raises(ValueError, match=f"credit='shapley' needs the Shapley values of teams of at most {SHAPLEY_MAX_AGENTS}"):
        TextGRPOConfig(credit="shapley", env=TextEnvConfig(n_agents=SHAPLEY_MAX_AGENTS + 1))
    with pytest.raises(ValueError, match="credit"):
        TextGRPOConfig(credit="shapely")
