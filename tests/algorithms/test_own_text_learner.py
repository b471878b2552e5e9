"""A text learner of one's own with a config, a loss, metrics and state of its own (a real
client's RLOO, example 15): a comparison builds the learner's own config and tabulates its
own metrics; a config it cannot build is refused before anything trains; the loss is one
method; its own state resumes exactly."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import torch

from algorithms.core.compare import config_of_own
from algorithms.meta import compare as meta_compare
from algorithms.meta.config import GRPOConfig, MAGRPOConfig, PolicyGradientConfig
from algorithms.meta.grpo import GRPO
from algorithms.text import (
    TextGRPO,
    TextGRPOConfig,
    TextLearnerConfig,
    TextMAGRPO,
    TextMAGRPOConfig,
    train,
)
from algorithms.text import compare as text_compare
from algorithms.text.config import TEXT_CONFIGS, text_run
from tests.algorithms.test_compare_user_learner import tiny_meta, tiny_text

EXAMPLE = Path(__file__).parents[2] / "examples" / "15_custom_text_learner.py"


@dataclass
class ScaledConfig(TextGRPOConfig):
    advantage_scale: float = 3.0
    """A setting of the learner's own."""


class Scaled(TextGRPO):
    """Group-centred returns times a scale of its own config; logs that scale."""

    name = "scaled"
    config_class = ScaledConfig
    summary_metrics = ("adv/scale",)

    def compute_advantages(self, returns: torch.Tensor) -> torch.Tensor:
        return self.config.advantage_scale * (returns - returns.mean(1, keepdim=True))

    def update_metrics(self, returns, advantages, samples, seconds):
        return {
            **super().update_metrics(returns, advantages, samples, seconds),
            "adv/scale": self.config.advantage_scale,
        }


def example():
    spec = importlib.util.spec_from_file_location("example_15", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_comparison_builds_a_learners_own_config_and_tabulates_its_own_metrics(tmp_path):
    cfg = tiny_text(tmp_path, ("grpo", "scaled"))
    cfg = replace(
        cfg, grpo=replace(cfg.grpo, eps=1e-3)
    )  # GRPO's own settings reach a config derived from GRPO's
    summary = text_compare.compare(cfg, learners={"scaled": Scaled})

    recorded = json.loads((tmp_path / "text" / "scaled" / "seed0" / "config.json").read_text())
    assert (
        recorded["advantage_scale"] == 3.0
        and recorded["eps"] == 1e-3
        and recorded["algo"] == "scaled"
    )
    assert summary["scaled"]["adv/scale"]["mean"] == 3.0 and "adv/scale" not in summary["grpo"]
    table = text_compare.compare_table(summary, cfg)
    assert table.columns[-1].header == "adv/scale"
    assert list(table.columns[-1]._cells) == ["-", "3.000 (1 seed)"]


def test_a_learner_whose_config_a_comparison_cannot_build_is_refused_before_anything_trains(
    tmp_path,
):
    """A real client's learner met 'RLOO needs a RLOOConfig, got TextGRPOConfig' after every run before it."""

    @dataclass
    class Unrelated:
        scale: float = 1.0

    class Stray(TextGRPO):
        name = "stray"
        config_class = Unrelated

    with pytest.raises(
        TypeError,
        match=r"'stray' \(.*Stray\) takes a Unrelated, and a comparison builds a TextGRPOConfig",
    ):
        text_compare.compare(tiny_text(tmp_path, ("grpo", "stray")), learners={"stray": Stray})
    assert not (tmp_path / "text").exists()


def test_a_learner_of_ones_own_takes_the_config_its_class_derives_from():
    class OwnMAGRPO(TextMAGRPO):
        pass

    assert config_of_own(OwnMAGRPO, TEXT_CONFIGS, TextLearnerConfig) == (TextMAGRPOConfig, "magrpo")
    assert config_of_own(Scaled, TEXT_CONFIGS, TextLearnerConfig) == (ScaledConfig, "grpo")
    assert config_of_own(lambda *args: None, TEXT_CONFIGS, TextLearnerConfig) == (
        TextGRPOConfig,
        "grpo",
    )

    @dataclass
    class Shared(TextLearnerConfig):
        extra: int = 1

    class Bare(TextGRPO):
        config_class = Shared

    assert config_of_own(Bare, TEXT_CONFIGS, TextLearnerConfig) == (Shared, None)


def test_a_meta_comparison_builds_a_learners_own_config_too(tmp_path):
    @dataclass
    class CentredConfig(MAGRPOConfig):
        centre: bool = True

    class Centred(GRPO):
        name = "centred"
        config_class = CentredConfig

        def compute_advantages(self, returns):
            return returns - returns.mean(1, keepdim=True) if self.config.centre else returns

    cfg = tiny_meta(tmp_path, ("centred",))
    config = cfg.run_config("centred", 0, tmp_path, 1.0, Centred)
    assert type(config) is CentredConfig and config.joint_return == cfg.magrpo.joint_return
    assert type(cfg.run_config("other", 0, tmp_path, 1.0, GRPO)) is GRPOConfig
    summary = meta_compare.compare(cfg, learners={"centred": Centred})
    assert summary["learners"]["centred@1"]["n"] == 1
    assert (
        json.loads(
            (tmp_path / "meta" / "scale1" / "centred" / "seed0" / "config.json").read_text()
        )["centre"]
        is True
    )
    assert isinstance(
        PolicyGradientConfig(), PolicyGradientConfig
    )  # the template class itself stays the shared one


def test_policy_loss_is_the_one_method_that_changes_the_loss(tmp_path):
    class Frozen(TextGRPO):
        """A loss that moves nothing, and a statistic of its own."""

        def policy_loss(self, logp, old_logp, ref_logp, advantages, mask, weights, stat_weights):
            return 0.0 * logp.sum(), {"rows": torch.tensor(float(len(logp)))}

    module = (
        example()
    )  # a reward the tiny model's texts differ in, so the shipped loss has a gradient
    config = TextGRPOConfig(env=module.TextEnvConfig(protocol=module.protocol), model="tiny", groups_per_update=1,
                            group_size=4, max_new_tokens=4, temperature=1.0,
                            run=text_run(updates=1, progress=False, run_dir=None))  # fmt: skip
    (mine,) = train(config, learner=Frozen).history
    assert (
        mine["losses/rows"] > 0 and "losses/clip_frac" not in mine and mine["losses/grad_norm"] == 0
    )
    (shipped,) = train(config).history  # the same seed and rollouts, the shipped loss
    assert (
        shipped["rewards/joint/mean"] == mine["rewards/joint/mean"]
        and shipped["losses/grad_norm"] > 0
    )


def test_example_15s_own_state_and_setting_resume_exactly(tmp_path):
    module = example()
    config = module.RLOOConfig(
        env=module.TextEnvConfig(protocol=module.protocol), model="tiny", groups_per_update=1, group_size=4,
        max_new_tokens=4, temperature=1.0, learning_rate=1e-3, loo_scale=2.0,
        run=text_run(updates=2, progress=False, run_dir=str(tmp_path / "whole"), eval_problems=0),
    )  # fmt: skip
    whole = train(config, learner=module.RLOO).history
    half = replace(config, run=replace(config.run, updates=1, run_dir=str(tmp_path / "half")))
    train(half, learner=module.RLOO)
    resumed = train(
        replace(half, run=replace(half.run, updates=2, resume=True)), learner=module.RLOO
    ).history
    assert resumed[-1]["returns/ema"] == whole[-1]["returns/ema"] != 0
    assert resumed[-1]["adv/loo_baseline"] == whole[-1]["adv/loo_baseline"]
    with pytest.raises(ValueError, match=r"loo_scale is 2.0 there and 1.0 here"):
        train(
            replace(half, loo_scale=1.0, run=replace(half.run, updates=3, resume=True)),
            learner=module.RLOO,
        )
