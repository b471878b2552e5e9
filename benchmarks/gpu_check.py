"""The prepared GPU check (issue 32, item 6): one command, no download. Its first calls on an
H200 (2026-11-28) were cut at 65 to 270 s before the first phase ended (BENCHMARKS.md), so
it now runs its phases in the order of what matters most, prints each phase's figures as
it ends and writes its JSON after each (an update's figures after every repeat), so a call
cut short keeps what it measured: greedy parity (cheap), the fixed cost of a decoded token
by the default route, the update (1-3 below), TRL's update (6), then the compiled step and
the other routes (5) and the compiled step's parity. ``--budget-s`` starts no phase past the update's
once that many seconds have gone, so the check ends by itself inside a caller's limit.

Two agents on a randomly initialised model of Qwen2.5-1.5B-Instruct's shape (its config is
written below, so nothing is downloaded; random weights measure speed, never learning;
their logits are spread as a trained model's are, :data:`PEAKED_LOGIT_STD`), in
bfloat16, one LoRA adapter of rank 16 on every linear layer per agent, both adapters on one
base. Per agent ``prompts`` prompts x G samples of ``prompt_tokens`` tokens, ``new_tokens``
new tokens each (every completion exactly that long: ``min_new_tokens = max_new_tokens``).
It reports:

1. **Generation**: output tokens/s of both agents' requests decoded in one mixed-adapter
   batch (:meth:`agents.TrainableLM.sample_joint`, the learners' sampler), best of
   ``--repeats``.
2. **A MAGRPO update's model work**: the sampling above, then one pass of the learners'
   token loss (:func:`algorithms.text.losses.text_policy_loss`, REINFORCE with
   group-centred advantages, no KL, as MAGRPO) over every completion in micro-batches of
   ``micro_batch_size`` sequences with gradient accumulation, clipping and one Adam step
   per agent: the work of ``TextMAGRPO.optimize`` on one turn. Env and reward time (CPU,
   text) is not in it. Seconds per update, trained tokens/s and MFU (model FLOPs of the
   passes, :attr:`agents.TrainableLM.train_flops_per_token`, over the device's peak,
   :data:`agents.devices.PEAK_FLOPS`).
3. **Peak memory** (``torch.cuda.max_memory_allocated``).
4. **Greedy parity**: a 2-layer model of the same family with both agents' adapters,
   greedy, both agents in one batch: the device in float32 through its default route
   (stacked on CUDA) against the CPU in float32 through peft's own ``adapter_names``
   (token for token), and the device in bfloat16 against the same (the share of equal
   tokens and where the first differs: bfloat16 rounds, so random logits that lie close
   may swap).
5. **The fixed cost of a decoded token**: one row per agent, through each route of
   :mod:`agents.trainable_lm.mixed` (stacked, the default on CUDA; slices; peft's own),
   and (``--compiled``, the default, timed first) stacked through the compiled static
   step (:mod:`agents.trainable_lm.steps`, CUDA graphs on a GPU; the device's default
   scope, ``compile_scope`` in the record: the whole step on CUDA unless
   ``DELIBERATION_COMPILE_SCOPE=layers``), with its compile time,
   and the update's generation of item 1 through that step (compiled again for the
   batch's shape); the greedy parity of item 4 then also decodes the compiled way on the
   device (not with ``--smoke``, whose test covers the compiled way elsewhere). A phase
   that fails is reported and the next one runs. ``--decoding`` chooses the way of items
   1 and 2 (``dynamic`` by default; ``compiled`` also checks that way's greedy parity,
   and the first update's seconds, ``warmup_generation_s``, hold its compilation).
6. **TRL's GRPOTrainer** (``--trl``, the ``bench`` extra; on a GPU machine without a package
   registry, bring TRL's wheel along and install it with ``pip install --no-deps``): the
   same model shape, dtype, LoRA, prompts, G and tokens on the same device, one agent per
   run (TRL trains one model): the team's update is two of its updates, and the ratio is
   two TRL updates over one of ours.

    python benchmarks/gpu_check.py            # on a GPU: the full check
    python benchmarks/gpu_check.py --trl      # and TRL's update beside ours
    python benchmarks/gpu_check.py --shape qwen2.5-3b --prompts 4  # the MAGRPO paper's scale: memory
    python benchmarks/gpu_check.py --smoke    # a tiny model on the CPU in seconds (a test runs it)

Prints a table and writes ``benchmarks/results/gpu_check.json`` (:func:`results.write_results`;
not with ``--smoke``). Until it has run on a GPU, BENCHMARKS.md
says that the GPU figures are not yet measured.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
import tyro
from results import write_results

from agents.devices import (
    Decoding,
    dtype_name,
    peak_flops,
    peak_memory_gb,
    reset_peak_memory,
    resolve,
    resolve_routing,
    synchronize,
)
from agents.trainable_lm import TrainableLM
from agents.trainable_lm.steps import compile_scope
from algorithms.text.losses import text_policy_loss, token_weights

QWEN25_1_5B = {
    "vocab_size": 151936,
    "hidden_size": 1536,
    "intermediate_size": 8960,
    "num_hidden_layers": 28,
    "num_attention_heads": 12,
    "num_key_value_heads": 2,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
}
"""Qwen2.5-1.5B-Instruct's shape (its ``config.json`` on the hub)."""
QWEN25_3B = {**QWEN25_1_5B, "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
             "num_attention_heads": 16, "num_key_value_heads": 2}  # fmt: skip
"""Qwen2.5-3B-Instruct's shape, which Qwen2.5-Coder-3B-Instruct (the MAGRPO paper's agents) shares."""
SHAPES = {"qwen2.5-1.5b": QWEN25_1_5B, "qwen2.5-3b": QWEN25_3B}
SMOKE_SHAPE = {**QWEN25_1_5B, "vocab_size": 512, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
               "num_attention_heads": 4, "num_key_value_heads": 2}  # fmt: skip
"""A tiny model of the same family, for ``--smoke`` (and the parity check's small model)."""
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every linear layer of a Qwen2 block."""
AGENTS = ("agent_0", "agent_1")


@dataclass
class Args:
    shape: Literal["qwen2.5-1.5b", "qwen2.5-3b"] = "qwen2.5-1.5b"
    """The model's shape (random weights)."""
    prompts: int = 32
    """Prompts per agent."""
    group_size: int = 8
    """Samples per prompt (G)."""
    prompt_tokens: int = 512
    """Tokens per prompt."""
    new_tokens: int = 256
    """New tokens per completion (exactly)."""
    lora_rank: int = 16
    """LoRA rank of each agent's adapter."""
    micro_batch_size: int = 32
    """Sequences per forward and backward pass of the loss."""
    repeats: int = 2
    """Timed generations and updates (the best is reported; one warm-up before)."""
    latency_tokens: int = 128
    """New tokens of the latency check: one prompt per agent, so each step's time is the
    fixed cost of a decoded token (kernel launches and Python), not arithmetic."""
    parity_prompts: int = 8
    """Prompts of the greedy parity check (32 tokens each, 32 new tokens)."""
    device: str = "auto"
    """Where to run (``agents.devices.resolve``)."""
    dtype: str = "auto"
    """The weights' dtype (bfloat16 on CUDA)."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (less memory, about 1.3x the FLOPs)."""
    compiled: bool = True
    """Also time a decoded token through the compiled static step (module docstring, 5)."""
    decoding: Decoding = "dynamic"
    """How the generation of items 1 and 2 decodes (:mod:`agents.trainable_lm.steps`)."""
    trl: bool = False
    """Also time TRL's GRPOTrainer on the same shape and tokens."""
    budget_s: float = 0.0
    """Seconds after which no further phase starts past the update's (TRL's update, the
    other routes, the compiled step; 0: no limit): the check then prints its table and
    ends by itself, inside a caller's time limit. The figures measured so far are in the
    JSON after each phase in any case."""
    smoke: bool = False
    """A tiny model on the CPU with few, short prompts: runs in seconds."""


def smoke_args(args: Args) -> Args:
    """``args`` shrunk to a CPU run of seconds."""
    return dataclasses.replace(
        args, prompts=2, group_size=2, prompt_tokens=16, new_tokens=8, micro_batch_size=4, repeats=1,
        latency_tokens=8, parity_prompts=2, device="cpu", dtype="float32",
    )  # fmt: skip


def word_tokenizer(vocab_size: int):
    """A tokenizer whose every id is one word (``w17``), with a chat template that writes the
    messages' contents alone: a prompt of k words is exactly k tokens, and any id the model
    samples decodes."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, **{f"w{k}": k for k in range(2, vocab_size)}}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="<eos>"
    )
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    return tokenizer


PEAKED_LOGIT_STD = 8.0
"""The spread of the timed models' logits: random weights give a spread of about 0.8 over
Qwen2.5's 151,936 tokens, a nearly flat distribution from which the sampler draws every
token by sorting the whole vocabulary; at 8 a token's distribution has about 1.5 nats of
entropy and its 64 likeliest tokens hold 99% of it, as a trained model's mostly do, so the
sampler takes the path it takes for real models (:func:`agents.trainable_lm.sampling.draw_tokens`)."""


def random_model(
    shape: dict[str, Any],
    seed: int = 0,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
    logit_std: float | None = None,
):
    """A Qwen2 causal LM of ``shape`` with random weights, SDPA attention, made on ``device``
    in ``dtype`` (a 3B model initialised on the CPU in float32 takes a minute; on the GPU, a
    second). The same seed gives other weights on another device: the parity check makes
    its model on the CPU. ``logit_std``: the final norm's weight scaled so that the logits
    spread that much (:data:`PEAKED_LOGIT_STD`; the embedding is tied to the output
    layer, with entries of spread ``initializer_range``, and the normed hidden state has
    unit scale); None: as initialised."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        **shape, pad_token_id=0, eos_token_id=1, bos_token_id=None, attn_implementation="sdpa"
    )
    default = torch.get_default_dtype()
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(seed)
        torch.set_default_dtype(dtype)
        try:
            model = Qwen2ForCausalLM(config).eval()
        finally:
            torch.set_default_dtype(default)
    if logit_std is not None:
        with torch.no_grad():
            model.model.norm.weight.mul_(logit_std / (config.initializer_range * config.hidden_size**0.5))
    return model


def lora_config(rank: int):
    """LoRA of ``rank`` (alpha 2 x rank, no dropout) on every linear layer, for ours and TRL."""
    from agents.trainable_lm import default_lora

    return default_lora(rank, 2.0 * rank, LORA_TARGETS)


def build_team(args: Args, shape: dict[str, Any]) -> TrainableLM:
    """Both agents' adapters on one random base of ``shape``, on ``args.device``."""
    device, dtype = resolve(args.device, args.dtype)
    return TrainableLM(
        random_model(shape, device=device, dtype=dtype, logit_std=PEAKED_LOGIT_STD), word_tokenizer(shape["vocab_size"]),
        AGENTS, lora=lora_config(args.lora_rank),
        micro_batch_size=args.micro_batch_size, sample_batch_size=len(AGENTS) * args.prompts * args.group_size,
        device=args.device, dtype=args.dtype, gradient_checkpointing=args.gradient_checkpointing,
    )  # fmt: skip


def prompt_chats(count: int, tokens: int, vocab_size: int, seed: int) -> list[list[dict[str, str]]]:
    """``count`` single-message chats of ``tokens`` random words each."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, vocab_size, (count, tokens), generator=generator)
    return [[{"role": "user", "content": " ".join(f"w{k}" for k in row.tolist())}] for row in ids]


def requests(args: Args, vocab_size: int) -> dict[str, tuple[list, list[int]]]:
    """Per agent, its prompts each repeated G times, one seed per sample."""
    result = {}
    for index, agent in enumerate(AGENTS):
        chats = prompt_chats(args.prompts, args.prompt_tokens, vocab_size, seed=index)
        repeated = [chat for chat in chats for _ in range(args.group_size)]
        result[agent] = (repeated, [index * 10**6 + k for k in range(len(repeated))])
    return result


def generate(
    lm: TrainableLM, batch: dict[str, tuple[list, list[int]]], new_tokens: int
) -> tuple[dict, float]:
    """Both agents' completions in one mixed-adapter batch, and the seconds it took."""
    synchronize(lm.device)
    started = time.perf_counter()
    completions = lm.sample_joint(
        batch, max_new_tokens=new_tokens, min_new_tokens=new_tokens, temperature=1.0
    )
    synchronize(lm.device)
    return completions, time.perf_counter() - started


def train_pass(
    lm: TrainableLM,
    optimizers: dict[str, torch.optim.Optimizer],
    completions: dict,
    group_size: int,
) -> tuple[float, int]:
    r"""One MAGRPO pass per agent: :math:`A = R - \bar R_{\text{group}}` (random R: speed
    only), the token loss in micro-batches with gradient accumulation, clipping, one Adam
    step. Returns the seconds and the tokens trained."""
    synchronize(lm.device)
    started, trained = time.perf_counter(), 0
    generator = torch.Generator().manual_seed(0)
    for agent, rows in completions.items():
        rewards = torch.rand(len(rows) // group_size, group_size, generator=generator)
        advantages = (rewards - rewards.mean(dim=1, keepdim=True)).flatten()
        lengths = torch.tensor([len(c.token_ids) for c in rows])
        weights = token_weights(lengths, "token")
        optimizers[agent].zero_grad()
        for start in range(0, len(rows), lm.micro_batch_size):
            block = range(start, min(start + lm.micro_batch_size, len(rows)))
            logp, mask = lm.logprobs(
                agent, [rows[k].prompt_ids for k in block], [rows[k].token_ids for k in block]
            )
            loss, _ = text_policy_loss(
                logp, logp.detach(), None, advantages[list(block)].to(logp.device), mask,
                weights[list(block)].to(logp.device), clip_eps=0.2, kl_coef=0.0,
            )  # fmt: skip
            loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(agent), 1.0)
        optimizers[agent].step()
        trained += int(lengths.sum()) + sum(len(c.prompt_ids) for c in rows)
    synchronize(lm.device)
    return time.perf_counter() - started, trained


def decode_step_ms(lm: TrainableLM, latency: dict, args: Args) -> float:
    """Milliseconds per decoded token of ``latency`` (one row per agent) the way ``lm`` is
    set to decode, the best of ``args.repeats`` after one warm-up."""
    generate(lm, latency, args.latency_tokens)  # warm-up of this route
    seconds = min(generate(lm, latency, args.latency_tokens)[1] for _ in range(args.repeats))
    return 1000 * seconds / args.latency_tokens


def measure_ours(
    args: Args, shape: dict[str, Any], ours: dict[str, Any], keep: Callable[[str], None]
) -> tuple[TrainableLM, dict, dict]:
    """Our learners' update (module docstring, 1-3) into ``ours``: the fixed cost of a
    decoded token by the default route, then generation, loss pass, MFU and memory, calling
    ``keep(phase)`` after each phase. Returns the team, the update's requests and its
    one-row-per-agent requests for :func:`measure_ways`."""
    lm = build_team(args, shape)
    device_name = torch.cuda.get_device_name(lm.device) if lm.device.type == "cuda" else "cpu"
    ours.update(device=str(lm.device), device_name=device_name, dtype=dtype_name(lm.dtype))
    keep(f"model built on {lm.device} ({dtype_name(lm.dtype)})")
    batch = requests(args, shape["vocab_size"])
    latency = {agent: (chats[:1], seeds[:1]) for agent, (chats, seeds) in batch.items()}
    lm.routing = "stacked"  # agents.trainable_lm.mixed; "auto" is stacked on CUDA
    generate(lm, latency, args.latency_tokens)  # warm-up at this batch size
    ours["decode_step_ms_two_rows"] = {"stacked": decode_step_ms(lm, latency, args)}
    keep(f"one decoded token, two rows: {ours['decode_step_ms_two_rows']['stacked']:.1f} ms stacked")
    lm.routing, lm.decoding = "auto", args.decoding
    measure_update(lm, args, batch, ours, keep)
    return lm, batch, latency


def measure_ways(
    lm: TrainableLM,
    batch: dict,
    latency: dict,
    args: Args,
    ours: dict[str, Any],
    keep: Callable[[str], None],
    within_budget: Callable[[str], bool],
) -> None:
    """With ``args.compiled``, the compiled static step first (module docstring, 5): its
    compile time, its fixed cost of a decoded token and the update's generation through
    it; then the fixed cost by the other routes. Each phase only while
    ``within_budget(phase)``; a phase that fails is recorded under ``errors`` and the
    next one runs."""
    steps = ours["decode_step_ms_two_rows"]

    def compiled_step() -> None:
        ours["compile_scope"] = compile_scope(resolve(args.device, args.dtype)[0])  # the device's default
        ours["compile_s"] = generate(lm, latency, args.latency_tokens)[1]  # compiles this shape
        steps["stacked, compiled"] = decode_step_ms(lm, latency, args)
        keep(f"compiled: {ours['compile_s']:.0f} s to compile, then {steps['stacked, compiled']:.1f} ms per decoded token")

    def compiled_generation() -> None:
        ours["compile_s_update_batch"] = generate(lm, batch, args.new_tokens)[1]  # compiles the batch's shape
        seconds = min(generate(lm, batch, args.new_tokens)[1] for _ in range(args.repeats))
        ours["generated_tokens_per_s_compiled"] = ours["generated_tokens"] / seconds
        keep(f"the update's generation, compiled: {ours['generated_tokens_per_s_compiled']:,.0f} tokens/s "
             f"(first call {ours['compile_s_update_batch']:.0f} s, compiling)")  # fmt: skip

    phases: list[tuple[str, str, str, Callable[[], None]]] = []
    if args.compiled:
        phases += [("the compiled step", "stacked", "compiled", compiled_step),
                   ("the update's generation, compiled", "stacked", "compiled", compiled_generation)]  # fmt: skip
    for routing in ("slices", "peft"):

        def other_route(routing: str = routing) -> None:
            steps[routing] = decode_step_ms(lm, latency, args)
            keep(f"one decoded token, two rows: {steps[routing]:.1f} ms {routing}")

        phases.append((f"one decoded token, {routing}", routing, "dynamic", other_route))
    for phase, routing, decoding, measure in phases:
        if within_budget(phase):
            lm.routing, lm.decoding = routing, decoding
            try:
                measure()
            except Exception as error:  # noqa: BLE001 (the other phases' figures are still worth having)
                ours.setdefault("errors", {})[phase] = f"{type(error).__name__}: {error}"[:500]
                keep(f"{phase}: failed ({type(error).__name__})")
    lm.routing, lm.decoding = "auto", args.decoding


def measure_update(
    lm: TrainableLM, args: Args, batch: dict, ours: dict[str, Any], keep: Callable[[str], None]
) -> None:
    """The update's figures (module docstring, 1-3): one warm-up, then ``args.repeats``
    samplings and loss passes, each kept as it ends."""
    optimizers = {agent: torch.optim.Adam(lm.parameters(agent), lr=1e-5) for agent in AGENTS}
    completions, seconds = generate(lm, batch, args.new_tokens)  # warm-up: kernels, allocator (compiling)
    ours["warmup_generation_s"] = seconds
    keep(f"warm-up generation: {seconds:.1f} s")
    keep(f"warm-up loss pass: {train_pass(lm, optimizers, completions, args.group_size)[0]:.1f} s")
    reset_peak_memory(lm.device)
    ours["generated_tokens"] = len(AGENTS) * args.prompts * args.group_size * args.new_tokens
    ours["generation_s"], ours["training_s"] = [], []
    peak = peak_flops(lm.device, lm.dtype)
    for repeat in range(args.repeats):
        completions, seconds = generate(lm, batch, args.new_tokens)
        ours["generation_s"].append(seconds)
        seconds, trained = train_pass(lm, optimizers, completions, args.group_size)
        ours["training_s"].append(seconds)
        best_generation, best_training = min(ours["generation_s"]), min(ours["training_s"])
        ours.update(
            generated_tokens_per_s=ours["generated_tokens"] / best_generation,
            trained_tokens=trained,
            trained_tokens_per_s=trained / best_training,
            update_s=best_generation + best_training,
            mfu=lm.train_flops_per_token * trained / best_training / peak if peak else None,
            peak_memory_gb=peak_memory_gb(lm.device),
        )
        mfu = "n/a" if ours["mfu"] is None else f"{ours['mfu']:.1%}"
        keep(
            f"update {repeat + 1} of {args.repeats}: generation {ours['generation_s'][-1]:.2f} s "
            f"({ours['generated_tokens'] / ours['generation_s'][-1]:,.0f} tokens/s), loss pass {seconds:.2f} s "
            f"({trained / seconds:,.0f} tokens/s); best so far: update {ours['update_s']:.2f} s, MFU {mfu}, "
            f"peak memory {ours['peak_memory_gb']:.1f} GB"
        )


def greedy_parity(args: Args, decoding: Decoding = "dynamic") -> dict[str, Any]:
    """Greedy completions of a small model with two agents' adapters (moved apart: LoRA's B
    starts at 0), both agents decoded in one batch: the device (float32, and ``args.dtype``)
    decoding the ``decoding`` way through the device's default route
    (:func:`agents.devices.resolve_routing`: stacked on CUDA) against the CPU in float32
    through peft's own ``adapter_names``, dynamically (module docstring, 4). Keyed by the
    device's dtype (and the way, when not dynamic)."""
    chats = prompt_chats(args.parity_prompts, 32, SMOKE_SHAPE["vocab_size"], seed=7)
    seeds = list(range(len(chats)))

    def greedy(device: str, dtype: str, routing: str, decoding: str = "dynamic") -> list[tuple[int, ...]]:
        lm = TrainableLM(random_model(SMOKE_SHAPE), word_tokenizer(SMOKE_SHAPE["vocab_size"]), AGENTS,
                         device=device, dtype=dtype, routing=routing, decoding=decoding)  # fmt: skip
        generator = torch.Generator().manual_seed(3)  # the same numbers on any device
        with torch.no_grad():
            for scale, agent in enumerate(AGENTS, start=1):
                for parameter in lm.parameters(agent):
                    noise = torch.randn(parameter.shape, generator=generator)
                    parameter.add_((0.3 * scale * noise).to(parameter.device, parameter.dtype))
        joint = lm.sample_joint({agent: (chats, seeds) for agent in AGENTS}, max_new_tokens=32, temperature=0.0)
        return [c.token_ids for agent in AGENTS for c in joint[agent]]

    reference = greedy("cpu", "float32", "peft")
    device, dtype = resolve(args.device, args.dtype)
    result = {}
    for name in dict.fromkeys(("float32", dtype_name(dtype))):
        tokens = greedy(str(device), name, "auto", decoding)
        equal = sum(
            a == b for ref, ours in zip(reference, tokens, strict=True) for a, b in zip(ref, ours)
        )
        total = sum(len(ref) for ref in reference)
        first = [
            next((k for k, (a, b) in enumerate(zip(r, o)) if a != b), None)
            for r, o in zip(reference, tokens)
        ]
        result[name if decoding == "dynamic" else f"{name}, {decoding}"] = {
            "identical": tokens == reference,
            "equal_token_share": equal / total,
            "first_difference": first,
            "routing": resolve_routing("auto", device, decoding),
        }
    return result


def measure_trl(args: Args, shape: dict[str, Any]) -> dict[str, Any]:
    """Seconds per update of TRL's GRPOTrainer, one agent, on the same shape, dtype, LoRA,
    prompts, G and tokens (module docstring, 5)."""
    try:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as error:
        raise ImportError(
            "--trl needs TRL: pip install 'deliberation-env[bench]' (or its wheel, --no-deps)"
        ) from error
    from transformers import TrainerCallback

    device, dtype = resolve(args.device, args.dtype)
    model = random_model(shape, device=device, dtype=dtype, logit_std=PEAKED_LOGIT_STD)
    completions = args.prompts * args.group_size
    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, *_, **__):
            synchronize(device)
            self.started = time.perf_counter()

        def on_step_end(self, *_, **__):
            synchronize(device)
            times.append(time.perf_counter() - self.started)

    chats = prompt_chats(args.prompts, args.prompt_tokens, shape["vocab_size"], seed=0)
    rewards = torch.Generator().manual_seed(0)  # random rewards, as ours: speed only
    with tempfile.TemporaryDirectory() as output_dir:
        config = GRPOConfig(
            output_dir=output_dir, use_cpu=device.type == "cpu", bf16=dtype == torch.bfloat16,
            fp16=dtype == torch.float16, gradient_checkpointing=args.gradient_checkpointing, use_vllm=False,
            per_device_train_batch_size=min(args.micro_batch_size, completions),
            gradient_accumulation_steps=max(1, completions // args.micro_batch_size),
            num_generations=args.group_size, num_iterations=1, beta=0.0,
            max_completion_length=args.new_tokens, generation_kwargs={"min_new_tokens": args.new_tokens},
            temperature=1.0, learning_rate=1e-5, max_grad_norm=1.0, loss_type="dapo",
            max_steps=1 + args.repeats, logging_steps=10**6, report_to="none", save_strategy="no",
            disable_tqdm=True, dataloader_num_workers=0, seed=0,
        )  # fmt: skip
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=lambda completions, **_: torch.rand(
                len(completions), generator=rewards
            ).tolist(),
            args=config,
            train_dataset=Dataset.from_list([{"prompt": chat} for chat in chats]),
            processing_class=word_tokenizer(shape["vocab_size"]),
            peft_config=lora_config(args.lora_rank),
            callbacks=[Clock()],
        )
        trainer.train()
    return {"update_s_one_agent": min(times[1:] or times), "each": times, "trl": _version("trl")}


def _version(package: str) -> str:
    import importlib.metadata

    return importlib.metadata.version(package)


def table(record: dict[str, Any]) -> str:
    """The check's figures as a markdown table."""
    ours = record["ours"]
    rows = [
        ("device", f"{ours['device_name']} ({ours['dtype']})"),
        ("generation, both agents, output tokens/s", f"{ours['generated_tokens_per_s']:,.0f}"),
        ("MAGRPO update (sampling + loss pass + Adam), s", f"{ours['update_s']:.2f}"),
        ("training tokens/s", f"{ours['trained_tokens_per_s']:,.0f}"),
        (
            "MFU of the loss pass",
            "n/a (no peak FLOPS for this device)" if ours["mfu"] is None else f"{ours['mfu']:.1%}",
        ),
        ("peak memory, GB", f"{ours['peak_memory_gb']:.1f}"),
        *((("compiling the decoding step (first call), s", f"{ours['compile_s']:.1f}"),) if "compile_s" in ours else ()),
        *(
            (("generation, both agents, compiled step, output tokens/s", f"{ours['generated_tokens_per_s_compiled']:,.0f}"),)
            if "generated_tokens_per_s_compiled" in ours
            else ()
        ),
        *(
            (f"one decoded token, one row per agent (fixed cost per step), {route}, ms", f"{ms:.1f}")
            for route, ms in ours["decode_step_ms_two_rows"].items()
        ),
    ]
    for dtype, parity in record["parity"].items():
        rows.append(
            (
                f"greedy parity vs CPU float32 ({dtype})",
                (f"{parity['equal_token_share']:.1%} equal tokens, identical: {parity['identical']} "
                f"({parity['routing']} on the device, peft's route on the CPU)"),
            )
        )
    for phase, error in record["ours"].get("errors", {}).items():
        rows.append((phase, f"failed: {error}"))
    if record.get("skipped"):
        rows.append(("skipped (past --budget-s)", "; ".join(record["skipped"])))
    if "trl_error" in record:
        rows.append(("TRL GRPOTrainer", f"failed: {record['trl_error']}"))
    if "trl" in record:
        trl = record["trl"]
        rows.append(("TRL GRPOTrainer update, one agent, s", f"{trl['update_s_one_agent']:.2f}"))
        rows.append(
            (
                "ours / TRL (two TRL updates per team update)",
                f"{2 * trl['update_s_one_agent'] / ours['update_s']:.2f}x",
            )
        )
    return "\n".join(
        ["| figure | value |", "|---|---:|", *(f"| {name} | {value} |" for name, value in rows)]
    )


def checked(args: Args) -> Args:
    """``args`` as the check runs them: ``--smoke`` shrunk to the CPU (refusing another device
    or dtype given with it), otherwise a device and dtype this machine has, CUDA unless
    ``--device cpu`` asks for the CPU (a 1.5B model there takes long).

    Raises:
        SystemExit: With one line saying what to give instead.
    """
    if args.smoke:
        if (args.device, args.dtype) != ("auto", "auto"):
            raise SystemExit("gpu_check: --smoke runs a tiny model on the CPU in float32: leave --device and --dtype out")
        return smoke_args(args)
    try:
        device, _ = resolve(args.device, args.dtype)
    except ValueError as error:
        raise SystemExit(f"gpu_check: {error}") from None
    if device.type != "cuda" and args.device != "cpu":
        raise SystemExit(
            "gpu_check: this machine has no CUDA device: --smoke checks the script on the CPU in seconds, "
            "--device cpu measures this CPU (slowly; its figures go to gpu_check_cpu.json)"
        )
    return args


def results_name(args: Args) -> str:
    """The JSON's name: ``gpu_check``, with what differs from the issue's setting after it
    (another shape, decoding way or micro-batch; the CPU), so one setting's run does not
    overwrite another's.

    >>> results_name(Args(shape="qwen2.5-3b", decoding="compiled"))
    'gpu_check_qwen2.5-3b_compiled'
    """
    parts = ["gpu_check"]
    parts += [args.shape] if args.shape != Args.shape else []
    parts += [args.decoding] if args.decoding != Args.decoding else []
    parts += [f"micro{args.micro_batch_size}"] if args.micro_batch_size != Args.micro_batch_size else []
    parts += ["cpu"] if args.device == "cpu" and not args.smoke else []
    return "_".join(parts)


def main(args: Args) -> None:
    shape = SMOKE_SHAPE if args.smoke else SHAPES[args.shape]
    args = checked(args)
    started = time.perf_counter()
    record: dict[str, Any] = {"args": dataclasses.asdict(args), "shape": shape}
    name = results_name(args)

    def done(phase: str) -> None:  # each phase's figures are kept even if a later one is cut short
        record["seconds"] = time.perf_counter() - started
        print(f"[{record['seconds']:.0f} s] {phase}", flush=True)
        if not args.smoke:  # a smoke run's figures measure nothing worth keeping
            write_results(name, record)

    def within_budget(phase: str) -> bool:  # the phases past the update's start only within --budget-s
        if not args.budget_s or time.perf_counter() - started < args.budget_s:
            return True
        record.setdefault("skipped", []).append(phase)
        print(f"[{time.perf_counter() - started:.0f} s] skipped (past --budget-s {args.budget_s:.0f}): {phase}", flush=True)
        return False

    record["parity"] = greedy_parity(args)  # cheap: a 2-layer model
    done("greedy parity measured")
    record["ours"] = {}
    try:
        lm, batch, latency = measure_ours(args, shape, record["ours"], done)
    except Exception as error:  # the JSON says why, then the traceback ends the check
        record["ours"].setdefault("errors", {})["update"] = f"{type(error).__name__}: {error}"[:500]
        done(f"the update failed ({type(error).__name__})")
        raise
    if args.trl and within_budget("TRL's update"):
        try:
            record["trl"] = measure_trl(args, shape)
        except Exception as error:  # noqa: BLE001 (a figure of ours is still worth keeping)
            record["trl_error"] = f"{type(error).__name__}: {error}"[:500]
        done("TRL's update measured")
    measure_ways(lm, batch, latency, args, record["ours"], done, within_budget)
    if (args.compiled or args.decoding == "compiled") and not args.smoke and within_budget("greedy parity, compiled"):
        try:
            record["parity"].update(greedy_parity(args, "compiled"))  # the smoke test's is elsewhere
        except Exception as error:  # noqa: BLE001 (the figures before it are kept and printed)
            record["ours"].setdefault("errors", {})["greedy parity, compiled"] = f"{type(error).__name__}: {error}"[:500]
        done("greedy parity of the compiled way measured")
    print(table(record))
    print(f"(the whole check: {record['seconds']:.0f} s; generation each repeat: "
          f"{', '.join(f'{s:.2f}' for s in record['ours']['generation_s'])} s, median {statistics.median(record['ours']['generation_s']):.2f})")  # fmt: skip


if __name__ == "__main__":
    main(tyro.cli(Args))
