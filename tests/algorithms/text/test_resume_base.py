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
    assert "its base model's weights are not those of --model" in capsys.readouterr().err
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 1


def test_a_run_resumes_with_its_base_in_another_folder(tmp_path):
    base = saved_model(tmp_path / "base", seed=0)
    run_dir = str(tmp_path / "run")
    cli.main(["train", "text", "grpo", "--model", base, *SMALL, "--updates", "1", "--run-dir", run_dir])
    moved = shutil.move(base, tmp_path / "elsewhere")  # the run and its base copied to another machine
    cli.main(["train", "text", "grpo", "--model", str(moved), *SMALL, "--updates", "2", "--run-dir", run_dir, "--resume"])
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2


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
