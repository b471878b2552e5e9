"""A resumed run trains the weights it started on, wherever they lie now, and a resume that
cannot go on is refused before the models load.

A real client overwrote ``--model``'s folder with other weights and resumed: the adapters
went on training on another base. Copying a run and its base to another machine and
resuming with the base's new folder was refused, and a resume with other settings loaded
the whole model (minutes for a 3B one) before saying so.
"""

from __future__ import annotations

import importlib
import json
import shutil

import pytest

from agents.trainable_lm import tiny_model
from algorithms import cli

text_train = importlib.import_module("algorithms.text.train")

SMALL = ["--groups-per-update", "1", "--group-size", "2", "--max-new-tokens", "4", "--no-progress", "--eval-problems", "0"]


def saved_model(folder, seed):
    model, tokenizer = tiny_model(seed=seed)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_the_base_must_be_the_one_the_run_trained(tmp_path, capsys):
    base = saved_model(tmp_path / "base", seed=0)
    run_dir = str(tmp_path / "run")
    cli.main(["train", "text", "grpo", "--model", base, *SMALL, "--updates", "1", "--run-dir", run_dir])
    assert len(json.loads((tmp_path / "run" / "config.json").read_text())["base_digest"]) == 64
    shutil.rmtree(base)
    saved_model(base, seed=7)  # other weights under the same name
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "grpo", "--model", base, *SMALL, "--updates", "2", "--run-dir", run_dir, "--resume"])
    assert f"it trained on --model {base}, whose weights are not those of --model {base} here" in capsys.readouterr().err
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 1


def test_a_run_resumes_with_its_base_in_another_folder(tmp_path):
    base = saved_model(tmp_path / "base", seed=0)
    run_dir = str(tmp_path / "run")
    cli.main(["train", "text", "grpo", "--model", base, *SMALL, "--updates", "1", "--run-dir", run_dir])
    moved = shutil.move(base, tmp_path / "elsewhere")  # the run and its base copied to another machine
    cli.main(["train", "text", "grpo", "--model", str(moved), *SMALL, "--updates", "2", "--run-dir", run_dir, "--resume"])
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2
    # a real client: the second resume after the move was refused for good ("the checkpoint's
    # config differs ... in ['model']"): config.json named the new folder, the checkpoint the old
    cli.main(["train", "text", "grpo", "--model", str(moved), *SMALL, "--updates", "3", "--run-dir", run_dir, "--resume"])
    cli.main(["train", "text", "--config", f"{run_dir}/config.json", "--resume", "--updates", "4"])
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 4


def test_a_resume_with_other_settings_is_refused_before_the_model_loads(tmp_path, capsys, monkeypatch):
    run_dir = str(tmp_path / "run")
    cli.main(["train", "text", "grpo", "--model", "tiny", *SMALL, "--updates", "1", "--run-dir", run_dir])

    def no_loading(*_, **__):
        raise AssertionError("the model was loaded before the settings were checked")

    monkeypatch.setattr(text_train, "build_lm", no_loading)
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "grpo", "--model", "tiny", *SMALL, "--kl-coef", "0.5", "--updates", "2",
                  "--run-dir", run_dir, "--resume"])  # fmt: skip
    assert "cannot resume the run in" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # --model left out: refused before the default SmolLM2 loads, naming the run's
        cli.main(["train", "text", "grpo", *SMALL, "--updates", "2", "--run-dir", run_dir, "--resume"])
    assert "it trained on --model tiny, and this command names none" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a folder that holds a run, without --resume: refused before loading too
        cli.main(["train", "text", "grpo", "--model", "tiny", *SMALL, "--updates", "2", "--run-dir", run_dir])
    assert "holds a run already" in capsys.readouterr().err


def test_a_run_resumes_from_its_own_config_json(tmp_path):
    """A real client resumed by retyping every setting, and its run's ``config.json`` (flat:
    the env's and run's fields beside the learner's) was refused as a ``--config`` file."""
    run_dir = tmp_path / "run"
    cli.main(["train", "text", "grpo", "--model", "tiny", *SMALL, "--kl-coef", "0.5", "--updates", "1",
              "--run-dir", str(run_dir)])  # fmt: skip
    cli.main(["train", "text", "--config", str(run_dir / "config.json"), "--resume", "--updates", "2"])
    recorded = json.loads((run_dir / "config.json").read_text())
    assert recorded["kl_coef"] == 0.5 and recorded["updates"] == 2 and recorded["algo"] == "grpo"
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 2


def test_a_run_config_json_is_the_run_of_its_own_folder(tmp_path):
    """A real client copied a run and gave ``--config <copy>/config.json --resume``: the run
    the file named inside, the original, went on and the copy stayed. Started as a new run
    (``--run-dir NEW``), the same file was refused for the ``resume`` its last command recorded.
    """
    first = tmp_path / "first"
    cli.main(["train", "text", "grpo", "--model", "tiny", *SMALL, "--updates", "1", "--run-dir", str(first)])
    cli.main(["train", "text", "grpo", "--model", "tiny", *SMALL, "--updates", "2", "--run-dir", str(first), "--resume"])
    copy = tmp_path / "copy"
    shutil.copytree(first, copy)
    cli.main(["train", "text", "--config", str(copy / "config.json"), "--resume", "--updates", "3"])
    assert [len((folder / "metrics.jsonl").read_text().splitlines()) for folder in (first, copy)] == [2, 3]
    fresh = tmp_path / "fresh"  # the same settings, a new run: the recorded resume is the last command's, not a setting
    cli.main(["train", "text", "--config", str(copy / "config.json"), "--run-dir", str(fresh), "--updates", "1"])
    assert json.loads((fresh / "config.json").read_text())["resume"] is False
    outside = tmp_path / "settings.json"  # a run's record copied out of its folder: a template for a new run
    shutil.copy(copy / "config.json", outside)
    cli.main(["train", "text", "--config", str(outside), "--run-dir", str(tmp_path / "third"), "--updates", "1"])
    assert len((tmp_path / "third" / "metrics.jsonl").read_text().splitlines()) == 1


def test_a_run_with_a_protocol_file_resumes_from_its_config_json(tmp_path, monkeypatch):
    """The record names the protocol by its import path, which a config file may not; the
    error said to give ``--protocol`` on the command line, and doing so was refused the same."""
    (tmp_path / "resumed_task.py").write_text("from text_learner_fakes import HashProtocol\n\nprotocol = HashProtocol()\n")
    monkeypatch.chdir(tmp_path)  # a module name no other test imports (the data-parallel tests import hash_task)
    settings = ["--protocol", "./resumed_task.py:protocol", "--updates"]
    cli.main(["train", "text", "grpo", "--model", "tiny", *SMALL, *settings, "1", "--run-dir", "run"])
    cli.main(["train", "text", "--config", "run/config.json", "--resume", *settings, "2"])
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2
