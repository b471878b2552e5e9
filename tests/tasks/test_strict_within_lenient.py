"""Strict scoring never calls right what lenient scoring calls wrong.

Round four of the red team found texts that did: "The answer is 17." with "#### 18",
``\\boxed{18}`` or "Answer: 18" elsewhere was right under strict scoring (it read only
"answer is" lines) and wrong under lenient scoring (it reads the last mark); "Answer: B"
with a second "Answer: $C$" read B. A final answer's every mark must now agree.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deliberation_env import tasks
from deliberation_env.tasks import Problem
from deliberation_env.tasks.jsonl import JSONLTask

SEVENTEEN = Problem("p", "What is 8 + 9?", "17")
NUMERIC = {scoring: tasks.get("arithmetic", scoring=scoring) for scoring in ("strict", "lenient")}
MMLU = {scoring: tasks.get("mmlu", path="sample", scoring=scoring) for scoring in ("strict", "lenient")}


@pytest.mark.parametrize(
    "second",
    ["Answer: 18", "\\boxed{18}", "#### 18", "answer = 18", "The answer is (18).", "The answer is \\(18\\)."],
)
def test_a_numeric_statement_with_another_final_mark_is_no_answer(second):
    text = f"The answer is 17.\n{second}"
    assert NUMERIC["lenient"].parse(SEVENTEEN, text) == "18"
    assert NUMERIC["strict"].parse(SEVENTEEN, text) is None
    assert NUMERIC["strict"].parse(SEVENTEEN, f"The answer is 17.\n{second.replace('18', '17')}") == "17"


@pytest.mark.parametrize("text", ["The answer is \\[17\\].", "The answer is \\(17\\).", "The answer is $\\boxed{17}$."])
def test_a_numeric_statement_in_display_markup_is_read(text):
    assert NUMERIC["strict"].parse(SEVENTEEN, text) == NUMERIC["lenient"].parse(SEVENTEEN, text) == "17"


@pytest.mark.parametrize("wrapped", ["$C$", "`C`", "[C]", "'C'", "\\(C\\)", "\\boxed{C}", "**C**"])
def test_a_letter_in_markup_is_a_statement(wrapped):
    problem = MMLU["strict"].problems("test")[0]
    assert MMLU["strict"].parse(problem, f"Answer: {wrapped}") == "C"
    assert MMLU["strict"].parse(problem, f"Answer: B\nAnswer: {wrapped}") is None


@pytest.mark.parametrize("second", ["The correct option is C.", "\\boxed{C}", "The best choice is (C)."])
def test_a_letter_statement_with_another_final_mark_is_no_answer(second):
    problem = MMLU["strict"].problems("test")[0]
    assert MMLU["strict"].parse(problem, f"Answer: B\n{second}") is None
    assert MMLU["strict"].parse(problem, "Option C is tempting, option A is not.\nAnswer: B") == "B"


@pytest.mark.parametrize("text", ["**Answer:** B", "**Answer:** (B)", "Answer: **B**", "The answer is $B$."])
def test_lenient_reads_the_asked_form_in_its_markup(text):
    problem = MMLU["lenient"].problems("test")[0]
    assert MMLU["lenient"].parse(problem, text) == MMLU["strict"].parse(problem, text) == "B"


def test_lenient_skips_an_empty_last_answer(tmp_path):
    math = tasks.get("math", path="sample", scoring="lenient")
    assert math.parse(math.problems("test")[0], "\\boxed{\\frac12}\n\\boxed{ }") == "\\frac12"
    path = tmp_path / "capitals.jsonl"
    path.write_text('{"question": "Capital of France?", "answer": "Paris"}\n')
    task = JSONLTask(path, answers="text", scoring="lenient")
    problem = task.problems("test")[0] if task.problems("test") else task.problems("train")[0]
    assert task.parse(problem, "Answer: Paris\nAnswer:") == "paris"


NUMBER = st.sampled_from(["17", "18", "1,700", "17.0", "-3"])
MARK = st.sampled_from(["The answer is {}.", "Answer: {}", "#### {}", "\\boxed{{{}}}", "answer = {}", "The answer is **${}$**.", "so {} apples", "The answer is ({})."])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(MARK, NUMBER), min_size=1, max_size=4))
def test_strict_right_implies_lenient_right_for_numbers(marks):
    text = "\n".join(mark.format(number) for mark, number in marks)
    problem = Problem("p", "?", "17")
    strict, lenient = (NUMERIC[s].is_correct(problem, NUMERIC[s].parse(problem, text)) for s in ("strict", "lenient"))
    assert lenient or not strict, text


LETTER_MARK = st.sampled_from(["Answer: {}", "The answer is ({}).", "**Answer:** {}", "\\boxed{{{}}}", "The option is {}.", "Answer: ${}$", "{} looks wrong"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(LETTER_MARK, st.sampled_from("ABCD")), min_size=1, max_size=4))
def test_strict_right_implies_lenient_right_for_letters(marks):
    text = "\n".join(mark.format(letter) for mark, letter in marks)
    problem = MMLU["strict"].problems("test")[0]
    strict, lenient = (MMLU[s].is_correct(problem, MMLU[s].parse(problem, text)) for s in ("strict", "lenient"))
    assert lenient or not strict, text


# ------------------------------------------------------------------ round five: no false refusals
@pytest.mark.parametrize(
    "text",
    [
        "#### 1. Eggs left\n16 - 3 = 13.\n#### 2. Money\n13 * 2 = 26 - 9 = 17.\nThe answer is 17.",
        "answer = 9 * 2  # dollars\nanswer - 1 = 17\nThe answer is 17.",
        "Part 1: Answer: 24 cookies.\n24 - 7 = 17.\nThe answer is 17.",
        "So the answer is (20 - 3) = 17.\nThe answer is 17.",
        "The answer is: 17.\nThat is 2 more than 15.",
        "The answer  is $$17$$.",
    ],
)
def test_a_step_marked_like_an_answer_does_not_refuse_the_final_statement(text):
    assert NUMERIC["strict"].parse(SEVENTEEN, text) == NUMERIC["lenient"].parse(SEVENTEEN, text) == "17"


@pytest.mark.parametrize(
    "text",
    [
        "The most tempting option is A, but it is wrong.\nAnswer: C",
        "A plausible choice is B, but it is wrong.\nAnswer: C",
        "Answer: C\nThe next option is D, which is too large.",
        "So the answer is $A^{-1}B$, which is option C.\nAnswer: C",
        "Option A is wrong and option B is wrong.\nAnswer: C",
        "Answer: C\nNote that answer A is a common distractor.",  # round six: honest forms
        "Answer: C\nI also considered answer B, but it is wrong.",
        "The heart pumps blood. The correct answer is **C. Heart**.\n\nAnswer: C",
        "I initially thought the answer is A, but friction matters.\nAnswer: C",
        "Answer: Option C",
        "Answer: \\textbf{C}",
    ],
)
def test_a_letter_in_passing_or_taken_back_does_not_refuse_the_stated_letter(text):
    problem = MMLU["strict"].problems("test")[0]
    assert MMLU["strict"].parse(problem, text) == MMLU["lenient"].parse(problem, text) == "C"


@pytest.mark.parametrize(
    "text",
    ["Answer: B\n**Answer**: C", "Answer: B\nOption C is correct.", "Answer: B\nThe best choice is C."],
)
def test_a_later_final_letter_is_a_hedge_and_lenient_reads_it(text):
    problem = MMLU["strict"].problems("test")[0]
    assert MMLU["strict"].parse(problem, text) is None and MMLU["lenient"].parse(problem, text) == "C"


def test_a_number_reordered_by_a_bidi_control_is_no_answer():
    assert NUMERIC["strict"].parse(SEVENTEEN, "The answer is \u202e71\u202c.") is None  # drawn as 17


def test_a_boxed_dollar_amount_is_a_mark():
    assert NUMERIC["lenient"].parse(SEVENTEEN, "The answer is 17.\n\\boxed{\\$18}") == "18"
    assert NUMERIC["strict"].parse(SEVENTEEN, "The answer is 17.\n\\boxed{\\$18}") is None


def test_a_text_answer_on_the_line_after_its_head_is_read(tmp_path):
    path = tmp_path / "capitals.jsonl"
    path.write_text('{"question": "Capital of France?", "answer": "Paris"}\n')
    strict, lenient = (JSONLTask(path, answers="text", scoring=s) for s in ("strict", "lenient"))
    problem = (strict.problems("test") or strict.problems("train"))[0]
    changed_mind = "Answer: Lyon\nHmm, no.\nFinal answer:\nParis"
    assert lenient.parse(problem, changed_mind) == "paris" and strict.parse(problem, changed_mind) is None
    assert strict.parse(problem, "Final answer:\n\nParis") == "paris"


def test_math_strict_keeps_a_value_with_its_rounding():
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Find x.", "2\\sqrt{3}")
    assert task.is_correct(problem, task.parse(problem, "$\\boxed{2\\sqrt{3} \\approx 3.46}$"))
    assert task.parse(problem, "$\\boxed{2\\sqrt{3} \\approx 4}$") is None


# ------------------------------------------------------------------ round six
@pytest.mark.parametrize(
    "text",
    [
        "It makes \\$17.\nThe answer is \\$17.",
        "The answer is 17%.",
        "The final answer is $17$. I hope it is correct.",
        "I initially thought the answer is 10, but 10 + 7 = 17.\nThe answer is 17.",
    ],
)
def test_common_honest_numeric_forms_are_read(text):
    assert NUMERIC["strict"].parse(SEVENTEEN, text) == "17"


@pytest.mark.parametrize(
    "second",
    [
        "The answer is \\$18.", "The answer is approximately 18.", "The answer is ~18.", "The answer is `18`.",
        "The answer is [18].", "The answer is \\textbf{18}.", "\\boxed{\\textbf{18}}", "\\boxed{18\\text{ dollars}}",
        "Wait, I made an error: the answer is actually 18.", "\uff03\uff03\uff03\uff03 18",
    ],
)  # fmt: skip
def test_a_second_number_in_other_markup_is_a_hedge(second):
    text = f"The answer is 17.\n{second}"
    assert NUMERIC["strict"].parse(SEVENTEEN, text) is None
    assert NUMERIC["lenient"].parse(SEVENTEEN, text) == "18"


def test_a_unicode_minus_is_a_minus():
    problem = Problem("p", "?", "-3")
    for scoring in ("strict", "lenient"):
        assert NUMERIC[scoring].parse(problem, "The answer is \u22123.") == "-3"


def test_reading_many_marks_before_the_statement_is_linear():
    from tests.tasks.test_reader_backtracking import at_most

    for unit in ("answer=1 ", "#### 1 ", "Answer: 1 ", "#### 1\n"):
        with at_most(10):
            NUMERIC["strict"].parse(SEVENTEEN, unit * (100_000 // len(unit)) + "\nThe answer is 17.")


@pytest.mark.parametrize(
    "second",
    ["The correct answer is option C.", "The answer is **Option C**", "\\boxed{\\textbf{C}}", 'The correct option is "C"', "Correct option: C"],
)
def test_a_second_letter_in_other_markup_is_a_hedge(second):
    problem = MMLU["strict"].problems("test")[0]
    assert MMLU["strict"].parse(problem, f"Answer: B\n{second}") is None


@pytest.mark.parametrize(
    ("reference", "box", "right"),
    [
        ("\\frac{3}{4}", "\\frac34", True),
        ("2", "2 \u2248 3", False),
        ("2", "2 \\text{ (not sure)}", False),
        ("2", "2 \\text{ (or maybe three)}", False),
        ("2", "3 = 2", False),
        ("12", "12 \\text{ (or 21)}", False),
        ("2", "x = 2", True),
        # round twenty-two: words in the box that take the value back or loosen it; units stay
        ("18", "18 \\text{ is wrong}", False),
        ("18", "18 \\text{ (wrong)}", False),
        ("18", "18 \\text{ or more}", False),
        ("18", "18 \\text{ (approximately)}", False),
        ("18", "18 \\text{ (lucky guess)}", False),
        ("18", "18 \\text{ dollars}", True),
        ("3", "3 \\text{ cups of flour}", True),
        ("12", "12 \\text{ (not counting rotations)}", True),
        ("8", "8 \\text{ (about the } y\\text{-axis)}", True),
        ("18", "18_{10}", True),
        # round twenty-three: bases hidden behind "10", markup or an explicit decimal; more qualifiers
        ("18", "18_{100}", False),
        ("18", "18_{\\,17}", False),
        ("18", "18_{(17)}", False),
        ("1011_2", "1011_{10}", False),
        ("4A_{11}", "4A_11", True),
        ("18", "18 \\text{ not counting on it}", False),
        ("18", "18 \\text{ give or take}", False),
        ("18", "18 \\text{ (or above)}", False),
        ("6", "6 \\text{ (order does not matter)}", True),
        # round twenty-two: math-verify drops a numeral's base
        ("10001_2", "10001_3", False),
        ("18", "18_{17}", False),
        ("10001_2", "10001_{2}", True),
        ("1011_2", "1011", True),
    ],
)
def test_math_boxes_of_round_six(reference, box, right):
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Find x.", reference)
    for text in (f"So $\\boxed{{{box}}}$.", f"The final answer is $\\boxed{{{box}}}$. I hope it is correct."):
        assert task.is_correct(problem, task.parse(problem, text)) is right, text


# ------------------------------------------------------------------ round seven
@pytest.mark.parametrize(
    "text",
    [
        "The answer is 11 if Sunday counts; otherwise\nthe answer is 17.",
        "The answer is 11, or 17. The answer is 17 if we round.\nThe answer is 17.",
    ],
)
def test_an_earlier_conditional_statement_is_a_hedge(text):
    assert NUMERIC["strict"].parse(SEVENTEEN, text) is None


def test_an_earlier_statement_taken_back_or_of_the_final_number_is_a_step():
    assert NUMERIC["strict"].parse(SEVENTEEN, "First I thought the answer is 12, but I was wrong.\nThe answer is 17;") == "17"
    assert NUMERIC["strict"].parse(SEVENTEEN, "So the answer is 17 apples in all.\nThe answer is 17.") == "17"


def test_a_letter_statement_may_end_in_its_options_text_but_not_in_a_hedge():
    problem = MMLU["strict"].problems("test")[0]
    letter = problem.answer
    option = problem.meta["choices"]["ABCD".index(letter)]
    for text in (f"Answer: ({letter}) {option}", f"Answer: {letter} - {option}", f"Answer: {letter};"):
        assert MMLU["strict"].parse(problem, text) == letter, text
    other = "A" if letter != "A" else "B"
    assert MMLU["strict"].parse(problem, f"Answer: {other} or {letter}.\nAnswer: {letter}") is None
    assert MMLU["strict"].parse(problem, f"Answer: {letter} (or {other})") is None


@pytest.mark.parametrize("box", ["x = 3 = 2", "2 \\text{ (or three)}", "2 \\text{ (rather, III)}"])
def test_math_hedges_of_round_seven_never_score(box):
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Find x.", "2")
    assert not task.is_correct(problem, task.parse(problem, f"So $\\boxed{{{box}}}$."))
