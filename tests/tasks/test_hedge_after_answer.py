"""A line after the final answer that offers another value is a hedge; one that explains is not.

"The answer is 12.\\n(or 11)", "\\boxed{19}\\nor maybe 20", "Answer: B\\nOption C is also
correct." and "...\\nWait, that's wrong: it's 13." were scored right under strict scoring:
the readers looked only at the final statement's line. The first rule that saw them (a
later line that doubts and holds any other number) refused honest explanations after the
answer (red team, round nine: 16 of 19 GSM8K follow-ups), so the value must be what the
line offers, not a number in passing.
"""

from __future__ import annotations

import pytest

from deliberation_env import tasks
from deliberation_env.tasks import Problem

WORK = "She has 16 - 3 - 4 = 9 eggs and sells each for $2: 9 * 2 = 18.\nThe answer is 18."
EGGS = Problem("p", "How many dollars does she make?", "18")


@pytest.fixture(scope="module")
def gsm8k():
    return tasks.get("gsm8k", path="sample")


@pytest.mark.parametrize(
    "after",
    [
        "\n(or 19).", "\nOr maybe 19.", "\nalternatively 19", "\n**Maybe nineteen.**", "\n\n- or perhaps 1,900",
        "\n19 is also possible.", "\nBut it might be 19.", "\nHmm, maybe 19.", "\n19?", "\n(19?)", "\n18 or 19.",
        "\nIt's 18 or 19.", "\n_Or maybe 19._", "\n1. or 19", "\nthe answer could also be 19", "\nWait, that's wrong: it's 19.",
        "\nActually no, 19.", "\n19", "\n\u039fr 19",  # Greek capital omicron
        "\nScratch that, it's 19.", "\nI meant 19.", "\nOr maybe about 19.", "\n19 also works.", "\nOr maybe 19 eggs.",
        "\nOr maybe 19 (if she eats 2).",
        # round eleven: lists of values, offering labels, retractions, conditions, other scripts
        "\n18, 19", "\nPossible answers: 18, 19.", "\nOptions: 18 or 19", "\nAlso possible: 19.",
        "\nSecond guess: 19.", "\nFinal: 19", "\nEdit: 19", "\nAns: 19", "\nTherefore 19.", "\nSorry, 19.",
        "\nI mean 19", "\nNope, 19", "\nNot 18 but 19", "\nOn second thought, 19.", "\n19 is equally likely.",
        "\nOr perhaps 19 if leftovers are counted.", "\n19 would be my other guess.", "\nAnother possible answer is 19.",
        "\nOr maybe \uff11\uff19.",  # full-width digits
        "\nNot 18, but 19.", "\nNot sure, but maybe 19.", "\n18 (or 19)", "\nMaybe 19 if we recheck",  # the final read
        "\nIf not, 19.", "\nPlan B: 19", "\nFallback: 19", "\n2nd choice: 19",  # round sixteen: fallbacks offered
        # round twenty-two: a sentence that retracts before the other value, doubts after a word
        # of its own, summary labels
        "\n18 is wrong. 19.", "\nNot 18. 19.", "\nOkay. Maybe 19.", "\ntbh maybe 19", "\nidk, probably 19",
        "\nTL;DR: 19", "\nConclusion: 19", "\nIn short: 19", "\nBottom line: 19", "\nMy pick: 19",
        # round twenty-three: what reading sentence by sentence alone let through (the line is read whole too)
        "\n19 dollars. Also works.", "\nSorry, 19. Also works.", "\nVerdict: 19. Also works.", "\nOr! 19.",
        "\nHmm. **19**! Good luck.", "\n18 is wrong! **19**! Good luck.", "\nFinal verdict: 19", "\nIncorrect: 18. Correct: 19.",
        "\nNo. 19.", "\nNope, 19.", "\nWrong. 19.",
        # round twenty-four: doubts, labels and "or" in other languages
        "\nOr was it 19?", "\nMy other guess is 19.", "\n19 would also be accepted.", "\nHunch: 19", "\nOder 19.",
        "\nOppure 19.", "\nThen again, 19.",
    ],
)  # fmt: skip
def test_a_later_line_offering_another_number_is_no_answer(gsm8k, after):
    assert gsm8k.parse(EGGS, WORK) == "18"
    assert gsm8k.parse(EGGS, WORK + after) is None
    assert tasks.get("gsm8k", path="sample", scoring="lenient").parse(EGGS, WORK + after) is not None


@pytest.mark.parametrize(
    "after",
    [
        "\n\nAlternatively, we can compute it as 16 - 7 = 9 eggs and 9 x $2 = $18.",
        "\n\nEither way, she makes $18 per day from 9 eggs.",
        "\n\nMaybe it helps to double-check: 9 x 2 = 18, and 3 + 4 + 9 = 16.",
        "\n\nCould there be another interpretation? No: she uses 7 of the 16 eggs, so 9 remain.",
        "\nNote: it's also true that she keeps 7 of the 16 eggs for herself.",
        "\n\nLet me verify:\n- Eggs laid: 16\n- Eaten: 3\n- Baked: 4\n- Sold: 9\n- Revenue: 9 x $2 = $18",
        "\n\nThis is what she makes every day; over a week (7 days) that would be $126.",
        "\nOr, in cents, 1800.",  # the answer in another unit
        "\nOr $18.00.",
        "\nWhy not 19? Because 9 * 2 is 18.",
        "\nI hope it is correct.",
        "\nNote: if she didn't bake muffins, it would be $26.",  # round ten: counterfactuals,
        "\nCommon mistake: 32 (forgetting the eggs she keeps).",  # values labelled wrong,
        "\nEggs remaining:\n$$9$$",  # a step's value displayed,
        "\nHow many eggs does she sell? 9.",  # a question the text answers,
        "\nEaten or baked: 7.",  # an "or" joining no values,
        "\nAlternatively, compute the eggs kept first: 7.",  # a step after "alternatively"
        "\n\nMaybe I should double-check: 9 eggs, $2 each. Yes, 18.",  # round eleven: a check, not a doubt
        "\nPerhaps check it: 9 eggs, 2 dollars each, 18 dollars.",
        "\nFirst week: 18 a day\nSecond week: 36",  # labels that offer nothing
        "\nNot 19 but 18",  # takes back another value for the answer
        # round twelve: what the first cut of round eleven's lists refused
        "\n\nCheck:\n16 - 3 - 4\n= 9\n9 x 2\n= 18",  # a calculation's continued lines
        "\n\nDay  Dollars\n1    18\n2    36",  # a table's rows
        "\n\nSo, 9 eggs and 18 dollars.",  # quantities with their units
        "\n(It would be 32 if she sold all 16 eggs.)",  # a counterfactual's condition
        "\n\nFinal answer: 18",
        "\n(16, 3, 4)", "\nThat is 9 and 9, so 18.", "\nNot 19, but 18.",  # lists that do not name the answer
        "\n(it could be 32 if she sold all 16)",  # a counterfactual in a parenthesis
        "\n\nWhy:\n" + "\n".join(f"Point {k}: she sells what she does not eat or bake." for k in range(70)),
        # round twenty-two: sentences read one by one keep what explains
        "\nShe sells 9 eggs. At $2 each, that's $18.", "\nCheck: 16 - 3 - 4 = 9. 9 * 2 = 18.",
        "\nEggs sold: 9. Revenue: 18.", "\nSo 18. Done!", "\nThat's it. 18 dollars.", "\nMr. Smith would say 18.",
        "\nIt might be worth noting that 16 - 7 = 9.", "\nConclusion: 18", "\nTL;DR: she makes $18 from 9 eggs.",
        # what the first cut of round twenty-two refused (an audit of honest follow-ups)
        "\nShe sells the rest, i.e. 9 eggs.", "\nShe sells approx. 9 eggs.", "\nCompare: $18 vs. $32.",
        "\nThat's 9 eggs. 9 eggs x $2 = $18.", "\nNote: 16 eggs - 7 eggs = 9 eggs. 9 eggs.",
        "\nThe number of eggs she sells is actually 9.", "\nThe wrong answer would be $32.",
        "\nNote that the number left may be 9 eggs.", "\nSummary: 9 eggs.", "\nBottom line: $2 each.",
        "\nShe eats 3 eggs, not 4. 9 eggs.", "\nNo tricks here. 9 eggs.",  # a reviewer's: negations in passing
        # what the first cut of round twenty-four refused (red team twenty-five): a step's labels and restatements
        "\nTotal: 16 eggs", "\n**Total:** 16 eggs", "\nTotal: 9", "\nResult: 9 eggs", "\nAlso: 9", "\nCount: 9",
        "\nValue: 2", "\nYes, 9 eggs.", "\nIt was 9 eggs.", "\nI'd say 9 eggs.", "\nGoing with 9 eggs.", "\nSame as 9.",
        "\n9 eggs, to be safe.", "\nO sea, 9 huevos.", "\nOu seja, 9 ovos.", "\nOder: 9 Eier.", "\nRecheck: 9",
        "\nThey split it 50/50: 9 each.", "\nThe split is 50/50, so 9 each.",  # a reviewer's: "50/50" is a split
    ],
)
def test_an_explanation_after_the_statement_keeps_the_answer(gsm8k, after):
    assert gsm8k.parse(EGGS, WORK + after) == "18"


def test_the_same_value_written_another_way_is_no_other_value():
    task = tasks.get("arithmetic")
    half = Problem("p", "What is 1 / 2?", "0.5")
    assert task.parse(half, "The answer is 0.5.\nOr 1/2.") == "0.5"
    assert task.parse(half, "The answer is 0.5.\nOr 1/3.") is None


NINE = "Solving $x^2 = 81$ with $x > 0$ gives $x = 9$.\n\nThe final answer is $\\boxed{9}$."


@pytest.mark.parametrize(
    ("after", "kept"),
    [
        ("\nBut it might be 10.", False), ("\nOr maybe $-9$", False), ("\nOr maybe $\\sqrt{100}$", False),
        ("\n10 is also plausible.", False), ("\nWait, that's wrong: it's $10$.", False), ("\n\\text{or } 10", False),
        ("\nOr perhaps ten.", False), ("\n9 or 10.", False),
        ("\n\nAlternatively, note that $81 = 3^4$, so $x = 3^2 = 9$.", True),
        ("\n\nEither way, $x = 9$ since $x > 0$ excludes $-9$.", True),
        ("\n\n**Note:** $-9$ is also a solution of $x^2 = 81$, but it is excluded by $x > 0$.", True),
        ("\n\nOr, equivalently, $x = \\sqrt{81} = 9$.", True), ("\nOr equivalently nine.", True),
        ("\nOr equivalently, $9.0$ (900%).", True), ("\nI hope it is correct.", True),
        ("\nOr maybe $x = 10$.", False), ("\nOr maybe $10$ cm", False), ("\n$-9$ is also a solution.", False),
        ("\ni.e. $3^2$", True), ("\n$\\blacksquare$", True), ("\n$9 \\, \\checkmark$", True), ("\n(\u2248 9.0)", True),
        ("\nIf $x < 0$ were allowed, it would be $-9$.", True),
        ("\nOr maybe 9 and 10", False), ("\n9, 10", False), ("\nAlternate answer: 10", False),  # round eleven
        ("\n$9$, i.e. $3^2$", True), ("\n9, that is $3^2$", True),
        ("\n\nFinal Answer: $9$", True), ("\n$13$ when $x = 5$, as required.", True),  # round twelve
        ("\nPossible answers: 9, 10", False),
        ("\nOr was it $10$?", False), ("\nMy other guess is $10$.", False), ("\nThen again, $10$.", False),  # round 24
    ],
)  # fmt: skip
def test_math_a_later_line_offering_another_value_is_no_answer(after, kept):
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Solve $x^2 = 81$ for $x > 0$.", "9")
    assert (task.parse(problem, NINE + after) == "9") is kept


def test_math_an_approximation_or_a_percentage_of_the_answer_keeps_it():
    task = tasks.get("math", path="sample")
    circle = Problem("math:p", "Compute.", "2\\pi")
    for after in ["\n(\u2248 6.28)", "\n~6.28", "\n(approximately $6.28$)", "\n6.28 (rounded)"]:
        assert task.parse(circle, "So $\\boxed{2\\pi}$." + after) == "2\\pi", after
    assert task.parse(circle, "So $\\boxed{2\\pi}$.\nOr maybe 6.5") is None
    half = Problem("math:p", "Compute.", "\\frac{1}{2}")
    assert task.parse(half, "So $\\boxed{\\frac{1}{2}}$.\n(50%)") is not None


def test_math_a_parenthesis_with_a_restatement_after_its_or_keeps_the_answer():
    """A final check's honest ending: "(or 0.5, i.e. 50%)" was offered whole, one value."""
    task = tasks.get("math", path="sample")
    half = Problem("math:p", "Compute.", "\\frac{1}{2}")
    assert task.parse(half, "So $$\\boxed{\\frac{1}{2}}$$\n\n(or 0.5, i.e. 50%)") is not None
    assert task.parse(half, "So $$\\boxed{\\frac{1}{2}}$$\n\n(or maybe 0.6, not sure)") is None


def test_math_a_mixed_number_restating_the_answer_keeps_it():
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Compute.", "\\frac{14}{3}")
    assert task.parse(problem, "So $\\boxed{\\frac{14}{3}}$.\nOr, as a mixed number, $4\\frac{2}{3}$.") is not None
    assert task.parse(problem, "So $\\boxed{\\frac{14}{3}}$.\nOr maybe $\\frac{3}{14}$.") is None


@pytest.fixture(scope="module")
def mmlu():
    task = tasks.get("mmlu", path="sample")
    problem = task.problems("test")[0]
    other = "C" if problem.answer != "C" else "D"
    return task, problem, other


@pytest.mark.parametrize(
    "after",
    ["\n(or maybe {o})", "\nOr possibly {o}.", "\nAlternatively, {o} could be right.", "\nOption {o} is also correct.",
     "\n{o}?", "\n{l} or {o}.", "\nActually, no: {o}.", "\nor\n{o}", "\nOr maybe {lower}", "\nThough {o} is possible.",
     "\nHmm, {o}.", "\n{o} might also be the best answer.", "\nOption {o} also fits.",
     "\n{l}, {o}", "\n{l}/{o}", "\n({l}/{o})", "\nboth {l} and {o}", "\nFinal: {o}", "\nNot {l} but {o}",
     "\n{o} would be my second choice.", "\nOn second thought, {o}.", "\nSorry, {o}.",
     "\nRunner-up: {o}", "\nIf not, {o}.", "\nPlan B: {o}",
     "\n{l} is wrong. {o}.", "\nFinal pick: {o}", "\nTL;DR: {o}",  # round twenty-two
     "\n{o}. Also works.", "\noption {o}. Also works.", "\nOr! {o}",  # round twenty-three
     "\nOr was it {o}?", "\nThen again, {o}.", "\nHunch: {o}", "\nCoin flip: {o}"],  # round twenty-four
)  # fmt: skip
def test_a_later_line_offering_another_letter_is_no_answer(mmlu, after):
    task, problem, other = mmlu
    text = f"Answer: {problem.answer}" + after.format(o=other, l=problem.answer, lower=other.lower())
    assert task.parse(problem, f"Answer: {problem.answer}") == problem.answer
    assert task.parse(problem, text) is None


@pytest.mark.parametrize(
    "after",
    [
        "\nWhy not the others? Option {o} is too small.", "\nOption {o} might seem right, but it is not.",
        "\nOption {o} is also wrong.", "\nA common mistake could be to misread the question.", "\nMaybe that helps.",
        "\n\nCould {o} work? No: it fails the second condition.", "\n\nPerhaps the most common mistake is choosing {o}.",
        "\n\nMight be tempting to choose {o}, but it is not.", "\n\nOr, in words: {l}.",
        "\n{o} is true.", "\n{o} is true, but it is not the best answer.", "\nAt first glance, {o} might be right, but no.",
        "\nIncorrect: {o}.", "\nCould it be {o}? No, it fails the second condition.",
        "\n{o}. something else - incorrect.", "\nOption {o}. is incorrect because it fails.",  # round twenty-two's audit
        "\nThe most common wrong choice is {o}.", "\nWhy the others are wrong:\n{o}. fails the second condition.",
    ],
)  # fmt: skip
def test_a_later_line_discussing_the_options_keeps_the_letter(mmlu, after):
    task, problem, other = mmlu
    assert task.parse(problem, f"Answer: {problem.answer}" + after.format(o=other, l=problem.answer)) == problem.answer


@pytest.mark.parametrize(
    ("gold", "after"),
    [
        ("(2, 3)", "\n\nFinal Answer: $(2, 3)$"), ("(2, 3)", "\n\n**Answer:** (2,3)"), ("-2, 3", "\n\nAnswer: $-2$ and $3$"),
        ("-2, 3", "\n\n-2, 3"), ("1, 2, 3", "\n\n**Final Answer:** 1, 2, 3"), ("[2, 5)", "\n\nFinal Answer: $[2, 5)$"),
        ("\\{1, 3\\}", "\n\nAnswer: $\\{1, 3\\}$"), ("10000", "\n\nFinal Answer: $10,\\!000$"),
        ("1000000", "\n\nFinal Answer: $1{,}000{,}000$"), ("(2, 3)", "\n\nFinal answer: $x = 2, y = 3$"),
        ("12", "\n\n$V = 8, F = 6$"), ("3", "\n\nPossible values of $n$: 1, 2, 4"),
    ],
)  # fmt: skip
def test_math_a_restatement_with_commas_keeps_the_answer(gold, after):
    """Round twelve: round eleven's first cut read a line with commas as a list of values,
    so a set, a pair, an interval or a grouped number restated after the box was a hedge."""
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Compute.", gold)
    assert task.is_correct(problem, task.parse(problem, f"So $\\boxed{{{gold}}}$.{after}"))


def test_a_list_of_the_options_keeps_the_letter():
    """Round twelve: "A) Lungs" read "a" as an article and the option as A."""
    task = tasks.get("mmlu", path="sample")
    problem = Problem("mmlu:p", "Which organ pumps blood?", "B", {"choices": ["Lungs", "Heart", "Liver", "Kidney"]})
    for after in ["\n\nOptions:\nA) Lungs\nB) Heart\nC) Liver\nD) Kidney", "\n\nA - Lungs\nB - Heart",
                  "\n\n(A) Lungs (B) Heart (C) Liver (D) Kidney", "\n\nOptions eliminated: A, C, D"]:  # fmt: skip
        assert task.parse(problem, "Answer: B" + after) == "B", after
    both = Problem("mmlu:p", "Which?", "C", {"choices": ["Lungs", "Heart", "Both A and B", "Neither"]})
    assert task.parse(both, "Answer: C\nBoth A and B.") == "C"  # the option's own text, not a list
    assert task.parse(both, "Answer: C\nC (or B)") is None


def test_an_option_named_with_an_article_keeps_the_letter():
    """Round eleven: "Answer: B) The heart" was refused where the option reads "Heart"."""
    task = tasks.get("mmlu", path="sample")
    problem = Problem("mmlu:p", "Which organ pumps blood?", "B", {"choices": ["Lungs", "Heart", "Liver", "Kidney"]})
    for text in ["Answer: B) The heart", "Answer: B. The Heart.", "Answer: B\nB) the heart"]:
        assert task.parse(problem, text) == "B", text
    assert task.parse(problem, "Answer: B) The liver") is None


@pytest.mark.parametrize(
    "after",
    ["\nO is the origin, so r = 3.", "\nO = (0, 0)", "\nO lies at the origin and P = (0,3), so OP = 3.", "\nYes, $r = 3$.",
     "\nIt was $r = 3$.", "\nAlso: r = 3", "\nResult: r = 3", "\nNumber: 3"],
)  # fmt: skip
def test_math_a_point_named_o_or_a_restated_step_keeps_the_answer(after):
    """Red team twenty-five: "o" (Spanish and Italian "or") opened a line about a point named O."""
    task = tasks.get("math", path="sample")
    problem = Problem("math:polar", "Convert (0, 3) to polar coordinates.", "\\left( 3, \\frac{\\pi}{2} \\right)")
    text = "The point is on the positive y-axis, so r = 3 and theta = pi/2.\n\\boxed{\\left(3, \\frac{\\pi}{2}\\right)}"
    assert task.parse(problem, text) is not None
    assert task.parse(problem, text + after) == task.parse(problem, text)
