"""The training and comparison harness: files, resume, budgets, CIs, tyro-friendly configs."""

import csv
import dataclasses
import json
import warnings

import pytest
import tyro
from rich.console import Console
from scipy import stats

from algorithms import cli
from algorithms.core.compare import difference, difference_lines, mean_ci, run_grid, summary_table
from algorithms.core.config import RunConfig
from algorithms.core.metrics import read_metrics
from algorithms.meta import GRPOConfig, PolicyGradientConfig, SFTConfig, SoftRankPOConfig
from algorithms.meta.compare import CompareConfig, compare
from algorithms.meta.train import train
from deliberation_env import EnvConfig

SMALL = {"groups_per_update": 2, "group_size": 4, "hidden_size": 16, "num_heads": 2}
ENV = EnvConfig(team="simulated", difficulty=3, max_rounds=2)


def tiny_run(tmp_path, **overrides) -> RunConfig:
    return RunConfig(**{"updates": 2, "eval_interval": 2, "eval_problems": 12, "run_dir": str(tmp_path / "run"), "progress": False, **overrides})


def tiny(tmp_path, config=SoftRankPOConfig, run=None, **overrides):
    settings = {"env": ENV, "run": run or tiny_run(tmp_path), "sft_updates": 1, **SMALL, **overrides}
    return config(**settings)


def test_train_writes_its_files_and_a_resumed_run_continues_without_repeating(tmp_path):
    result = train(tiny(tmp_path))
    final, run = result.after, tmp_path / "run"
    assert result.run_dir == str(run) and result.before.keys() == final.keys() and len(result.history) == 2
    files = {p.name for p in run.iterdir()}
    assert {"metrics.jsonl", "checkpoint.safetensors", "config.json", "summary.json"} <= files
    assert (run / "sft" / "checkpoint.safetensors").is_file()
    assert 0 <= final["eval/consensus_accuracy"] <= 1
    summary = json.loads((run / "summary.json").read_text())
    assert summary["after"] == final and summary["algo"] == "softrankpo" and set(summary["before"]) == set(final)
    with pytest.raises(ValueError, match="holds a run already: add --resume"):
        train(tiny(tmp_path, run=tiny_run(tmp_path, updates=4)))  # the folder holds a run: continued only when asked
    train(tiny(tmp_path, run=tiny_run(tmp_path, updates=4, resume=True)))  # resume: SFT is done, the learner goes on from update 2
    records = read_metrics(run / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    assert [r["step"] for r in records if "eval/accuracy" in r] == [0, 2, 4]
    assert [r["episodes"] for r in records] == [0, 8, 16, 24, 32]
    assert [r["step"] for r in read_metrics(run / "sft" / "metrics.jsonl")] == [0, 1]


def test_train_sft_alone(tmp_path):
    final = train(SFTConfig(env=ENV, run=tiny_run(tmp_path), episodes_per_update=8, hidden_size=16, num_heads=2)).after
    assert "eval/persist_share" in final
    assert "losses/bc" in read_metrics(tmp_path / "run" / "metrics.jsonl")[1]


def test_bad_train_configs_say_how_to_fix_them(tmp_path):
    with pytest.raises(ValueError, match="updates must be >= 0"):
        RunConfig(updates=-1)
    with pytest.raises(ValueError, match="is not a file: give an SFT checkpoint"):
        GRPOConfig(warm_start=str(tmp_path / "missing.pt"))
    with pytest.raises(ValueError, match="--resume continues the run in --run-dir: give its folder"):
        train(GRPOConfig(env=ENV, run=RunConfig(run_dir=None, resume=True)))


def test_configs_are_tyro_friendly():
    cfg = tyro.cli(GRPOConfig, args=["--kl-coef", "0.1", "--reward-scale", "10", "--updates", "3"])
    assert cfg.kl_coef == 0.1 and cfg.env.reward_scale == 10 and cfg.run.updates == 3
    compare_cfg = tyro.cli(
        CompareConfig, args=["--algos", "softrankpo", "magrpo", "--reward-scales", "0.1", "1"]
    )
    assert compare_cfg.algos == ("softrankpo", "magrpo") and compare_cfg.reward_scales == (0.1, 1.0)


def test_the_cli_reads_lists_separated_by_spaces():
    args = ["compare", "meta", "--algos", "softrankpo", "grpo", "magrpo", "--seeds", "5", "--reward-scales", "0.1", "1", "10"]
    cfg = cli.parse(args).command.command
    assert cfg.algos == ("softrankpo", "grpo", "magrpo") and cfg.seeds == 5
    assert cfg.reward_scales == (0.1, 1.0, 10.0)


def test_the_template_and_warm_start_reach_every_learner_config(tmp_path):
    cfg = CompareConfig(learner=tiny(tmp_path, PolicyGradientConfig, problem_pool=3, seed_pool=2, kl_coef=0.1))
    for algo in ("softrankpo", "grpo", "magrpo", "sft"):
        config = cfg.run_config(algo, 7, tmp_path / algo, 1.0)
        assert (config.problem_pool, config.seed_pool, config.seed, config.run.run_dir) == (3, 2, 7, str(tmp_path / algo))
        assert config.num_envs == 8  # one budget: the warm start plays the learners' batch
    assert cfg.run_config("grpo", 0, tmp_path, 1.0).kl_coef == 0.1
    assert type(cfg.run_config("mine", 0, tmp_path, 1.0)) is GRPOConfig  # a learner of one's own


def test_compare_refuses_unknown_baselines():
    with pytest.raises(ValueError, match="unknown baselines"):
        CompareConfig(baselines=("always-think",))


def test_compare_writes_curves_summary_and_plots(tmp_path):
    cfg = CompareConfig(
        algos=("softrankpo", "magrpo", "sft"),
        seeds=2,
        reward_scales=(0.1, 1.0),
        baselines=("independent", "debate", "oracle"),
        learner=tiny(tmp_path, PolicyGradientConfig),
        out_dir=str(tmp_path / "compare"),
    )
    summary = compare(cfg)
    out = tmp_path / "compare"
    for name in ["compare.csv", "curves.csv", "compare.json"] + [
        f"{plot}.png"
        for plot in ("learning_curves", "final_accuracy", "action_shares", "reward_scale")
    ]:
        assert (out / name).stat().st_size > 0, name
    assert json.loads((out / "compare.json").read_text())["summary"] == summary
    runs = {f"{a}@{s}" for a in ("softrankpo", "magrpo", "sft") for s in ("0.1", "1")}
    assert set(summary["learners"]) == runs
    assert all(stat["n"] == 2 for stat in summary["learners"].values())
    assert summary["best_heuristic"] in ("independent", "debate")
    assert "softrankpo@1" in summary["gap_closed"]
    with (out / "compare.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 2 * 2 * 3 + 2 * 3  # runs (seeds x scales x algos) + baselines (seeds x 3)
    # One warm start per seed, shared by the learners of that seed.
    assert len(list((out / "sft").iterdir())) == 2


def test_mean_ci_by_hand():
    stat = mean_ci([0.5, 0.7, 0.9])  # sd 0.2, t(0.975, 2) = 4.302653
    assert stat["mean"] == pytest.approx(0.7) and stat["n"] == 3
    assert stat["ci95"] == pytest.approx(4.302653 * 0.2 / 3**0.5, rel=1e-5)
    assert mean_ci([0.4]) == {"mean": 0.4, "ci95": 0.0, "n": 1}


@pytest.mark.parametrize("a, b", [([0.5, 0.7, 0.9], [0.1, 0.3]), ([0.2, 0.25, 0.3, 0.2, 0.4], [0.1, 0.5, 0.3])])
def test_a_difference_of_learners_is_welchs_interval_over_their_seeds(a, b):
    expected = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)

    d = difference(mean_ci(a), mean_ci(b))

    assert d["mean"] - d["ci95"] == pytest.approx(expected.low)
    assert d["mean"] + d["ci95"] == pytest.approx(expected.high)


@pytest.mark.parametrize("pairs", [3, 6])
def test_several_pairs_get_bonferronis_intervals(pairs):
    """Three learners compared pairwise at 95% each would show a difference that is not
    there one time in seven: each of m pairs is tested at 1 - 0.05 / m."""
    a, b = [0.5, 0.7, 0.9], [0.1, 0.3, 0.2]
    expected = stats.ttest_ind(a, b, equal_var=False).confidence_interval(1 - 0.05 / pairs)
    d = difference(mean_ci(a), mean_ci(b), pairs)
    assert d["mean"] - d["ci95"] == pytest.approx(expected.low)
    assert d["ci95"] > difference(mean_ci(a), mean_ci(b))["ci95"]


def test_the_summary_says_which_differences_the_seeds_show():
    learners = {"a": mean_ci([0.5, 0.6, 0.55]), "b": mean_ci([0.1, 0.2, 0.15]), "c": mean_ci([0.0, 0.9, 0.3])}

    lines = difference_lines(learners, "eval/correct")

    assert len(lines) == 3  # every pair once
    family = "95% interval, Bonferroni over 3 pairs,"
    assert lines[0].startswith("a - b in eval/correct: +0.400") and f"shown (the {family} excludes 0)" in lines[0]
    assert f"not shown (the {family} covers 0)" in lines[1]  # a - c: seeds too spread to tell
    assert "no interval" in difference_lines({"a": mean_ci([0.5]), "b": mean_ci([0.1, 0.2])}, "x")[0]
    same_every_seed = difference_lines({"a": mean_ci([0.5, 0.5]), "b": mean_ci([0.1, 0.1])}, "x")[0]
    assert "no spread, so not tested" in same_every_seed and "shown" not in same_every_seed


def test_one_seed_prints_its_mean_without_an_interval():
    summary = {"grpo": {"eval/joint": mean_ci([0.415])}, "magrpo": {"eval/joint": mean_ci([0.4, 0.6])}}
    console = Console(width=100, record=True)
    console.print(summary_table(summary, ["eval/joint"], "one seed"))
    text = console.export_text()
    assert "0.415 (1 seed)" in text and "0.500 +- 1.271" in text and "+- 0.000" not in text


def test_run_grid_goes_learner_by_learner_or_seed_by_seed_after_its_setup():
    calls = []

    def train(algo, seed):
        calls.append((algo, seed))
        return {"score": seed}

    rows = run_grid(train, ["a", "b"], 2)
    assert calls == [("a", 0), ("a", 1), ("b", 0), ("b", 1)]
    assert rows[1] == {"algo": "a", "seed": 1, "score": 1}
    calls.clear()
    rows = run_grid(train, ["a", "b"], 2, setup_seed=lambda seed: calls.append(("setup", seed)))
    assert calls == [("setup", 0), ("a", 0), ("b", 0), ("setup", 1), ("a", 1), ("b", 1)]
    assert [row["algo"] for row in rows] == ["a", "b", "a", "b"]


def test_a_resumed_run_returns_and_records_every_update_of_the_run(tmp_path):
    train(tiny(tmp_path))
    resumed = train(tiny(tmp_path, run=tiny_run(tmp_path, updates=4, resume=True)))
    logged = [r for r in read_metrics(tmp_path / "run" / "metrics.jsonl") if r["step"] >= 1]
    assert len(resumed.history) == 4  # the two of the first call too, read from the log
    assert [h["rewards/total/mean"] for h in resumed.history] == [r["rewards/total/mean"] for r in logged]
    again = train(tiny(tmp_path, run=tiny_run(tmp_path, updates=4, resume=True)))  # finished: nothing to run
    assert [h["rewards/total/mean"] for h in again.history] == [r["rewards/total/mean"] for r in logged]


def test_a_resume_that_would_end_before_the_run_or_change_its_held_out_problems_is_refused(tmp_path):
    train(tiny(tmp_path, run=tiny_run(tmp_path, updates=4)))
    recorded = (tmp_path / "run" / "config.json").read_text()
    with pytest.raises(ValueError, match="with --updates 2: it has logged 4 updates already"):
        train(tiny(tmp_path, run=tiny_run(tmp_path, updates=2, resume=True)))
    with pytest.raises(ValueError, match="eval_problems is 12 there and 20 here"):
        train(tiny(tmp_path, run=tiny_run(tmp_path, updates=6, eval_problems=20, resume=True)))
    assert (tmp_path / "run" / "config.json").read_text() == recorded  # refused before anything is written


def test_a_meta_comparison_resumed_with_fewer_updates_is_refused_before_anything_is_written(tmp_path):
    template = PolicyGradientConfig(env=ENV, run=tiny_run(tmp_path, run_dir=""), sft_updates=3, **SMALL)
    cfg = CompareConfig(learner=template, algos=("grpo",), seeds=1, baselines=("oracle",), out_dir=str(tmp_path / "cmp"))
    compare(cfg)
    recorded = (tmp_path / "cmp" / "config.json").read_text()
    fewer = dataclasses.replace(template, run=tiny_run(tmp_path, run_dir="", updates=1, resume=True))
    with pytest.raises(ValueError, match="has logged 2 updates already"):  # the warm start's 3 run their own length
        compare(dataclasses.replace(cfg, learner=fewer))
    assert (tmp_path / "cmp" / "config.json").read_text() == recorded
    compare(dataclasses.replace(cfg, learner=dataclasses.replace(template, run=tiny_run(tmp_path, run_dir="", resume=True))))


def test_a_resumed_run_says_which_settings_it_gives_otherwise(tmp_path):
    """A GPU client's: a resume that changed a run setting was accepted in silence, and
    ``config.json`` then records only the new values."""
    train(tiny(tmp_path))
    with pytest.warns(UserWarning, match=r"resuming the run in .* with run\.updates 4 \(was 2\), run\.eval_interval 4 \(was 2\)"):
        train(tiny(tmp_path, run=tiny_run(tmp_path, updates=4, eval_interval=4, resume=True)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same settings again: nothing to say
        train(tiny(tmp_path, run=tiny_run(tmp_path, updates=4, eval_interval=4, resume=True)))
