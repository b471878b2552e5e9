"""A resumed comparison writes what an uninterrupted one writes, and one that cannot start
leaves no folder.

A real client found a resumed ``compare text`` building its table and curves from the
updates run after the resume alone (runs finished before it had no rewards), and a second
resume of the finished comparison crashing on an empty curve after rewriting its files.
"""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

from algorithms.core.compare import CURVES_CSV, RESULTS_CSV, RESULTS_JSON
from algorithms.text import compare as text_compare
from algorithms.text.config import TextLearnerConfig, text_run


def tiny_text(out_dir, updates: int = 2, resume: bool = False, model: str = "tiny") -> text_compare.TextCompare:
    shared = TextLearnerConfig(
        model=model, groups_per_update=1, group_size=2, max_new_tokens=4, run=text_run(updates=updates, progress=False, resume=resume)
    )
    return text_compare.TextCompare(learner=shared, algos=("grpo", "magrpo"), seeds=1, out_dir=str(out_dir))


KEPT = ("algo", "seed", "charts/update", "rewards/joint/mean", "tokens/agent_0", "losses/policy")
"""Columns that do not depend on the clock."""


def rows(path) -> list[dict[str, str]]:
    with path.open() as file:
        return [{name: row.get(name) for name in KEPT} for row in csv.DictReader(file)]


def test_a_resumed_comparison_writes_the_files_of_an_uninterrupted_one(tmp_path):
    text_compare.compare(tiny_text(tmp_path / "whole", updates=2))
    text_compare.compare(tiny_text(tmp_path / "parts", updates=1))
    text_compare.compare(tiny_text(tmp_path / "parts", updates=2, resume=True))
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert rows(parts / CURVES_CSV) == rows(whole / CURVES_CSV)  # both updates of every run
    assert len(rows(whole / CURVES_CSV)) == 4
    for mine, theirs in zip(rows(parts / RESULTS_CSV), rows(whole / RESULTS_CSV), strict=True):
        assert mine == theirs and mine["rewards/joint/mean"] not in ("", None)
    text_compare.compare(tiny_text(parts, updates=2, resume=True))  # finished: resumed again, nothing to run
    assert rows(parts / CURVES_CSV) == rows(whole / CURVES_CSV)
    summary = json.loads((parts / RESULTS_JSON).read_text())["summary"]
    assert "rewards/joint/mean" in summary["magrpo"]


def test_a_comparison_that_cannot_start_leaves_no_folder(tmp_path):
    empty = tmp_path / "empty_model"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="holds no model"):
        text_compare.compare(tiny_text(tmp_path / "cmp", model=str(empty)))
    assert not (tmp_path / "cmp").exists()
    with pytest.raises(ValueError, match="leave --out-dir out"):  # a folder that holds one: named by compare's flag
        text_compare.compare(tiny_text(tmp_path / "done", updates=1))
        text_compare.compare(replace(tiny_text(tmp_path / "done", updates=1)))


def test_a_resume_with_fewer_updates_is_refused_before_the_comparison_is_rewritten(tmp_path):
    text_compare.compare(tiny_text(tmp_path / "cmp", updates=2))
    recorded = (tmp_path / "cmp" / "config.json").read_text()
    with pytest.raises(ValueError, match="has logged 2 updates already; give --updates 2 or more"):
        text_compare.compare(tiny_text(tmp_path / "cmp", updates=1, resume=True))
    assert (tmp_path / "cmp" / "config.json").read_text() == recorded


def test_a_resumed_comparison_may_change_what_each_of_its_runs_may(tmp_path):
    """The settings a resumed ``train text`` may change (where and how the rollouts are
    sampled and the loss computed: ``--sample-batch-size``, ``--micro-batch-size``,
    ``--master-weights``, ``--device``...) were refused by ``compare text --resume``, which
    let only the run part (``--updates``) change; a learner's setting is still refused."""
    text_compare.compare(tiny_text(tmp_path / "cmp", updates=1))
    resumed = tiny_text(tmp_path / "cmp", updates=2, resume=True)
    moved = replace(resumed.learner, sample_batch_size=3, micro_batch_size=1, master_weights=False, log_completions=2)
    with pytest.warns(UserWarning, match="learner.sample_batch_size 3 \\(was 32\\)"):
        text_compare.compare(replace(resumed, learner=moved))
    assert len(rows(tmp_path / "cmp" / CURVES_CSV)) == 4  # both updates of both runs
    for algo in ("grpo", "magrpo"):
        run = json.loads((tmp_path / "cmp" / algo / "seed0" / "config.json").read_text())
        assert (run["sample_batch_size"], run["micro_batch_size"], run["master_weights"]) == (3, 1, False)
    with pytest.raises(ValueError, match="learner.learning_rate is 0.0001 there and 0.1 here"):
        text_compare.compare(replace(resumed, learner=replace(moved, learning_rate=0.1)))


def test_a_resume_in_another_dtype_is_refused_before_the_comparison_is_rewritten(tmp_path):
    """Each run keeps the dtype it trained in; the comparison now lets its runs' settings
    change, so it checks their dtype before it records the new one (else its config.json
    named a dtype none of its runs trained in, and resuming from that file was refused)."""
    text_compare.compare(tiny_text(tmp_path / "cmp", updates=1))
    recorded = (tmp_path / "cmp" / "config.json").read_text()
    resumed = tiny_text(tmp_path / "cmp", updates=2, resume=True)
    with pytest.raises(ValueError, match="trained in float32, and a resumed run keeps its dtype: give --dtype float32"):
        text_compare.compare(replace(resumed, learner=replace(resumed.learner, dtype="bfloat16")))
    assert (tmp_path / "cmp" / "config.json").read_text() == recorded


def test_a_comparisons_record_resumes_with_its_protocol_given_again(tmp_path):
    """A comparison of a protocol of one's own records its import path, which a config file
    may not name; ``compare text --config <out>/config.json --resume --protocol PATH`` was
    refused with a message that asked for the ``--protocol`` given. The command line's
    protocol now stands for the file's (in a learner's file too)."""
    from algorithms import cli

    protocol = f"{Path(__file__).parents[3] / 'examples' / '14_tiny_learns.py'}:protocol"
    record = tmp_path / "config.json"
    record.write_text(json.dumps({"learner": {"model": "tiny", "env": {"protocol": protocol}}, "seeds": 1}))
    with pytest.raises(ValueError, match="is an import path, which would import and run code"):
        cli.parse(["compare", "text", "--config", str(record)])
    parsed = cli.parse(["compare", "text", "--config", str(record), "--protocol", protocol]).command.command
    assert parsed.learner.env.protocol == protocol and parsed.learner.model == "tiny"
    learner_file = tmp_path / "grpo.yaml"
    learner_file.write_text(f"algo: grpo\nmodel: tiny\nenv:\n  protocol: {protocol}\n")
    parsed = cli.parse(["train", "text", "--config", str(learner_file), "--protocol", protocol]).command.command
    assert parsed.learner.env.protocol == protocol
