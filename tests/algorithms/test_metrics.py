"""JSONL metric logging."""

import dataclasses
import json
import sys

import pytest

from algorithms.core.metrics import MetricLogger, read_metrics


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


def test_a_resumed_runs_clock_goes_on_from_its_last_record(tmp_path):
    """A real client's curves against wall-clock time went back to 0 after a resume."""
    first = MetricLogger(tmp_path)
    first.log(1, 4, {"loss": 1.0})
    with (tmp_path / "metrics.jsonl").open("a") as file:  # as if the first run went on for 100 s
        file.write(json.dumps({"step": 2, "episodes": 8, "time": 100.0, "loss": 0.5}) + "\n")
    MetricLogger(tmp_path).log(3, 12, {"loss": 0.25})
    times = [record["time"] for record in read_metrics(tmp_path / "metrics.jsonl")]
    assert times == sorted(times) and times[-1] >= 100.0


def test_every_documented_issue_metric_name_is_documented():
    import algorithms.core.metrics as metrics_module

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


def test_wandb_offline_gets_the_jsonl_metric_names_at_the_same_steps(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb", reason="Weights & Biases is the 'wandb' extra")
    from algorithms.core.config import RunConfig
    from algorithms.meta import SoftRankPOConfig
    from algorithms.meta.train import train
    from deliberation_env import EnvConfig

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    sent: list[tuple[int, set[str]]] = []
    log = wandb.Run.log

    def record_and_log(run, data, step=None, **kwargs):
        sent.append((step, set(data)))
        return log(run, data, step=step, **kwargs)

    monkeypatch.setattr(wandb.Run, "log", record_and_log)
    run = RunConfig(updates=2, eval_interval=2, eval_problems=4, run_dir=str(tmp_path / "run"), progress=False,
                    wandb_project="deliberation-test")  # fmt: skip
    cfg = SoftRankPOConfig(env=EnvConfig(team="simulated", max_rounds=1), run=run, sft_updates=0, groups_per_update=2,
                           group_size=2, hidden_size=16, num_heads=2)  # fmt: skip
    train(cfg)
    records = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert sent == [(r["step"], set(r) - {"step", "episodes", "time"}) for r in records]
    assert "eval/accuracy" in sent[0][1] and "losses/policy" in sent[1][1]
    assert list((tmp_path / "run" / "wandb").glob("offline-run-*/run-*.wandb"))  # the run, on disk
    # resumed, it logs into the same W&B run (one id, kept in the run folder), named by the folder
    run_id = (tmp_path / "run" / "wandb" / "run_id").read_text().strip()
    train(dataclasses.replace(cfg, run=dataclasses.replace(run, updates=3, resume=True)))
    runs = {path.name.rpartition("-")[2] for path in (tmp_path / "run" / "wandb").glob("offline-run-*")}
    assert runs == {run_id}
    assert [step for step, _ in sent] == [0, 1, 2, 3]


def test_a_missing_extra_is_named_and_nothing_is_created(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if not installed
    with pytest.raises(ImportError, match=r"wandb_project needs the 'wandb' extra: pip install 'deliberation-env\[wandb\]'"):
        MetricLogger(tmp_path / "run", wandb_project="p")
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    with pytest.raises(ImportError, match=r"tensorboard needs the 'tensorboard' extra"):
        MetricLogger(tmp_path / "run", tensorboard=True)
    assert not (tmp_path / "run").exists()


def test_a_run_refuses_wandb_without_a_run_folder():
    from algorithms.text import TextMAGRPOConfig
    from algorithms.text.config import text_run

    with pytest.raises(ValueError, match="wandb_project logs the metrics of the run folder: give run_dir"):
        text_run(wandb_project="p", run_dir=None)
    assert TextMAGRPOConfig(run=text_run(wandb_project="p", run_dir="runs/x")).run.wandb_project == "p"


def test_weights_and_biases_online_without_a_key_is_one_line(tmp_path, monkeypatch, capsys):
    wandb = pytest.importorskip("wandb", reason="Weights & Biases is the 'wandb' extra")
    from algorithms import cli

    wandb.teardown()  # wandb reads its settings once per process: another test's offline mode goes
    for name in ("WANDB_MODE", "WANDB_API_KEY", "WANDB_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))  # no `wandb login` here
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    run_dir = tmp_path / "run"
    args = ["train", "meta", "grpo", "--team", "simulated", "--updates", "1", "--sft-updates", "0",
            "--no-progress", "--wandb-project", "x", "--run-dir", str(run_dir)]  # fmt: skip
    with pytest.raises(SystemExit):
        cli.main(args)
    err = capsys.readouterr().err
    assert "--wandb-project: Weights & Biases refused to start" in err and "WANDB_MODE=offline" in err
    assert "Traceback" not in err and err.count("\n") == 1
    wandb.teardown()
    monkeypatch.setenv("WANDB_MODE", "offline")  # the same folder: a failed start is reused
    cli.main(args)
    assert (run_dir / "metrics.jsonl").exists()
