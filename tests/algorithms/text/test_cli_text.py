"""``deliberate train --env text`` and ``deliberate compare --env text``, in-process with the
tiny random model and one short update (issue 11)."""

from __future__ import annotations

import json

import pytest

from algorithms import cli
from algorithms.text import TextGRPOConfig, TextSoftRankPOConfig

TINY = ["--model", "tiny", "--groups-per-update", "1", "--group-size", "2", "--max-new-tokens", "4",
        "--no-progress"]  # fmt: skip


def test_train_text_writes_the_run_files_and_prints_the_table(tmp_path, capsys):
    run_dir = tmp_path / "grpo-run"
    cli.main(["train", "--env", "text", "--algo", "grpo", *TINY, "--updates", "2", "--eps", "0.001",
              "--eval-problems", "2", "--run-dir", str(run_dir)])  # fmt: skip

    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["charts/update"] for line in lines] == [1.0, 2.0]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["algo"] == "grpo"
    assert summary["config"]["eps"] == 0.001
    assert set(summary["after"]) == {
        "eval/correct", "eval/format", "eval/joint", "eval/asked_form_share", "eval/truncated_share",
        "eval/mean_completion_tokens",
    }
    assert (run_dir / "checkpoint.safetensors").is_file()
    assert {"agent_0", "agent_1"} <= {p.name for p in (run_dir / "adapters").iterdir()}
    out = capsys.readouterr().out
    assert "TextGRPO" in out
    assert "held-out eval/joint" in out


def test_train_text_parses_the_learners_own_config():
    config = cli.parse_text(*cli.text_command(["train", "--env=text", "--algo=softrankpo", "--tau", "0.25"]))
    assert type(config) is TextSoftRankPOConfig
    assert config.tau == 0.25
    assert config.kl_coef == 0.02


def test_train_text_rejects_an_unknown_algo_by_name():
    with pytest.raises(SystemExit, match="--algo must be one of .*'ppo'"):
        cli.main(["train", "--env", "text", "--algo", "ppo"])


def test_train_text_rejects_another_learners_option():
    with pytest.raises(SystemExit):
        cli.main(["train", "--env", "text", "--algo", "magrpo", "--tau", "0.25"])


def test_compare_text_runs_algos_by_seeds_and_writes_the_table_and_json(tmp_path, capsys):
    cli.main(["compare", "--env", "text", "--algos", "magrpo,grpo", "--seeds", "2", *TINY, "--updates", "1",
              "--name", "cmp", "--out-dir", str(tmp_path)])  # fmt: skip

    folder = tmp_path / "cmp"
    for algo in ("magrpo", "grpo"):
        for seed in (0, 1):
            summary = json.loads((folder / algo / f"seed{seed}" / "summary.json").read_text())
            assert (summary["algo"], summary["config"]["seed"]) == (algo, seed)
    record = json.loads((folder / cli.TEXT_COMPARE_FILE).read_text())
    assert [(r["algo"], r["seed"]) for r in record["runs"]] == [("magrpo", 0), ("magrpo", 1), ("grpo", 0), ("grpo", 1)]
    assert record["summary"]["grpo"]["rewards/joint/mean"]["n"] == 2
    assert "eval/joint" not in record["summary"]["grpo"]  # no --eval-problems: no held-out column
    out = capsys.readouterr().out
    assert "magrpo" in out and "grpo" in out
    assert "rewards/joint/mean" in out


def test_compare_text_keeps_each_learners_defaults_under_shared_settings(tmp_path):
    cfg = cli.parse_text("compare", ["--model", "tiny", "--learning-rate", "0.001", "--out-dir", str(tmp_path)])
    softrankpo = cfg.run_config("softrankpo", 1)
    assert type(softrankpo) is TextSoftRankPOConfig
    assert (softrankpo.learning_rate, softrankpo.kl_coef, softrankpo.seed) == (0.001, 0.02, 1)
    assert softrankpo.run_dir == str(tmp_path / "text-compare" / "softrankpo" / "seed1")
    assert type(cfg.run_config("grpo", 0)) is TextGRPOConfig


def test_compare_text_rejects_unknown_algos_and_bad_seeds():
    with pytest.raises(ValueError, match="--algos must be a non-empty subset"):
        cli.TextCompare(algos=("magrpo", "ppo"))
    with pytest.raises(ValueError, match="--seeds must be >= 1"):
        cli.TextCompare(seeds=0)


def test_meta_train_is_not_routed_to_the_text_learners():
    assert cli.text_command(["train", "--algo", "grpo"]) is None
    assert cli.text_command(["compare", "--env", "meta"]) is None


def test_train_text_starts_from_a_config_file_and_flags_override_it(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("command: train\nenv: text\nalgo: grpo\ntask: arithmetic\ndifficulty: 2\nmax_turns: 2\neps: 0.01\n")
    for argv in (["train", "--env", "text", "--config", str(path)], ["train", f"--config={path}"]):
        config = cli.parse_text(*cli.text_command(argv)) if "--env" in argv else cli.parse(argv)
        assert type(config) is TextGRPOConfig
        assert (config.difficulty, config.max_turns, config.eps, config.group_size) == (2, 2, 0.01, 4)
    config = cli.parse_text("train", ["--config", str(path), "--eps", "0.5", "--max-turns", "3"])
    assert (config.max_turns, config.difficulty, config.eps) == (3, 2, 0.5)
    with pytest.raises(ValueError, match=r"unknown TextSoftRankPOConfig fields \['eps'\]"):
        cli.parse_text("train", ["--config", str(path), "--algo", "softrankpo"])  # the file's eps is GRPO's


def test_compare_text_counts_the_files_learner_settings_as_given(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"command": "compare", "env": "text", "algos": ["softrankpo"], "seeds": 1, "learner": {"kl_coef": 0.0}}')
    cfg = cli.parse_text("compare", ["--config", str(path)])
    assert (cfg.algos, cfg.seeds) == (("softrankpo",), 1)
    assert cfg.run_config("softrankpo", 0).kl_coef == 0.0


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("command: train\nenv: text\nn_agents: 1\n", r"t.yaml: n_agents must be >= 2"),
        ("command: train\nenv: text\nteam: smollm2\n", r"t.yaml: unknown TextMAGRPOConfig fields \['team'\]"),
        ("command: train\nenv: {team: simulated}\n", r"t.yaml is for 'deliberate train' \(env \{'team'"),
        ("command: run\nenv: text\n", r"t.yaml is for 'deliberate run'"),
    ],
)
def test_a_bad_text_config_file_is_named(tmp_path, text, match):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        cli.parse_text("train", ["--config", str(path)])


def test_compare_text_passes_a_shared_setting_given_at_its_default():
    given = cli.parse_text("compare", ["--algos", "softrankpo", "--kl-coef", "0", "--model", "tiny"])
    assert given.run_config("softrankpo", 0).kl_coef == 0.0
    left = cli.parse_text("compare", ["--algos", "softrankpo", "--model", "tiny"])
    assert left.run_config("softrankpo", 0).kl_coef == TextSoftRankPOConfig().kl_coef > 0


def test_compare_text_reports_the_asked_form_truncation_and_length_beside_accuracy(tmp_path):
    cli.main(["compare", "--env", "text", "--algos", "grpo", "--seeds", "1", *TINY, "--updates", "1",
              "--eval-problems", "2", "--name", "cmp", "--out-dir", str(tmp_path)])  # fmt: skip
    summary = json.loads((tmp_path / "cmp" / cli.TEXT_COMPARE_FILE).read_text())["summary"]["grpo"]
    for metric in ("eval/correct", "eval/asked_form_share", "eval/truncated_share", "eval/mean_completion_tokens"):
        assert summary[metric]["n"] == 1
    assert 0 <= summary["eval/truncated_share"]["mean"] <= 1
