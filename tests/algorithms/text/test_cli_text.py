"""``deliberate train text`` and ``deliberate compare text``, in-process with the tiny random
model and one short update (issue 11); the run folders of issue 26."""

from __future__ import annotations

import json

import pytest

from algorithms import cli
from algorithms.text import TextGRPOConfig, TextMAGRPOConfig, TextSoftRankPOConfig, compare

TINY = ["--model", "tiny", "--groups-per-update", "1", "--group-size", "2", "--max-new-tokens", "4",
        "--no-progress"]  # fmt: skip


def parse(*args: str):
    """The config of ``deliberate ARGS`` (its leaf)."""
    return cli.parse(list(args)).command.command


def test_train_text_writes_the_run_files_and_prints_the_table(tmp_path, capsys):
    run_dir = tmp_path / "grpo-run"
    cli.main(["train", "text", "grpo", *TINY, "--updates", "2", "--eps", "0.001", "--eval-problems", "2",
              "--run-dir", str(run_dir)])  # fmt: skip

    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [0, 1, 2]  # the evaluation before training, two updates
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["algo"] == "grpo"
    assert summary["config"]["eps"] == 0.001
    assert set(summary["after"]) == {
        "eval/correct", "eval/format", "eval/joint", "eval/asked_form_share", "eval/truncated_share",
        "eval/mean_completion_tokens",
    }  # fmt: skip
    assert (run_dir / "checkpoint.safetensors").is_file()
    assert {"agent_0", "agent_1"} <= {p.name for p in (run_dir / "adapters").iterdir()}
    out = capsys.readouterr().out
    assert "TextGRPO" in out
    assert "held-out eval/joint" in out
    assert (
        f"wrote {run_dir}/: adapters/, checkpoint.safetensors, config.json, learning_curves.png, metrics.jsonl, summary.json"
        in out
    )
    assert (run_dir / "learning_curves.png").read_bytes()[:4] == b"\x89PNG"


def test_train_text_gets_a_folder_of_its_own_and_resumes_only_when_asked(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cli.main(["train", "text", "magrpo", *TINY, "--updates", "1"])
    (folder,) = (tmp_path / "runs" / "train").iterdir()
    assert folder.name.startswith("text-magrpo-seed0-")
    with pytest.raises(SystemExit) as refused:
        cli.main(["train", "text", "magrpo", *TINY, "--updates", "2", "--run-dir", str(folder)])
    assert refused.value.code == 2
    assert "holds a run already: add --resume" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "magrpo", *TINY, "--updates", "2", "--run-dir", str(folder), "--resume", "--lora-rank", "4"])
    assert "lora_rank is 8 there and 4 here" in capsys.readouterr().err
    assert len((folder / "metrics.jsonl").read_text().splitlines()) == 1  # refused before anything was written
    cli.main(["train", "text", "magrpo", *TINY, "--updates", "2", "--run-dir", str(folder), "--resume"])
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["charts/update"] for line in lines] == [1.0, 2.0]


def test_train_text_parses_the_learners_own_config():
    config = parse("train", "text", "softrankpo", "--tau", "0.25").learner
    assert type(config) is TextSoftRankPOConfig
    assert config.tau == 0.25
    assert config.kl_coef == 0.02  # SoftRankPO's own default, a KL to the base
    assert type(parse("train", "text", "magrpo").learner) is TextMAGRPOConfig


def test_rollout_workers_and_env_workers_are_named_apart():
    assert parse("train", "text", "grpo", "--rollout-workers", "2").learner.workers == 2
    assert parse("train", "meta", "grpo", "--env-workers", "2").learner.env.workers == 2
    assert parse("compare", "text", "--rollout-workers", "3").learner.workers == 3


def test_train_text_rejects_an_unknown_learner_and_another_learners_option():
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "ppo"])
    with pytest.raises(SystemExit):
        cli.main(["train", "text", "magrpo", "--tau", "0.25"])


def test_compare_text_runs_algos_by_seeds_and_writes_the_table_and_json(tmp_path, capsys):
    folder = tmp_path / "cmp"
    cli.main(["compare", "text", "--algos", "magrpo", "grpo", "--seeds", "2", *TINY, "--updates", "1",
              "--out-dir", str(folder)])  # fmt: skip

    for algo in ("magrpo", "grpo"):
        for seed in (0, 1):
            summary = json.loads((folder / algo / f"seed{seed}" / "summary.json").read_text())
            assert (summary["algo"], summary["config"]["seed"]) == (algo, seed)
    record = json.loads((folder / "compare.json").read_text())
    assert [(r["algo"], r["seed"]) for r in record["runs"]] == [("magrpo", 0), ("magrpo", 1), ("grpo", 0), ("grpo", 1)]
    assert record["summary"]["grpo"]["rewards/joint/mean"]["n"] == 2
    assert "eval/joint" not in record["summary"]["grpo"]  # no --eval-problems: no held-out column
    out = " ".join(capsys.readouterr().out.split())
    assert "magrpo" in out and "grpo" in out
    assert "rewards/joint/mean" in out
    assert f"wrote {folder}/: compare.csv, compare.json, config.json, curves.csv, final_accuracy.png, grpo/, learning_curves.png, magrpo/" in out
    assert (folder / "learning_curves.png").read_bytes()[:4] == b"\x89PNG"


def test_compare_text_keeps_each_learners_defaults_under_shared_settings(tmp_path):
    cfg = parse("compare", "text", "--model", "tiny", "--learning-rate", "0.001", "--out-dir", str(tmp_path))
    softrankpo = cfg.run_config("softrankpo", 1)
    assert type(softrankpo) is TextSoftRankPOConfig
    assert (softrankpo.learning_rate, softrankpo.tau, softrankpo.seed) == (0.001, 0.5, 1)
    assert softrankpo.run.run_dir == str(tmp_path / "softrankpo" / "seed1")
    assert type(cfg.run_config("grpo", 0)) is TextGRPOConfig


def test_compare_text_gives_every_learner_the_kl_coef_given(tmp_path):
    cfg = parse("compare", "text", "--model", "tiny", "--kl-coef", "0.1", "--out-dir", str(tmp_path))
    assert [cfg.run_config(algo, 0).kl_coef for algo in ("magrpo", "grpo", "softrankpo")] == [0.1, 0.1, 0.1]


def test_compare_text_rejects_unknown_algos_and_bad_seeds():
    with pytest.raises(ValueError, match="--algos 'ppo' is not one of magrpo, grpo, softrankpo"):
        compare.compare(compare.TextCompare(algos=("magrpo", "ppo")))
    with pytest.raises(ValueError, match="--seeds must be >= 1"):
        compare.TextCompare(seeds=0)


def test_compare_text_refuses_the_settings_it_sets_per_run(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["compare", "text", "--model", "tiny", "--seed", "3", "--out-dir", str(tmp_path / "c")])
    assert "compare sets --seed for each run: use --seeds" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_compare_text_refuses_a_setting_one_learner_refuses_before_any_run(tmp_path, capsys):
    """A reviewer: GRPO's seeds all trained, then MAGRPO refused --clip-eps-high."""
    folder = tmp_path / "cmp"
    with pytest.raises(SystemExit):
        cli.main(["compare", "text", "--algos", "grpo", "magrpo", "--seeds", "1", *TINY, "--updates", "1",
                  "--clip-eps-high", "0.28", "--out-dir", str(folder)])  # fmt: skip
    assert "MAGRPO is one REINFORCE step" in capsys.readouterr().err
    assert not folder.exists()
