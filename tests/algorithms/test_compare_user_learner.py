"""A learner of one's own joins ``compare`` beside the shipped ones, from Python
(``learners={"mine": Mine}``) and from the command line (``--algos ./mine.py:Mine``), in
both families; both families' comparisons write the same files and print one seed alike;
a config file's ``algos`` never imports code (issue 33, items 4 and 7)."""

from __future__ import annotations

import csv
import json
import sys
from dataclasses import replace

import pytest
import torch

from algorithms import cli
from algorithms.core.compare import (
    CURVES_CSV,
    CURVES_FIGURE,
    FINAL_FIGURE,
    RESULTS_CSV,
    RESULTS_JSON,
)
from algorithms.core.config import RunConfig
from algorithms.meta import compare as meta_compare
from algorithms.meta.config import PolicyGradientConfig
from algorithms.meta.grpo import GRPO
from algorithms.text import compare as text_compare
from algorithms.text.config import TextLearnerConfig, text_run
from algorithms.text.learners import TextGRPO
from deliberation_env.meta.config import EnvConfig

SMALL = {"groups_per_update": 2, "group_size": 2, "hidden_size": 16, "num_heads": 2}
TINY_META = [
    "--team", "simulated", "--difficulty", "3", "--max-rounds", "2", "--updates", "2", "--sft-updates", "1",
    "--eval-interval", "2", "--eval-problems", "8", "--no-progress",
    "--groups-per-update", "2", "--group-size", "2", "--hidden-size", "16", "--num-heads", "2",
]  # fmt: skip
COMMON_FILES = {RESULTS_CSV, CURVES_CSV, RESULTS_JSON, CURVES_FIGURE, FINAL_FIGURE, "config.json"}
"""What every comparison writes beside its runs' folders."""
MINE = """
from algorithms.meta.grpo import GRPO


class Mine(GRPO):
    '''GRPO with the group mean as the only baseline (no standardization).'''

    name = "mine"

    def compute_advantages(self, returns):
        return returns - returns.mean(1, keepdim=True)
"""
MARKING = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nMine = None\n"


class Centred(GRPO):
    """A meta learner of one's own: returns minus their group mean."""

    name = "centred"

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        return returns - returns.mean(1, keepdim=True)


class CentredText(TextGRPO):
    """A text learner of one's own: returns minus their group mean."""

    name = "centred"

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        return returns - returns.mean(1, keepdim=True)


def tiny_meta(tmp_path, algos: tuple[str, ...], seeds: int = 1) -> meta_compare.CompareConfig:
    template = PolicyGradientConfig(
        env=EnvConfig(team="simulated", difficulty=3, max_rounds=2), sft_updates=1,
        run=RunConfig(updates=2, eval_interval=2, eval_problems=8, progress=False), **SMALL,
    )  # fmt: skip
    return meta_compare.CompareConfig(
        learner=template, algos=algos, seeds=seeds, baselines=("independent", "oracle"), out_dir=str(tmp_path / "meta")
    )


def tiny_text(tmp_path, algos: tuple[str, ...]) -> text_compare.TextCompare:
    shared = TextLearnerConfig(
        model="tiny", groups_per_update=1, group_size=2, max_new_tokens=4, run=text_run(updates=1, progress=False)
    )
    return text_compare.TextCompare(learner=shared, algos=algos, seeds=1, out_dir=str(tmp_path / "text"))


def top_files(folder) -> set[str]:
    return {path.name for path in folder.iterdir() if path.is_file()}


@pytest.fixture
def beside(tmp_path, monkeypatch):
    """``mine.py`` (a learner) and ``evil.py`` (writes a marker when imported) in the working
    directory; the marker's path. The modules are forgotten afterwards."""
    marker = tmp_path / "evil.ran"
    (tmp_path / "mine.py").write_text(MINE)
    (tmp_path / "evil.py").write_text(MARKING.format(marker=str(marker)))
    monkeypatch.chdir(tmp_path)
    yield marker
    for name in ("mine", "evil"):
        sys.modules.pop(name, None)


def test_a_meta_learner_of_ones_own_joins_compare_from_python(tmp_path):
    cfg = tiny_meta(tmp_path, ("softrankpo", "centred"), seeds=2)
    summary = meta_compare.compare(cfg, learners={"centred": Centred})
    assert set(summary["learners"]) == {"softrankpo@1", "centred@1"}
    assert summary["learners"]["centred@1"]["n"] == 2 and "centred@1" in summary["gap_closed"]
    out = tmp_path / "meta"
    summary_file = json.loads((out / "scale1" / "centred" / "seed1" / "summary.json").read_text())
    assert summary_file["algo"] == "centred" and summary_file["after"]["eval/consensus_accuracy"] >= 0
    # its folder records it by its name, as its checkpoint does (not as the GRPO its config is)
    assert json.loads((out / "scale1" / "centred" / "seed1" / "config.json").read_text())["algo"] == "centred"
    with (out / RESULTS_CSV).open() as file:
        assert [row["seed"] for row in csv.DictReader(file) if row["algo"] == "centred"] == ["0", "1"]
    with (out / CURVES_CSV).open() as file:
        assert any(row["algo"] == "centred" and row["eval/consensus_accuracy"] for row in csv.DictReader(file))


def example_reinforce():
    """``Reinforce`` of ``examples/05_custom_learner.py``: a learner on the skeleton alone
    (it logs no action shares)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "05_custom_learner.py"
    spec = importlib.util.spec_from_file_location("custom_learner_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Reinforce


def test_a_comparison_of_ones_own_learners_alone_is_written_and_the_same_seed_repeats_it(tmp_path):
    """Every learner one's own, built on the learner skeleton as example 05's: the table and
    files are written (no action-share figure: none logged its shares), and the same seed
    gives the same comparison."""
    reinforce = example_reinforce()
    finals = []
    for attempt in ("a", "b"):
        cfg = replace(tiny_meta(tmp_path / attempt, ("reinforce",)), baselines=("independent",))
        summary = meta_compare.compare(cfg, learners={"reinforce": reinforce})
        assert "reinforce@1" in summary["learners"]
        out = tmp_path / attempt / "meta"
        assert COMMON_FILES <= top_files(out) and "action_shares.png" not in top_files(out)
        finals.append((out / RESULTS_CSV).read_text())
    assert finals[0] == finals[1]


def test_a_meta_learner_of_ones_own_joins_compare_from_the_command_line(beside, tmp_path, capsys):
    cli.main(["compare", "meta", "--algos", "softrankpo", "./mine.py:Mine", "--seeds", "1", "--baselines", "oracle",
              "--out-dir", str(tmp_path / "cmp"), *TINY_META])  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    assert "Mine@1 │" in out and "softrankpo@1 │" in out and "(1 seed)" in out and "+- 0.000" not in out
    record = json.loads((tmp_path / "cmp" / RESULTS_JSON).read_text())
    assert set(record["summary"]["learners"]) == {"softrankpo@1", "Mine@1"}
    assert record["config"]["algos"] == ["softrankpo", "./mine.py:Mine"]
    assert (tmp_path / "cmp" / "scale1" / "Mine" / "seed0" / "checkpoint.safetensors").is_file()


def test_a_text_learner_of_ones_own_joins_compare_and_both_families_write_the_same_files(tmp_path, capsys):
    meta_summary = meta_compare.compare(tiny_meta(tmp_path, ("softrankpo", "centred")), learners={"centred": Centred})
    text_summary = text_compare.compare(tiny_text(tmp_path, ("grpo", "centred")), learners={"centred": CentredText})

    assert set(text_summary) == {"grpo", "centred"} and text_summary["centred"]["rewards/joint/mean"]["n"] == 1
    for recorded in ("summary.json", "config.json"):
        assert json.loads((tmp_path / "text" / "centred" / "seed0" / recorded).read_text())["algo"] == "centred"
    assert top_files(tmp_path / "text") == COMMON_FILES
    assert top_files(tmp_path / "meta") == COMMON_FILES | {"action_shares.png", "reward_scale.png"}
    for family, summary in (("meta", meta_summary), ("text", text_summary)):
        record = json.loads((tmp_path / family / RESULTS_JSON).read_text())
        assert record["summary"] == summary and set(record) >= {"config", "env", "date", "runs"}
        assert (tmp_path / family / FINAL_FIGURE).read_bytes()[:4] == b"\x89PNG"
    text_table = text_compare.compare_table(text_summary, tiny_text(tmp_path, ("grpo",)))
    meta_table = meta_compare.compare_table(meta_summary, tiny_meta(tmp_path, ("softrankpo",)))
    for table in (text_table, meta_table):  # one seed: its mean, marked, and no interval of 0
        cells = [cell for column in table.columns for cell in column._cells]
        assert any(cell.endswith(" (1 seed)") for cell in cells) and not any("+- 0.000" in cell for cell in cells)
        # and each pair of learners' difference, said not shown: one seed gives no interval
        assert " - " in table.caption and "1 seed on a side: no interval, so not shown" in table.caption
    assert "grpo - centred in rewards/joint/mean" in text_table.caption
    assert text_compare.incidental_line() in text_table.caption  # and what a seed moves under incidental changes


def test_a_text_learner_of_ones_own_joins_compare_text_from_the_command_line(beside, tmp_path, capsys):
    (tmp_path / "mine.py").write_text(
        "from algorithms.text.learners import TextGRPO\n\n\nclass Mine(TextGRPO):\n    name = 'mine'\n"
    )
    cli.main(["compare", "text", "--algos", "magrpo", "./mine.py:Mine", "--seeds", "1", "--model", "tiny",
              "--groups-per-update", "1", "--group-size", "2", "--max-new-tokens", "4", "--updates", "1",
              "--no-progress", "--out-dir", str(tmp_path / "cmp")])  # fmt: skip
    record = json.loads((tmp_path / "cmp" / RESULTS_JSON).read_text())
    assert [row["algo"] for row in record["runs"]] == ["magrpo", "Mine"]
    assert json.loads((tmp_path / "cmp" / "Mine" / "seed0" / "summary.json").read_text())["algo"] == "mine"


def test_a_name_that_is_no_learner_is_refused_before_anything_is_written(tmp_path):
    cfg = tiny_meta(tmp_path, ("softrankpo", "mine"))
    with pytest.raises(ValueError, match=r"--algos 'mine' is not one of .* learners=\{'mine': Mine\}"):
        meta_compare.compare(cfg)
    with pytest.raises(ValueError, match="--algos 'mine' is not one of magrpo, grpo, softrankpo"):
        text_compare.compare(tiny_text(tmp_path, ("grpo", "mine")))
    with pytest.raises(ValueError, match="names softrankpo, a shipped learner"):
        meta_compare.compare(replace(cfg, algos=("softrankpo",)), learners={"softrankpo": Centred})
    assert not (tmp_path / "meta").exists() and not (tmp_path / "text").exists()
    with pytest.raises(ValueError, match="names Mine twice"):
        meta_compare.CompareConfig(algos=("./mine.py:Mine", "other.module:Mine"))



def test_a_learner_given_in_learners_but_not_named_in_algos_is_refused_before_anything_is_written(tmp_path):
    """A learner one forgot to name in ``algos`` would silently be left out of the table."""
    with pytest.raises(ValueError, match=r"learners= gives 'centred', which algos does not name"):
        meta_compare.compare(tiny_meta(tmp_path, ("softrankpo",)), learners={"centred": Centred})
    with pytest.raises(ValueError, match=r"learners= gives 'centred', which algos does not name"):
        text_compare.compare(tiny_text(tmp_path, ("grpo",)), learners={"centred": CentredText})
    assert not (tmp_path / "meta").exists() and not (tmp_path / "text").exists()


@pytest.mark.parametrize(
    "data",
    [
        {"command": "compare meta", "algos": ["softrankpo", "./evil.py:Mine"]},
        {"command": "compare text", "algos": ["grpo", "evil:Mine"]},
    ],
)
def test_an_import_path_in_a_config_files_algos_is_refused_without_importing(beside, tmp_path, capsys, data):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exit:
        cli.main(["compare", *data["command"].split()[1:], "--config", str(path), "--out-dir", str(tmp_path / "c")])
    error = capsys.readouterr().err
    assert exit.value.code == 2 and f"{data['algos'][1]!r} is an import path" in error
    assert f"(--algos {data['algos'][1]})" in error
    assert not beside.exists() and "evil" not in sys.modules and not (tmp_path / "c").exists()


def test_a_config_files_import_path_is_left_out_where_the_command_line_gives_algos(beside, tmp_path):
    """A real client's: a comparison's own ``config.json`` naming a learner of one's own was
    refused even with ``--algos`` on the command line, which replaces the file's."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"command": "compare meta", "algos": ["softrankpo", "./evil.py:Mine"], "seeds": 3}))
    parsed = cli.parse(["compare", "meta", "--config", str(path), "--algos", "grpo", "./mine.py:Mine"]).command.command
    assert parsed.algos == ("grpo", "./mine.py:Mine") and parsed.seeds == 3  # the rest of the file still counts
    assert not beside.exists() and "evil" not in sys.modules


def test_a_learner_of_the_other_family_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"cannot be built as compare text builds one, Mine\(config, lm, venv, frozen, "
                       r"sampler=sampler\).*a meta learner\? compare meta trains those"):
        text_compare.compare(tiny_text(tmp_path, ("centred",)), learners={"centred": Centred})
    with pytest.raises(ValueError, match=r"cannot be built as compare meta builds one.*a text learner\?"):
        meta_compare.compare(tiny_meta(tmp_path, ("centred",)), learners={"centred": CentredText})
    assert not (tmp_path / "text").exists() and not (tmp_path / "meta").exists()


def test_a_class_that_compare_could_not_evaluate_is_refused_before_anything_is_written(tmp_path):
    """A real client met an AttributeError at the first held-out evaluation, ten frames deep."""

    class NoLearner:
        def __init__(self, config, venv, warm_start=None):
            pass

    class NoPolicy(GRPO):
        policy = None

    with pytest.raises(TypeError, match=r"'plain' is the class .*NoLearner, no algorithms.core.learner.Learner"):
        meta_compare.compare(tiny_meta(tmp_path, ("plain",)), learners={"plain": NoLearner})
    with pytest.raises(TypeError, match=r"'blind' \(.*NoPolicy\) has no policy\(\), which compare meta calls"):
        meta_compare.compare(tiny_meta(tmp_path, ("blind",)), learners={"blind": NoPolicy})
    assert not (tmp_path / "meta").exists()

    class NoPlay(TextGRPO):
        play_held_out = None

    with pytest.raises(TypeError, match=r"'unplayed' \(.*NoPlay\) has no play_held_out\(\), which compare text calls"):
        text_compare.compare(tiny_text(tmp_path, ("unplayed",)), learners={"unplayed": NoPlay})
    assert not (tmp_path / "text").exists()


def test_advantages_of_another_shape_than_the_returns_name_the_learner(tmp_path):
    class Pooled(GRPO):
        name = "pooled"

        def compute_advantages(self, returns):
            return returns.mean(dim=1, keepdim=True)  # one per group: the shape is wrong

    with pytest.raises(ValueError, match=r"Pooled.compute_advantages gave advantages of shape \(2, 1, 3\) "
                       r"for returns of shape \(2, 2, 3\): it must give one advantage per return"):  # fmt: skip
        meta_compare.compare(tiny_meta(tmp_path, ("pooled",)), learners={"pooled": Pooled})


def test_compare_from_python_refuses_a_setting_it_sets_per_run(tmp_path):
    """A reviewer's: only the command line refused them, so compare() trained at scale 1
    and recorded 10."""
    cfg = tiny_meta(tmp_path, ("grpo",))
    scaled = replace(cfg, learner=replace(cfg.learner, env=replace(cfg.learner.env, reward_scale=10.0)))
    with pytest.raises(ValueError, match=r"compare sets --reward-scale for each run: use --reward-scales"):
        meta_compare.compare(scaled)
    seeded = tiny_text(tmp_path, ("grpo",))
    with pytest.raises(ValueError, match=r"compare sets --seed for each run: use --seeds"):
        text_compare.compare(replace(seeded, learner=replace(seeded.learner, seed=3)))
    assert not (tmp_path / "meta").exists() and not (tmp_path / "text").exists()


def test_example_05s_learner_resumed_to_train_longer_ends_where_an_uninterrupted_run_does(tmp_path):
    """A real client's: example 05's learner recorded its ``run`` part among the settings a
    resume must share, so ``--updates 4 --resume`` after 2 was refused; and it drew actions
    from torch's global generator, which no checkpoint holds, so a resume drew otherwise."""
    reinforce = example_reinforce()

    def compared(folder, updates, resume=False):
        cfg = replace(tiny_meta(tmp_path / folder, ("reinforce",)), baselines=("independent",))
        run = replace(cfg.learner.run, updates=updates, eval_interval=updates, resume=resume)
        cfg = replace(cfg, learner=replace(cfg.learner, run=run))
        meta_compare.compare(cfg, learners={"reinforce": reinforce})
        return tmp_path / folder / "meta" / "scale1" / "reinforce" / "seed0"

    straight = compared("straight", 4)
    compared("resumed", 2)
    torch.manual_seed(123)  # whatever torch's global generator holds when the run resumes
    resumed = compared("resumed", 4, resume=True)
    from algorithms.core.checkpoints import load_checkpoint

    ends = [load_checkpoint(folder / "checkpoint.safetensors") for folder in (straight, resumed)]
    assert ends[0]["update"] == ends[1]["update"] == 4
    for name, tensor in ends[0]["linear"].items():
        torch.testing.assert_close(ends[1]["linear"][name], tensor, rtol=0, atol=0)


def test_a_metric_that_is_no_number_is_refused_naming_the_learner_and_the_metric(tmp_path):
    class Noted(Centred):
        name = "noted"

        def train_step(self):
            return {**super().train_step(), "note": "converging"}

    with pytest.raises(TypeError, match=r"Noted.train_step's metric 'note' is 'converging' \(str\): metrics are numbers"):
        meta_compare.compare(tiny_meta(tmp_path, ("noted",)), learners={"noted": Noted})


def test_a_text_comparison_without_accuracy_compares_the_held_out_joint_reward(tmp_path):
    """A real client's: with a protocol of one's own (no "correct"), the learners were told
    apart on the last update's training batch, though a held-out joint reward was there."""
    from algorithms.core.compare import summarize_runs

    runs = {"grpo": [{"rewards/joint/mean": 0.9, "eval/joint": 0.2}, {"rewards/joint/mean": 0.8, "eval/joint": 0.3}],
            "mine": [{"rewards/joint/mean": 0.1, "eval/joint": 0.6}, {"rewards/joint/mean": 0.2, "eval/joint": 0.7}]}  # fmt: skip
    summary = {name: summarize_runs(seeds, text_compare.METRICS) for name, seeds in runs.items()}
    caption = text_compare.compare_table(summary, tiny_text(tmp_path, ("grpo", "mine"))).caption
    assert "grpo - mine in eval/joint: -0.400" in caption and "rewards/joint/mean:" not in caption


def test_a_coding_comparison_compares_the_held_out_pass_rate(tmp_path):
    """On HumanEval the learners were told apart on the joint reward, whose structure
    bonuses can rank a pair that passes fewer problems above one that passes more."""
    from algorithms.core.compare import summarize_runs

    runs = {"grpo": [{"eval/joint": 3.0, "eval/pass_rate": 0.2}, {"eval/joint": 3.2, "eval/pass_rate": 0.3}],
            "magrpo": [{"eval/joint": 2.0, "eval/pass_rate": 0.6}, {"eval/joint": 2.2, "eval/pass_rate": 0.7}]}  # fmt: skip
    summary = {name: summarize_runs(seeds, text_compare.METRICS) for name, seeds in runs.items()}
    caption = text_compare.compare_table(summary, tiny_text(tmp_path, ("grpo", "magrpo"))).caption
    assert "grpo - magrpo in eval/pass_rate: -0.400" in caption and "eval/joint:" not in caption
