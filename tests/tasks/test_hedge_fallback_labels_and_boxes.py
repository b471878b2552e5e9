"""A later line that offers another answer behind a fallback's label, a second statement
written with ``=`` or ``-``, or a box other than ``\\boxed{X}`` is a hedge (red team 34).

"The answer is 18." then "Fallback 19" (also "Backup 19", "Alt 19", "Alternative 19",
"Failing that, 19", "Runner-up 19", "Next best 19") was read as 18 under strict scoring on
gsm8k, arithmetic, MMLU and MATH: the hedge rule knew "fallback" and "backup" as doubts but
did not take them off the value they offer (as round twenty-nine did for "P.S. 18" and
"Revised 18"). On MMLU, "Answer: B" then "Answer = C", "Answer - C", ``\\fbox{C}`` or
``\\boxed{C.}`` was read as B, and on the numeric tasks "The answer is 18." then
``\\fbox{19}`` as 18. No reward could be won (lenient scoring reads the first answer too);
the held-out score was less strict than its rule.
"""

from __future__ import annotations

import pytest

from deliberation_env import tasks
from deliberation_env.tasks import Problem
from deliberation_env.tasks.mmlu import extract_letter

WORK = "She has 16 - 3 - 4 = 9 eggs and sells each for $2: 9 * 2 = 18.\nThe answer is 18."
EGGS = Problem("p", "How many dollars does she make?", "18")
OPTIONS = Problem("p", "Which?\nA. 0\nB. 4\nC. 2\nD. 6", "B")
SUM = Problem("p", "What is 8+9?", "17")
BOXED_SUM = "8+9=17.\nThe final answer is $\\boxed{17}$."
LABELS = ["Fallback {}", "Fall back {}", "Backup {}", "Backup answer {}", "Alt {}", "Alt. {}", "Alternative {}",
          "Failing that, {}", "Runner-up {}", "Next best {}", "Hedge {}"]  # fmt: skip


@pytest.fixture(scope="module")
def readers():
    return {name: tasks.get(name, **kw) for name, kw in (("gsm8k", {"path": "sample"}), ("arithmetic", {}),
            ("mmlu", {"path": "sample"}), ("math", {"path": "sample"}))}  # fmt: skip


@pytest.mark.parametrize("label", LABELS)
def test_a_value_behind_a_fallback_label_is_no_answer(readers, label):
    assert readers["gsm8k"].parse(EGGS, f"{WORK}\n{label.format(19)}") is None
    assert readers["arithmetic"].parse(EGGS, f"{WORK}\n{label.format(19)}") is None
    assert readers["mmlu"].parse(OPTIONS, f"Reasoning.\nAnswer: B\n{label.format('C')}") is None
    assert readers["math"].parse(SUM, f"{BOXED_SUM}\n{label.format(18)}") is None


@pytest.mark.parametrize("label", LABELS)
def test_the_answer_restated_behind_a_fallback_label_keeps_it(readers, label):
    assert readers["gsm8k"].parse(EGGS, f"{WORK}\n{label.format(18)}") == "18"
    assert readers["mmlu"].parse(OPTIONS, f"Reasoning.\nAnswer: B\n{label.format('B')}") == "B"
    assert readers["math"].parse(SUM, f"{BOXED_SUM}\n{label.format(17)}") == "17"


@pytest.mark.parametrize(
    "after",
    [
        "Answer = C",
        "ANSWER = C",
        "Answer - C",
        "Answer – C",
        "\\fbox{C}",
        "$\\fbox{C}$",
        "\\boxed{C.}",
        "\\boxed{(C)!}",
    ],
)
def test_mmlu_a_second_statement_or_box_of_another_letter_is_no_answer(readers, after):
    assert readers["mmlu"].parse(OPTIONS, "Reasoning.\nAnswer: B") == "B"
    assert readers["mmlu"].parse(OPTIONS, f"Reasoning.\nAnswer: B\n{after}") is None
    assert (
        readers["mmlu"].parse(OPTIONS, f"Reasoning.\nAnswer: B\n{after.replace('C', 'B')}") == "B"
    )


def test_mmlu_lenient_reading_is_unchanged_by_the_strict_box_marks():
    assert extract_letter("\\boxed{C.}") is None  # lenient reads the boxes it read before
    assert extract_letter("Answer: B\n\\fbox{C}") == "B"


@pytest.mark.parametrize("box", ["\\fbox{19}", "$\\fbox{19}$"])
def test_numeric_a_number_in_another_box_is_no_answer(readers, box):
    assert readers["gsm8k"].parse(EGGS, f"{WORK}\n{box}") is None
    assert readers["gsm8k"].parse(EGGS, f"{WORK}\n{box.replace('19', '18')}") == "18"


@pytest.mark.parametrize(
    "after",
    ["\nAlternative method: 16 - 7 = 9 eggs, and 9 * 2 = 18 dollars.", "\nBackup plan: she sells 9 eggs at $2 each.",
     "\nAlt text: a basket of 16 eggs."],
)  # fmt: skip
def test_lines_that_explain_behind_such_labels_keep_the_answer(readers, after):
    assert readers["gsm8k"].parse(EGGS, WORK + after) == "18"


@pytest.mark.parametrize("label", ["Backup 1", "Fallback 2", "Fall back 1", "Backup 1 (units)"])
def test_a_numbered_fallback_label_that_explains_keeps_the_answer(readers, label):
    """Red team 36: once "backup" and "fallback" were filler, a numbered label that explains
    ("Backup 1: check 9 * 2.") offered its number, 1, and hid the answer 18 (it read 18
    before red team 34), where "Alternative 1:" and "Step 1:" keep it."""
    for after in (f"\n{label}: check 9 * 2.", f"\n{label}: 9 * 2 = 18 dollars.", f"\n- {label}: verify the sum."):
        assert readers["gsm8k"].parse(EGGS, WORK + after) == "18"
    assert readers["mmlu"].parse(OPTIONS, f"Reasoning.\nAnswer: B\n{label}: check the units.") == "B"
    assert readers["gsm8k"].parse(EGGS, f"{WORK}\n{label}: 19") is None  # what follows the label is still offered
