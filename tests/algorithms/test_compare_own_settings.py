"""A comparison's learners' own settings (``--grpo.scale-rewards``, ``--softrankpo.tau``,
``--magrpo.baseline``): each reaches its learner's runs alone, in both families, from the
command line, a config file or Python; one given for a learner the comparison does not
train is refused, and a run-only option names the comparison's spelling."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from algorithms import cli
from algorithms.core.compare import field_docs, own_settings
from algorithms.core.config import GroupSettings, GRPOSettings
from algorithms.meta.config import CompareConfig, GRPOConfig, PolicyGradientConfig, SoftRankPOOwn
from algorithms.text import compare as text_compare
from algorithms.text.compare import TextCompare, TextGRPOOwn, TextMAGRPOOwn, TextSoftRankPOOwn
from algorithms.text.config import (
    TextGRPOConfig,
    TextLearnerConfig,
    TextMAGRPOConfig,
    TextSoftRankPOConfig,
)
from algorithms.text.learners import TextMAGRPO
from tests.algorithms.test_compare_user_learner import TINY_META
from tests.algorithms.test_train_own_learner import CENTRED


def parsed(*args: str):
    return cli.parse(list(args)).command.command


def test_text_own_settings_reach_their_learner_only(tmp_path):
    compare = parsed(
        "compare", "text", "--out-dir", str(tmp_path), "--grpo.scale-rewards", "none", "--softrankpo.tau", "0.3",
        "--magrpo.baseline", "rloo", "--kl-coef", "0.05",
    )  # fmt: skip
    grpo, softrankpo, magrpo = (compare.run_config(algo, 1) for algo in ("grpo", "softrankpo", "magrpo"))
    assert type(grpo) is TextGRPOConfig and (grpo.scale_rewards, grpo.eps) == ("none", TextGRPOConfig.eps)
    assert type(softrankpo) is TextSoftRankPOConfig and softrankpo.tau == 0.3
    assert type(magrpo) is TextMAGRPOConfig and magrpo.baseline == "rloo"
    assert {grpo.kl_coef, softrankpo.kl_coef, magrpo.kl_coef} == {0.05}  # the shared option, every learner
    assert grpo.seed == 1 and grpo.run.run_dir == str(tmp_path / "grpo" / "seed1")
    plain = parsed("compare", "text", "--out-dir", str(tmp_path), "--kl-coef", "0.05").run_config("grpo", 1)
    assert dataclasses.replace(grpo, scale_rewards="group") == plain  # nothing else moved


def test_meta_own_settings_reach_their_learner_only(tmp_path):
    compare = parsed("compare", "meta", "--softrankpo.tau", "0.2", "--grpo.eps", "0.001", "--magrpo.joint-return", "sum")
    configs = {algo: compare.run_config(algo, 0, tmp_path / algo, 1.0) for algo in ("softrankpo", "grpo", "magrpo")}
    assert configs["softrankpo"].tau == 0.2 and configs["grpo"].eps == 0.001
    assert configs["magrpo"].joint_return == "sum"
    assert configs["grpo"].scale_rewards == "group"


def test_a_learner_of_ones_own_takes_grpos_own_settings(tmp_path):
    compare = TextCompare(algos=("magrpo", "mine"), grpo=TextGRPOOwn(scale_rewards="batch"), out_dir=str(tmp_path))
    mine = compare.run_config("mine", 0)
    assert type(mine) is TextGRPOConfig and mine.scale_rewards == "batch"
    meta = CompareConfig(algos=("softrankpo", "./mine.py:Mine"), softrankpo=SoftRankPOOwn(tau=0.1))
    assert type(meta.run_config("./mine.py:Mine", 0, tmp_path, 1.0)) is GRPOConfig


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "text", "--algos", "magrpo", "--grpo.scale-rewards", "none"],
         r"^--grpo\.scale-rewards sets grpo's own setting, but --algos has no grpo: add it, or leave --grpo\.scale-rewards out$"),
        (["compare", "meta", "--algos", "grpo", "--softrankpo.tau", "0.3"], r"--softrankpo\.tau sets softrankpo's own setting"),
    ],
)  # fmt: skip
def test_an_own_setting_for_a_learner_not_compared_is_refused(args, message):
    with pytest.raises(ValueError, match=message):
        parsed(*args)
    assert parsed(*args[:2], "--algos", "magrpo", "--grpo.eps", str(GRPOSettings.eps)).algos == ("magrpo",)  # the default: none given


@pytest.mark.parametrize(
    ("family", "flag", "instead"),
    [("text", "--scale-rewards", "--grpo.scale-rewards"), ("meta", "--tau", "--softrankpo.tau"), ("text", "--baseline", "--magrpo.baseline")],
)
def test_a_runs_own_option_on_a_comparison_names_the_comparisons(capsys, family, flag, instead):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", family, flag, "1"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"in a comparison, give {instead}")


def test_own_settings_from_a_config_file(tmp_path):
    path = tmp_path / "compare.yaml"
    path.write_text("algos: [grpo, softrankpo]\ngrpo:\n  scale_rewards: none\nsoftrankpo:\n  tau: 0.25\n", encoding="utf-8")
    compare = parsed("compare", "text", "--config", str(path), "--grpo.eps", "0.01", "--out-dir", str(tmp_path))
    grpo = compare.run_config("grpo", 0)
    assert (grpo.scale_rewards, grpo.eps, compare.run_config("softrankpo", 0).tau) == ("none", 0.01, 0.25)
    path.write_text("grpo:\n  scale_rewardz: none\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"unknown TextGRPOOwn fields \['scale_rewardz'\]"):
        parsed("compare", "text", "--config", str(path))


def test_a_bad_own_value_is_refused_before_anything_runs(tmp_path):
    from algorithms.text.compare import compare

    with pytest.raises(ValueError, match="tau must be > 0"):
        compare(parsed("compare", "text", "--softrankpo.tau", "-1", "--model", "tiny", "--out-dir", str(tmp_path / "c")))
    assert not (tmp_path / "c").exists()


def test_own_settings_are_the_fields_beyond_the_template_with_their_defaults_and_help():
    made = own_settings(TextSoftRankPOConfig, TextLearnerConfig, "Own", __name__)
    assert [(f.name, f.default) for f in dataclasses.fields(made)] == [("tau", 0.5)]  # kl_coef is the template's
    assert [f.name for f in dataclasses.fields(own_settings(GRPOConfig, PolicyGradientConfig, "Own", __name__))] == ["eps", "scale_rewards"]
    assert field_docs(GRPOSettings)["eps"] == "Added to the standard deviation (>= 0)."
    assert "scale_rewards" not in field_docs(GroupSettings)


def test_a_comparison_recorded_before_own_settings_resumes_at_their_defaults_only(tmp_path):
    from algorithms.core.run_dirs import changed_settings

    now = dataclasses.asdict(TextCompare(out_dir=str(tmp_path)))
    before = {name: value for name, value in now.items() if name not in ("magrpo", "grpo", "softrankpo")}
    assert changed_settings(before, now) == []  # it ran with the defaults
    tau = dataclasses.asdict(TextCompare(out_dir=str(tmp_path), softrankpo=TextSoftRankPOOwn(tau=0.3)))
    assert changed_settings(before, tau) == ["softrankpo.tau is 0.5 there and 0.3 here"]
    meta = dataclasses.asdict(CompareConfig())
    old_meta = {name: value for name, value in meta.items() if name not in ("magrpo", "grpo", "softrankpo")}
    assert changed_settings(old_meta, meta) == []


@pytest.fixture
def centred_beside(tmp_path, monkeypatch):
    """``centred.py`` in the working directory: a meta learner whose config derives from MAGRPO's."""
    (tmp_path / "centred.py").write_text(CENTRED)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("centred", None)


def test_a_learner_of_ones_own_takes_the_own_settings_of_the_learner_its_config_derives_from(centred_beside, capsys):
    out = centred_beside / "cmp"
    cli.main(["compare", "meta", "--algos", "./centred.py:Centred", "--magrpo.joint-return", "sum", "--seeds", "1",
              "--baselines", "oracle", "--out-dir", str(out), *TINY_META])  # fmt: skip
    recorded = json.loads((out / "scale1" / "Centred" / "seed0" / "config.json").read_text())
    assert recorded["joint_return"] == "sum" and recorded["algo"] == "centred"

    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:  # GRPO's: the comparison trains no learner that takes them
        cli.main(["compare", "meta", "--algos", "./centred.py:Centred", "--grpo.eps", "0.001", "--seeds", "1",
                  "--out-dir", str(centred_beside / "refused"), *TINY_META])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and "\n" not in err
    assert err.endswith("--grpo.eps sets grpo's own setting, but --algos has no grpo (Centred takes magrpo's: the "
                        "learner its config derives from): add it, or leave --grpo.eps out")  # fmt: skip
    assert not (centred_beside / "refused").exists()


def test_a_text_learner_of_ones_own_derived_from_magrpo_takes_magrpos_own_settings(tmp_path):
    class OwnMAGRPO(TextMAGRPO):
        name = "own_magrpo"

    compare = TextCompare(algos=("mine",), magrpo=TextMAGRPOOwn(baseline="rloo"), out_dir=str(tmp_path / "text"))
    config = compare.run_config("mine", 0, OwnMAGRPO)
    assert type(config) is TextMAGRPOConfig and config.baseline == "rloo"
    given_to_grpo = TextCompare(algos=("mine",), grpo=TextGRPOOwn(scale_rewards="batch"), out_dir=str(tmp_path / "text"))
    with pytest.raises(ValueError, match=r"^--grpo\.scale-rewards sets grpo's own setting, but --algos has no grpo "
                       r"\(mine takes magrpo's"):  # fmt: skip
        text_compare.compare(given_to_grpo, learners={"mine": OwnMAGRPO})
    assert not (tmp_path / "text").exists()
