"""The three ways a decoding batch steps (agents.trainable_lm.steps): a static cache, eager
or compiled, gives the growing cache's completions (the same tokens, log-probabilities up
to rounding), for mixed-adapter batches and single agents, as rows finish at different
steps and the live ones move into a smaller static batch; a compiled step serves later
calls of its shape with their own prompts, rows' adapters and the adapters' new weights,
compiling nothing again."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil

import pytest
import torch
from test_mixed_adapters import CHAT, OTHER, distinct_team

from agents.devices import check_decoding
from agents.trainable_lm import TrainableLM, steps, tiny_model

REQUESTS = {
    "agent_0": ([CHAT, OTHER, CHAT], [1, 2, 3]),
    "agent_1": ([OTHER, CHAT], [4, 5]),
    "agent_2": ([CHAT], [6]),
}
"""Six rows of three agents (padded to a static batch of 8)."""
TWELVE = {
    agent: ([CHAT, OTHER, CHAT, OTHER, CHAT][: 5 - k], [10 * k + j for j in range(5 - k)])
    for k, agent in enumerate(REQUESTS)
}
"""Twelve rows of three agents (a static batch of 16, whose live rows move into 8)."""


def assert_same_completions(got: dict, expected: dict) -> None:
    for agent, completions in expected.items():
        for mine, theirs in zip(got[agent], completions, strict=True):
            assert mine.token_ids == theirs.token_ids
            assert mine.finish_reason == theirs.finish_reason
            torch.testing.assert_close(mine.logprobs, theirs.logprobs, rtol=1e-5, atol=1e-5)


def sampled(lm: TrainableLM, decoding: str, requests=REQUESTS, temperature=1.0) -> dict:
    lm.decoding = decoding
    return lm.sample_joint(requests, max_new_tokens=16, temperature=temperature)


@pytest.mark.parametrize("routing", ["slices", "stacked", "peft"])
@pytest.mark.parametrize("temperature", [1.0, 0.0])
def test_a_static_cache_gives_the_growing_caches_completions_as_rows_finish(routing, temperature):
    # a third of the bytes stop, so rows finish at different steps
    lm = distinct_team(stop_ids=range(0, 256, 3), routing=routing)
    expected = sampled(lm, "dynamic", temperature=temperature)
    assert_same_completions(sampled(lm, "static", temperature=temperature), expected)
    assert len({len(c.token_ids) for completions in expected.values() for c in completions}) > 1


@pytest.mark.parametrize("routing", ["slices", "stacked", "peft"])
def test_live_rows_move_into_a_smaller_static_batch_and_decode_the_same(routing):
    lm = distinct_team(stop_ids=range(0, 256, 3), routing=routing)
    expected = sampled(lm, "dynamic", TWELVE)
    assert_same_completions(sampled(lm, "static", TWELVE), expected)
    lengths = sorted(len(c.token_ids) for completions in expected.values() for c in completions)
    assert lengths[3] < lengths[-1]  # more than 8 rows had finished while others decoded on
    assert {rows for _, rows, _ in lm._static_caches} == {16, steps.MIN_COMPACT_ROWS}


@pytest.mark.parametrize("finetune", ["lora", "full"])
def test_one_agents_sampling_through_a_static_cache_is_the_same(finetune):
    model, tokenizer = tiny_model(seed=0)
    model.generation_config.eos_token_id = [tokenizer.eos_token_id, *range(0, 256, 5)]
    lm = TrainableLM(model, tokenizer, ["agent_0"], finetune=finetune, seed=0)
    chats, seeds = [CHAT, OTHER, OTHER], [7, 8, 9]
    expected = lm.sample("agent_0", chats, seeds, max_new_tokens=12)
    lm.decoding = "static"
    assert_same_completions({"a": lm.sample("agent_0", chats, seeds, max_new_tokens=12)}, {"a": expected})


def test_a_sliding_window_model_keeps_the_growing_cache():
    lm = distinct_team()
    assert steps.static_cacheable(lm.seats["agent_0"].model)
    config = lm.seats["agent_0"].model.get_base_model().config
    config.layer_types = ["sliding_attention"] * config.num_hidden_layers
    assert not steps.static_cacheable(lm.seats["agent_0"].model)


def test_unknown_decodings_and_compiled_through_peft_are_refused():
    with pytest.raises(ValueError, match="decoding must be one of"):
        check_decoding("eager")
    with pytest.raises(ValueError, match="--mixed-routing"):
        check_decoding("compiled", "peft")
    model, tokenizer = tiny_model(seed=0)
    with pytest.raises(ValueError, match="decoding must be one of"):
        TrainableLM(model, tokenizer, ["agent_0"], decoding="fast")


def test_compiled_decoding_on_a_cpu_without_a_compiler_says_what_to_do(monkeypatch):
    model, tokenizer = tiny_model(seed=0)
    monkeypatch.setattr(steps.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="C\\+\\+ compiler.*--decoding"):
        TrainableLM(model, tokenizer, ["agent_0"], device="cpu", decoding="compiled")


def test_the_command_line_decoding_reaches_the_policy(monkeypatch):
    from algorithms import cli
    from algorithms.text.train import load_lm

    monkeypatch.setenv(steps.SCOPE_VARIABLE, "layers")  # what auto would be: the option wins
    line = ["train", "text", "magrpo", "--model", "tiny", "--decoding", "compiled", "--compile-scope", "step"]
    learner = cli.parse(line).command.command.learner
    assert (learner.decoding, learner.compile_scope) == ("compiled", "step")
    lm = load_lm(learner, "tiny", ["agent_0", "agent_1"])
    assert (lm.decoding, lm.compile_scope) == ("compiled", "step")
    built = []
    monkeypatch.setattr(steps, "compiled_forward", lambda device: built.append(device) or steps._forward)
    lm.sample("agent_0", [CHAT], [0], max_new_tokens=2)  # the whole step: no layer installed
    assert built and all("forward" not in layer.__dict__ for layer in steps.decoder_layers(lm.seats["agent_0"].model))
    with pytest.raises(ValueError, match="--mixed-routing"):
        dataclasses.replace(learner, mixed_routing="peft")
    with pytest.raises(ValueError, match="--decoding compiled"):
        dataclasses.replace(learner, decoding="static")  # a scope, but nothing compiles
    with pytest.raises(ValueError, match="compile scope must be one of"):
        dataclasses.replace(learner, compile_scope="model")


def test_a_compiled_shapes_first_calls_are_timed_apart_from_decoding(monkeypatch):
    """The first calls of a compiled shape build it (compile, capture the CUDA graph): they
    are the meter's compile_seconds, not decoding seconds, so an update's tokens/s is the
    speed of decoding. Here an eager step stands in for the compiled one (the bookkeeping
    is under test, not the compiler; the slow test below compiles)."""
    monkeypatch.setattr(steps, "compiled_forward", lambda device: steps._forward)
    monkeypatch.setattr(steps, "_CALLS", {})
    lm = distinct_team(routing="stacked")
    lm.read_meter()
    sampled(lm, "compiled")
    first = lm.read_meter()
    assert first.compile_seconds > 0 and first.generation_seconds > 0 and first.generated_tokens > 0
    assert list(steps._CALLS.values()) == [1]  # the 8-row shape, built once (its first call on a CPU)
    sampled(lm, "compiled")
    assert lm.read_meter().compile_seconds == 0  # the same shape again: nothing built
    sampled(lm, "static")
    assert lm.read_meter().compile_seconds == 0  # eager static steps build nothing


def test_compiled_decoding_decodes_with_one_active_adapter_whatever_acted_last():
    """The compiled graph guards on peft's active adapter: a loss pass between two updates'
    decodes made another one active, and every update recompiled (the GPU client of round
    twenty-two). Under compiled decoding the mixed batch runs with one fixed active adapter,
    and the one before is back afterwards."""
    from agents.trainable_lm.mixed import routed_adapters

    lm = distinct_team(routing="stacked")
    model = lm.seats["agent_0"].model
    for acted in ("agent_2", "agent_1"):
        lm.logprobs(acted, [[1, 2, 3]], [[4, 5]])
        assert model.active_adapter == acted
        with routed_adapters(model, "stacked", "compiled"):
            assert model.active_adapter == "agent_0"
        assert model.active_adapter == acted
        with routed_adapters(model, "stacked", "static"):
            assert model.active_adapter == acted  # eager decoding guards nothing


def test_the_compile_scope_is_the_whole_step_on_cuda_one_layer_elsewhere_unless_set(monkeypatch):
    monkeypatch.delenv(steps.SCOPE_VARIABLE, raising=False)
    assert steps.compile_scope(torch.device("cuda")) == "step"
    assert steps.compile_scope(torch.device("cpu")) == "layers"
    monkeypatch.setenv(steps.SCOPE_VARIABLE, "step")
    assert steps.compile_scope(torch.device("cpu")) == "step"
    assert steps.compile_scope(torch.device("cpu"), "layers") == "layers"  # asked: the variable is for auto
    assert steps.compile_scope(torch.device("cuda"), "layers") == "layers"
    monkeypatch.setenv(steps.SCOPE_VARIABLE, "model")
    with pytest.raises(ValueError, match=steps.SCOPE_VARIABLE):
        steps.compile_scope(torch.device("cpu"))


def test_every_decoder_layer_runs_through_the_one_region_and_is_restored_after(monkeypatch):
    """The plumbing of regional compilation, with the region left eager (the compiler is
    the slow test's): each step runs every layer through the one region function, each
    with its own cache layer, the tokens are the growing cache's, and afterwards the layers
    have their own forward and layer index back."""
    monkeypatch.setenv(steps.SCOPE_VARIABLE, "layers")
    calls = []

    def region(layer, *args, cache, **kwargs):
        calls.append((id(layer), id(cache.layer), layer.self_attn.layer_idx))
        return steps._layer_forward(layer, *args, cache=cache, **kwargs)

    monkeypatch.setattr(steps, "_compiled_layer", lambda device: region)
    lm = distinct_team(routing="stacked")
    expected = sampled(lm, "dynamic")
    assert_same_completions(sampled(lm, "compiled"), expected)
    layers = steps.decoder_layers(lm.seats["agent_0"].model)
    assert len(layers) == 2 and len(calls) % len(layers) == 0 and calls
    assert {index for _, _, index in calls} == {0}  # one constant for all: one compiled code
    layers_seen, caches_seen = {layer for layer, _, _ in calls}, {cache for _, cache, _ in calls}
    assert len(layers_seen) == len(caches_seen) == len(layers)
    assert [layer.self_attn.layer_idx for layer in layers] == [0, 1]
    assert all("forward" not in layer.__dict__ for layer in layers)


class MidDecodeError(Exception):
    """An error of a decode's third step."""


def test_a_decode_installs_the_compiled_layers_once_and_takes_them_out_when_it_fails(monkeypatch):
    """The layers' swap is Python work over every layer: one install a decode (not one a
    token), undone when the decode ends, also by an error mid-decode."""
    monkeypatch.setenv(steps.SCOPE_VARIABLE, "layers")
    monkeypatch.setattr(steps, "_compiled_layer", lambda device: steps._layer_forward)
    installed, decodes, stepped = [], [], []
    install, build, step = steps.compiled_layers, steps.StaticSteps.__init__, steps.StaticSteps.step

    @contextlib.contextmanager
    def counted_install(model, device):
        installed.append(model)
        with install(model, device):
            yield

    def counted_build(self, *args, **kwargs):
        decodes.append(self)
        build(self, *args, **kwargs)

    def counted_step(self, *args):
        stepped.append(self)
        return step(self, *args)

    monkeypatch.setattr(steps, "compiled_layers", counted_install)
    monkeypatch.setattr(steps.StaticSteps, "__init__", counted_build)
    monkeypatch.setattr(steps.StaticSteps, "step", counted_step)
    lm = distinct_team(routing="stacked")
    sampled(lm, "compiled")
    assert len(installed) == len(decodes) >= 1 and len(stepped) >= 8 * len(decodes)

    def failing_step(self, *args):
        if len(stepped) == 3:
            raise MidDecodeError
        return counted_step(self, *args)

    stepped.clear()
    monkeypatch.setattr(steps.StaticSteps, "step", failing_step)
    with pytest.raises(MidDecodeError):
        sampled(lm, "compiled")
    layers = steps.decoder_layers(lm.seats["agent_0"].model)
    assert [layer.self_attn.layer_idx for layer in layers] == [0, 1]
    assert all("forward" not in layer.__dict__ for layer in layers)
    with pytest.raises(RuntimeError, match="with block"):  # a step outside its block compiles nothing
        step(decodes[-1], torch.zeros(1, dtype=torch.long), [0])


@pytest.mark.slow  # compiles the tiny model's step for 16 and 8 rows: about 30 s a scope on two cores
@pytest.mark.skipif(not any(map(shutil.which, steps.COMPILERS)), reason="inductor needs a C++ compiler")
@pytest.mark.parametrize("scope", steps.COMPILE_SCOPES)
def test_a_compiled_step_serves_later_calls_with_their_own_prompts_rows_and_weights(
    scope, monkeypatch
):
    from torch._dynamo.utils import counters

    monkeypatch.setenv(steps.SCOPE_VARIABLE, scope)
    monkeypatch.setattr(steps, "_CALLS", {})
    torch._dynamo.reset()  # an earlier test's compiled layer of the same shapes would be reused: none is counted
    lm = distinct_team(stop_ids=range(0, 256, 3))
    lm.read_meter()
    graphs = counters["stats"]["unique_graphs"]
    expected = sampled(lm, "dynamic", TWELVE)
    assert_same_completions(sampled(lm, "compiled", TWELVE), expected)  # 16 rows, then 8
    # one graph per shape: in the "layers" scope the two layers share one compiled layer
    assert counters["stats"]["unique_graphs"] - graphs == len(steps._CALLS) > 0
    graphs = counters["stats"]["unique_graphs"]
    assert lm.read_meter().compile_seconds > 0

    # other prompts and rows' adapters in the 8-row shape, then the adapters' weights move
    # (as an optimizer step moves them): the graph reads the new values, compiles nothing
    others = {"agent_2": ([OTHER, CHAT, CHAT], [11, 12, 13]), "agent_0": ([OTHER, OTHER], [14, 15])}
    before = sampled(lm, "dynamic", others)
    lm.logprobs("agent_2", [[1, 2, 3]], [[4, 5]])  # a loss pass makes agent_2's adapter the active one
    lm.read_meter()
    assert_same_completions(sampled(lm, "compiled", others), before)
    assert lm.read_meter().compile_seconds == 0  # the 8-row shape was built by the first call
    with torch.no_grad():
        for parameter in lm.parameters("agent_2"):
            parameter.mul_(-1.5)
    moved = sampled(lm, "dynamic", others)
    assert [c.token_ids for c in moved["agent_2"]] != [c.token_ids for c in before["agent_2"]]
    assert_same_completions(sampled(lm, "compiled", others), moved)
    assert counters["stats"]["unique_graphs"] == graphs
