"""JSONL metric logging."""

import json

from algorithms.metrics import MetricLogger, read_metrics


def test_records_append_across_loggers_and_read_back(tmp_path):
    first = MetricLogger(tmp_path / "run")
    first.log(1, 24, {"losses/policy": 0.5, "eval/accuracy": 0.75})
    first.close()
    MetricLogger(tmp_path / "run").log(2, 48, {"losses/policy": 0.25})  # a resumed run appends
    records = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert [(r["step"], r["episodes"]) for r in records] == [(1, 24), (2, 48)]
    assert records[0]["eval/accuracy"] == 0.75 and "eval/accuracy" not in records[1]
    assert all(isinstance(r["time"], float) for r in records)
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert json.loads(lines[1])["losses/policy"] == 0.25


def test_every_documented_issue_metric_name_is_documented():
    import algorithms.metrics as metrics_module

    for name in [
        "rewards/local/mean",
        "rewards/global/mean",
        "actions/persist_share",
        "eval/accuracy",
        "eval/consensus_accuracy",
        "tokens/episode",
        "losses/policy",
        "losses/kl",
        "adv/abs_mean",
    ]:
        assert f"``{name}``" in metrics_module.__doc__, name
