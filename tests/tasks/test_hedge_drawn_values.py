"""A value offered after the answer in markup the hedge rule did not list is read as drawn
(red team 38).

"The answer is 18." then "Or «19»", "Or ⑲", "Or •19", "Or \\\\framebox{19}" or "Or
\\\\colorbox{red}{19}", and "Answer: C" then "Or Ⓓ", "Or ⟨D⟩", "Or <D>" or "Or
\\\\underline{D}", were read as 18 and C under strict scoring, where "Or 19" and "Or D" are
hedges. A value offered is now read as it is drawn: enclosed letters and digits as plain
ones, punctuation of any script and angle brackets around it, and formatting commands (a
frame, a colour, emphasis, a font) taken off. The rule reads only values offered after the
answer, so it can make a text no answer and never reads a new one. No reward could be won
(the first statement was read either way); the held-out score was less strict than its rule.
"""

from __future__ import annotations

import pytest

from deliberation_env import tasks
from deliberation_env.tasks import Problem

WORK = "She has 16 - 3 - 4 = 9 eggs and sells each for $2: 9 * 2 = 18.\nThe answer is 18."
EGGS = Problem("p", "How many dollars does she make?", "18")
OPTIONS = Problem("p", "Which?\nA. 0\nB. 4\nC. 2\nD. 6", "C")
DRAWN = ["«{}»", "‹{}›", "⟨{}⟩", "「{}」", "•{}", "†{}", "❨{}❩", "<{}>", "\\framebox{{{}}}", "\\colorbox{{red}}{{{}}}",
         "\\underline{{{}}}", "\\emph{{{}}}", "\\bm{{{}}}", "\\hl{{{}}}"]  # fmt: skip


@pytest.fixture(scope="module")
def readers():
    return {name: tasks.get(name, **kw) for name, kw in (("gsm8k", {"path": "sample"}), ("arithmetic", {}),
            ("mmlu", {"path": "sample"}), ("math", {"path": "sample"}))}  # fmt: skip


@pytest.mark.parametrize("drawn", [*DRAWN, "{}"])
def test_a_number_offered_in_any_markup_is_a_hedge(readers, drawn):
    hedged = f"{WORK}\nOr {drawn.format(19)}"
    assert readers["gsm8k"].parse(EGGS, hedged) is None
    assert readers["arithmetic"].parse(EGGS, hedged) is None
    assert readers["math"].parse(EGGS, f"9 * 2 = 18, so $\\boxed{{18}}$.\nOr {drawn.format(19)}") is None


@pytest.mark.parametrize("drawn", [*DRAWN, "{}"])
def test_a_letter_offered_in_any_markup_is_a_hedge(readers, drawn):
    assert readers["mmlu"].parse(OPTIONS, f"Answer: C\nOr {drawn.format('D')}") is None


@pytest.mark.parametrize(("enclosed", "plain"), [("⑲", "19"), ("⒆", "19"), ("⒚", "19")])
def test_an_enclosed_number_offered_is_a_hedge(readers, enclosed, plain):
    assert readers["gsm8k"].parse(EGGS, f"{WORK}\nOr maybe {enclosed}") is None
    assert readers["gsm8k"].parse(EGGS, f"{WORK}\nOr maybe {plain}") is None


@pytest.mark.parametrize("enclosed", ["Ⓓ", "⒟", "🄳"])
def test_an_enclosed_letter_offered_is_a_hedge(readers, enclosed):
    assert readers["mmlu"].parse(OPTIONS, f"Answer: C\nOr {enclosed}") is None


@pytest.mark.parametrize("drawn", DRAWN)
def test_the_answer_restated_in_any_markup_keeps_it(readers, drawn):
    assert readers["gsm8k"].parse(EGGS, f"{WORK}\nOr {drawn.format(18)}") == "18"
    assert readers["mmlu"].parse(OPTIONS, f"Answer: C\nOr {drawn.format('C')}") == "C"
    assert readers["math"].parse(EGGS, f"9 * 2 = 18, so $\\boxed{{18}}$.\nOr {drawn.format(18)}") == "18"


@pytest.mark.parametrize(
    "after",
    [
        "• Option D is wrong: 6 is too large.",
        "«D» is the tempting distractor, but 6 is too large.",
        "⟨Note⟩ C is 2, as computed.",
        "\\emph{Check}: 2 + 2 = 4, so not D.",
    ],
)
def test_lines_that_discuss_in_such_markup_keep_the_answer(readers, after):
    assert readers["mmlu"].parse(OPTIONS, f"Answer: C\n{after}") == "C"


def test_a_stated_answer_in_such_markup_is_still_no_statement(readers):
    assert readers["gsm8k"].parse(EGGS, "The answer is ⑱.") is None
    assert readers["mmlu"].parse(OPTIONS, "Answer: Ⓒ") is None
