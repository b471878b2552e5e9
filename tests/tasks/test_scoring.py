"""Strict and lenient scoring of every answer task, on hand-written completions.

Each case is a completion a policy could write: cut off before its final line,
unformatted (a right number, never stated), the right answer stated, a wrong answer
stated, and hedged (two different answers stated). Strict scoring counts only an answer
stated in the form the task's prompt asks for; lenient scoring is the forgiving reader.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from deliberation_env import tasks
from deliberation_env.tasks import Problem
from deliberation_env.tasks.base import AnswerTask, with_scoring
from deliberation_env.tasks.jsonl import canonical_text
from deliberation_env.tasks.math import stated_answer


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def only_problem(task):
    (problem,) = [*task.problems("train"), *task.problems("test")]
    return problem


# ------------------------------------------------------------------ tasks, each with one problem
def arithmetic(tmp_path, **scoring):
    task = tasks.get("arithmetic", difficulty=1, **scoring)
    return task, task.problems("test")[0]


def gsm8k(tmp_path, **scoring):
    for split, answer in (("train", "#### 3"), ("test", "9 - 1 = 8\n#### 8")):
        write_jsonl(tmp_path / f"{split}.jsonl", [{"question": f"{split}: how many?", "answer": answer}])
    task = tasks.get("gsm8k", path=tmp_path, **scoring)
    return task, task.problems("test")[0]


def jsonl_numeric(tmp_path, **scoring):
    task = tasks.get("jsonl", path=write_jsonl(tmp_path / "n.jsonl", [{"question": "9 - 1?", "answer": 8}]), **scoring)
    return task, only_problem(task)


def math_task(tmp_path, **scoring):
    records = [{"problem": "Half of one?", "solution": "It is $\\boxed{\\frac{1}{2}}$."}]
    task = tasks.get("math", path=write_jsonl(tmp_path / "math.jsonl", records), **scoring)
    return task, only_problem(task)


def aime(tmp_path, **scoring):
    task = tasks.get("aime", path=write_jsonl(tmp_path / "aime.jsonl", [{"problem": "P?", "answer": "8"}]), **scoring)
    return task, only_problem(task)


def mmlu(tmp_path, **scoring):
    record = {"question": "Which organ pumps blood?", "choices": ["Lung", "Heart", "Liver", "Kidney"], "answer": 1}
    task = tasks.get("mmlu", path=write_jsonl(tmp_path / "mmlu.jsonl", [record]), **scoring)
    return task, only_problem(task)


def jsonl_text(tmp_path, **scoring):
    record = {"question": "Capital of France?", "answer": "Paris"}
    task = tasks.get("jsonl", path=write_jsonl(tmp_path / "t.jsonl", [record]), **scoring)
    return task, only_problem(task)


ARITHMETIC_ANSWER = tasks.get("arithmetic").problems("test")[0].answer  # 18: "What is 9 + 4 + 5?"


def numeric_cases(answer: str) -> list[tuple[str, str, bool, bool]]:
    """(case, completion, correct under strict, correct under lenient) for a number answer."""
    wrong = str(int(answer) + 1)
    return [
        ("cut off", f"Adding the terms gives {answer}, so the ans", False, True),
        ("unformatted", f"8 + 0 + 9 = {answer}", False, True),
        ("right stated", f"We add the terms.\nThe answer is {answer}.", True, True),
        ("right stated in markup", f"The final answer is **${answer}$**.", True, True),
        ("wrong stated", f"The answer is {wrong}.", False, False),
        ("hedged", f"The answer is {wrong}. The answer is {answer}.", False, True),
        ("stated, then more on its line", f"The answer is {answer}. Check: 2 + 2 = 4", False, True),
        ("stated, then a number on the next line", f"The answer is {answer}.\nCheck: 2 + 2 = 4", True, True),
        ("stated as an expression", f"The answer is 1 + {answer}", False, False),
        ("repeated", f"The answer is {answer}.\n\nThe answer is {answer}.", True, True),
    ]


CASES: dict[str, Sequence[tuple[str, str, bool, bool]]] = {
    "arithmetic": numeric_cases(ARITHMETIC_ANSWER),
    "gsm8k": numeric_cases("8"),
    "jsonl_numeric": numeric_cases("8"),
    "math": [
        ("cut off", "So the answer is $\\frac{1}{2}$.\nBoxed: \\boxed{\\frac{1}", False, True),
        ("unformatted", "The answer is $\\frac{1}{2}$.", False, True),
        ("right stated", "Half of one: $\\boxed{\\frac{1}{2}}$.", True, True),
        ("right stated twice", "$\\boxed{\\frac{1}{2}}$.\nThat is \\boxed{ \\frac{1}{2} }", True, True),
        ("right stated, then more on its line", "$\\boxed{\\frac{1}{2}}$, that is \\boxed{ \\frac{1}{2} }", False, True),
        ("right stated in two spellings", "$\\boxed{0.5}$, that is \\boxed{\\dfrac{1}{2}}", False, True),
        ("wrong stated", "\\boxed{2}", False, False),
        ("hedged", "Either \\boxed{2} or \\boxed{\\frac{1}{2}}.", False, True),
    ],
    "aime": [
        ("unformatted", "9 - 1 = 8, the answer is 8.", False, True),
        ("right stated", "So \\boxed{008}.", True, True),
        ("hedged", "\\boxed{7} \\boxed{8}", False, True),
    ],
    "mmlu": [
        ("cut off", "The heart pumps blood: option B is right. Ans", False, True),
        ("unformatted", "B", False, True),
        ("right stated", "The heart pumps blood.\nAnswer: B", True, True),
        ("right stated in markup", "**Answer:** (B)", True, True),  # lenient missed it before round four
        ("wrong stated", "Answer: A", False, False),
        ("hedged", "Answer: A\nAnswer: B", False, True),
    ],
    "jsonl_text": [
        ("cut off", "The capital of France is Paris. The fin", False, False),
        ("unformatted", "Paris", False, False),
        ("right stated", "Let me think.\nAnswer: Paris.", True, True),
        ("wrong stated", "Answer: Lyon", False, False),
        ("hedged", "Answer: Lyon\nAnswer: Paris", False, True),
    ],
}
BUILDERS = {
    "arithmetic": arithmetic,
    "gsm8k": gsm8k,
    "jsonl_numeric": jsonl_numeric,
    "math": math_task,
    "aime": aime,
    "mmlu": mmlu,
    "jsonl_text": jsonl_text,
}


@pytest.mark.parametrize(
    ("kind", "case", "text", "strict", "lenient"),
    [(kind, *case) for kind, cases in CASES.items() for case in cases],
    ids=[f"{kind}-{case[0]}" for kind, cases in CASES.items() for case in cases],
)
def test_strict_and_lenient_scoring_of_a_completion(tmp_path, kind, case, text, strict, lenient):
    for scoring, expected in (("strict", strict), ("lenient", lenient)):
        task, problem = BUILDERS[kind](tmp_path, scoring=scoring)
        assert task.scoring == scoring
        assert task.is_correct(problem, task.parse(problem, text)) is expected, (scoring, case)


def test_strict_is_the_default_of_every_answer_task(tmp_path):
    for build in BUILDERS.values():
        task, _ = build(tmp_path)
        assert isinstance(task, AnswerTask) and task.scoring == "strict"


def test_a_stated_answer_is_read_in_every_asked_form():
    task = tasks.get("arithmetic")
    problem = Problem("p", "What is 1000 + 250?", "1250")
    for text in (
        "The answer is 1250.",
        "the answer is 1,250",
        "The final answer is: $1,250",
        "The answer is \\boxed{1250}.",
        "The answer is \\(1250\\).",
        "The answer is 1250.0",
    ):
        assert task.parse(problem, text) == "1250", text
    for text in (
        "Answer: 1250",
        "#### 1250",
        "\\boxed{1250}",
        "1250",
        "The answer is 1250 or 1251",
        "The answer is 1250, 1251",
        "The answer is 1250 apples.",
    ):
        assert task.parse(problem, text) is None, text


def test_scoring_is_checked_and_copies_share_the_problems(tmp_path):
    with pytest.raises(ValueError, match="scoring must be 'strict'.*or 'lenient'"):
        tasks.get("arithmetic", scoring="loose")
    with pytest.raises(ValueError, match="scoring must be"):
        gsm8k(tmp_path, scoring="Strict")
    strict = tasks.get("arithmetic")
    lenient = with_scoring(strict, "lenient")
    assert lenient is not strict and lenient.problems("test") is strict.problems("test")
    assert strict.scoring == "strict" and with_scoring(strict, "strict") is strict


def test_a_task_without_the_option_has_no_lenient_reading():
    class OwnTask:
        name, instructions = "own", "Say the number."

        def problems(self, split):
            return [Problem("o", "1?", "1")]

        def parse(self, problem, text):
            return text.strip() or None

        def is_correct(self, problem, decision):
            return decision == problem.answer

        def decision_key(self, problem, decision):
            return decision

    own = OwnTask()
    assert not isinstance(own, AnswerTask)
    assert with_scoring(own, "strict") is own  # it reads its own way
    with pytest.raises(ValueError, match="'own' has no lenient scoring"):
        with_scoring(own, "lenient")


def test_reading_a_huge_completion_stays_linear():
    task = tasks.get("arithmetic")
    problem = task.problems("test")[0]
    hostile = "The answer is" + " " * 200_000 + "*" * 100_000 + "answer is " * 50_000
    assert task.parse(problem, hostile) is None
    nested = "\\boxed{" * 100_000 + "1" + "}" * 100_000
    assert stated_answer(nested) == nested[len("\\boxed{") : -1]  # one outer box
    assert stated_answer("\\boxed{1}" * 20_000 + "\\boxed{2}") is None


@pytest.mark.parametrize(
    "text",
    ["Answer: **Paris**", "**Answer:** Paris", "Answer: *Paris*", "Answer: Paris!", 'Answer: "Paris"', "Answer: `Paris`",
     "**Answer:** **Paris**.", "Answer:\n\n**Paris**"],
)  # fmt: skip
def test_a_text_answer_in_markdown_is_read_without_its_markup(tmp_path, text):
    """Red team twenty-four: the markup stayed in the answer, so "**Answer:** Paris", the form small
    instruct models write most, was wrong (read as "** paris")."""
    path = tmp_path / "capitals.jsonl"
    path.write_text('{"question": "Capital of France?", "answer": "Paris"}\n')
    task = tasks.get("jsonl", path=str(path))
    paris, quote = Problem("p", "Capital of France?", canonical_text("Paris")), Problem("q", "Quote?", canonical_text('"Hi"'))
    assert task.is_correct(paris, task.parse(paris, text))
    assert not task.is_correct(paris, task.parse(paris, text.replace("Paris", "Paris or London")))
    assert task.is_correct(quote, task.parse(quote, 'Answer: "Hi"')) and not task.is_correct(quote, task.parse(quote, "Answer: Hi"))


@pytest.mark.parametrize(
    ("reference", "right", "wrong"),
    [("A*", "**A***", "A"), ("5!", "`5!`", "5"), ("3", "**3**", "3!"), ("__init__", "`__init__`", "init"), ("C++", "*C++*", "C"),
     ("**", "`**`", "*"), ('""', '""', '"'), ("?!", "?!", "?")],
)  # fmt: skip
def test_only_the_markup_around_an_answer_goes_never_the_references_own(tmp_path, reference, right, wrong):
    """Red team twenty-five: stripping the marks from the reference too judged "A" right for "A*"
    and "5" for "5!", and refused to load references such as "**" (empty once stripped)."""
    path = tmp_path / "marks.jsonl"
    path.write_text(json.dumps({"question": "Which?", "answer": reference, "id": 1}) + "\n")
    task = tasks.get("jsonl", path=str(path), answers="text")
    problem = Problem("p", "Which?", canonical_text(reference))
    for scoring in ("strict", "lenient"):
        scored = task if scoring == "strict" else tasks.get("jsonl", path=str(path), answers="text", scoring="lenient")
        assert scored.is_correct(problem, scored.parse(problem, f"Reasoning.\nAnswer: {right}")), (scoring, right)
        assert not scored.is_correct(problem, scored.parse(problem, f"Reasoning.\nAnswer: {wrong}")), (scoring, wrong)
