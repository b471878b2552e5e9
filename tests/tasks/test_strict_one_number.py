"""Strict scoring reads one answer per asked line, in one grammar.

A statement's line holds exactly one answer in the task's grammar, after markup is taken
out, and nothing after it but closing punctuation; anything else is no answer. The
hedges below were each read as their first number before (the check looked only right
after it), and an exponent form was read in part.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from helpers import FixedTask
from hypothesis import assume, given
from hypothesis import strategies as st

from deliberation_env import tasks
from deliberation_env.tasks import Problem
from deliberation_env.tasks.numeric import canonical_number
from deliberation_env.text import MathProtocol, text_env

HEDGES = [
    "The answer is $11$ or $12$.",
    "The answer is \\boxed{11} or \\boxed{12}.",
    "The answer is **11** (or 12).",
    "The answer is 11 (12).",
    "The answer is 11 — 12.",
]
EXPONENTS = ["The answer is 11e3.", "The answer is 1e1", "The answer is $1.1E1$."]
NUMERIC_TASKS = {
    "arithmetic": lambda: tasks.get("arithmetic"),
    "gsm8k": lambda: tasks.get("gsm8k", path="sample"),
}


def answer_11(task_name: str) -> tuple[object, Problem]:
    return NUMERIC_TASKS[task_name](), Problem("p", "What is 5 + 6?", "11")


@pytest.mark.parametrize("task_name", NUMERIC_TASKS)
@pytest.mark.parametrize("text", HEDGES + EXPONENTS)
def test_a_hedge_or_an_exponent_on_the_answer_line_is_no_answer(task_name, text):
    task, problem = answer_11(task_name)
    assert task.parse(problem, text) is None
    assert not task.is_correct(problem, task.parse(problem, text))


@pytest.mark.parametrize("task_name", NUMERIC_TASKS)
def test_the_asked_line_in_its_markup_is_still_read(task_name):
    task, problem = answer_11(task_name)
    for text in (
        "5 + 6 = 11.\nThe answer is 11.",
        "The answer is $11$.",
        "The answer is \\boxed{11}.",
        "The answer is **11**!",
        "**The final answer is: $11$.**",
        "The answer is:\n\n\\(11\\)",
    ):
        assert task.parse(problem, text) == "11", text


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("\\boxed{2} (or 3)", None),
        ("So $\\boxed{2}$, or maybe \\boxed{2} cm.", None),
        ("$$\\boxed{2}$$.", "2"),
        ("\\[ \\boxed{2} \\]", "2"),
        ("Hence **$\\boxed{2}$**.\nThat is \\boxed{2}.", "2"),
    ],
)
def test_math_reads_a_box_only_where_its_line_ends_after_it(text, read):
    task = tasks.get("math", path="sample")
    assert task.parse(task.problems("test")[0], text) == read


@pytest.mark.parametrize(
    "box",
    [
        "{x} \\text{{ (or 3)}}",
        "{x} \\text{{ (could be 3)}}",
        "{x} \\text{{ (3?)}}",
        "{x} \\text{{ (\u0585r 3)}}",  # Armenian o
        "{x} \\approx 3",
        "{x} \\approxeq 3",
        "{x} \\lor 3",
        "{x} \\text{{, maybe }} 3",
        "{x} \\;\\mathrm{{OR}}\\; 3",
        "\\text{{perhaps }} {x}",
    ],
)
def test_math_strict_never_scores_a_box_that_offers_a_second_value(box):
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Find x.", "2")
    hedge = "\\boxed{" + box.format(x=2) + "}"
    assert not task.is_correct(problem, task.parse(problem, hedge))
    assert task.parse(problem, "\\boxed{2}") == "2"


@pytest.mark.parametrize(
    ("reference", "box"),
    [
        ("2, 3", "x = 2 \\text{ or } x = 3"),
        ("1, -1", "1 \\text{ or } -1"),
        ("12", "12 \\text{ cm}^2"),
        ("\\text{Gordon}", "\\text{Gordon}"),
        ("\\text{north or south}", "\\text{north or south}"),
        ("\\frac{1}{2}", "\\dfrac{1}{2}"),
        ("1000", "1{,}000"),
    ],
)
def test_math_strict_keeps_honest_answers_that_name_several_values_or_units(reference, box):
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Find it.", reference)
    assert task.is_correct(problem, task.parse(problem, "So the answer is $\\boxed{" + box + "}$."))


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("Answer: B or C", None),
        ("**Answer:** (B) (or C)", None),
        ("Answer: B, C", None),
        ("Answer: B. The heart.", None),
        ("**Answer:** (B).", "B"),
        ("The answer is B!", "B"),
    ],
)
def test_mmlu_reads_one_letter_per_answer_line(text, read):
    task = tasks.get("mmlu", path="sample")
    assert task.parse(task.problems("test")[0], text) == read


# ------------------------------------------------------------------ properties
NUMBER_MARKUP = [
    ("", ""),
    ("**", "**"),
    ("$", "$"),
    ("\\(", "\\)"),
    ("\\boxed{", "}"),
    ("**$", "$**"),
]
SEPARATORS = [" or ", " (or ", " (", " ", ", ", "; ", " and ", " to ", " — ", " / ", " - ", " = "]
CLOSINGS = ["", ".", "!", " ."]


@st.composite
def numbers(draw) -> str:
    """A number in the numeric grammar: a sign, digits (grouped by commas or not), decimals."""
    value = draw(st.integers(-(10**9), 10**9))
    text = draw(st.sampled_from([str(value), f"{value:,}"]))
    cents = draw(st.none() | st.integers(0, 99))
    return text if cents is None else f"{text}.{cents:02d}"


@given(
    numbers(),
    numbers(),
    st.sampled_from(NUMBER_MARKUP),
    st.sampled_from(NUMBER_MARKUP),
    st.sampled_from(SEPARATORS),
    st.sampled_from(CLOSINGS),
)
def test_two_different_numbers_on_the_answer_line_are_no_answer(
    first, second, markup, other, sep, close
):
    assume(Fraction(canonical_number(first)) != Fraction(canonical_number(second)))
    text = f"The answer is {markup[0]}{first}{markup[1]}{sep}{other[0]}{second}{other[1]}{close}"
    task = tasks.get("arithmetic")
    assert task.parse(Problem("p", "?", canonical_number(first)), text) is None, text


@given(
    numbers(),
    st.sampled_from(NUMBER_MARKUP),
    st.sampled_from(CLOSINGS),
    st.sampled_from(["The", "So the final"]),
)
def test_the_canonical_line_reads_its_number(number, markup, close, lead):
    text = f"Working.\n{lead} answer is {markup[0]}{number}{markup[1]}{close}"
    task = tasks.get("arithmetic")
    assert task.parse(Problem("p", "?", "0"), text) == canonical_number(number), text


LETTER_MARKUP = [("", ""), ("(", ")"), ("**", "**"), ("**(", ")**")]


@given(
    st.sampled_from("ABCD"),
    st.sampled_from("ABCD"),
    st.sampled_from(LETTER_MARKUP),
    st.sampled_from(LETTER_MARKUP),
    st.sampled_from(SEPARATORS),
    st.sampled_from(CLOSINGS),
)
def test_two_different_letters_on_the_answer_line_are_no_answer(
    first, second, markup, other, sep, close
):
    assume(first != second)
    text = f"Answer: {markup[0]}{first}{markup[1]}{sep}{other[0]}{second}{other[1]}{close}"
    task = tasks.get("mmlu", path="sample")
    assert task.parse(task.problems("test")[0], text) is None, text


@given(numbers(), numbers(), st.sampled_from(SEPARATORS), st.sampled_from(NUMBER_MARKUP))
def test_a_box_with_another_number_after_it_on_its_line_is_no_answer(first, second, sep, markup):
    text = f"So $\\boxed{{{first}}}${sep}{markup[0]}{second}{markup[1]}"
    task = tasks.get("math", path="sample")
    assert task.parse(task.problems("test")[0], text) is None, text


# ------------------------------------------------------------------ through the text env
def test_a_hedged_answer_line_earns_nothing_in_the_text_env():
    env = text_env(task=FixedTask((("What is 5 + 6?", "11"),)), protocol="math")
    for text, correct in (("The answer is $11$ or $12$.", 0.0), ("The answer is $11$.", 1.0)):
        env.reset(seed=0, options={"problem_index": 0})
        _, rewards, _, _, infos = env.step(dict.fromkeys(env.agents, text))
        parts = infos["agent_0"]["reward_components"]
        assert (parts["correct"], parts["format"]) == (correct, correct), text
        assert rewards["agent_0"] == pytest.approx(1.1 * correct)


def test_the_math_protocol_scores_a_hedge_as_no_answer():
    protocol = MathProtocol(tasks.get("arithmetic"))
    problem = Problem("p", "What is 5 + 6?", "11")
    outcome = protocol.score(problem, ["The answer is **11** (or 12).", "The answer is 11 — 12."])
    assert (outcome.reward, outcome.output) == (0.0, None)
