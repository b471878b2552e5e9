"""Data files: every loader reads UTF-8 (a BOM too) and refuses bad bytes, bad JSON and
missing, null or mistyped fields with an error naming ``path:line``; bad arguments are
refused naming the argument."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from deliberation_env import tasks
from deliberation_env.tasks.jsonl import JSONLTask

GOOD = {
    "gsm8k": {"question": "How many?", "answer": "Count them.\n#### 3"},
    "jsonl": {"question": "How many?", "answer": "3"},
    "math": {"problem": "How many?", "solution": "So $\\boxed{3}$."},
    "aime": {"problem": "How many?", "answer": 3},
    "amc": {"problem": "How many?", "answer": "3"},
    "mmlu": {"question": "How many?", "choices": ["1", "2", "3", "4"], "answer": "C"},
}
"""A valid record of each file-based task; ``QUESTION[name]`` names its question field."""

QUESTION = {name: "problem" if "problem" in record else "question" for name, record in GOOD.items()}
ANSWER = {name: "solution" if name == "math" else "answer" for name in GOOD}
LOADERS = sorted(GOOD)


def _lines(name: str, count: int) -> list[str]:
    """``count`` valid, distinct JSONL lines of task ``name``."""
    return [
        json.dumps({**GOOD[name], QUESTION[name]: f"{GOOD[name][QUESTION[name]]} ({i})"})
        for i in range(count)
    ]


def _load(name: str, path: Path) -> tasks.Task:
    return tasks.get(name, path=path)


def _write_with_bad_third_line(path: Path, name: str, bad: str | bytes) -> Path:
    good = "".join(line + "\n" for line in _lines(name, 2)).encode("utf-8")
    path.write_bytes(good + (bad if isinstance(bad, bytes) else bad.encode("utf-8")) + b"\n")
    return path


@pytest.mark.parametrize("name", LOADERS)
def test_binary_garbage_names_the_file_and_line(tmp_path, name):
    path = _write_with_bad_third_line(tmp_path / "data.jsonl", name, b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    with pytest.raises(ValueError, match=r"data\.jsonl:3: not UTF-8 text \(byte 0x89\)"):
        _load(name, path)


@pytest.mark.parametrize("name", LOADERS)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_byte_order_mark_is_accepted(tmp_path, name, newline):
    path = tmp_path / "data.jsonl"
    text = "".join(line + newline for line in _lines(name, 6)).encode("utf-8")
    path.write_bytes(b"\xef\xbb\xbf" + text)
    task = _load(name, path)
    problems = task.problems("train") + task.problems("test")
    assert len(problems) == 6
    assert all(not p.question.startswith("\ufeff") for p in problems)


def _field_cases(name: str) -> list[tuple[dict, str]]:
    question, answer = QUESTION[name], ANSWER[name]
    return [
        ({question: None}, rf"field '{question}' is null"),
        ({question: 7}, rf"field '{question}' must be a string, got int 7"),
        ({question: ["a", "b"]}, rf"field '{question}' must be a string, got list"),
        ({question: "  "}, rf"field '{question}' is empty"),
        ({answer: None}, rf"field '{answer}' is null"),
        ({answer: True}, rf"field '{answer}' must be a string, got bool True"),
        ({answer: {"value": 3}}, rf"field '{answer}' must be a string, got dict"),
    ]


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [(name, change, message) for name in LOADERS for change, message in _field_cases(name)],
)
def test_null_and_mistyped_fields_name_the_file_and_line(tmp_path, name, change, message):
    bad = json.dumps({**GOOD[name], **change})
    path = _write_with_bad_third_line(tmp_path / "data.jsonl", name, bad)
    with pytest.raises(ValueError, match=rf"data\.jsonl:3: {message}"):
        _load(name, path)


@pytest.mark.parametrize("name", LOADERS)
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"question": "q", "problem": "q", "answer": NaN}', "NaN is not a JSON number"),
        ('{"question": "q", "problem": "q", "answer": "1", "answer": "2"}', "key 'answer' given more than once"),
        ("{not json", "Expecting property name"),
    ],
)
def test_invalid_json_names_the_file_and_line(tmp_path, name, bad, message):
    path = _write_with_bad_third_line(tmp_path / "data.jsonl", name, bad)
    with pytest.raises(ValueError, match=rf"data\.jsonl:3: not valid JSON \(.*{message}"):
        _load(name, path)


@pytest.mark.parametrize("name", LOADERS)
@pytest.mark.parametrize(("present", "missing", "reader"), [("train", "test", "evaluation"), ("test", "train", "training")])
def test_a_directory_with_one_split_file_has_that_split_and_names_the_missing_one(tmp_path, name, present, missing, reader):
    (tmp_path / f"{present}.jsonl").write_text("\n".join(_lines(name, 2)) + "\n")
    task = _load(name, tmp_path)
    assert len(task.problems(present)) == 2 and task.split_counts == {present: 2}
    with pytest.raises(FileNotFoundError, match=rf"has no {missing}\.jsonl, so it has no {missing} split, which {reader} reads"):
        task.problems(missing)


@pytest.mark.parametrize("name", LOADERS)
def test_a_directory_without_split_files_says_what_it_holds(tmp_path, name):
    (tmp_path / "main").mkdir()
    (tmp_path / "README.md").write_text("GSM8K\n")
    with pytest.raises(FileNotFoundError, match=r"neither train\.jsonl nor test\.jsonl \(it holds: README\.md, main\)"):
        _load(name, tmp_path)


@pytest.mark.parametrize("name", [*LOADERS, "humaneval"])
@pytest.mark.parametrize("text", ["", "\n  \n\t\n", "\ufeff\r\n"])
def test_a_file_with_no_records_is_refused_naming_it(tmp_path, name, text):
    path = tmp_path / "data.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=r"data\.jsonl: no records \(the file is empty"):
        _load(name, path)


@pytest.mark.parametrize("name", LOADERS)
def test_an_empty_split_file_is_refused_naming_it(tmp_path, name):
    (tmp_path / "train.jsonl").write_text("\n".join(_lines(name, 2)) + "\n")
    (tmp_path / "test.jsonl").write_text("\n")
    with pytest.raises(ValueError, match=r"test\.jsonl: no records"):
        _load(name, tmp_path)


def test_mmlu_csv_files_accept_a_bom_and_refuse_bad_bytes(tmp_path):
    data = tmp_path / "data" / "test"
    data.mkdir(parents=True)
    with (data / "logic_test.csv").open("w", encoding="utf-8-sig", newline="") as file:
        csv.writer(file).writerows([["Is it?", "a", "b", "c", "d", "A"], ["Is it not?", "a", "b", "c", "d", "B"]])
    (problem, _) = tasks.get("mmlu", path=tmp_path).problems("test")
    assert problem.question.startswith("Is it?") and problem.answer == "A"
    (data / "bad_test.csv").write_bytes(b"Ok?,a,b,c,d,A\nBad,\xff,b,c,d,A\n")
    with pytest.raises(ValueError, match=r"bad_test\.csv:2: not UTF-8 text"):
        tasks.get("mmlu", path=tmp_path)
    (data / "bad_test.csv").write_text("Ok?,a,b,c,d,A\n ,a,b,c,d,A\n")
    with pytest.raises(ValueError, match=r"bad_test\.csv:2: the question is empty"):
        tasks.get("mmlu", path=tmp_path)


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("mmlu", {"choices": ["a", None, "c", "d"]}, r"option choices\[1\] must be a string or a number, got None"),
        ("mmlu", {"subject": 3}, "field 'subject' must be a string"),
        ("mmlu", {"id": ["x"]}, "field 'id' must be a string"),
        ("math", {"level": [5]}, "field 'level' must be a string"),
        ("math", {"type": 1}, "field 'type' must be a string"),
        ("aime", {"answer": float("inf")}, "Infinity is not a JSON number"),
    ],
)
def test_other_fields_are_checked_too(tmp_path, name, change, message):
    bad = json.dumps({**GOOD[name], **change})
    path = _write_with_bad_third_line(tmp_path / "data.jsonl", name, bad)
    with pytest.raises(ValueError, match=rf"data\.jsonl:3: .*{message}"):
        _load(name, path)


@pytest.mark.parametrize("name", ["math", "mmlu"])
def test_a_problem_id_used_twice_names_both_lines(tmp_path, name):
    records = [{**GOOD[name], QUESTION[name]: f"Question {i}?", "id": "same"} for i in range(2)]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ValueError, match=r"data\.jsonl:\d: problem id '\w+:same' is already used at .*data\.jsonl:\d"):
        _load(name, path)


# --------------------------------------------------------------------------- arguments
@pytest.mark.parametrize("limit", [True, False, 0, 1.0, "2"])
def test_gsm8k_refuses_a_limit_that_is_not_a_positive_integer(tmp_path, limit):
    path = tmp_path / "gsm8k.jsonl"
    path.write_text("\n".join(_lines("gsm8k", 4)) + "\n")
    with pytest.raises(ValueError, match=rf"limit must be an integer >= 1, got {limit!r}"):
        tasks.get("gsm8k", path=path, limit=limit)


def test_gsm8k_accepts_a_numpy_integer_limit(tmp_path):
    (tmp_path / "train.jsonl").write_text("\n".join(_lines("gsm8k", 3)) + "\n")
    (tmp_path / "test.jsonl").write_text("\n".join(_lines("gsm8k", 3)) + "\n")
    task = tasks.get("gsm8k", path=tmp_path, limit=np.int64(2))
    assert len(task.problems("train")) == len(task.problems("test")) == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"difficulty": True}, "difficulty must be one of the integers"),
        ({"difficulty": 1.0}, "difficulty must be one of the integers"),
        ({"n_train": True}, "n_train must be an integer >= 1, got True"),
        ({"n_test": 2.0}, "n_test must be an integer >= 1, got 2.0"),
    ],
)
def test_arithmetic_refuses_booleans_and_floats(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tasks.get("arithmetic", **kwargs)


def test_arithmetic_accepts_numpy_integers():
    task = tasks.get("arithmetic", difficulty=np.int64(2), n_train=np.int32(5), n_test=np.int64(3))
    reference = tasks.get("arithmetic", difficulty=2, n_train=5, n_test=3)
    assert task.problems("test") == reference.problems("test") and len(task.problems("train")) == 5


@pytest.mark.parametrize(
    ("name", "kwargs", "error", "message"),
    [
        ("math", {"levels": "5"}, TypeError, "levels must be a list of values, not the string '5'"),
        ("math", {"types": "Algebra"}, TypeError, "types must be a list of values, not the string 'Algebra'"),
        ("math", {"levels": [True]}, TypeError, "levels must hold integers or strings"),
        ("math", {"levels": []}, ValueError, "levels is empty"),
        ("math", {"levels": [6]}, ValueError, "levels: Level 6 not found in .*; it has: Level 1"),
        ("math", {"types": ["Geometry"]}, ValueError, "types: Geometry not found in .*; it has: Algebra"),
        ("mmlu", {"subjects": "anatomy"}, TypeError, "subjects must be a list of values, not the string 'anatomy'"),
    ],
)
def test_selection_arguments_are_checked(tmp_path, name, kwargs, error, message):
    record = {**GOOD[name], "level": "Level 1", "type": "Algebra", "subject": "anatomy"}
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(error, match=message):
        tasks.get(name, path=path, **kwargs)


# -------------------------------------------------------------------- jsonl answer kinds
def _directory(tmp_path: Path, train: list[tuple[str, object]], test: list[tuple[str, object]]) -> Path:
    for split, pairs in (("train", train), ("test", test)):
        rows = [json.dumps({"question": q, "answer": a}) for q, a in pairs]
        (tmp_path / f"{split}.jsonl").write_text("\n".join(rows) + "\n")
    return tmp_path


def test_jsonl_decides_numeric_from_both_splits(tmp_path):
    path = _directory(tmp_path, [("Capital of France?", "Paris")], [("2 + 2?", "4")])
    task = JSONLTask(path)
    assert not task.numeric
    assert [p.answer for p in task.problems("train")] == ["paris"]  # not None
    assert [p.answer for p in task.problems("test")] == ["4"]


def test_jsonl_is_numeric_when_every_answer_is_a_number(tmp_path):
    path = _directory(tmp_path, [("Half of 3?", 1.5)], [("2 + 2?", "4.0"), ("Thousand?", "1,000")])
    task = JSONLTask(path)
    assert task.numeric
    assert [p.answer for p in task.problems("train") + task.problems("test")] == ["1.5", "4", "1000"]


def test_a_numeric_answer_is_right_in_any_exact_form_and_votes_with_its_other_forms(tmp_path):
    """Red team, round twenty-two: a reference of 0.5 refused "1/2", and the two forms voted apart."""
    from deliberation_env.tasks import same_answer

    task = JSONLTask(_directory(tmp_path, [("Half?", 0.5)], [("Half of 3?", "3/2")]))
    half, three_halves = task.problems("train")[0], task.problems("test")[0]
    for text in ("The answer is 1/2.", "The answer is 0.50.", "The answer is 2/4."):
        assert task.is_correct(half, task.parse(half, text)), text
    assert task.is_correct(three_halves, task.parse(three_halves, "The answer is 1.5."))
    assert not task.is_correct(half, task.parse(half, "The answer is 0.51."))
    assert same_answer(task, half, "1/2", "0.5") and not same_answer(task, half, "1/2", "0.51")


def test_jsonl_numeric_answers_refuse_text_naming_the_line(tmp_path):
    path = _directory(tmp_path, [("2 + 2?", "4"), ("Capital of France?", "Paris")], [("1 + 1?", "2")])
    with pytest.raises(ValueError, match=r"train\.jsonl:2: answer 'Paris' is not a number"):
        JSONLTask(path, answers="numeric")
    assert not JSONLTask(path, answers="text").numeric


def test_jsonl_refuses_an_unknown_answer_kind_and_an_answer_empty_once_normalized(tmp_path):
    path = _directory(tmp_path, [("Why?", "Because")], [("Dot?", ".")])
    with pytest.raises(ValueError, match="answers must be one of"):
        JSONLTask(path, answers="numbers")
    with pytest.raises(ValueError, match=r"test\.jsonl:1: answer '\.' is empty once normalized"):
        JSONLTask(path)


@pytest.mark.parametrize("name", ["jsonl", "gsm8k"])
def test_a_single_file_takes_a_test_fraction_and_keeps_each_question_in_one_split(tmp_path, name):
    answer = "#### 7" if name == "gsm8k" else "7"
    path = tmp_path / "one.jsonl"
    path.write_text("".join(json.dumps({"question": f"What is {k} + 7 - {k}?", "answer": answer}) + "\n" for k in range(200)))
    halves = tasks.get(name, path=str(path))
    mostly = tasks.get(name, path=str(path), test_fraction=0.9)
    counts = {split: len(mostly.problems(split)) for split in ("train", "test")}
    assert counts["train"] + counts["test"] == 200 and 160 <= counts["test"] <= 195
    assert 70 <= len(halves.problems("test")) <= 130
    half_test = {p.question for p in halves.problems("test")}
    assert half_test <= {p.question for p in mostly.problems("test")}  # a larger fraction only adds to test
    with pytest.raises(ValueError, match="test_fraction must lie in"):
        tasks.get(name, path=str(path), test_fraction=1.0)
