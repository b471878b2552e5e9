"""The class :class:`TrainableLM`: its construction and loading, the agents' seats (one of
the layouts of :mod:`agents.trainable_lm`), device and dtype, the weights each agent trains,
and the meter; its sampling (:mod:`~agents.trainable_lm.sampling`), scoring
(:mod:`~agents.trainable_lm.scoring`) and weights as data (:mod:`~agents.trainable_lm.weights`)
are its parts, one module each.

**Device and precision**: ``device`` and ``dtype`` name where the model runs and its
weights' dtype (:func:`agents.devices.resolve`: ``auto`` is CUDA with bfloat16 where the
machine has CUDA, else the CPU with float32); every tensor the policy makes follows the
model's device, attention runs through PyTorch's SDPA (flash kernels where the GPU has
them), and LoRA adapters stay float32 on a half-precision base (peft's
``autocast_adapter_dtype``).

**Meter** (:meth:`TrainableLM.read_meter`): the tokens decoded and the seconds it took, and
the tokens and model FLOPs of the differentiable passes, for the learners' ``perf/*``
metrics.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from agents.chat_templates import check_chat_template_kwargs
from agents.dequantized_gguf import dequantized
from agents.devices import CompileScope, Decoding, Routing, check_decoding, resolve
from agents.hub import cache_only, is_path, no_hub_model
from agents.trainable_lm.extra import MISSING_EXTRA, require_train_extra
from agents.trainable_lm.head import cast_head_to_float32
from agents.trainable_lm.sampling import Sampling
from agents.trainable_lm.scoring import Scoring
from agents.trainable_lm.steps import check_compilable
from agents.trainable_lm.weights import Weights

if MISSING_EXTRA is None:
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        PreTrainedModel,
        PreTrainedTokenizerBase,
    )

    from agents.transformers_backend import _eos_ids

Finetune = Literal["lora", "full"]
DEFAULT_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
"""The attention projections of Llama-style models (SmolLM2 included)."""
ATTENTION = "sdpa"
"""The attention implementation of every model the policy loads: PyTorch's scaled dot-product
attention (flash or memory-efficient kernels where the GPU has them)."""


@dataclass
class _Seat:
    """The model one agent acts with: its module, its adapter (LoRA) and its reference."""

    model: torch.nn.Module
    adapter: str | None
    reference: torch.nn.Module | None


@dataclass
class Meter:
    r"""What a policy decoded and trained on since its meter was last read
    (:meth:`TrainableLM.read_meter`): what the learners' ``perf/*`` metrics are made of.

    Attributes:
        generated_tokens: Tokens sampled, every request's up to its stop.
        generation_seconds: Seconds spent decoding them, prefill included, but for
            ``compile_seconds``.
        compile_seconds: Seconds of compiled decoding steps that built their shape (its
            first :data:`~agents.trainable_lm.steps.WARMUP_CALLS` calls in this process:
            compilation and CUDA-graph capture), timed apart so that a first update's
            decoding speed is the speed of decoding (their one or two tokens per row stay
            in ``generated_tokens``: a slight overstatement on a short first decode).
        trained_tokens: Tokens run through differentiable passes of :meth:`TrainableLM.logprobs`:
            completions and their prompts (a prompt shared by a group's completions once,
            or once per completion with gradient checkpointing).
        trained_flops: Model FLOPs of the forward and backward passes over them:
            ``trained_tokens`` x :attr:`TrainableLM.train_flops_per_token`.
        entropies: Per differentiable pass, the policy's entropy at each position
            :math:`H_t = -\sum_v \pi_t(v) \log \pi_t(v)` (filled by its backward pass, NaN
            until then; also at a position whose logits hold -inf, left out) and where a
            completion token is, both on the policy's device (summed when read: no host
            sync per pass).
    """

    generated_tokens: int = 0
    generation_seconds: float = 0.0
    trained_tokens: int = 0
    trained_flops: float = 0.0
    compile_seconds: float = 0.0
    entropies: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list, compare=False)

    def entropy_total(self) -> tuple[float, int]:
        """The entropies' sum (nats) over the completion tokens of the passes whose backward
        pass ran, and the number of those tokens."""
        total, tokens = 0.0, 0
        for entropies, present in self.entropies:
            counted = present.bool() & ~entropies.isnan()
            total += float(entropies[counted].sum())
            tokens += int(counted.sum())
        return total, tokens

    @property
    def mean_entropy(self) -> float | None:
        """The mean of :meth:`entropy_total`'s tokens, None without any."""
        total, tokens = self.entropy_total()
        return total / tokens if tokens else None

    def __add__(self, other: Meter) -> Meter:
        """Both meters' counts together."""
        return Meter(
            self.generated_tokens + other.generated_tokens,
            self.generation_seconds + other.generation_seconds,
            self.trained_tokens + other.trained_tokens,
            self.trained_flops + other.trained_flops,
            self.compile_seconds + other.compile_seconds,
            self.entropies + other.entropies,
        )


def default_lora(
    rank: int = 8, alpha: float = 16.0, targets: Sequence[str] = DEFAULT_LORA_TARGETS
) -> LoraConfig:
    """A LoRA config for causal LMs: ``rank``, ``alpha``, no dropout (deterministic passes);
    ``targets``: module names, or ``("all-linear",)``, peft's every linear layer but the
    output layer."""
    require_train_extra()
    return LoraConfig(
        r=rank,
        lora_alpha=alpha,
        target_modules=ALL_LINEAR if tuple(targets) == (ALL_LINEAR,) else list(targets),
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
    )


class TrainableLM(Sampling, Scoring, Weights):
    """A causal LM as the trainable policy of some agents (see :mod:`agents.trainable_lm`).

    Args:
        model: A ``transformers`` causal LM (its weights become the base; with
            ``finetune="lora"`` it is wrapped by peft in place).
        tokenizer: Its tokenizer, with a chat template.
        agents: The agents this policy plays, e.g. ``["agent_0", "agent_1"]``.
        finetune: ``"lora"`` (an adapter per agent) or ``"full"`` (all weights).
        separate: One model per agent (deep copies of ``model``) instead of one shared.
        lora: The adapters' :class:`peft.LoraConfig` (default :func:`default_lora`).
        micro_batch_size: Most sequences per forward pass of :meth:`logprobs`.
        sample_batch_size: Most requests decoded together by :meth:`sample` and
            :meth:`sample_joint` (no gradients, so it may be larger); None: ``micro_batch_size``.
        seed: Seeds the adapters' initialization (the global torch RNG is left as it was).
        device: Where the model runs (:func:`agents.devices.resolve`; ``model`` is moved there).
        dtype: The weights' dtype (``model`` is cast to it; adapters stay float32).
        gradient_checkpointing: Recompute each layer's activations in the backward pass of
            :meth:`logprobs` instead of keeping them (see :mod:`agents.trainable_lm.scoring`).
        segmented_scoring: Run a micro-batch's completions in segments of positions, a row
            leaving once its completion has ended (:func:`agents.trainable_lm.scoring.segments`):
            the same log-probabilities up to rounding, fewer positions run where lengths
            differ. False: one pass padded to the longest (the scoring of 0.2.0 and before).
        base: Where the base model can be loaded from again, a Hugging Face id or a local
            folder (what :meth:`save_adapters` names as the adapters' base); None: nowhere
            (a model built in memory), so :meth:`save_adapters` writes it once
            (:func:`shared_base`) and sets it to that folder. :meth:`from_pretrained` sets it
            (for a GGUF file, to its dequantized folder, :func:`agents.dequantized_gguf.dequantized`).
        routing: How :meth:`sample_joint`'s mixed-adapter batches reach each row's adapter
            (:func:`agents.trainable_lm.mixed.routed_adapters`): ``auto`` (stacked on CUDA,
            slices elsewhere, and stacked under compiled decoding), ``stacked``, ``slices``
            or ``peft``.
        decoding: How a decoding batch steps (:mod:`agents.trainable_lm.steps`):
            ``dynamic`` (a growing cache, finished rows leave; the default), ``static``
            (a static cache of bucketed shape) or ``compiled`` (the static step through
            ``torch.compile``, CUDA graphs on a GPU: each shape compiles once, up to
            minutes, then a decoded token costs the least Python). Each gives the same
            completions up to floating-point noise.
        compile_scope: What ``compiled`` decoding compiles
            (:func:`agents.trainable_lm.steps.compile_scope`): ``layers`` (one decoder
            layer whose code serves all: compiles in a fraction of the time), ``step`` (the
            whole step, one CUDA graph on a GPU), or ``auto`` (``step`` on CUDA, ``layers``
            elsewhere, unless the environment variable ``DELIBERATION_COMPILE_SCOPE`` says).
        cast_lm_head_to_fp32: On a 16-bit model (``dtype`` bfloat16 or float16), compute
            the output layer in float32 (:mod:`agents.trainable_lm.head`, TRL's name): the
            logits of the loss's log-probabilities and of the sampler's draw come out in
            float32, not rounded to the model's dtype; its weight is upcast where it is
            used, not cast (a tied input embedding stays as it was). No change on a
            float32 model.
        keep_reference: Under ``finetune="full"``, keep a frozen copy of the base on the
            device as the reference policy (``logprobs(reference=True)``: a KL term's);
            False keeps it on the CPU instead, for the base's digest alone (a whole model
            less on the device; the text learners keep it on the device only where
            ``kl_coef`` > 0). With LoRA the reference is the base without adapters.
        chat_template_kwargs: Variables the chat template reads besides the messages (TRL's
            ``chat_template_kwargs``: ``{"enable_thinking": False}`` for Qwen3), passed to
            ``apply_chat_template`` wherever a prompt is rendered (:meth:`encode`: the
            sampled prompt, which the loss trains on as sampled).

    Attributes:
        device: The torch device the model runs on.
        dtype: The base weights' torch dtype.
        base: Where the base can be loaded from (the ``base`` argument).
        train_flops_per_token: Model FLOPs of a forward and backward pass per token, k N:
            N the weights a token passes through (the matrices: every weight but the input
            embedding, the output projection counted even when tied to it), k = 6 for full
            fine-tuning (2N forward, 2N for the activations' gradients, 2N for the weights'),
            k = 4 with LoRA (the frozen base's weight gradients are not computed; the
            adapters' own are a rounding error). The attention's quadratic term (about
            ``6 L d T`` per token for T tokens of context: a few percent at 768 tokens of a
            1.5B model) and recomputation under gradient checkpointing are not counted, as
            model FLOPs utilization does not count them.

    Raises:
        ValueError: On no agents, repeated agents, an unknown ``finetune``, a tokenizer
            without a chat template, a batch size < 1, an unknown ``routing`` or
            ``decoding`` (or ``compiled`` with ``peft``'s routing, or a ``compile_scope``
            without ``compiled``), or a device this
            machine lacks.
        RuntimeError: On ``compiled`` decoding on a CPU without a C++ compiler.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        agents: Sequence[str],
        *,
        finetune: Finetune = "lora",
        separate: bool = False,
        lora: LoraConfig | None = None,
        micro_batch_size: int = 16,
        sample_batch_size: int | None = None,
        seed: int = 0,
        device: str = "auto",
        dtype: str = "auto",
        gradient_checkpointing: bool = False,
        segmented_scoring: bool = True,
        base: str | None = None,
        routing: Routing = "auto",
        decoding: Decoding = "dynamic",
        compile_scope: CompileScope = "auto",
        keep_reference: bool = True,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        cast_lm_head_to_fp32: bool = False,
    ) -> None:
        require_train_extra()
        agents = list(agents)
        if not agents or len(set(agents)) != len(agents):
            raise ValueError(f"agents must be distinct agent names, at least one, got {agents!r}")
        if finetune not in ("lora", "full"):
            raise ValueError(f"finetune must be 'lora' or 'full', got {finetune!r}")
        if not tokenizer.chat_template:
            raise ValueError(
                "the tokenizer has no chat template: set tokenizer.chat_template (a Jinja template)"
            )
        if micro_batch_size < 1 or (sample_batch_size is not None and sample_batch_size < 1):
            raise ValueError(
                f"micro_batch_size and sample_batch_size must be >= 1, got {micro_batch_size}, {sample_batch_size}"
            )
        self.device, self.dtype = resolve(device, dtype)
        self.tokenizer, self.base = tokenizer, base
        self.chat_template_kwargs = check_chat_template_kwargs(chat_template_kwargs or {})
        self.finetune, self.separate, self.micro_batch_size = finetune, separate, micro_batch_size
        self.keep_reference = keep_reference
        self.sample_batch_size = sample_batch_size or micro_batch_size
        self.gradient_checkpointing, self.segmented_scoring = gradient_checkpointing, segmented_scoring
        check_decoding(decoding, routing, compile_scope)
        self.routing, self.decoding, self.compile_scope = routing, decoding, compile_scope
        self._static_caches: dict[tuple[int, int, int], Any] = {}  # agents.trainable_lm.steps
        if decoding == "compiled":
            check_compilable(self.device)
        self._pad_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        self._stop_ids = set(_eos_ids(model.generation_config.eos_token_id, tokenizer.eos_token_id))
        self._meter = Meter()
        self._offloaded = None  # full fine-tuning without a KL: the frozen base, on the CPU (its digest names it)
        if finetune == "full" and not keep_reference:
            self._offloaded = copy.deepcopy(model).to(device="cpu", dtype=self.dtype).eval().requires_grad_(False)
        model.to(device=self.device, dtype=self.dtype).eval().requires_grad_(False)
        self.cast_lm_head_to_fp32 = cast_lm_head_to_fp32 and cast_head_to_float32(model)  # before adapters and copies
        if gradient_checkpointing:
            model.activation_checkpointing_enable({"use_reentrant": False})
            model.enable_input_require_grads()  # what peft needs of a frozen base under checkpointing
        self.train_flops_per_token = (4 if finetune == "lora" else 6) * _matmul_parameters(model)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.seats = self._seats(model, agents, lora or default_lora())

    def _seats(
        self, model: PreTrainedModel, agents: list[str], lora: LoraConfig
    ) -> dict[str, _Seat]:
        if self.finetune == "full":
            reference = copy.deepcopy(model) if self._offloaded is None else self._offloaded  # on the CPU without a KL
            if self.separate:
                return {
                    agent: _Seat(copy.deepcopy(model).requires_grad_(True), None, reference)
                    for agent in agents
                }
            return {agent: _Seat(model.requires_grad_(True), None, reference) for agent in agents}
        if self.separate:
            return {
                agent: _Seat(_with_adapters(copy.deepcopy(model), [agent], lora), agent, None)
                for agent in agents
            }
        wrapped = _with_adapters(model, agents, lora)
        return {agent: _Seat(wrapped, agent, None) for agent in agents}

    @classmethod
    def from_pretrained(
        cls,
        name: str | Path,
        agents: Sequence[str],
        *,
        device: str = "auto",
        dtype: str = "auto",
        **kwargs: Any,
    ) -> TrainableLM:
        """Load a causal LM with a chat template: a local model folder, a ``.gguf`` file, or a
        Hugging Face model id (``Qwen/Qwen2.5-1.5B-Instruct``).

        A path that exists is read from disk. Any other name that is no path (not absolute,
        not starting with ``.`` or ``~``, no ``.gguf``) is a hub id: loaded from the
        Hugging Face cache, downloaded into it where the machine reaches the hub and
        ``HF_HUB_OFFLINE`` is not set (with it set, or where the hub has no address, only
        the cache is read: :func:`agents.hub.cache_only`).

        Args:
            name: A model folder, a GGUF file (transformers dequantizes it once:
                :func:`agents.dequantized_gguf.dequantized`), or a hub id.
            agents: The agents the policy plays.
            device: Where the model runs (:func:`agents.devices.resolve`).
            dtype: The weights' dtype.
            **kwargs: :class:`TrainableLM`'s other keyword arguments.

        Raises:
            FileNotFoundError: If ``name`` is a path that does not exist, a folder without
                a model's ``config.json``, or an id the hub (or, offline, its cache) does
                not have, saying which.
            ValueError: On a device this machine lacks.
        """
        require_train_extra()
        torch_dtype = resolve(device, dtype)[1]
        path = Path(name).expanduser()
        if path.is_dir() and not any((path / file).is_file() for file in ("config.json", "adapter_config.json")):
            raise FileNotFoundError(
                f"TrainableLM: {path} holds no model (no config.json): give a folder that "
                "save_pretrained wrote, a .gguf file, or a hub id ORG/NAME"
            )
        if path.suffix == ".gguf" and path.is_file():  # dequantized once per machine: that folder is the base
            source = base = str(dequantized(path))
        elif path.exists():
            source, base = str(path), str(path.resolve())
        elif is_path(str(name)):
            raise FileNotFoundError(
                f"TrainableLM: no local model at {path} (a path is never looked up on the Hugging Face hub; "
                "a hub id is written ORG/NAME)"
            )
        else:
            source, base = str(name), str(name)
        because = None if path.exists() else cache_only()  # read when called, so a test or a script may set it
        offline = {"local_files_only": because is not None}

        def unreadable(lacks: str, error: Exception) -> FileNotFoundError:  # transformers' own words name neither
            if path.exists():
                return FileNotFoundError(f"TrainableLM: {path} {lacks}: {error}")
            return no_hub_model("TrainableLM", name, because, error)

        try:
            tokenizer = AutoTokenizer.from_pretrained(source, **offline)
        except (OSError, ValueError) as error:
            raise unreadable(
                "has no tokenizer transformers can read (tokenizer.json, or tokenizer_config.json with its "
                "vocabulary; save the tokenizer beside the model)",
                error,
            ) from error
        try:
            model = AutoModelForCausalLM.from_pretrained(
                source,
                dtype=torch_dtype,
                attn_implementation=ATTENTION,
                **offline,
            )
        except OSError as error:
            raise unreadable(
                "holds no weights transformers can read (model.safetensors, pytorch_model.bin, or their shards and index)",
                error,
            ) from error
        return cls(model, tokenizer, agents, device=device, dtype=dtype, base=base, **kwargs)

    @property
    def agents(self) -> list[str]:
        """The agents this policy plays."""
        return list(self.seats)

    def parameters(self, agent: str) -> list[torch.nn.Parameter]:
        """The weights that training ``agent`` changes: its LoRA adapter, or its model."""
        seat = self._seat(agent)
        if seat.adapter is None:
            return list(seat.model.parameters())
        return [p for name, p in seat.model.named_parameters() if _adapters_weight(name, seat.adapter)]

    def tokenizer_of(self, agent: str) -> PreTrainedTokenizerBase:
        """The tokenizer ``agent`` reads and writes with (one for every agent of this policy)."""
        self._seat(agent)
        return self.tokenizer

    def _seat(self, agent: str) -> _Seat:
        if agent not in self.seats:
            raise KeyError(f"TrainableLM plays {self.agents}, not {agent!r}")
        return self.seats[agent]

    @contextlib.contextmanager
    def _acting(self, agent: str, reference: bool = False) -> Iterator[torch.nn.Module]:
        """The module to run as ``agent`` (its adapter active), or as the reference policy."""
        seat = self._seat(agent)
        if seat.adapter is None:
            if reference and seat.reference is self._offloaded:
                raise ValueError(
                    "this TrainableLM keeps no reference model (finetune='full' with keep_reference=False, as a "
                    "learner without a KL term builds it): build it with keep_reference=True to score the reference"
                )
            yield seat.reference if reference else seat.model
            return
        seat.model.set_adapter(seat.adapter)
        for parameter in self.parameters(agent):
            parameter.requires_grad_(True)  # set_adapter froze the other adapters; this one trains
        if reference:
            with seat.model.disable_adapter():
                yield seat.model
        else:
            yield seat.model

    def read_meter(self) -> Meter:
        """What this policy decoded and trained on since the last call (:class:`Meter`);
        the meter starts again from zero."""
        meter, self._meter = self._meter, Meter()
        return meter

    def __repr__(self) -> str:
        layout = "separate" if self.separate else "shared"
        return f"TrainableLM(agents={self.agents}, finetune={self.finetune!r}, {layout})"


def _matmul_parameters(model: PreTrainedModel) -> int:
    """The weights a token passes through in matrix products: all but the input embedding
    (a lookup), the output projection counted even when it shares the embedding's matrix."""
    total = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    return total - model.get_input_embeddings().weight.numel()


def _adapters_weight(name: str, adapter: str) -> bool:
    """Whether the parameter ``name`` is a weight of LoRA adapter ``adapter`` (``...q_proj.lora_A.agent_0.weight``;
    an embedding's ``...embed_tokens.lora_embedding_A.agent_0``)."""
    parts = name.split(".")
    return adapter in parts and any(part.startswith("lora_") for part in parts)


ALL_LINEAR = "all-linear"
"""peft's name for every linear layer of a model but its output layer (``--lora-targets all-linear``)."""


def check_lora_targets(model: torch.nn.Module, targets: Any) -> None:
    """Refuse a LoRA target name (a list's; a string is peft's pattern, as ``all-linear``)
    that names no module of ``model`` (peft drops it in silence where another name matches).

    Raises:
        ValueError: Naming the targets that match nothing and the model's linear layers.
    """
    if isinstance(targets, str) or not targets:
        return
    names = {name.rpartition(".")[2] for name, _ in model.named_modules()}
    missing = [target for target in targets if target not in names]
    if missing:
        linear = sorted({name.rpartition(".")[2] for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)})
        raise ValueError(
            f"LoRA target {', '.join(map(repr, missing))} names no module of the model (--lora-targets): "
            f"its linear layers are {', '.join(linear)}, or give all-linear"
        )


def _with_adapters(model: PreTrainedModel, adapters: list[str], lora: LoraConfig) -> PeftModel:
    """``model`` wrapped by peft with one (freshly initialized) LoRA adapter per name.

    Raises:
        ValueError: On a target that names no module (:func:`check_lora_targets`), or
            targets that give an adapter no trainable weight.
    """
    check_lora_targets(model, lora.target_modules)
    with (
        warnings.catch_warnings()
    ):  # peft reads transformers 5's deprecated name; its replacement is no option here
        warnings.filterwarnings(
            "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
        )
        wrapped = get_peft_model(model, copy.deepcopy(lora), adapter_name=adapters[0])
        for name in adapters[1:]:
            wrapped.add_adapter(name, copy.deepcopy(lora))
    if not any(_adapters_weight(name, adapters[0]) for name, _ in wrapped.named_parameters()):
        raise ValueError(
            f"LoRA on {lora.target_modules} gives the adapters no trainable weight (--lora-targets): "
            "target the model's linear layers (q_proj, v_proj, ..., or all-linear)"
        )
    return wrapped.eval()
