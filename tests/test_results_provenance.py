"""benchmarks/results.py's provenance outside a git checkout (a tree copied to a GPU machine)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import results


def test_a_copied_tree_records_the_commit_its_copier_named_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "REPO", tmp_path)  # no .git here
    monkeypatch.delenv("DELIBERATION_ENV_SOURCE_COMMIT", raising=False)
    assert results.git_commit() == {"commit": None, "dirty": None}

    monkeypatch.setenv("DELIBERATION_ENV_SOURCE_COMMIT", "7ab7ebd")
    assert results.git_commit() == {"commit": "7ab7ebd", "dirty": None, "commit_from": "environment"}


def test_inside_a_checkout_the_variable_names_the_commit_and_git_says_what_it_sees(monkeypatch):
    """On the 2026-11-30 H200 the copied tree sat in a checkout of an older commit, so git named
    that one, dirty: the variable the copier set names the code, and git's view is kept."""
    monkeypatch.setenv("DELIBERATION_ENV_SOURCE_COMMIT", "84e8e90")
    record = results.git_commit()
    assert (record["commit"], record["commit_from"]) == ("84e8e90", "environment")
    assert len(record["git"]["commit"]) == 40
    monkeypatch.delenv("DELIBERATION_ENV_SOURCE_COMMIT")
    record = results.git_commit()
    assert len(record["commit"]) == 40 and "commit_from" not in record


def test_a_result_names_the_commit_its_process_started_at_and_the_one_it_was_written_at(monkeypatch):
    """A run of an hour loads its code at the start; commits landing meanwhile moved the
    recorded commit to one whose code the run never ran."""
    monkeypatch.setattr(results, "AT_START", {"commit": "a" * 40, "dirty": False})
    monkeypatch.setattr(results, "git_commit", lambda: {"commit": "b" * 40, "dirty": False})
    record = results.provenance()
    assert record["commit"] == "a" * 40 and record["commit_at_write"] == {"commit": "b" * 40, "dirty": False}
    monkeypatch.setattr(results, "git_commit", lambda: {"commit": "a" * 40, "dirty": False})
    assert "commit_at_write" not in results.provenance()
