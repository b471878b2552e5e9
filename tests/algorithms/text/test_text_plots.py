"""The text learners' learning curves are drawn from the history: the training reward per
update and the periodic held-out evaluations (eval_interval) as points on the curves."""

from __future__ import annotations

import numpy as np

from algorithms.core.metrics import read_metrics
from algorithms.text import TextGRPOConfig, train
from algorithms.text.config import text_run
from algorithms.text.plots import FINAL, curve, final_accuracy, learning_curves

SMALL = {"model": "tiny", "groups_per_update": 2, "group_size": 2, "max_new_tokens": 4, "micro_batch_size": 4}


def test_periodic_evaluations_of_a_run_become_points_on_its_curve(tmp_path):
    result = train(TextGRPOConfig(**SMALL, run=text_run(updates=4, eval_problems=3, eval_interval=2, run_dir=str(tmp_path), progress=False)))
    from_history = curve(result.history)
    assert from_history.updates.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert from_history.eval_updates.tolist() == [2.0, 4.0]
    assert from_history.eval_values[-1] == result.after["eval/joint"]
    from_file = curve(read_metrics(tmp_path / "metrics.jsonl"))  # the same from metrics.jsonl, and the first
    assert from_file.eval_updates.tolist() == [0.0, 2.0, 4.0]
    assert from_file.eval_values[0] == result.before["eval/joint"]
    assert np.array_equal(from_file.eval_values[1:], from_history.eval_values)
    assert learning_curves({"grpo": [result.history]}, tmp_path / "curves.png", "tiny").stat().st_size > 0


def test_runs_without_evaluations_have_no_points_and_still_draw(tmp_path):
    history = [{"charts/update": u, "rewards/joint/mean": r} for u, r in ((1, 0.1), (2, 0.3))]
    assert curve(history).eval_updates.size == 0
    seeds = [history, [{**h, "eval/joint": 0.5} for h in history]]
    assert learning_curves({"magrpo": seeds}, tmp_path / "c.png", "two seeds").stat().st_size > 0


def test_a_coding_comparisons_final_figure_shows_the_pass_rate_as_a_share():
    finals = [{"algo": "magrpo", "eval/joint": 2.5, "eval/pass_rate": 0.4}, {"algo": "grpo", "eval/joint": 3.0, "eval/pass_rate": 0.2}]
    (ax,) = final_accuracy(finals).axes
    assert ax.get_ylabel() == FINAL["eval/pass_rate"]
    assert ax.get_ylim()[1] <= 1.1  # a share: the joint reward of 3.0 would reach past it
