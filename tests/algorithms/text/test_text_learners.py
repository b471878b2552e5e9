"""The LLM-weight learners on a tiny random Llama and a protocol whose reward always varies."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from text_learner_fakes import HashProtocol, ScriptedBackend

from agents.text_policy import TextPolicy
from algorithms.core.advantages import softrank_advantages
from algorithms.core.checkpoints import load_checkpoint
from algorithms.core.evaluation import Evaluation
from algorithms.text import (
    TextGRPO,
    TextGRPOConfig,
    TextMAGRPO,
    TextMAGRPOConfig,
    TextSoftRankPO,
    TextSoftRankPOConfig,
    evaluate,
)
from algorithms.text.config import text_run
from deliberation_env.text import text_vector_env
from deliberation_env.text.config import TextEnvConfig

SMALL = {"groups_per_update": 2, "group_size": 2, "max_new_tokens": 6, "micro_batch_size": 4, "run": text_run(progress=False)}


def make_learner(
    make_lm, learner=TextMAGRPO, config=None, agents=("agent_0", "agent_1"), frozen=None, lm=None, **env
):
    config = config or learner.config_class(**SMALL)
    venv = text_vector_env(
        config.num_envs, protocol=HashProtocol(), n_agents=config.env.n_agents, max_turns=config.env.max_turns, **env
    )
    return learner(config, make_lm(agents=agents, **(lm or {})), venv, frozen or {})


def snapshot(module):
    return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}


def changed(before, module):
    return sorted(name for name, tensor in module.state_dict().items() if not torch.equal(before[name], tensor))


@pytest.mark.parametrize("learner", [TextMAGRPO, TextGRPO, TextSoftRankPO])
def test_an_update_changes_only_the_trainable_adapters(make_lm, learner):
    backend = ScriptedBackend()
    frozen = {"agent_1": TextPolicy(backend, max_tokens=4)}
    config = learner.config_class(**SMALL, **({} if learner is TextMAGRPO else {"kl_coef": 0.1}))
    subject = make_learner(make_lm, learner, config, agents=["agent_0"], frozen=frozen)
    model = subject.lm.seats["agent_0"].model
    before = snapshot(model)
    metrics = subject.train_step()
    moved = changed(before, model)
    assert moved and all("lora_" in name for name in moved)  # the base stays bit-identical
    assert metrics["adv/abs_mean"] > 0
    assert len(backend.requests) == config.num_envs  # the frozen agent played every env, through its backend


def test_every_trainable_agent_moves_its_own_adapter_only(make_lm):
    subject = make_learner(make_lm, TextGRPO, TextGRPOConfig(**SMALL, credit="contribution"))
    model = subject.lm.seats["agent_0"].model
    before = snapshot(model)
    subject.train_step()
    moved = changed(before, model)
    assert any(".agent_0." in name for name in moved) and any(".agent_1." in name for name in moved)
    assert all("lora_" in name for name in moved)


def test_full_finetuning_keeps_the_reference(make_lm):
    config = TextSoftRankPOConfig(**SMALL, finetune="full")
    subject = make_learner(make_lm, TextSoftRankPO, config, lm={"finetune": "full"})
    seat = subject.lm.seats["agent_0"]
    reference, weights = snapshot(seat.reference), snapshot(seat.model)
    subject.train_step()
    assert changed(weights, seat.model) and not changed(reference, seat.reference)


def test_a_shared_fully_finetuned_model_is_written_once(make_lm, tmp_path):
    """A client's 3B pair wrote the same full model once per agent at every save."""
    from transformers import AutoModelForCausalLM

    lm = make_lm(finetune="full")
    with torch.no_grad():
        for parameter in lm.parameters("agent_0"):
            parameter.add_(0.01)  # trained: not the base
    lm.save_adapters(tmp_path)
    assert not (tmp_path / "agent_0").is_symlink() and (tmp_path / "agent_1").is_symlink()
    ids = torch.tensor([[5, 6, 7]])
    served = AutoModelForCausalLM.from_pretrained(tmp_path / "agent_1", local_files_only=True).eval()
    with lm._acting("agent_1") as model, torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, served(input_ids=ids).logits, atol=1e-5)
    restored = make_lm(finetune="full")
    restored.load_adapters(tmp_path)
    assert not changed(snapshot(lm.seats["agent_0"].model), restored.seats["agent_1"].model)


RETURNS = torch.tensor([[[0.0, 1.0], [1.0, 1.0], [2.0, 4.0]]])  # (B=1, G=3, n=2)


@pytest.mark.parametrize(
    ("baseline", "agent_0", "agent_1"),
    [
        ("mean", [-1.0, 0.0, 1.0], [-1.0, -1.0, 2.0]),
        ("rloo", [-1.5, 0.0, 1.5], [-1.5, -1.5, 3.0]),
        ("max", [-2.0, -1.0, 0.0], [-3.0, -3.0, 0.0]),
        ("raw", [0.0, 1.0, 2.0], [1.0, 1.0, 4.0]),
    ],
)
def test_magrpo_advantages_per_baseline_by_hand(make_lm, baseline, agent_0, agent_1):
    subject = make_learner(make_lm, config=TextMAGRPOConfig(**SMALL, baseline=baseline))
    advantages = subject.compute_advantages(RETURNS)[0]
    assert advantages[:, 0].tolist() == pytest.approx(agent_0)
    assert advantages[:, 1].tolist() == pytest.approx(agent_1)


def test_grpo_and_softrankpo_advantages_per_agent_by_hand(make_lm):
    grpo = make_learner(make_lm, TextGRPO, TextGRPOConfig(**SMALL, eps=0.0)).compute_advantages(RETURNS)[0]
    root = (2 / 3) ** 0.5  # population std of (0, 1, 2)
    assert grpo[:, 0].tolist() == pytest.approx([-1 / root, 0.0, 1 / root])
    assert grpo[:, 1].tolist() == pytest.approx([-1 / 2**0.5, -1 / 2**0.5, 2 / 2**0.5])  # std of (1, 1, 4) is sqrt 2
    soft = make_learner(make_lm, TextSoftRankPO).compute_advantages(RETURNS)[0]
    assert soft[:, 0].tolist() == pytest.approx(softrank_advantages(RETURNS[:, :, 0], tau=0.5)[0].tolist())
    assert soft[0, 1] == soft[1, 1] < 0 < soft[2, 1]  # ties get equal advantages


def run(make_lm, tmp_path, name, updates, learner=TextGRPO, **overrides):
    config = learner.config_class(**{**SMALL, "update_epochs": 2, "num_minibatches": 2, "kl_coef": 0.05, **overrides})
    subject = make_learner(make_lm, learner, config)
    subject.learn(text_run(updates=updates, run_dir=str(tmp_path / name), progress=False, resume=True))
    return subject


@pytest.mark.parametrize(
    "schedule",
    [
        {},
        {"lr_schedule": "cosine", "warmup_updates": 1, "weight_decay": 0.1},
        {"clip_eps_high": 0.28, "importance_sampling": "sequence", "aggregation": "constant", "scale_rewards": "batch"},
    ],
)
def test_resume_equals_an_uninterrupted_run(make_lm, tmp_path, schedule):
    straight = run(make_lm, tmp_path, "straight", 2, **schedule)
    run(make_lm, tmp_path, "resumed", 1, **schedule)
    resumed = run(make_lm, tmp_path, "resumed", 2, **schedule)  # a new process would do the same: load, continue
    assert resumed.update == 2
    for agent, weights in straight.lm.state_dict().items():
        for name, tensor in weights.items():
            assert torch.equal(tensor, resumed.lm.state_dict()[agent][name]), name
    ours, theirs = straight.optimizer.state_dict()["state"], resumed.optimizer.state_dict()["state"]
    assert all(torch.equal(ours[k]["exp_avg_sq"], theirs[k]["exp_avg_sq"]) for k in ours)
    assert straight.rng.bit_generator.state == resumed.rng.bit_generator.state
    lines = [json.loads(line) for line in (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()]
    assert [line["charts/update"] for line in lines] == [1.0, 2.0]
    straight_lines = (tmp_path / "straight" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["rewards/joint/mean"] for line in straight_lines] == [
        line["rewards/joint/mean"] for line in lines
    ]


def test_metrics_name_every_reward_part_and_agent(make_lm, tmp_path):
    subject = run(make_lm, tmp_path, "m", 1, TextMAGRPO, update_epochs=1, num_minibatches=1, kl_coef=0.0)
    (line,) = (tmp_path / "m" / "metrics.jsonl").read_text().splitlines()
    metrics = json.loads(line)
    for key in ("rewards/hash/mean", "rewards/joint/mean", "rewards/contribution/agent_0",
                "rewards/contribution/agent_1", "tokens/agent_0", "losses/policy", "losses/kl", "adv/abs_mean"):
        assert key in metrics, key
    assert subject.update == 1
    with pytest.raises(ValueError, match="'grpo'"):
        make_learner(make_lm, TextGRPO).load(tmp_path / "m" / "checkpoint.safetensors")
    other = make_learner(make_lm, config=TextMAGRPOConfig(**{**SMALL, "learning_rate": 1.0}))
    with pytest.raises(ValueError, match="learning_rate"):
        other.load(tmp_path / "m" / "checkpoint.safetensors")
    older = load_checkpoint(tmp_path / "m" / "checkpoint.safetensors")
    del older["config"]["min_new_tokens"]  # a checkpoint written before the field existed
    fresh = make_learner(make_lm)
    fresh.load_state_dict(older)
    assert fresh.update == 1


def test_multi_turn_credit_is_the_discounted_return_of_later_turns(make_lm):
    config = TextMAGRPOConfig(**SMALL, env=TextEnvConfig(max_turns=2), gamma=0.5, baseline="raw")
    subject = make_learner(make_lm, config=config)
    rollouts = subject.collect()
    assert rollouts.rewards.shape == (2, 2, 2, 2)
    assert {s.turn for s in rollouts.samples} == {0, 1} and len(rollouts.samples) == 2 * 4 * 2
    from algorithms.text.losses import discounted_returns

    returns = discounted_returns(rollouts.rewards, 0.5)
    assert torch.allclose(returns[0], rollouts.rewards[0] + 0.5 * rollouts.rewards[1])
    assert torch.equal(subject.compute_advantages(returns[1]), returns[1])  # raw: A = G_t


def test_cross_pairing_scores_every_combination_of_the_agents_samples(make_lm):
    config = TextMAGRPOConfig(**{**SMALL, "groups_per_update": 1, "pairing": "cross"})
    assert config.num_envs == 4
    subject = make_learner(make_lm, config=config)
    rollouts = subject.collect()
    by_agent = {a: [s.completion.text for s in rollouts.samples if s.agent == a] for a in ("agent_0", "agent_1")}
    assert all(len(texts) == 2 for texts in by_agent.values())  # G samples per agent, not G^n
    protocol, problem = HashProtocol(), subject.venv.problems[0]
    joint = [
        protocol.score(problem, [by_agent["agent_0"][c // 2], by_agent["agent_1"][c % 2]]).reward for c in range(4)
    ]
    per_sample = rollouts.rewards[0, 0]  # (G, n)
    assert per_sample[:, 0].tolist() == pytest.approx([(joint[0] + joint[1]) / 2, (joint[2] + joint[3]) / 2])
    assert per_sample[:, 1].tolist() == pytest.approx([(joint[0] + joint[2]) / 2, (joint[1] + joint[3]) / 2])


def test_evaluate_plays_each_problem_greedily(make_lm):
    subject = make_learner(make_lm)
    venv = text_vector_env(2, protocol=HashProtocol(), n_agents=2)
    first = evaluate(subject, venv, [0, 1, 2], progress=False)
    assert type(first) is Evaluation  # the meta family's evaluate returns it too (tests/algorithms/test_evaluate.py)
    assert set(first.metrics) == {"eval/hash", "eval/joint", "eval/truncated_share", "eval/mean_completion_tokens"}
    assert first.accuracy is None and first.answered_share is None  # the protocol scores no correctness, no form
    assert (first.cut_share, first.tokens_per_answer) == (
        first.metrics["eval/truncated_share"], first.metrics["eval/mean_completion_tokens"]
    )
    assert evaluate(subject, venv, [0, 1, 2], seed=5, progress=False) == first  # greedy: the episode seed does not matter


def test_bad_setups_are_named(make_lm):
    with pytest.raises(ValueError, match="missing \\['agent_1'\\]"):
        make_learner(make_lm, agents=["agent_0"])
    with pytest.raises(ValueError, match="in both \\['agent_1'\\]"):
        make_learner(make_lm, frozen={"agent_1": TextPolicy(ScriptedBackend())})
    with pytest.raises(TypeError, match="TextPolicy"):
        make_learner(make_lm, agents=["agent_0"], frozen={"agent_1": ScriptedBackend()})
    with pytest.raises(TypeError, match="TextGRPOConfig"):
        make_learner(make_lm, TextGRPO, TextMAGRPOConfig(**SMALL))
    config = TextMAGRPOConfig(**SMALL)
    with pytest.raises(ValueError, match="num_envs=3"):
        TextMAGRPO(config, make_lm(), text_vector_env(3, protocol=HashProtocol(), n_agents=2))
    wrong_scale = make_learner(make_lm, reward_scale=2.0)
    with pytest.raises(ValueError, match="reward_scale"):
        wrong_scale.train_step()


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"update_epochs": 2}, "update_epochs=1"),
        ({"credit": "contribution"}, "credit='joint'"),
        ({"baseline": "median"}, "baseline"),
        ({"group_size": 1}, "group_size"),
        ({"pairing": "cross", "env": TextEnvConfig(max_turns=2)}, "max_turns=1"),
        ({"temperature": 0.0}, "temperature"),
        ({"aggregation": "batch"}, "aggregation"),
        ({"max_new_tokens": 8, "min_new_tokens": 9}, "min_new_tokens"),
    ],
)
def test_magrpo_config_invariants(config, match):
    with pytest.raises(ValueError, match=match):
        TextMAGRPOConfig(**config)


def test_an_early_stop_is_absorbing_and_held_out_plays_every_turn(make_lm):
    """Red team: turns after an early stop were credited 0, so a team that stayed just below
    ``stop_threshold`` out-earned one that reached it; and held out, the stop told the team
    its answer was right (a new candidate each turn scored 1.0 on MMLU)."""
    config = TextMAGRPOConfig(**SMALL, env=TextEnvConfig(max_turns=3), baseline="raw")
    subject = make_learner(make_lm, config=config, stop_threshold=0.0)  # every joint reward reaches it
    rollouts = subject.collect()
    assert {s.turn for s in rollouts.samples} == {0}  # every episode stopped after its first turn
    assert torch.equal(rollouts.rewards[1], rollouts.rewards[0]) and torch.equal(rollouts.rewards[2], rollouts.rewards[0])
    with pytest.raises(ValueError, match="held-out episodes play every turn, but this env stops at a joint reward of 0.0"):
        evaluate(subject, subject.venv, [0, 1], progress=False)


def test_the_held_out_env_is_strict_and_plays_every_turn():
    from algorithms.text.train import held_out_env

    config = TextGRPOConfig(**SMALL, env=TextEnvConfig(task="arithmetic", scoring="lenient", max_turns=2, stop_threshold=1.0))
    venv = held_out_env(config, 2)
    assert (venv.stop_threshold, venv.protocol.scoring) == (None, "strict")
    assert venv.problems == text_vector_env(1, task="arithmetic", split="test").problems


@pytest.mark.parametrize("extras", [{}, {"top_k": 3}, {"min_p": 0.1, "repetition_penalty": 1.3}])
def test_sampling_extras_reach_the_rollouts_sampler_only_where_set(make_lm, extras):
    """TRL's ``top_k``, ``min_p`` and ``repetition_penalty`` are given to the rollouts'
    sampler (and the held-out evaluation's) only where they are not their defaults, so a
    sampler of one's own without them keeps working; the config checks them, and the
    CTranslate2 sampler, which does not apply ``min_p`` or the penalty, refuses them."""
    subject = make_learner(make_lm, config=TextMAGRPOConfig(**SMALL, **extras))
    seen = []
    sample_joint = subject.lm.sample_joint

    def recording(requests, **settings):
        seen.append(settings)
        return sample_joint(requests, **settings)

    subject.lm.sample_joint = recording
    subject.train_step()
    named = {"top_k", "min_p", "repetition_penalty"}
    assert seen and all({k: v for k, v in s.items() if k in named} == extras for s in seen)
    for bad, message in (({"top_k": -1}, "top_k must be >= 0"), ({"min_p": 1.5}, "min_p must lie in"),
                         ({"repetition_penalty": 0}, "repetition_penalty must be > 0"),
                         ({"min_p": 0.1, "sampler": "ctranslate2"}, "leave out --sampler ctranslate2")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            TextMAGRPOConfig(**bad)


def test_each_checkpoint_leaves_the_adapters_of_its_update_for_plain_peft(make_lm, tmp_path):
    """A run killed mid-way kept only its checkpoint; the peft adapters were written at the
    end alone (the GPU client: no adapter of a run that did not finish). They are written
    with each checkpoint now, whole or not at all."""
    from peft import PeftModel

    from agents.trainable_lm import tiny_model

    subject = make_learner(make_lm)
    run_dir = tmp_path / "run"
    subject.adapters_dir = run_dir / "adapters"
    train_step, calls = subject.train_step, []

    def dies_in_the_second_update():
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the machine went away
        return train_step()

    subject.train_step = dies_in_the_second_update
    with pytest.raises(KeyboardInterrupt):
        subject.learn(text_run(updates=3, run_dir=str(run_dir), checkpoint_interval=1, progress=False))
    saved = load_checkpoint(run_dir / "checkpoint.safetensors")
    assert saved["update"] == 1 and not [p.name for p in run_dir.iterdir() if p.name.startswith(".")]
    at_checkpoint, from_adapters = make_lm(), make_lm()
    at_checkpoint.load_state_dict(saved["weights"])
    from_adapters.load_adapters(run_dir / "adapters")
    for agent, weights in at_checkpoint.state_dict().items():
        for name, tensor in weights.items():
            assert torch.equal(tensor, from_adapters.state_dict()[agent][name]), name
    assert not all(torch.equal(t, make_lm().state_dict()["agent_0"][n]) for n, t in weights.items())  # trained
    base, _ = tiny_model(seed=0)
    assert PeftModel.from_pretrained(base, run_dir / "adapters" / "agent_0")  # plain peft reads it


def test_the_logged_gradient_norm_is_before_clipping_once_per_set_of_weights(make_lm):
    """Full fine-tuning of a shared model: every agent's weights are one set; clipped per
    agent, the second agent logged the norm the first had clipped (a reviewer: about half
    the true norm). The norm before clipping is the same whatever max_grad_norm is."""
    logged = []
    for max_grad_norm in (1e9, 1e-9):
        config = TextMAGRPOConfig(**SMALL, max_grad_norm=max_grad_norm)
        logged.append(make_learner(make_lm, config=config, lm={"finetune": "full"}).train_step()["losses/grad_norm"])
    assert logged[0] > 1e-3 and logged[1] == pytest.approx(logged[0], rel=1e-5)


def test_the_losses_are_the_mean_over_every_optimizer_step_of_the_update(make_lm):
    """They were the last epoch's alone (the TRL client); TRL averages over all steps."""
    subject = make_learner(make_lm, TextGRPO, TextGRPOConfig(**{**SMALL, "update_epochs": 2, "num_minibatches": 2}))
    backward, seen = subject._backward, []

    def counted(*args):
        stats = backward(*args)
        seen.append(len(seen) + 1.0)
        return {**stats, "policy": seen[-1]}

    subject._backward = counted
    metrics = subject.train_step()
    assert len(seen) >= 4 and metrics["losses/policy"] == pytest.approx(sum(seen) / 4)  # 2 epochs x 2 minibatches


@pytest.mark.parametrize("setting", [{"clip_eps_high": 0.6}, {"importance_sampling": "sequence"}, {"scale_rewards": "none"}])
def test_the_text_update_takes_each_loss_variant(make_lm, setting):
    """A reviewer: the learners' tests passed with the new settings cut out of the update."""

    def update(**changes):
        config = TextGRPOConfig(**{**SMALL, "update_epochs": 3, "num_minibatches": 1, "learning_rate": 0.05, **changes})
        subject = make_learner(make_lm, TextGRPO, config)
        subject.train_step()
        return snapshot(subject.lm.seats["agent_0"].model)

    plain, again, varied = update(), update(), update(**setting)
    moved = [name for name in plain if not torch.equal(plain[name], varied[name])]
    assert all(torch.equal(plain[name], again[name]) for name in plain)  # the same seed, the same update
    assert moved and all("lora_" in name for name in moved)


def test_the_constant_aggregation_reaches_the_loss(make_lm):
    """Adam takes the same step for the token mean and the constant (a common factor), so the
    loss it logs tells them apart: the constant divides by N x max_new_tokens."""
    losses = {}
    for aggregation in ("token", "constant"):
        subject = make_learner(make_lm, TextGRPO, TextGRPOConfig(**SMALL, aggregation=aggregation))
        lengths: list[int] = []

        def collected(collect=subject.collect, lengths=lengths):
            batch = collect()
            lengths.extend(len(s.completion.token_ids) for s in batch.samples)
            return batch

        subject.collect = collected
        losses[aggregation] = subject.train_step()["losses/policy"]
    assert losses["token"] != 0
    factor = sum(lengths) / (len(lengths) * SMALL["max_new_tokens"])
    assert losses["constant"] == pytest.approx(losses["token"] * factor, rel=1e-4)


def test_masked_truncated_completions_train_nothing_and_the_others_as_before(make_lm):
    """TRL's ``mask_truncated_completions``: a cut completion plays and is rewarded, but no
    gradient flows through it. The tiny model never stops in 6 tokens: every completion is
    cut, so agent_0's are marked stopped by hand; agent_1's adapter must then stay put."""

    def update(mask, stopped=("agent_0",)):
        subject = make_learner(make_lm, TextMAGRPO, TextMAGRPOConfig(**SMALL, mask_truncated_completions=mask))

        def collected(collect=subject.collect):
            batch = collect()
            assert all(s.completion.finish_reason == "length" for s in batch.samples)
            stop = [dataclasses.replace(s.completion, finish_reason="stop") for s in batch.samples]
            samples = [dataclasses.replace(s, completion=c) if s.agent in stopped else s for s, c in zip(batch.samples, stop)]
            return dataclasses.replace(batch, samples=samples)

        subject.collect = collected
        model = subject.lm.seats["agent_0"].model  # one base, an adapter per agent
        before = snapshot(model)
        subject.train_step()
        moved = changed(before, model)
        return {agent: [name for name in moved if f".{agent}." in name] for agent in ("agent_0", "agent_1")}

    assert all(update(mask=False).values())  # both adapters move, cut or not
    masked = update(mask=True)
    assert masked["agent_0"] and masked["agent_1"] == []
    everything_cut = update(mask=True, stopped=())
    assert everything_cut == {"agent_0": [], "agent_1": []}


def test_float16_steps_the_unscaled_gradient_and_skips_an_overflowed_step(make_lm):
    """float16 weights train with dynamic loss scaling (``algorithms.core.optimizers.loss_scaler``):
    the clip and the step see the true gradient (its norm is the unscaled run's, not 2^16
    times it); a gradient 10^5 times smaller, which float16 alone flushes to 0 on its way
    back through the layers, keeps its size; and a step whose gradient overflowed leaves
    the adapters as they were and halves the scale."""

    def update(scaler=None, advantage_factor=1.0):
        subject = make_learner(make_lm, TextMAGRPO, lm={"dtype": "float16"})
        if scaler is not None:
            subject.scaler = scaler
        advantages = subject.compute_advantages
        subject.compute_advantages = lambda returns: advantages(returns) * advantage_factor
        model = subject.lm.seats["agent_0"].model
        before = snapshot(model)
        return subject.train_step(), changed(before, model)

    scaled, moved = update()
    assert scaled["losses/loss_scale"] == 2.0**16 and scaled["losses/skipped_steps"] == 0 and moved
    unscaled = torch.amp.GradScaler("cpu", enabled=False)
    plain, _ = update(unscaled)  # the same rollouts, no scaling
    assert "losses/loss_scale" not in plain
    assert scaled["losses/grad_norm"] == pytest.approx(plain["losses/grad_norm"], rel=0.05)
    small, moved = update(advantage_factor=1e-5)
    assert small["losses/grad_norm"] == pytest.approx(1e-5 * scaled["losses/grad_norm"], rel=0.01) and moved
    assert update(unscaled, advantage_factor=1e-5)[0]["losses/grad_norm"] == 0  # what scaling is for
    overflowed, moved = update(torch.amp.GradScaler("cpu", init_scale=2.0**100))
    assert overflowed["losses/skipped_steps"] == 1 and overflowed["losses/loss_scale"] == 2.0**99
    assert moved == [] and "losses/grad_norm" not in overflowed  # no step, no norm of an inf
