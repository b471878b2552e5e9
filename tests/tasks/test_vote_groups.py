"""The paid vote's groups (:func:`deliberation_env.tasks.base.answer_groups`), red team
twenty-four: math-verify's equivalence is neither symmetric nor transitive, so a wrong
answer that it equates with two right forms it keeps apart (``x=3 \\text{ or } x=4`` and
``x_1 = 3, x_2 = 4``) joined them into one group and won the vote for the team (an agent
paid for restating the equation), and the seat order changed a vote."""

from __future__ import annotations

import itertools

import pytest

from deliberation_env.tasks import Problem, answer_groups, get
from deliberation_env.text import MathProtocol

ROOTS = Problem("math:roots", "Find all real x with x^2 - 7x + 12 = 0.", "3, 4")
RIGHT_FORMS = [r"x=3 \text{ or } x=4", r"x_1 = 3, x_2 = 4"]


@pytest.fixture(scope="module")
def math():
    return get("math", path="sample")


def paid_groups(task, problem, decisions):
    return answer_groups(task, problem, decisions, [task.is_correct(problem, d) for d in decisions])


@pytest.mark.parametrize("wrong", [r"(x-3)(x-4)=0", r"3 < x < 4"])
def test_a_wrong_answer_never_shares_a_right_ones_group_in_any_seat(math, wrong):
    for order in itertools.permutations([wrong, *RIGHT_FORMS, "5"]):
        groups = paid_groups(math, ROOTS, list(order))
        at = {decision: group for decision, group in zip(order, groups, strict=True)}
        assert not math.is_correct(ROOTS, wrong)
        assert at[RIGHT_FORMS[0]] == at[RIGHT_FORMS[1]]  # two right forms are one right answer
        assert at[wrong] != at[RIGHT_FORMS[0]] and at["5"] != at[RIGHT_FORMS[0]]


def test_restating_the_equation_earns_no_more_than_a_wrong_number(math):
    protocol = MathProtocol(math)
    box = "Solving, we get the answer.\n\n$\\boxed{{{}}}$".format
    others = [box(form) for form in RIGHT_FORMS] + [box("5")]

    def contribution(text):
        return protocol.score(ROOTS, [text, *others]).reward - protocol.score(ROOTS, ["", *others]).reward

    restated, wrong, right = contribution(box("(x-3)(x-4)=0")), contribution(box("6")), contribution(box("3, 4"))
    assert restated == pytest.approx(wrong) and restated <= right
    assert protocol.score(ROOTS, [box("6"), *others]).parts["correct"] == 1.0  # two right forms outvote one wrong


def test_the_seat_order_does_not_change_a_vote(math):
    problem = Problem("math:ineq", "Solve for x.", r"x \le 3")
    decisions = [r"(-\infty, 3]", r"x \le 3", r"x \le 4", r"x \le 4"]
    votes = set()
    for order in itertools.permutations(range(4)):
        seated = [decisions[k] for k in order]
        groups = paid_groups(math, problem, seated)
        votes.add(tuple(sorted(sum(g == group for g in groups) for group in set(groups))))
    assert votes == {(2, 2)}  # the two right forms are one answer wherever they sit: a tie, never 2 wrong vs 1 + 1


def test_the_meta_seats_paid_vote_groups_as_the_text_seats(math):
    """Red team twenty-five: the meta env split the seen groups into right and wrong, so a
    wrong answer in seat 0 that math-verify equates with both right forms joined them and
    decided the consensus (agent 0 then counted as pivotal)."""
    import copy

    import deliberation_env as de
    from agents.base import Answer, Confidence

    task = copy.copy(math)
    task._problems = {"train": (ROOTS,), "test": (ROOTS,)}

    class Scripted:
        model_id = "scripted"

        def __init__(self, decisions):
            self.decisions = decisions

        def _answer(self, turn):
            decision = self.decisions[int(turn.agent.split("_")[1]) if isinstance(turn.agent, str) else turn.agent]
            text = "I give up." if decision is None else f"Solving.\n\\boxed{{{decision}}}"
            return Answer(text, turn.parse(text), (0.5,) * 6, 10, 5)

        def solve(self, turns):
            return [self._answer(turn) for turn in turns]

        refine = solve

        def introspect(self, turns):
            return [Confidence(0.4 if self._answer(turn).decision == "5" else 0.5, "scripted", 3, 1) for turn in turns]

    outcomes = {}
    for first in (r"(x-3)(x-4)=0", "6", None):
        env = de.parallel_env(task=task, team=Scripted([first, *RIGHT_FORMS, "5", "5"]), n_agents=5, max_rounds=2)
        env.reset(seed=0, options={"problem_index": 0})
        *_, infos = env.step({agent: de.MetaAction.PERSIST for agent in env.agents})
        outcomes[first] = (infos["agent_0"]["consensus_correct"], infos["agent_0"]["reward_components"]["global"])
    assert len(set(outcomes.values())) == 1, outcomes  # what agent 0 writes, wrong or none, changes nothing
    assert outcomes[None][0]  # the two right forms, one answer, outvote the two wrong ones
