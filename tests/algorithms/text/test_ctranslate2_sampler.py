"""CTranslate2Sampler on a tiny random Llama: the policy of each update handed to
CTranslate2, its completions and log-probabilities the policy's own, a learner trained with it."""

from __future__ import annotations

import json
import math

import pytest
import torch

pytest.importorskip("ctranslate2", reason="the ctranslate2 extra is not installed")

from text_learner_fakes import HashProtocol

from algorithms.text import TextGRPO, TextGRPOConfig
from algorithms.text.config import text_run
from algorithms.text.ctranslate2_sampler import CTranslate2Sampler
from algorithms.text.train import build_lm
from deliberation_env.text import text_vector_env

CHAT = ({"role": "user", "content": "What is 9 + 4?"},)
OTHER = ({"role": "system", "content": "A much longer system prompt."}, *CHAT)


def move(lm, agent: str, seed: int = 0, scale: float = 0.05) -> None:
    """A random step of ``agent``'s trainable weights, as an optimizer step would take."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in lm.parameters(agent):
            parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)


def scored(lm, agent: str, completions, temperature: float) -> list[list[float]]:
    """The policy's log-probabilities of ``completions``, scored by torch."""
    logp, _ = lm.logprobs(
        agent, [c.prompt_ids for c in completions], [c.token_ids for c in completions], temperature=temperature
    )
    return [logp[row, : len(c.token_ids)].tolist() for row, c in enumerate(completions)]


@pytest.mark.parametrize(("finetune", "separate"), [("lora", False), ("lora", True), ("full", False)])
def test_greedy_completions_and_logprobs_are_the_policys_own(make_lm, tmp_path, finetune, separate):
    lm = make_lm(finetune=finetune, separate=separate)
    move(lm, "agent_0")  # merged weights differ from the base's
    weights = lm.state_dict()
    sampler = CTranslate2Sampler(lm, threads=1, work_dir=tmp_path)
    sampler.sync(weights, 1)
    for agent in lm.agents:
        fast = sampler.sample(agent, [CHAT, OTHER], [1, 2], max_new_tokens=10, temperature=0.0)
        torch_side = lm.sample(agent, [CHAT, OTHER], [1, 2], max_new_tokens=10, temperature=0.0)
        assert [c.token_ids for c in fast] == [c.token_ids for c in torch_side]
        assert [c.text for c in fast] == [c.text for c in torch_side]
        assert [c.prompt_ids for c in fast] == [c.prompt_ids for c in torch_side]
        for completion, expected in zip(fast, scored(lm, agent, fast, 1.0), strict=True):
            assert list(completion.logprobs) == pytest.approx(expected, abs=1e-4)  # greedy: softmax(logits)
    for agent, tensors in lm.state_dict().items():  # the hand-over read the weights, changed none
        assert all(torch.equal(tensor, weights[agent][name]) for name, tensor in tensors.items())
    converted = {path.name for path in tmp_path.iterdir()}
    assert len(converted) == len({(id(seat.model), seat.adapter) for seat in lm.seats.values()})


def test_sampling_replays_per_call_and_records_the_unconstrained_policy(make_lm, tmp_path):
    lm = make_lm()
    move(lm, "agent_1", seed=3)
    sampler = CTranslate2Sampler(lm, threads=1, work_dir=tmp_path)
    sampler.sync(lm.state_dict(), 7)
    chats, seeds = [CHAT, OTHER, CHAT], [4, 5, 6]
    first = sampler.sample("agent_1", chats, seeds, max_new_tokens=12)
    assert sampler.sample("agent_1", chats, seeds, max_new_tokens=12) == first  # the same call, the same completions
    assert sampler.sample("agent_1", chats, [4, 5, 9], max_new_tokens=12) != first  # other seeds, another stream
    alone = sampler.sample("agent_1", chats[:1], seeds[:1], max_new_tokens=12)[0]
    assert alone.token_ids != first[0].token_ids  # seeded per call: the same request in another call differs
    for settings in ({}, {"temperature": 0.7}, {"top_p": 0.5}, {"min_new_tokens": 12}):
        completions = sampler.sample("agent_1", chats, seeds, max_new_tokens=12, **settings)
        temperature = settings.get("temperature", 1.0)
        for completion, expected in zip(completions, scored(lm, "agent_1", completions, temperature), strict=True):
            assert list(completion.logprobs) == pytest.approx(expected, abs=1e-4), settings
            assert 1 <= len(completion.token_ids) <= 12 and all(math.isfinite(x) for x in completion.logprobs)
            stopped = completion.token_ids[-1] in lm._stop_ids
            assert completion.finish_reason == ("stop" if stopped else "length")
            if not stopped:
                assert len(completion.token_ids) == 12
            if "min_new_tokens" in settings:
                assert len(completion.token_ids) == 12
            assert completion.text == lm.tokenizer.decode(completion.token_ids, skip_special_tokens=True)


def test_without_exact_logprobs_they_are_nan_where_torch_would_have_to_score(make_lm, tmp_path):
    lm = make_lm()
    sampler = CTranslate2Sampler(lm, threads=1, work_dir=tmp_path, exact_logprobs=False)
    sampler.sync(lm.state_dict(), 0)
    for settings in ({"temperature": 0.7}, {"min_new_tokens": 5}):
        completions = sampler.sample("agent_0", [CHAT, OTHER], [1, 2], max_new_tokens=5, **settings)
        assert all(len(c.logprobs) == len(c.token_ids) and all(map(math.isnan, c.logprobs)) for c in completions)
    free = sampler.sample("agent_0", [CHAT, OTHER], [1, 2], max_new_tokens=5)  # temperature 1: CTranslate2's own
    for completion, expected in zip(free, scored(lm, "agent_0", free, 1.0), strict=True):
        assert list(completion.logprobs) == pytest.approx(expected, abs=1e-4)


def test_each_version_is_handed_over(make_lm, tmp_path):
    lm = make_lm()
    sampler = CTranslate2Sampler(lm, threads=1, work_dir=tmp_path)
    sampler.sync(lm.state_dict(), 1)
    before = sampler.sample("agent_0", [CHAT], [0], max_new_tokens=8, temperature=0.0)[0]
    move(lm, "agent_0", scale=0.3)
    now = lm.sample("agent_0", [CHAT], [0], max_new_tokens=8, temperature=0.0)[0]
    stale = sampler.sample("agent_0", [CHAT], [0], max_new_tokens=8, temperature=0.0)[0]
    assert list(stale.logprobs) == pytest.approx(list(before.logprobs))  # version 1 until synced
    assert list(stale.logprobs) != pytest.approx(scored(lm, "agent_0", [stale], 1.0)[0], abs=1e-3)
    sampler.sync(lm.state_dict(), 1)  # the same version: nothing happens
    assert sampler.sample("agent_0", [CHAT], [0], max_new_tokens=8, temperature=0.0)[0] == stale
    spent = sampler.handover_seconds
    sampler.sync(lm.state_dict(), 2)
    handed = sampler.sample("agent_0", [CHAT], [0], max_new_tokens=8, temperature=0.0)[0]
    assert handed.token_ids == now.token_ids
    assert list(handed.logprobs) == pytest.approx(scored(lm, "agent_0", [handed], 1.0)[0], abs=1e-4)
    assert sampler.handover_seconds > spent > 0


@pytest.mark.parametrize(("finetune", "separate", "conversions"), [("lora", False, 1), ("lora", True, 1), ("full", False, 2)])
def test_a_new_version_is_what_converting_it_gives_byte_for_byte(make_lm, tmp_path, monkeypatch, finetune, separate, conversions):
    """An adapter's layers are written over the old ones in place; without an adapter the
    model is converted again. Either way: the file a conversion of the new weights writes."""
    from algorithms.text import ctranslate2_sampler

    calls = []
    convert = ctranslate2_sampler.convert_model
    monkeypatch.setattr(ctranslate2_sampler, "convert_model", lambda *a, **k: calls.append(1) or convert(*a, **k))
    lm = make_lm(finetune=finetune, separate=separate)
    sampler = CTranslate2Sampler(lm, threads=1, work_dir=tmp_path / "handed")
    sampler.sync(lm.state_dict(), 1)
    sampler.sample("agent_0", [CHAT], [0], max_new_tokens=2)
    move(lm, "agent_0", seed=5)
    sampler.sync(lm.state_dict(), 2)
    handed = sampler.sample("agent_0", [CHAT, OTHER], [3, 4], max_new_tokens=8)
    assert len(calls) == conversions
    fresh = CTranslate2Sampler(lm, threads=1, work_dir=tmp_path / "fresh")
    fresh.sync(lm.state_dict(), 2)
    assert fresh.sample("agent_0", [CHAT, OTHER], [3, 4], max_new_tokens=8) == handed
    (ours,), (theirs,) = (sorted((tmp_path / side).rglob("model.bin")) for side in ("handed", "fresh"))
    assert ours.read_bytes() == theirs.read_bytes()


def test_misuse_is_refused_and_close_removes_its_models(make_lm):
    lm = make_lm()
    sampler = CTranslate2Sampler(lm, threads=1)
    with pytest.raises(RuntimeError, match="sync"):
        sampler.sample("agent_0", [CHAT], [0])
    other = make_lm(seed=1)
    move(other, "agent_0")
    with pytest.raises(ValueError, match="not its weights"):
        sampler.sync(other.state_dict(), 1)
    sampler.sync(lm.state_dict(), 1)
    with pytest.raises(ValueError, match="one seed per chat"):
        sampler.sample("agent_0", [CHAT, CHAT], [0])
    with pytest.raises(ValueError, match="min_new_tokens"):
        sampler.sample("agent_0", [CHAT], [0], max_new_tokens=2, min_new_tokens=3)
    with pytest.raises(KeyError, match="agent_9"):
        sampler.sample("agent_9", [CHAT], [0])
    assert sampler.sample("agent_0", [], []) == []
    sampler.sample("agent_0", [CHAT], [0], max_new_tokens=2)
    assert sampler.work_dir.is_dir()
    sampler.close()
    assert not sampler.work_dir.exists()


def test_a_learner_trains_on_the_samplers_rollouts():
    config = TextGRPOConfig(
        model="tiny", groups_per_update=2, group_size=2, max_new_tokens=6, micro_batch_size=4, lora_rank=4,
        run=text_run(progress=False),
    )
    lm = build_lm(config, ["agent_0", "agent_1"])
    venv = text_vector_env(config.num_envs, protocol=HashProtocol(), n_agents=2, max_turns=config.env.max_turns)
    sampler = CTranslate2Sampler(lm, threads=1, exact_logprobs=False)  # as train() builds it
    learner = TextGRPO(config, lm, venv, sampler=sampler)
    before = lm.state_dict()
    try:
        metrics = [learner.train_step() for _ in range(2)]
    finally:
        sampler.close()
    assert sampler.version == learner._weights_version - 1  # synced before the last update's collection
    assert all(math.isfinite(value) for step in metrics for value in step.values())
    moved = any(not torch.equal(before[agent][name], tensor) for agent, weights in lm.state_dict().items() for name, tensor in weights.items())
    assert moved


def test_the_config_chooses_the_sampler_and_refuses_it_with_workers():
    assert TextGRPOConfig(model="tiny", sampler="ctranslate2").sampler == "ctranslate2"
    with pytest.raises(ValueError, match="sampler must be one of"):
        TextGRPOConfig(model="tiny", sampler="vllm")
    with pytest.raises(ValueError, match="workers"):
        TextGRPOConfig(model="tiny", sampler="ctranslate2", workers=2)


def test_train_text_samples_with_ctranslate2_when_asked(tmp_path, monkeypatch):
    from algorithms import cli
    from algorithms.text import ctranslate2_sampler

    calls = []
    original = ctranslate2_sampler.CTranslate2Sampler.sample
    monkeypatch.setattr(
        ctranslate2_sampler.CTranslate2Sampler, "sample", lambda self, *a, **k: calls.append(a[0]) or original(self, *a, **k)
    )
    run_dir = tmp_path / "run"
    cli.main(["train", "text", "grpo", "--model", "tiny", "--groups-per-update", "1",
              "--group-size", "2", "--max-new-tokens", "4", "--no-progress", "--updates", "1",
              "--sampler", "ctranslate2", "--run-dir", str(run_dir)])  # fmt: skip
    assert sorted(set(calls)) == ["agent_0", "agent_1"]
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 1
    assert json.loads((run_dir / "summary.json").read_text())["config"]["sampler"] == "ctranslate2"


def test_without_the_extra_the_error_names_it(make_lm, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ctranslate2" else real(name, *a))
    with pytest.raises(ImportError, match=r"deliberation-env\[ctranslate2\]"):
        CTranslate2Sampler(make_lm())
