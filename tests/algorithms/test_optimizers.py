"""The learners' optimizer and learning-rate schedule (algorithms.core.optimizers), and
both families stepping by it."""

from __future__ import annotations

import itertools
import json
import math

import pytest
import torch

import deliberation_env as de
from algorithms.core.config import LearnerSettings, RunConfig
from algorithms.core.optimizers import (
    MasterWeights,
    adam,
    learning_rate_factor,
    schedule_learning_rate,
)
from algorithms.core.run_dirs import changed_settings
from algorithms.meta import GRPO, SFT, GRPOConfig, SFTConfig
from algorithms.meta.baselines import Oracle


@pytest.mark.parametrize("schedule", ["constant", "linear", "cosine"])
def test_the_warm_up_rises_and_the_decay_falls_without_a_zero_step(schedule):
    factors = [learning_rate_factor(schedule, 3, update, 10) for update in range(10)]
    assert factors[:4] == [0.25, 0.5, 0.75, 1.0]
    after = factors[3:]
    assert all(0 < f <= 1 for f in factors)
    if schedule == "constant":
        assert after == [1.0] * 7
    else:
        assert all(a > b for a, b in itertools.pairwise(after))  # strictly falling after the warm-up
    linear = [learning_rate_factor("linear", 0, u, 4) for u in range(4)]
    assert linear == [1.0, 0.75, 0.5, 0.25]
    assert learning_rate_factor("cosine", 0, 2, 4) == pytest.approx(0.5 * (1 + math.cos(math.pi / 2)))


def test_updates_past_the_planned_run_keep_its_last_rate():
    last = learning_rate_factor("linear", 0, 3, 4)
    assert [learning_rate_factor("linear", 0, u, 4) for u in (4, 7)] == [last, last]
    assert learning_rate_factor("cosine", 5, 7, 4) == 1.0  # a warm-up longer than the run: never decays


def test_an_unknown_schedule_is_refused():
    with pytest.raises(ValueError, match="lr_schedule must be one of constant, linear, cosine"):
        LearnerSettings(lr_schedule="step")
    for bad in (-0.1, float("nan"), float("inf")):  # a NaN decay turned every adapter into NaN
        with pytest.raises(ValueError, match="weight_decay must be a number >= 0"):
            LearnerSettings(weight_decay=bad)
    with pytest.raises(ValueError, match="warmup_updates must be >= 0"):
        LearnerSettings(warmup_updates=-1)


def test_a_warm_up_that_outlasts_the_run_is_said():
    with pytest.warns(UserWarning, match="warmup_updates=5 outlasts the run's 2 updates"):
        GRPOConfig(warmup_updates=5, run=de_run(2))


def test_weight_decay_shrinks_the_matrices_only():
    layer = torch.nn.Linear(3, 3)
    torch.nn.init.ones_(layer.weight), torch.nn.init.ones_(layer.bias)
    optimizer = adam(layer.parameters(), LearnerSettings(learning_rate=0.1, weight_decay=0.5))
    assert isinstance(optimizer, torch.optim.AdamW)
    layer.weight.grad, layer.bias.grad = torch.zeros(3, 3), torch.zeros(3)
    optimizer.step()
    assert torch.allclose(layer.weight, torch.full((3, 3), 1 - 0.1 * 0.5))  # decoupled: w -= lr * wd * w
    assert torch.equal(layer.bias, torch.ones(3))
    plain = adam(layer.parameters(), LearnerSettings())
    assert type(plain) is torch.optim.Adam and len(plain.param_groups) == 1


def test_the_schedule_sets_every_group():
    layer = torch.nn.Linear(2, 2)
    settings = LearnerSettings(learning_rate=0.2, weight_decay=0.1, lr_schedule="linear", warmup_updates=1)
    optimizer = adam(layer.parameters(), settings)
    assert schedule_learning_rate(optimizer, settings, 0, 3) == pytest.approx(0.1)
    assert [group["lr"] for group in optimizer.param_groups] == pytest.approx([0.1, 0.1])
    assert schedule_learning_rate(optimizer, settings, 2, 3) == pytest.approx(0.1)  # 1 - 1/2 after one warm-up


def de_run(updates, **run):
    return RunConfig(updates=updates, progress=False, **run)


TINY = {"groups_per_update": 2, "group_size": 2, "update_epochs": 1, "num_minibatches": 1, "hidden_size": 16, "num_heads": 2}


def meta_learner(**settings):
    config = GRPOConfig(**TINY, **settings)
    return GRPO(config, de.vector_env(config.num_envs, team="simulated", difficulty=3, max_rounds=2))


def test_a_meta_learner_steps_at_the_scheduled_rate_and_logs_it():
    learner = meta_learner(learning_rate=0.01, lr_schedule="cosine", run=de_run(4))
    rates = [learner.train_step()["charts/learning_rate"] for _ in range(4)]
    assert rates == pytest.approx([0.01 * learning_rate_factor("cosine", 0, u, 4) for u in range(4)])
    assert learner.optimizer.param_groups[0]["lr"] == pytest.approx(rates[-1])
    constant = meta_learner(learning_rate=0.01)
    assert constant.train_step()["charts/learning_rate"] == 0.01


def test_sft_steps_at_the_scheduled_rate():
    config = SFTConfig(episodes_per_update=8, hidden_size=16, num_heads=2, warmup_updates=1, run=de_run(2))
    learner = SFT(config, de.vector_env(8, team="simulated", difficulty=3, max_rounds=2), teacher=Oracle())
    assert [learner.train_step()["charts/learning_rate"] for _ in range(2)] == pytest.approx([5e-4, 1e-3])


def test_a_scheduled_run_resumes_exactly(tmp_path):
    """The schedule is a function of the update: a resumed run steps where the uninterrupted one does."""
    from algorithms.core.checkpoints import load_checkpoint

    def trained(run_dir, updates):
        learner = meta_learner(learning_rate=0.01, lr_schedule="linear", warmup_updates=1, weight_decay=0.1, run=de_run(3))
        learner.learn(de_run(updates, run_dir=str(run_dir), resume=True))
        return learner

    straight = trained(tmp_path / "straight", 3)
    trained(tmp_path / "resumed", 1)
    resumed = trained(tmp_path / "resumed", 3)
    for ours, theirs in zip(straight.network.parameters(), resumed.network.parameters()):
        assert torch.equal(ours, theirs)
    rates = [json.loads(line)["charts/learning_rate"] for line in (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()]
    assert rates == pytest.approx([0.005, 0.01, 0.005])
    assert load_checkpoint(tmp_path / "resumed" / "checkpoint.safetensors")["config"]["lr_schedule"] == "linear"


def test_a_run_recorded_before_the_new_settings_resumes_only_with_their_old_values():
    before = {"algo": "grpo", "learning_rate": 0.001}
    assert changed_settings(before, {**before, "weight_decay": 0.0, "lr_schedule": "constant", "warmup_updates": 0}) == []
    assert changed_settings({"learner": before}, {"learner": {**before, "weight_decay": 0.0}}) == []
    assert changed_settings(before, {**before, "lr_schedule": "cosine"}) == ["lr_schedule is 'constant' there and 'cosine' here"]
    loss = {"clip_eps_high": None, "scale_rewards": "group", "importance_sampling": "token"}
    assert changed_settings(before, {**before, **loss}) == []
    assert changed_settings(before, {**before, "clip_eps_high": 0.28}) == ["clip_eps_high is None there and 0.28 here"]


def test_master_weights_keep_the_steps_bfloat16_rounds_away():
    """Adam's step is about the learning rate; at 1e-4 it is under half of bfloat16's
    rounding step near 1 (2^-8), so Adam on the bfloat16 weights never moves them. With
    float32 masters the steps add up (Adam's step on a constant gradient is the learning
    rate) and reach the bfloat16 weights; the schedule sets the masters' rate."""
    settings = LearnerSettings(learning_rate=1e-4)
    plain = torch.nn.Parameter(torch.ones(8, dtype=torch.bfloat16))
    mixed = torch.nn.Parameter(torch.ones(8, dtype=torch.bfloat16))
    stepped, masters = adam([plain], settings), MasterWeights([mixed], lambda params: adam(params, settings))
    assert masters.masters[0].dtype is torch.float32
    for _ in range(100):
        for weight, optimizer in ((plain, stepped), (mixed, masters)):
            optimizer.zero_grad()
            weight.grad = torch.full_like(weight, 0.5)
            optimizer.step()
    assert bool((plain == 1).all())  # every step lost
    assert masters.masters[0] == pytest.approx(torch.full((8,), 1 - 100 * 1e-4), abs=1e-5)  # Adam's epsilon, float32 sums
    assert mixed.dtype is torch.bfloat16 and bool((mixed == masters.masters[0].to(torch.bfloat16)).all())
    assert float(mixed[0]) < 1
    schedule_learning_rate(masters, LearnerSettings(learning_rate=1e-3), 0, 10)
    assert masters.optimizer.param_groups[0]["lr"] == 1e-3


def test_master_weights_save_their_masters_and_start_them_from_a_plain_state():
    settings = LearnerSettings(learning_rate=1e-4, weight_decay=0.1)  # two groups: the indices follow them
    weights = [torch.nn.Parameter(torch.ones(2, 3, dtype=torch.bfloat16)), torch.nn.Parameter(torch.ones(3, dtype=torch.bfloat16))]
    masters = MasterWeights(weights, lambda params: adam(params, settings))
    for weight in weights:
        weight.grad = torch.full_like(weight, 0.5)
    masters.step()
    state = masters.state_dict()
    assert sorted(state["state"][0]) == ["exp_avg", "exp_avg_sq", "master", "step"]
    assert "master" not in masters.optimizer.state_dict()["state"][0]  # the live state untouched
    again = MasterWeights(weights, lambda params: adam(params, settings))
    again.load_state_dict(state)
    assert all(torch.equal(a, b) for a, b in zip(again.masters, masters.masters, strict=True))
    plain = adam(weights, settings)  # a run that stepped its bfloat16 weights: masters start from them
    plain.step()
    from_plain = MasterWeights(weights, lambda params: adam(params, settings))
    from_plain.masters[0].zero_()
    from_plain.load_state_dict(plain.state_dict())
    assert torch.equal(from_plain.masters[0], weights[0].float())
    assert from_plain.optimizer.state_dict()["state"][0]["exp_avg"].dtype is torch.float32
