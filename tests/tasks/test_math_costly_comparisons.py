"""Red team 32: MATH answers whose comparison ran to its time limit, and a second option
letter hidden in a box.

A short answer such as ``\\cos((x+1)^{5})`` (14 characters) or ``(x+1)^{1000}``, its
exponent changed each turn, sent math-verify into sympy's ``simplify`` until the 5 s limit,
twice per pair of answers (a time-out is tried again): about 10 s of a step for every
agent's answer and every pair of agents, though it earned nothing. Two plain expressions
that differ in value at a point of their variables are now unequal without ``simplify``
(:func:`~deliberation_env.tasks.math.values_differ`), and an answer whose expansion or
nesting of trigonometric functions is too costly is compared as text
(:func:`~deliberation_env.tasks.math.too_costly`).
"""

from __future__ import annotations

import pytest

from deliberation_env.tasks import Problem
from deliberation_env.tasks import math as math_task
from deliberation_env.tasks.math import MathTask, _parsed, equivalent

COSTLY = [
    r"\cos((x+1)^{5})", r"\cos((x+1)^{30})", r"\frac{1}{(x+1)^{299}}", r"\frac{1}{(x+y+1)^{20}}",
    r"(x+1)^{1000}", r"(x+y+1)^{61}", r"(a+b+c+d+1)^{9}", r"((x+1)^{10}+1)^{10}",
    r"\cos(\cos(\cos(\cos(\cos(2)))))", r"\tan(\tan(\tan(\tan(\tan(2)))))", r"\sin(\cos(\tan(\sin(\cos(2)))))",
    r"(\sqrt{2}+\sqrt{3}+\sqrt{5}+\sqrt{7})^{40}", r"\sin(\sin(\sin(\sin(\sin(\sin(\sin(1)))))))",
]  # fmt: skip



@pytest.mark.parametrize("answer", COSTLY)
def test_an_answer_that_made_simplify_run_to_its_limit_is_compared_within_it(answer, fresh_readings):
    """Each of these ran out of time against the reference 3 (and against another agent's
    answer): the comparison now ends before its limit, with the same verdict, and the
    answer is still the same as itself."""
    assert not equivalent("3", answer)
    assert not equivalent(r"x^{2}+1", answer)
    assert equivalent(answer, answer)
    assert not math_task._timed_out, math_task._timed_out


def test_the_step_of_a_team_writing_a_costly_answer_runs_no_comparison_out(fresh_readings):
    """The text env's step compares each answer with the reference and with each other
    answer; none of them runs out of time now, and the right agent is paid as before."""
    task = MathTask(path="sample")
    problem = task.problems("test")[1]  # 14/3
    texts = [r"$\boxed{\frac{14}{3}}$", r"$\boxed{\cos((x+1)^{7})}$", r"$\boxed{(x+y+1)^{77}}$"]
    decisions = [task.parse(problem, text) for text in texts]
    assert [task.is_correct(problem, decision) for decision in decisions] == [True, False, False]
    assert not any(task.same_answer(problem, a, b) for a in decisions for b in decisions if a != b)
    assert not math_task._timed_out


@pytest.mark.parametrize(
    ("reference", "answer"),
    [(r"x^{2}-1", r"(x-1)(x+1)"), (r"\frac{14}{3}", "4.666667"), ("7", r"\texttt{7}"), (r"\text{(C)}", "C"),
     (r"\text{Devon}", r"\text{devon}"), ("1", r"\sin^{2}x+\cos^{2}x"), (r"\frac{\sqrt{3}}{2}", r"\cos(\frac{\pi}{6})"),
     (r"2\theta_1", r"\theta_1+\theta_1"), ("3", "x = 3"), ("(1,3)", "(1, 3)"), (r"(x+1)^{2}", r"x^{2}+2x+1"),
     (r"\cos(\cos(\cos(2)))", r"\cos(\cos(\cos(2)))"), ("X", "x")],
)  # fmt: skip
def test_equal_answers_stay_equal(reference, answer):
    """What math-verify equates stays equal: forms of one value, a text symbol and its
    number, letters of either case, an identity of trigonometric functions."""
    assert equivalent(reference, answer)


def test_honest_answers_are_still_read_as_mathematics():
    """The bounds are far from competition answers: a cube of a sum, a power of x, three
    nested functions, a binomial's expansion of 201 terms."""
    for answer in (r"(x+1)^{3}", r"x^{2019}", r"\sin(\cos(\tan(1)))", r"(x+1)^{200}", r"(a+b+c)^{5}"):
        assert _parsed(answer), answer
    for answer in (r"(x+1)^{301}", r"\cos(\cos(\cos(\cos(1))))"):
        assert not _parsed(answer), answer


@pytest.mark.parametrize("box", [r"C \text{ (or A)}", r"C \text{, A}", r"C \text{ (B?)}"])
def test_a_second_option_letter_in_an_unread_part_of_the_box_is_no_answer(box):
    """``\\boxed{C \\text{ (or A)}}`` was read as C under strict scoring where the reference
    is an option's letter: math-verify reads C alone, and the second letter was unseen."""
    task = MathTask(path="sample")
    for reference in (r"\text{(C)}", "C", "(C)"):
        problem = Problem("p", "Which one?", reference)
        assert task.parse(problem, rf"The answer is $\boxed{{{box}}}$.") is None, reference
        assert task.parse(problem, r"The answer is $\boxed{\text{(C)}}$.") == r"\text{(C)}"
    assert task.parse(Problem("p", "q", "12"), r"$\boxed{12 \text{ cm}}$") == r"12 \text{ cm}"
    both = task.parse(Problem("p", "q", "C"), r"$\boxed{\text{(C)} \text{ or } E}$")  # read whole: a set, wrong
    assert both is not None and not task.is_correct(Problem("p", "q", "C"), both)
