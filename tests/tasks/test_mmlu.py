"""MMLU: the original per-subject CSV layout, JSONL, subjects, letter extraction."""

from __future__ import annotations

import csv
import json

import pytest

from deliberation_env import tasks
from deliberation_env.tasks.mmlu import MMLUTask, extract_letter


def write_csv(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as file:
        csv.writer(file).writerows(rows)


@pytest.fixture
def release(tmp_path):
    """A miniature of the original release: data/{test,dev,val}/<subject>_<split>.csv."""
    data = tmp_path / "data"
    write_csv(
        data / "test" / "anatomy_test.csv",
        [
            ["Which organ pumps blood?", "Lung", "Heart", "Liver", "Kidney", "B"],
            ['A "quoted", multi-line\nquestion?', "w", "x", "y", "z", "D"],
        ],
    )
    write_csv(
        data / "test" / "virology_test.csv",
        [["What is a virion?", "A cell", "A particle", "A host", "A gene", "B"]],
    )
    write_csv(data / "dev" / "anatomy_dev.csv", [["Dev question?", "a", "b", "c", "d", "A"]])
    write_csv(data / "val" / "virology_val.csv", [["Val question?", "a", "b", "c", "d", "C"]])
    return tmp_path


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("Answer: C", "C"),
        ("I think B. The answer is (D).", "D"),
        ("Final answer: **A**", "A"),
        ("\\boxed{B}", "B"),
        ("The correct option is C because ...", "C"),
        ("C", "C"),
        ("(A)", "A"),
        ("The answer is a secret.", None),
        ("Answer: E", None),
        ("I have no idea.", None),
    ],
)
def test_extract_letter(text, letter):
    assert extract_letter(text) == letter


def test_original_release_layout(release):
    task = tasks.get("mmlu", path=release)
    test = task.problems("test")
    assert [p.answer for p in test] == ["B", "D", "B"]
    assert [p.meta["subject"] for p in test] == ["anatomy", "anatomy", "virology"]
    assert test[0].question == "Which organ pumps blood?\n\nA. Lung\nB. Heart\nC. Liver\nD. Kidney"
    assert test[1].question.startswith('A "quoted", multi-line\nquestion?')
    assert [p.question.split("\n")[0] for p in task.problems("train")] == [
        "Dev question?",
        "Val question?",
    ]
    assert len({p.id for p in test}) == 3


def test_parse_and_check(release):
    task = MMLUTask(release)
    problem = task.problems("test")[0]
    assert task.is_correct(problem, task.parse(problem, "The heart pumps blood. Answer: B"))
    assert not task.is_correct(problem, task.parse(problem, "Answer: A"))
    assert not task.is_correct(problem, task.parse(problem, "no letter"))
    assert task.decision_key(problem, "B") == "B"


def test_subject_selection(release):
    task = MMLUTask(release, subjects=["virology"])
    assert [p.meta["subject"] for p in task.problems("test")] == ["virology"]
    assert [p.answer for p in task.problems("train")] == ["C"]
    with pytest.raises(ValueError, match="unknown MMLU subjects: astrology"):
        MMLUTask(release, subjects=["virology", "astrology"])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (["q", "a", "b", "c", "B"], "expected 6 columns"),
        (["q", "a", "b", "c", "d", "E"], "answer must be one of"),
    ],
)
def test_malformed_csv_row_names_file_and_line(release, row, message):
    write_csv(release / "data" / "test" / "bad_test.csv", [["ok?", "a", "b", "c", "d", "A"], row])
    with pytest.raises(ValueError, match=rf"bad_test\.csv:2: {message}"):
        MMLUTask(release)


def test_jsonl_layout_with_choices_and_index_answers(tmp_path):
    records = [
        {"question": f"Q{i}?", "choices": ["w", "x", "y", "z"], "answer": i % 4, "subject": "logic"}
        for i in range(12)
    ] + [{"question": "Fields?", "A": "1", "B": "2", "C": "3", "D": "4", "answer": "c"}]
    path = tmp_path / "mmlu.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    task = MMLUTask(path)
    problems = task.problems("train") + task.problems("test")
    assert len(problems) == 13 and task.problems("test") and task.problems("train")
    by_question = {p.question.split("\n")[0]: p for p in problems}
    assert by_question["Q5?"].answer == "B"
    assert (
        by_question["Fields?"].answer == "C" and by_question["Fields?"].meta["subject"] == "unknown"
    )
    assert by_question["Fields?"].question.endswith("C. 3\nD. 4")


def test_malformed_jsonl_names_file_and_line(tmp_path):
    path = tmp_path / "mmlu.jsonl"
    path.write_text(
        '{"question": "q", "choices": ["a", "b", "c", "d"], "answer": 0}\n{"question": "q2", "choices": ["a", "b"], "answer": 0}\n'
    )
    with pytest.raises(ValueError, match=r"mmlu\.jsonl:2: 'choices' must be a list of four"):
        MMLUTask(path)


def test_hugging_face_layout_uses_dev_and_validation_for_train(monkeypatch):
    def rows(n, subject):
        return [
            {
                "question": f"{subject} {i}",
                "choices": ["a", "b", "c", "d"],
                "answer": 1,
                "subject": subject,
            }
            for i in range(n)
        ]

    class FakeDatasets:
        @staticmethod
        def load_dataset(name, config):
            assert (name, config) == ("cais/mmlu", "all")
            return {"test": rows(3, "test"), "validation": rows(2, "val"), "dev": rows(1, "dev")}

    monkeypatch.setitem(__import__("sys").modules, "datasets", FakeDatasets)
    task = MMLUTask("hf:cais/mmlu:all")
    assert len(task.problems("test")) == 3 and len(task.problems("train")) == 3
