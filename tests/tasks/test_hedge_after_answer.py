"""A line after the final answer that doubts it and offers another value is a hedge.

"The answer is 12.\\n(or 11)", "\\boxed{19}\\nor maybe 20" and "Answer: B\\nOption C is also correct."
were scored right under strict scoring: the readers looked only at the final statement's
line. A note after the answer, or a line that discusses the other options, is no hedge.
"""

from __future__ import annotations

import pytest

from deliberation_env import tasks
from deliberation_env.tasks import Problem

NUMERIC = Problem("p", "What is 5 + 7?", "12")
MATH = Problem("p", "Compute 4 + 15.", "19")


@pytest.mark.parametrize(
    "after",
    ["\n(or 11).", "\nOr maybe 11.", "\nalternatively 13", "\n**Maybe eleven.**", "\n\n- or perhaps 1,200", "\n11 is also possible."],
)
@pytest.mark.parametrize("name", ["arithmetic", "gsm8k"])
def test_numeric_doubt_after_the_statement_is_no_answer(name, after):
    task = tasks.get(name, path="sample") if name == "gsm8k" else tasks.get(name)
    assert task.parse(NUMERIC, "5 + 7 = 12.\nThe answer is 12.") == "12"
    assert task.parse(NUMERIC, f"5 + 7 = 12.\nThe answer is 12.{after}") is None
    assert tasks.get("arithmetic", scoring="lenient").parse(NUMERIC, f"The answer is 12.{after}") is not None


@pytest.mark.parametrize(
    "after",
    [
        "\nNote: 5 apples plus 7 apples.",  # a note, no doubt
        "\nOr, to put it another way: 12 in all.",  # a doubt word, but the same value
        "\nI hope it is correct.",
        "\nWhy not 13? Because 5 + 7 is 12.",  # discussion, not a line that opens with doubt
    ],
)
def test_numeric_note_after_the_statement_keeps_the_answer(after):
    assert tasks.get("arithmetic").parse(NUMERIC, f"The answer is 12.{after}") == "12"


def test_math_doubt_after_the_box_is_no_answer():
    task = tasks.get("math", path="sample")
    assert task.parse(MATH, "So 4 + 15 = 19.\n$\\boxed{19}$") == "19"
    for after in ["\nor maybe 20", "\n(Possibly 18.)", "\nPerhaps twenty."]:
        assert task.parse(MATH, f"So 4 + 15 = 19.\n$\\boxed{{19}}${after}") is None
    for after in ["\nI hope it is correct.", "\nThis could also be written as 19.0? No: 19 it is."]:
        assert task.parse(MATH, f"$\\boxed{{19}}${after}") == "19"


def test_letter_doubt_after_the_statement_is_no_answer():
    task = tasks.get("mmlu", path="sample")
    problem = task.problems("test")[0]
    letter = problem.answer
    other = "C" if letter != "C" else "D"
    assert task.parse(problem, f"Answer: {letter}") == letter
    for after in [f"\n(or maybe {other})", f"\nOr possibly {other}.", f"\nAlternatively, {other} could be right.", f"\nOption {other} is also correct."]:
        assert task.parse(problem, f"Answer: {letter}{after}") is None
    kept = [
        f"\nWhy not the others? Option {other} is too small.",  # discussion
        f"\nOption {other} might seem right, but it is not.",
        f"\nOption {other} is also wrong.",
        "\nA common mistake could be to misread the question.",  # "A" the article
        "\nMaybe that helps.",  # doubt without another option
    ]
    for after in kept:
        assert task.parse(problem, f"Answer: {letter}{after}") == letter


def test_a_number_alone_on_a_line_after_the_statement_is_a_second_answer():
    """Red team, round eight: "The answer is:\\n11\\n12" read as 11."""
    task = tasks.get("arithmetic")
    assert task.parse(NUMERIC, "The answer is:\n12") == "12"
    assert task.parse(NUMERIC, "The answer is:\n12\n11") is None
    assert task.parse(NUMERIC, "The answer is 12.\n\n**12**") == "12"
