"""The text learners' held-out evaluation shows its progress on stderr, and only when asked;
the metrics are the same either way."""

from __future__ import annotations

from algorithms.text import TextGRPOConfig, evaluate, train
from algorithms.text.config import text_run
from algorithms.text.train import build_env

SMALL = {"model": "tiny", "groups_per_update": 2, "group_size": 2, "max_new_tokens": 4, "micro_batch_size": 4}


def test_held_out_evaluation_progress_changes_no_metric(capsys, monkeypatch):
    from agents import progress

    monkeypatch.setattr(progress, "BAR_DELAY_S", 0.0)
    config = TextGRPOConfig(**SMALL, run=text_run(updates=0, progress=False, run_dir=None))
    learner = train(config).learner
    venv = build_env(config, 2, split="test")
    capsys.readouterr()
    quiet = evaluate(learner, venv, range(3), progress=False)
    assert capsys.readouterr().err == ""
    shown = evaluate(learner, venv, range(3), progress=True)
    assert shown == quiet
    err = capsys.readouterr().err
    assert "held-out eval" in err and "sample agent_0" in err  # problems, and each sampling call
