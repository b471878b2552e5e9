"""``--full-determinism`` and ``--cast-lm-head-to-fp32`` (TRL's names) from the command line
to the run folder: two runs of one seed train the same weights bit for bit, the process's
settings are as they were after a run, and a run recorded before either option existed
resumes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from agents.devices import DETERMINISTIC_ENVIRONMENT
from algorithms import cli
from algorithms.core.checkpoints import load_checkpoint

LETTERS = (
    Path(__file__).parents[3] / "examples" / "14_tiny_learns.py"
)  # rewards that vary: weights that move
TINY = ["--model", "tiny", "--groups-per-update", "2", "--group-size", "2", "--max-new-tokens", "6", "--no-progress",
        "--eval-problems", "0", "--protocol", f"{LETTERS}:protocol", "--temperature", "1", "--top-p", "0.9",
        "--update-epochs", "2", "--kl-coef", "0.1"]  # fmt: skip


def train(folder: Path, updates: int, *extra: str) -> dict:
    cli.main(
        [
            "train",
            "text",
            "grpo",
            *TINY,
            "--updates",
            str(updates),
            "--run-dir",
            str(folder),
            *extra,
        ]
    )
    return load_checkpoint(folder / "checkpoint.safetensors")


def trained_metrics(folder: Path) -> list[dict]:
    """Each update's metrics but the clocks' and the process's peak memory (``time``,
    ``charts/seconds``, ``perf/*``)."""
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    return [
        {
            k: v
            for k, v in json.loads(line).items()
            if k not in ("time", "charts/seconds") and not k.startswith("perf/")
        }
        for line in lines
    ]


def test_two_runs_of_one_seed_train_the_same_weights_bit_for_bit(tmp_path, monkeypatch):
    for name in DETERMINISTIC_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    first = train(tmp_path / "first", 3, "--full-determinism")
    second = train(tmp_path / "second", 3, "--full-determinism")
    weights = first["weights"]["agent_0"]
    assert weights and all(
        torch.equal(weights[name], second["weights"]["agent_0"][name]) for name in weights
    )
    assert trained_metrics(tmp_path / "first") == trained_metrics(tmp_path / "second")
    assert json.loads((tmp_path / "first" / "config.json").read_text())["full_determinism"] is True
    # the process is as it was: no deterministic algorithms, no environment left behind
    assert not torch.are_deterministic_algorithms_enabled()
    assert not any(name in os.environ for name in DETERMINISTIC_ENVIRONMENT)


def test_a_run_recorded_before_the_options_resumes_and_may_turn_determinism_on(tmp_path, capsys):
    folder = tmp_path / "run"
    train(folder, 1, "--dtype", "bfloat16")
    recorded = json.loads((folder / "config.json").read_text())
    assert recorded["cast_lm_head_to_fp32"] is False and recorded["full_determinism"] is False
    older = {
        k: v for k, v in recorded.items() if k not in ("cast_lm_head_to_fp32", "full_determinism")
    }
    (folder / "config.json").write_text(json.dumps(older))
    train(
        folder, 2, "--dtype", "bfloat16", "--resume", "--full-determinism"
    )  # a run setting: may change
    assert len((folder / "metrics.jsonl").read_text().splitlines()) == 2
    capsys.readouterr()
    with pytest.raises(
        SystemExit
    ):  # what the loss computes: kept, as the run's other learner settings
        train(folder, 3, "--dtype", "bfloat16", "--resume", "--cast-lm-head-to-fp32")
    assert "cast_lm_head_to_fp32" in capsys.readouterr().err
    assert len((folder / "metrics.jsonl").read_text().splitlines()) == 2


def test_the_head_in_float32_trains_in_bfloat16_and_is_recorded(tmp_path):
    folder = tmp_path / "run"
    checkpoint = train(folder, 1, "--dtype", "bfloat16", "--cast-lm-head-to-fp32")
    assert json.loads((folder / "config.json").read_text())["cast_lm_head_to_fp32"] is True
    assert all(torch.isfinite(tensor).all() for tensor in checkpoint["weights"]["agent_0"].values())


def test_a_rollout_workers_model_is_built_under_the_deterministic_settings(monkeypatch):
    """A Ray rollout worker builds its policy with :func:`algorithms.text.train.build_worker_lm`
    in its own process, which keeps the deterministic settings (and builds the same policy)."""
    from algorithms.text import TextGRPOConfig
    from algorithms.text.train import build_lm, build_worker_lm

    for name in DETERMINISTIC_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        plain = build_worker_lm(TextGRPOConfig(model="tiny"), ["agent_0"])
        assert not torch.are_deterministic_algorithms_enabled() and "CUBLAS_WORKSPACE_CONFIG" not in os.environ
        worker = build_worker_lm(TextGRPOConfig(model="tiny", full_determinism=True), ["agent_0"])
        assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
        assert {name: os.environ.get(name) for name in DETERMINISTIC_ENVIRONMENT} == DETERMINISTIC_ENVIRONMENT
        reference = build_lm(TextGRPOConfig(model="tiny"), ["agent_0"]).state_dict()["agent_0"]
        for lm in (plain, worker):
            weights = lm.state_dict()["agent_0"]
            assert weights.keys() == reference.keys() and all(torch.equal(weights[k], reference[k]) for k in reference)
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = False, False
