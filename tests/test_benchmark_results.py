"""benchmarks/results.py: every benchmark's JSON carries its command, machine, date and commit."""

import importlib.util
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def results(tmp_path, monkeypatch):
    """``benchmarks/results.py`` loaded as a module, writing into ``tmp_path``."""
    spec = importlib.util.spec_from_file_location("benchmark_results", ROOT / "benchmarks" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(sys, "argv", ["benchmarks/env_throughput.py", "--seconds", "0.1"])
    return module


def test_writes_the_record_with_its_provenance(results, tmp_path):
    record = {"args": {"seconds": 0.1, "cache": Path("runs/x.sqlite")}, "rate": np.float32(2.5), "sizes": np.arange(3)}

    path = results.write_results("env_throughput", record)

    assert path == tmp_path / "results" / "env_throughput.json"
    document = json.loads(path.read_text())
    assert document["name"] == "env_throughput"
    assert document["command"] == "python benchmarks/env_throughput.py --seconds 0.1"
    assert datetime.fromisoformat(document["date"]).tzinfo is not None
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert document["commit"] == head.stdout.strip()
    assert isinstance(document["dirty"], bool)
    machine = document["machine"]
    assert set(machine) == {"platform", "cpu", "cores", "torch_threads", "gpu", "load_average", "python", "torch"}
    assert machine["cpu"] and machine["cores"] >= 1 and machine["torch_threads"] >= 1
    assert document["results"] == {"args": {"seconds": 0.1, "cache": "runs/x.sqlite"}, "rate": 2.5, "sizes": [0, 1, 2]}


def test_a_rerun_replaces_the_file(results):
    results.write_results("learning-update-time", {"ms": 1.0})
    path = results.write_results("learning-update-time", {"ms": 2.0})

    assert json.loads(path.read_text())["results"] == {"ms": 2.0}
    assert len(list(path.parent.iterdir())) == 1


def test_outside_a_git_checkout_the_commit_is_none(results, tmp_path, monkeypatch):
    monkeypatch.setattr(results, "REPO", tmp_path)
    monkeypatch.setattr(results, "AT_START", results.git_commit())  # a process started there

    document = json.loads(results.write_results("copy", {}).read_text())

    assert document["commit"] is None and document["dirty"] is None


def test_an_unknown_type_is_refused(results):
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        results.write_results("bad", {"values": {1, 2}})


def test_the_thread_settings_are_recorded(results, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")

    document = json.loads(results.write_results("threads", {}).read_text())

    assert document["threads"] == {
        "torch": torch.get_num_threads(),
        "omp_num_threads": "1",
        "affinity": sorted(os.sched_getaffinity(0)) if sys.platform == "linux" else None,
    }


def test_runs_are_grouped_by_the_code_that_made_them(results):
    commits = results.commits_of({
        "a": {"commit": "f6ecbc6", "dirty": False},
        "b": {"commit": "f6ecbc6", "dirty": True},
        "c": {"commit": None, "dirty": None},
        "d": None,
    })

    assert commits == {"f6ecbc6": ["a"], "f6ecbc6-dirty": ["b"], "unrecorded": ["c", "d"]}


def test_results_committed_after_a_run_leave_it_named_by_its_code(results, tmp_path, monkeypatch):
    """A queue commits each run's result as it finishes: HEAD moves, the code does not."""
    repo = tmp_path / "repo"
    (repo / "benchmarks" / "results").mkdir(parents=True)

    def git(*arguments: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *arguments], cwd=repo,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (repo / "code.py").write_text("x = 1\n")
    git("add", "."), git("commit", "-q", "-m", "code")
    parent = git("rev-parse", "HEAD")
    (repo / "benchmarks" / "results" / "run.json").write_text("{}\n")
    git("add", "."), git("commit", "-q", "-m", "a run's result")
    result_commit = git("rev-parse", "HEAD")
    monkeypatch.setattr(results, "REPO", repo)

    assert results.code_commit(result_commit) == results.code_commit(parent) != result_commit
    assert results.code_commit(parent[:7]) == results.code_commit(parent)[:7]
    assert results.code_commit("0" * 40) == "0" * 40  # a commit git does not know names itself
