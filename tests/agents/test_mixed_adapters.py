"""Mixed-adapter batches (agents.trainable_lm.mixed) against peft's own ``adapter_names``
path: by slices the same numbers bit for bit, stacked the same up to rounding and the same
greedy tokens, in fewer kernels; nothing left behind."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from agents.trainable_lm import TrainableLM, default_lora, mixed, tiny_model

CHAT = ({"role": "user", "content": "What is 9 + 4?"},)
OTHER = ({"role": "system", "content": "A much longer system prompt, padded on the left."}, *CHAT)
AGENTS = ("agent_0", "agent_1", "agent_2")
TOLERANCE = {"slices": 0.0, "stacked": 1e-5}
"""How far each route's logits may be from peft's: slices bit for bit, stacked up to rounding."""


def distinct_team(stop_ids=(), use_dora=False, routing="auto") -> TrainableLM:
    """Three adapters on one tiny base, moved apart (LoRA's B starts at 0: they would coincide)."""
    model, tokenizer = tiny_model(seed=0)
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, *stop_ids]
    lora = default_lora(rank=4, alpha=8.0)
    lora.use_dora = use_dora
    lm = TrainableLM(model, tokenizer, list(AGENTS), lora=lora, seed=0, routing=routing)
    generator = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for scale, agent in enumerate(AGENTS, start=1):
            for parameter in lm.parameters(agent):
                parameter.add_(0.3 * scale * torch.randn(parameter.shape, generator=generator))
    return lm


@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_joint_sampling_by_slices_is_peft_mixed_batch_bit_for_bit(temperature):
    # a third of the bytes stop, so rows leave the batch at different steps and the runs shrink
    lm = distinct_team(stop_ids=range(0, 256, 3), routing="slices")
    requests = {
        "agent_0": ([CHAT, OTHER, CHAT], [1, 2, 3]),
        "agent_1": ([OTHER, CHAT], [4, 5]),
        "agent_2": ([CHAT], [6]),
    }
    sliced = lm.sample_joint(requests, max_new_tokens=16, temperature=temperature)
    lm.routing = "peft"
    reference = lm.sample_joint(requests, max_new_tokens=16, temperature=temperature)

    assert sliced == reference  # token ids, log-probs (exact floats), texts, finish reasons
    lengths = {len(c.token_ids) for completions in sliced.values() for c in completions}
    assert len(lengths) > 1  # rows did leave the batch mid-way
    assert sliced["agent_0"][0].token_ids != sliced["agent_1"][1].token_ids  # the adapters differ


def test_any_order_of_rows_is_routed_to_its_own_adapter():
    lm = distinct_team()
    model = lm.seats["agent_0"].model
    ids = torch.tensor([lm.encode(CHAT)] * 5)
    names = ["agent_1", "agent_0", "agent_0", "agent_2", "agent_1"]  # runs not grouped by agent
    with torch.no_grad():
        expected = model(input_ids=ids, adapter_names=names).logits
        with mixed.routed_adapters(model) as route:
            assert route is not mixed.peft_route
            got = model(input_ids=ids, **route(names)).logits
        after = model(input_ids=ids, adapter_names=names).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    torch.testing.assert_close(after, expected, rtol=0, atol=0)  # peft's own forward again
    assert not torch.equal(got[0], got[1])  # agent_1 and agent_0 answer differently


@pytest.mark.parametrize("routing", ["slices", "stacked"])
def test_routing_leaves_every_parameter_trainable_as_it_was(routing):
    lm = distinct_team(routing=routing)
    model = lm.seats["agent_0"].model
    with lm._acting("agent_1"):
        before = {name: p.requires_grad for name, p in model.named_parameters()}
        assert any(before.values())
        lm.sample_joint({"agent_0": ([CHAT], [1]), "agent_1": ([CHAT], [2])}, max_new_tokens=4)
        assert {name: p.requires_grad for name, p in model.named_parameters()} == before


def test_dora_adapters_which_peft_cannot_mix_are_sampled_agent_by_agent():
    lm = distinct_team(use_dora=True)
    assert not mixed.mixable(lm.seats["agent_0"].model)
    with mixed.routed_adapters(lm.seats["agent_0"].model) as route:
        assert route is mixed.peft_route  # a variant is never sliced
    joint = lm.sample_joint({"agent_0": ([CHAT], [1]), "agent_1": ([CHAT], [1])}, max_new_tokens=6)
    for agent in ("agent_0", "agent_1"):
        assert joint[agent] == lm.sample(agent, [CHAT], [1], max_new_tokens=6)


def test_stacked_updates_are_peft_mixed_batch_up_to_rounding():
    lm = distinct_team(routing="stacked")
    model = lm.seats["agent_0"].model
    ids = torch.tensor([lm.encode(CHAT)] * 5)
    names = ["agent_1", "agent_0", "agent_0", "agent_2", "agent_1"]  # runs not grouped by agent
    with torch.no_grad():
        expected = model(input_ids=ids, adapter_names=names).logits
        with mixed.routed_adapters(model, "stacked") as route:
            got = model(input_ids=ids, **route(names)).logits
        after = model(input_ids=ids, adapter_names=names).logits
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(after, expected, rtol=0, atol=0)  # peft's own forward again
    assert not torch.equal(got[0], got[1])  # agent_1 and agent_0 answer differently


def test_stacked_joint_sampling_keeps_peft_greedy_tokens_as_rows_leave():
    lm = distinct_team(stop_ids=range(0, 256, 3), routing="stacked")
    requests = {
        "agent_0": ([CHAT, OTHER, CHAT], [1, 2, 3]),
        "agent_1": ([OTHER, CHAT], [4, 5]),
        "agent_2": ([CHAT], [6]),
    }
    stacked = lm.sample_joint(requests, max_new_tokens=16, temperature=0.0)
    lm.routing = "peft"
    reference = lm.sample_joint(requests, max_new_tokens=16, temperature=0.0)
    for agent, completions in reference.items():
        for got, expected in zip(stacked[agent], completions, strict=True):
            assert got.token_ids == expected.token_ids
            torch.testing.assert_close(got.logprobs, expected.logprobs, rtol=1e-5, atol=1e-5)
    lengths = {len(c.token_ids) for completions in stacked.values() for c in completions}
    assert len(lengths) > 1  # rows did leave the batch mid-way


@pytest.fixture
def operators_per_step(monkeypatch):
    """``benchmarks/mixed_batch.py``'s count of a step's compute operators."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from mixed_batch import operators_per_step

    return operators_per_step


def test_stacked_updates_take_the_same_operators_for_any_number_of_agents(operators_per_step):
    lm = distinct_team()
    prompt = lm.encode(CHAT)[:4]
    stacked = [operators_per_step(lm, "stacked", AGENTS[:n], prompt) for n in (1, 2, 3)]
    sliced = [operators_per_step(lm, "slices", AGENTS[:n], prompt) for n in (1, 2, 3)]
    assert stacked[0] == stacked[1] == stacked[2]
    assert sliced[0] < sliced[1] < sliced[2]  # slices grow with each agent's run
    assert stacked[1] < sliced[1]


@pytest.mark.parametrize("routing", ["slices", "stacked"])
def test_a_routed_decode_runs_none_of_peft_per_layer_and_gives_its_forward_back(routing, monkeypatch):
    # each LoRA layer of a decoding step is the base's product and the update's kernels: no
    # call of peft's lora.Linear.forward, no forward hook (the Python a GPU's eager step waits on)
    from peft.tuners.lora.layer import Linear

    calls = []
    peft_forward = Linear.forward
    monkeypatch.setattr(Linear, "forward", lambda self, *a, **k: calls.append(1) or peft_forward(self, *a, **k))
    lm = distinct_team(routing=routing)
    model = lm.seats["agent_0"].model
    layers = mixed._sliceable_layers(model)
    ids = torch.tensor([lm.encode(CHAT)] * 3)
    names = ["agent_0", "agent_1", "agent_2"]
    with torch.no_grad():
        expected = model(input_ids=ids, adapter_names=names).logits
        calls.clear()
        with mixed.routed_adapters(model, routing) as route:
            assert not any(layer._forward_hooks for layer in layers)
            got = model(input_ids=ids, **route(names)).logits
        assert calls == []
        assert all("forward" not in layer.__dict__ for layer in layers)
        model(input_ids=ids)
    assert len(calls) == len(layers)  # peft's own forward again, once a layer
    torch.testing.assert_close(got, expected, rtol=TOLERANCE[routing], atol=TOLERANCE[routing])


@pytest.mark.parametrize("decoding", ["dynamic", "compiled"])
def test_a_compiled_decode_calls_each_base_layer_as_a_module(decoding):
    # traced so, the base's weights are module parameters, which a CUDA graph reads in place
    lm = distinct_team()
    model = lm.seats["agent_0"].model
    layers = mixed._sliceable_layers(model)
    calls = []
    handles = [layer.get_base_layer().register_forward_pre_hook(lambda *_: calls.append(1)) for layer in layers]
    names = ["agent_0", "agent_1"]
    with torch.no_grad(), mixed.routed_adapters(model, "stacked", decoding) as route:
        model(input_ids=torch.tensor([lm.encode(CHAT)] * 2), **route(names))
    for handle in handles:
        handle.remove()
    assert len(calls) == (len(layers) if decoding == "compiled" else 0)


@pytest.mark.parametrize("routing", ["slices", "stacked"])
def test_a_base_layer_other_than_a_linear_is_called_as_peft_calls_it(routing):
    # GPT-2's Conv1D (LoRA with fan_in_fan_out): not F.linear on its weight as it lies
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    base = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=64, n_positions=32))
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn", "c_proj", "c_fc"], fan_in_fan_out=True)
    model = get_peft_model(base, lora, adapter_name="agent_0")
    model.add_adapter("agent_1", lora)
    model.eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_" in name:
                parameter.copy_(0.3 * torch.randn_like(parameter))
    layers = mixed._sliceable_layers(model)
    assert layers and all(type(layer.get_base_layer()) is not torch.nn.Linear for layer in layers)
    ids = torch.randint(0, 64, (4, 6), generator=torch.Generator().manual_seed(1))
    names = ["agent_0", "agent_0", "agent_1", "agent_1"]  # runs, as a joint sampling lists them
    with torch.no_grad():
        expected = model(input_ids=ids, adapter_names=names).logits
        with mixed.routed_adapters(model, routing) as route:
            got = model(input_ids=ids, **route(names)).logits
    torch.testing.assert_close(got, expected, rtol=TOLERANCE[routing], atol=TOLERANCE[routing])
    assert not torch.equal(got[1], got[2])  # the two adapters answer differently


def test_an_adapter_with_a_bias_is_sliced_not_stacked():
    lm = distinct_team()
    model = lm.seats["agent_0"].model
    layer = mixed._sliceable_layers(model)[0]
    bias = torch.nn.Parameter(torch.full((layer.lora_B["agent_1"].out_features,), 0.5))
    layer.lora_B["agent_1"].bias = bias
    ids = torch.tensor([lm.encode(CHAT)] * 3)
    names = ["agent_0", "agent_1", "agent_2"]
    with torch.no_grad():
        expected = model(input_ids=ids, adapter_names=names).logits
        with mixed.routed_adapters(model, "stacked") as route:
            got = model(input_ids=ids, **route(names)).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=0)  # slices: bit for bit, bias added


def test_an_unknown_routing_is_refused():
    with pytest.raises(ValueError, match="routing must be one of"):
        distinct_team(routing="fastest")


def test_the_command_line_routing_reaches_the_policy():
    from algorithms import cli
    from algorithms.text.train import load_lm

    learner = cli.parse(["train", "text", "magrpo", "--model", "tiny", "--mixed-routing", "stacked"]).command.command.learner
    assert learner.mixed_routing == "stacked"
    assert load_lm(learner, "tiny", ["agent_0", "agent_1"]).routing == "stacked"
    with pytest.raises(ValueError, match="routing must be one of"):
        dataclasses.replace(learner, mixed_routing="fast")


def test_stacked_factors_and_masks_keep_their_tensors_from_call_to_call_and_follow_the_weights():
    # a compiled step under CUDA graphs reads them where they lie (mixed._kept)
    lm = distinct_team()
    model = lm.seats["agent_0"].model
    ids = torch.tensor([lm.encode(CHAT)] * 3)
    names = ["agent_0", "agent_1", "agent_2"]
    layer = mixed._sliceable_layers(model)[0]

    def stacked_logits():
        with torch.no_grad(), mixed.routed_adapters(model, "stacked") as route:
            logits = model(input_ids=ids, **route(names)).logits
        kept = (mixed._STACKED_A[layer], mixed._STACKED_B[layer], *mixed._MASKS[model].values())
        return logits, [tensor.data_ptr() for tensor in kept]

    first, addresses = stacked_logits()
    with torch.no_grad():
        for parameter in lm.parameters("agent_1"):
            parameter.add_(0.2)  # as an optimizer step moves it
        expected = model(input_ids=ids, adapter_names=names).logits
    moved, addresses_then = stacked_logits()
    assert addresses_then == addresses
    torch.testing.assert_close(moved, expected, rtol=1e-4, atol=1e-4)  # rounding: larger adapters now
    assert not torch.allclose(moved[1], first[1])  # agent_1's row follows its new weights
    torch.testing.assert_close(moved[0], first[0], rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_stacked_updates_add_three_operators_per_layer_on_a_base_of_either_dtype(operators_per_step, dtype):
    # a bfloat16 base keeps its adapters in float32: the stacked factors take the base's
    # dtype, so no cast of the layer's input or update is added per layer and step
    from mixed_batch import OperatorCount

    model, tokenizer = tiny_model(seed=0)
    lm = TrainableLM(model, tokenizer, list(AGENTS[:2]), lora=default_lora(rank=4, alpha=8.0), dtype=dtype)
    peft_model = lm.seats["agent_0"].model
    assert {p.dtype for p in lm.parameters("agent_0")} == {torch.float32}
    prompt = lm.encode(CHAT)[:4]
    stacked = operators_per_step(lm, "stacked", AGENTS[:2], prompt)
    ids = torch.tensor([prompt] * 2)
    with torch.no_grad(), peft_model.disable_adapter(), OperatorCount() as base:
        peft_model(input_ids=ids)
    layers = len(mixed._sliceable_layers(peft_model))
    assert stacked - sum(base.counts.values()) == 3 * layers
    assert mixed._STACKED_A[mixed._sliceable_layers(peft_model)[0]].dtype == getattr(torch, dtype)
