"""A later line that offers another answer behind a label without its colon, a mark, or words
of choosing is a hedge (red team, round twenty-nine).

"The answer is 17.\\n\\nP.S. 18" and "The answer is 17.\\n| 18 |" were read as 17 under
strict scoring, and so were "...\\n18 is my answer.", "...\\nRevised 18", "...\\n=> 18",
"...\\n— 18", "...\\n18…", "...\\nHowever, 18." and, on MMLU, "Answer: B\\nI pick C.": each
offers a second value after the stated one, which the rule of
:mod:`deliberation_env.tasks.hedges` refuses ("...\\nEdit: 19", "...\\n→ 19" and "...\\n19"
already were). Lines that explain (a table of several columns, a quantity with its unit
after "and ... remain") keep the answer, and 952 recorded completions (the benchmark
results and a response cache) read as before.
"""

from __future__ import annotations

import pytest

from deliberation_env import tasks
from deliberation_env.tasks import Problem
from deliberation_env.tasks.mmlu import stated_letter

WORK = "She has 16 - 3 - 4 = 9 eggs and sells each for $2: 9 * 2 = 18.\nThe answer is 18."
EGGS = Problem("p", "How many dollars does she make?", "18")
OFFERS = [
    "\n\nP.S. 19", "\nPS 19", "\nP.S.: 19", "\n| 19 |", "\n19 is my answer.", "\n19 is the right answer.",
    "\n19 is the real answer.", "\n19 would be my pick.", "\nUpdate 19", "\nUPD: 19", "\nCorrected 19", "\nRevised 19",
    "\n=> 19", "\n— 19", "\n– 19", "\n✓ 19", "\n19…", "\n…19", "\nOk 19", "\nOkay, 19.", "\nHowever, 19.",
    "\n19 — final.", "\nAnd 19.", "\n19, actually.", "\nI pick 19.", "\nVote: 19", "\nMy vote: 19", "\n19 ;",
]  # fmt: skip


@pytest.fixture(scope="module")
def gsm8k():
    return tasks.get("gsm8k", path="sample")


@pytest.mark.parametrize("after", OFFERS)
def test_a_number_offered_behind_a_label_or_mark_is_no_answer(gsm8k, after):
    assert gsm8k.parse(EGGS, WORK) == "18"
    assert gsm8k.parse(EGGS, WORK + after) is None
    assert tasks.get("arithmetic").parse(EGGS, WORK + after) is None


@pytest.mark.parametrize(
    "after",
    [
        "\n\n| Day | Dollars |\n|---|---|\n| 1 | 18 |\n| 2 | 36 |",  # a table of several columns
        "\n| 18 |",  # the answer itself
        "\nP.S. She keeps 7 of the 16 eggs.", "\nAnd 9 eggs remain unsold? No: all 9 are sold.",
        "\nHowever, she keeps 7 eggs.", "\nOk, that is 9 eggs at $2 each.", "\n18 is my answer.", "\n✓ 18",
        "\nRevised: 18", "\n=> 18 dollars",
    ],
)  # fmt: skip
def test_lines_that_explain_or_restate_keep_the_answer(gsm8k, after):
    assert gsm8k.parse(EGGS, WORK + after) == "18"


@pytest.mark.parametrize(
    "after",
    ["\n\nP.S. C", "\n| C |", "\nPS C", "\n=> C", "\n✓ C", "\nC is my answer.", "\nC is the right answer.",
     "\nUpdate C", "\nRevised C", "\nC…", "\nOk C", "\nHowever, C.", "\nC — final.", "\n— C", "\nAnd C.",
     "\nC, actually.", "\nC it is.", "\nI pick C.", "\nI choose C.", "\nSelect C", "\nVote: C"],
)  # fmt: skip
def test_mmlu_an_option_offered_behind_a_label_or_mark_is_no_answer(after):
    mmlu = tasks.get("mmlu", path="sample")
    problem = Problem("p", "Which?\nA. 0\nB. 4\nC. 2\nD. 6", "B")
    assert mmlu.parse(problem, "Reasoning.\nAnswer: B") == "B"
    assert mmlu.parse(problem, "Reasoning.\nAnswer: B" + after) is None


@pytest.mark.parametrize("after", ["\n| 18 |", "\nPS 18", "\n=> 18", "\n18 is my answer.", "\nRevised 18", "\nI pick 18."])
def test_math_an_expression_offered_behind_a_label_or_mark_is_no_answer(after):
    math_task = tasks.get("math", path="sample")
    problem = Problem("p", "What is 8+9?", "17")
    text = "8+9=17.\nThe final answer is $\\boxed{17}$."
    assert math_task.parse(problem, text) == "17"
    assert math_task.parse(problem, text + after) is None


@pytest.mark.parametrize("label", ["Answer (alternative)", "Answer (alt)", "Second guess (less likely)", "Edit (later)"])
def test_a_label_with_a_parenthesis_still_offers_what_follows_it(gsm8k, label):
    """Red team 32: "Answer: C" then "Answer (alternative): A" was read as C under strict
    scoring: the parenthesis between the label and its colon hid the label. A restatement
    behind such a label ("Answer (in dollars): 18") keeps the answer."""
    assert stated_letter(f"Answer: C\n{label}: A") is None
    assert gsm8k.parse(EGGS, f"{WORK}\n{label}: 19") is None
    assert stated_letter(f"Answer: C\n{label}: C") == "C"
    assert gsm8k.parse(EGGS, f"{WORK}\nAnswer (in dollars): 18") == "18"
