"""What a newcomer hit with the docs alone (issue 33, item 7): task defaults that applied to
every task, a failed start that blocked its folder, config files that had to name their
command, a mistyped flag's 57-line box, a run folder the help did not describe, and the
libraries' warning and bars under ``--no-progress``."""

from __future__ import annotations

import json

import pytest
import transformers.utils.logging
from helpers import refused

from algorithms import cli
from algorithms.core.run_dirs import CONFIG, check_resume, holds_run, open_run_dir
from algorithms.meta.config import TRAINING_DIFFICULTY, GRPOConfig, with_task_defaults

TINY_TEXT = ["--model", "tiny", "--groups-per-update", "1", "--group-size", "2", "--max-new-tokens", "4",
             "--updates", "1", "--no-progress"]  # fmt: skip


# ---------------------------------------------------------------------------- 1. task defaults
def test_another_task_takes_no_difficulty_and_arithmetic_keeps_the_training_one():
    gsm8k = cli.parse(["train", "meta", "grpo", "--task", "gsm8k", "--path", "sample"]).command.command.learner
    assert gsm8k.env.difficulty is None and with_task_defaults(gsm8k).env.difficulty is None
    assert with_task_defaults(GRPOConfig()).env.difficulty == TRAINING_DIFFICULTY == 3
    assert with_task_defaults(GRPOConfig()).env.task == "arithmetic"


def test_an_unknown_task_is_named_before_its_arguments(capsys):
    err = refused(capsys, "train", "meta", "grpo", "--task", "gsm9k")
    assert err == ("deliberate train meta grpo: error: unknown task 'gsm9k'; known: arithmetic, gsm8k, jsonl, math, aime, "
                   "amc, mmlu, humaneval; did you mean 'gsm8k'?")  # fmt: skip


@pytest.mark.parametrize("command", ["train meta grpo", "compare meta"])
def test_a_task_that_reads_data_asks_for_path(capsys, command):
    err = refused(capsys, *command.split(), "--task", "gsm8k")
    assert err.startswith(f"deliberate {command}: error: task 'gsm8k' reads its problems from data: give path (--path)")


# ---------------------------------------------------------------------------- 2. a failed start
def test_a_start_that_fails_on_its_data_writes_no_folder(capsys, tmp_path):
    folder = tmp_path / "gsm8k"
    folder.mkdir()
    (folder / "test.jsonl").write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    run_dir = tmp_path / "run"
    err = refused(capsys, "train", "meta", "grpo", "--task", "gsm8k", "--path", str(folder), "--team", "simulated",
                  "--run-dir", str(run_dir))  # fmt: skip
    assert "no train.jsonl" in err
    assert not run_dir.exists()


def test_a_folder_with_only_the_config_of_a_failed_start_is_reused(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / CONFIG).write_text(json.dumps({"algo": "grpo", "env": {"task": "gsm8k"}}))  # as 0.1 left it
    assert not holds_run(run_dir)
    with pytest.raises(ValueError, match="holds only the config.json of a start that failed, no run to continue: leave --resume out"):
        check_resume(True, str(run_dir))
    with pytest.warns(UserWarning, match="holds only the config.json of a start that failed: reusing it"):
        open_run_dir(run_dir, {"algo": "sft", "env": {"task": "arithmetic"}}, resume=False)
    assert json.loads((run_dir / CONFIG).read_text())["algo"] == "sft"
    (run_dir / "metrics.jsonl").write_text('{"step": 1}\n')  # now it holds a run: an update logged
    with pytest.raises(ValueError, match="holds a run already: add --resume"):
        open_run_dir(run_dir, {"algo": "sft"}, resume=False)


# ---------------------------------------------------------------------------- 3. config files
def test_a_config_file_needs_no_command_key_and_one_for_another_command_is_named(tmp_path):
    meta, text = tmp_path / "meta.yaml", tmp_path / "text.yaml"
    meta.write_text("algo: grpo\nrun: {updates: 7}\nenv: {team: simulated}\n")
    text.write_text("env: {task: arithmetic, difficulty: 2}\nrun: {updates: 3}\n")
    trained = cli.parse(["train", "meta", "--config", str(meta)]).command.command.learner
    assert (type(trained).__name__, trained.run.updates, trained.env.team) == ("GRPOConfig", 7, "simulated")
    learner = cli.parse(["train", "text", "grpo", "--config", str(text)]).command.command.learner
    assert (type(learner).__name__, learner.env.difficulty, learner.run.updates) == ("TextGRPOConfig", 2, 3)
    text.write_text("command: train text\nrun: {updates: 3}\n")
    with pytest.raises(ValueError, match=r"text.yaml is for 'deliberate train text', not 'deliberate train meta': give it"):
        cli.parse(["train", "meta", "grpo", "--config", str(text)])


def test_the_config_option_describes_the_file(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "meta", "grpo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "command: train meta" in out and "is optional" in out


# ---------------------------------------------------------------------------- 4. a mistyped flag
def test_a_mistyped_flag_is_one_line_with_the_nearest_flag(capsys):
    err = refused(capsys, "train", "text", "grpo", "--lerning-rate", "0.1")
    assert err == "deliberate train text grpo: error: unrecognized option --lerning-rate; did you mean --learning-rate?"
    assert refused(capsys, "run", "--n-problem", "3") == (
        "deliberate run: error: unrecognized option --n-problem; did you mean --n-problems?"
    )


def test_a_value_the_option_refuses_is_one_line_naming_the_option(capsys):
    """A newcomer's: a refused choice (``--dtype float8``) and ``--updates abc`` printed tyro's boxes."""
    assert refused(capsys, "train", "text", "grpo", "--finetune", "lor") == (
        "deliberate train text grpo: error: --finetune takes one of lora, full, not 'lor'; did you mean lora?"
    )
    assert refused(capsys, "train", "text", "grpo", "--updates", "abc") == (
        "deliberate train text grpo: error: --updates takes an integer, not 'abc'"
    )
    assert refused(capsys, "train", "text", "grpo", "--learning-rate", "fast") == (
        "deliberate train text grpo: error: --learning-rate takes a number, not 'fast'"
    )
    assert refused(capsys, "train", "meta", "grpo", "--observation", "flat") == (
        "deliberate train meta grpo: error: --observation flat: the meta learners read the vector observations, "
        "so give --observation vector (the default) or both"
    )  # a meta client's: it was 'Box' object is not subscriptable


# ---------------------------------------------------------------------------- 5 and 6. text runs
@pytest.fixture
def bars_restored():
    """Progress bars of transformers on again after the test (a command turns them off)."""
    yield
    transformers.utils.logging.enable_progress_bar()


def test_run_dir_none_writes_nothing_and_no_progress_is_quiet(tmp_path, monkeypatch, capsys, bars_restored):
    monkeypatch.chdir(tmp_path)
    cli.main(["train", "text", "magrpo", *TINY_TEXT, "--run-dir", "None"])
    assert list(tmp_path.iterdir()) == []
    err = capsys.readouterr().err
    assert "deprecated" not in err and "Writing model shards" not in err
    assert not transformers.utils.logging.is_progress_bar_enabled()
    assert "give its folder" in refused(capsys, "train", "text", "magrpo", *TINY_TEXT, "--run-dir", "", "--resume")


def test_train_meta_with_run_dir_none_writes_nothing_and_prints_its_table(tmp_path, monkeypatch, capsys):
    """A newcomer's: ``train meta grpo --run-dir None`` trained, then failed reading the
    folder it had not written (``expected str ... not NoneType``)."""
    monkeypatch.chdir(tmp_path)
    cli.main(["train", "meta", "grpo", "--updates", "2", "--run-dir", "None", "--sft-updates", "1", "--eval-problems", "8",
              "--groups-per-update", "2", "--group-size", "2", "--no-progress"])  # fmt: skip
    assert list(tmp_path.iterdir()) == []
    out = capsys.readouterr().out
    assert "held-out, 8 test problems" in out and "SFT warm start" in out
