"""Honest splits: no registered task ever puts a problem in both train and test.

Every task of ``deliberation_env.tasks`` is built here (file-based ones from a single
fixture file written to ``tmp_path``, which they must split themselves) and its splits
are checked disjoint by problem id and by normalized question text. The fixture holds
copies of questions that differ only in spacing and case, on other lines (so their
line-based ids differ): they must land in the same split.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from deliberation_env import tasks
from deliberation_env.tasks.sources import question_key

QUESTIONS = [f"How many apples are left if Ana has {n} apples and eats {n % 7}?" for n in range(40)]
COPIES = [f"  how MANY apples are left if ana has {n} apples\nand eats {n % 7}? " for n in range(0, 40, 5)]
"""Copies of every fifth question, differing only in spacing and case."""


def _answer(question: str) -> int:
    n = int(question.split(" has ")[1].split()[0])
    return n - n % 7


def _record(name: str, question: str) -> dict:
    """A valid record of task ``name`` for ``question``."""
    answer = _answer(question)
    if name == "gsm8k":
        return {"question": question, "answer": f"She eats some.\n#### {answer}"}
    if name == "jsonl":
        return {"question": question, "answer": str(answer)}
    if name == "math":
        return {"problem": question, "solution": f"So $\\boxed{{{answer}}}$.", "level": "Level 1", "type": "Prealgebra"}
    if name in ("aime", "amc"):
        return {"problem": question, "answer": answer}
    if name == "mmlu":
        return {"question": question, "choices": ["1", "2", "3", str(answer)], "answer": "D"}
    raise AssertionError(f"no fixture for task {name!r}")


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def _single_file_task(name: str) -> Callable[[Path], tasks.Task]:
    def build(tmp_path: Path) -> tasks.Task:
        records = [_record(name, q) for q in QUESTIONS + COPIES]
        return tasks.get(name, path=_write(tmp_path / f"{name}.jsonl", records))

    return build


BUILDERS: dict[str, Callable[[Path], tasks.Task]] = {
    "arithmetic": lambda tmp_path: tasks.get("arithmetic", difficulty=2, n_train=300, n_test=100),
    **{name: _single_file_task(name) for name in ("gsm8k", "jsonl", "math", "aime", "amc", "mmlu")},
    "humaneval": lambda tmp_path: tasks.get("humaneval"),  # the shipped split, read only
}


def test_every_registered_task_has_a_split_check():
    assert set(BUILDERS) == set(tasks.names())


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_splits_are_disjoint_by_id_and_question(tmp_path, name):
    task = BUILDERS[name](tmp_path)
    train, test = task.problems("train"), task.problems("test")
    assert train and test
    assert {p.id for p in train}.isdisjoint(p.id for p in test)
    train_questions = {question_key(_stem(p.question)) for p in train}
    assert train_questions.isdisjoint(question_key(_stem(p.question)) for p in test)


@pytest.mark.parametrize("name", ["gsm8k", "jsonl", "math", "aime", "amc", "mmlu"])
def test_a_single_file_is_split_completely_and_copies_stay_together(tmp_path, name):
    task = BUILDERS[name](tmp_path)
    train, test = task.problems("train"), task.problems("test")
    assert len(train) + len(test) == len(QUESTIONS) + len(COPIES)  # nothing lost
    for copy in COPIES:
        holding = [
            split for split, problems in (("train", train), ("test", test))
            if any(question_key(_stem(p.question)) == question_key(copy) for p in problems)
        ]
        assert len(holding) == 1, f"{copy!r} is in {holding}"


@pytest.mark.parametrize("name", ["gsm8k", "jsonl", "math", "aime", "amc", "mmlu"])
def test_the_split_does_not_depend_on_the_file_order(tmp_path, name):
    forward = BUILDERS[name](tmp_path)
    records = [_record(name, q) for q in (QUESTIONS + COPIES)[::-1]]
    backward = tasks.get(name, path=_write(tmp_path / "reversed.jsonl", records))
    assert sorted(p.question for p in forward.problems("test")) == sorted(
        p.question for p in backward.problems("test")
    )


@pytest.mark.parametrize("name", ["gsm8k", "jsonl", "math", "aime", "amc", "mmlu"])
def test_a_directory_keeps_its_own_split(tmp_path, name):
    _write(tmp_path / "train.jsonl", [_record(name, q) for q in QUESTIONS[:30]])
    _write(tmp_path / "test.jsonl", [_record(name, q) for q in QUESTIONS[30:]])
    task = tasks.get(name, path=tmp_path)
    assert [_stem(p.question) for p in task.problems("train")] == QUESTIONS[:30]
    assert [_stem(p.question) for p in task.problems("test")] == QUESTIONS[30:]


def _stem(question: str) -> str:
    """The question without MMLU's appended options."""
    return question.split("\n\nA. ")[0]
