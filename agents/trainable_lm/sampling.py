"""How :class:`~agents.trainable_lm.TrainableLM` samples (:meth:`Sampling.sample`).

Prompts are rendered with the tokenizer's chat template, left-padded and decoded together
with a KV cache, ``sample_batch_size`` at a time (:meth:`Sampling.sample_joint`: several
agents' requests in one batch, each row through its agent's adapter; any sampler follows
:class:`Sampler`);
each distinct prompt of a batch is run once and its cache copied to its requests (a
group's G requests share one prompt), a request that has finished leaves the batch (the
later steps run only the rows still decoding; the static and compiled decoding ways keep
it, for fixed shapes: :mod:`agents.trainable_lm.steps`), and greedy decoding decodes equal requests
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
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from agents import progress
from agents.base import Message
from agents.chat_templates import render_chat
from agents.sampling import POLICY_TEMPERATURE
from agents.trainable_lm.extra import MISSING_EXTRA
from agents.trainable_lm.mixed import Route, mixable, peft_route, routed_adapters
from agents.trainable_lm.steps import DynamicSteps, StaticSteps, static_cacheable

if MISSING_EXTRA is None:
    from agents.transformers_backend import _sample


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
        top_k: int = 0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
    ) -> list[Completion]:
        """One completion per chat, as ``agent``, each from its own seed's random stream
        (``top_k``, ``min_p`` and ``repetition_penalty`` are passed only where they are not
        their defaults: a sampler without them samples all else)."""
        ...


def check_sample_arguments(
    chats: Sequence[Any],
    seeds: Sequence[int],
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    min_new_tokens: int,
    top_k: int = 0,
    min_p: float = 0.0,
    repetition_penalty: float = 1.0,
) -> None:
    """Refuse what :meth:`TrainableLM.sample` (and any sampler standing in for it) cannot sample.

    Raises:
        ValueError: On mismatched lengths or a bad sampling setting.
    """
    if len(chats) != len(seeds):
        raise ValueError(
            f"sample needs one seed per chat, got {len(chats)} chats and {len(seeds)} seeds"
        )
    if (
        max_new_tokens < 1
        or temperature < 0
        or not 0 < top_p <= 1
        or not 0 <= min_new_tokens <= max_new_tokens
        or top_k < 0
        or not 0 <= min_p <= 1
        or not repetition_penalty > 0
    ):
        raise ValueError(
            f"need max_new_tokens >= 1, temperature >= 0, top_p in (0, 1], 0 <= min_new_tokens <= "
            f"max_new_tokens, top_k >= 0, min_p in [0, 1] and repetition_penalty > 0, got {max_new_tokens}, "
            f"{temperature}, {top_p}, {min_new_tokens}, {top_k}, {min_p}, {repetition_penalty}"
        )


CANDIDATES = 64
"""Tokens :func:`draw_tokens` ranks first; it sorts a row's whole vocabulary only when its draw is not decided among them."""


def draw_tokens(
    logits: torch.Tensor, temperature: float, top_p: float, uniforms: torch.Tensor, top_k: int = 0, min_p: float = 0.0
) -> torch.Tensor:
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

    With ``top_k`` > 0 the support is first the ``top_k`` likeliest tokens and the nucleus
    is taken within their mass (the transformers backend's order: top-k, then top-p of what
    is left); up to :data:`CANDIDATES` every row is decided among the candidates, beyond
    it by the full sort. With ``min_p`` > 0 a token stays only where its probability is at
    least ``min_p`` times the likeliest token's (transformers' ``MinPLogitsWarper``, after
    top-k and top-p: the three supports intersect); a row whose support ends among the
    candidates is decided there, any other by the full sort.
    """
    if temperature == 0:
        return logits.argmax(dim=-1)
    rows, size = logits.shape
    temperatures = torch.full((rows,), float(temperature), device=logits.device)
    top_ps = torch.full((rows,), float(top_p), device=logits.device)
    probs = torch.softmax(logits / temperatures.clamp(min=1e-6).unsqueeze(1), dim=-1)
    if CANDIDATES < top_k < size:  # beyond the candidates: the full sort, every row
        return _sample(logits, temperatures, top_ps, uniforms, torch.full((rows,), top_k, device=logits.device), min_p)
    top, order = probs.topk(min(CANDIDATES, size), dim=-1)
    if 0 < top_k < size:  # the top-k's own distribution, as the full sort renormalizes it
        top = top.masked_fill(torch.arange(top.shape[1], device=top.device) >= top_k, 0.0)
        top = top / top.sum(dim=-1, keepdim=True)
    # once true, true for every later token
    outside = (top.cumsum(dim=-1) - top) >= top_ps.unsqueeze(1)
    if 0 < top_k < size:
        outside |= torch.arange(top.shape[1], device=top.device) >= top_k
    if min_p > 0:  # the probabilities fall down the candidates: once out, out for the rest
        outside |= top < min_p * top[:, :1]
    cdf = top.masked_fill(outside, 0.0).cumsum(dim=-1)
    ends = outside[:, -1] | (0 < top_k < size)
    low = high = cdf[:, -1]
    if top_p == 1 and not 0 < top_k < size and not min_p:
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
        top_ks = torch.full((int(undecided.sum()),), top_k, device=logits.device) if top_k else None  # (none today)
        tokens[undecided] = _sample(
            logits[undecided], temperatures[undecided], top_ps[undecided], uniforms[undecided], top_ks, min_p
        )
    return tokens


def seen_tokens(prompts: Sequence[Sequence[int]], vocabulary: int, device: torch.device) -> torch.Tensor:
    """(rows, vocabulary) booleans: which tokens each row's prompt holds (its padding not:
    transformers' ``generate`` counts the pad token of a left-padded batch as seen)."""
    seen = torch.zeros(len(prompts), vocabulary, dtype=torch.bool, device=device)
    for row, prompt in enumerate(prompts):
        seen[row, torch.tensor(list(prompt), dtype=torch.long, device=device)] = True
    return seen


def penalize_repeats(logits: torch.Tensor, seen: torch.Tensor, penalty: float) -> torch.Tensor:
    r"""The repetition penalty of CTRL (Keskar et al., 2019), as transformers and vLLM apply
    it: for each token already seen (``seen``, (rows, V)),

    .. math::

        z'_i = \begin{cases} z_i / \theta & z_i > 0 \\ z_i \, \theta & z_i \le 0 \end{cases}

    with :math:`\theta` the ``penalty`` (> 1 makes a repeat less likely); other logits unchanged."""
    penalized = torch.where(logits > 0, logits / penalty, logits * penalty)
    return torch.where(seen, penalized, logits)


class Sampling:
    """:class:`~agents.trainable_lm.TrainableLM`'s sampling (see the module docstring): its
    methods, on the state the class sets up (seats, tokenizer, device, batch sizes, meter)."""

    def encode(self, chat: Sequence[Message]) -> list[int]:
        """The token ids of ``chat`` rendered by the chat template (reading the policy's
        ``chat_template_kwargs``), with the assistant's turn opened: the prompt a completion
        is sampled after, and so the one the loss trains it after (``Completion.prompt_ids``)."""
        text = render_chat(self.tokenizer, chat, self.chat_template_kwargs)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @torch.no_grad()
    def sample(
        self,
        agent: str,
        chats: Sequence[Sequence[Message]],
        seeds: Sequence[int],
        *,
        max_new_tokens: int = 128,
        temperature: float = POLICY_TEMPERATURE,
        top_p: float = 1.0,
        min_new_tokens: int = 0,
        top_k: int = 0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
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
            top_k: Sample among the ``top_k`` likeliest tokens only (then ``top_p`` within
                them); 0: all. Like ``top_p``, it shapes the draw, not the recorded
                log-probabilities.
            min_p: Keep only tokens of probability at least ``min_p`` times the likeliest
                token's (after ``top_k`` and ``top_p``); 0: no such cut. It shapes the draw.
            repetition_penalty: Divide the positive logits of the tokens already in the
                prompt or the completion by it, multiply their negative ones (transformers'
                ``RepetitionPenaltyLogitsProcessor``, greedy decoding too); 1: none. It shapes
                the draw, not the recorded log-probabilities.

        Raises:
            ValueError: On mismatched lengths or a bad sampling setting.
        """
        check_sample_arguments(
            chats, seeds, max_new_tokens, temperature, top_p, min_new_tokens, top_k, min_p, repetition_penalty
        )
        prompts = [self.encode(chat) for chat in chats]
        completions: list[Completion] = []
        with (
            self._acting(agent) as model,
            progress.call(len(prompts), f"sample {agent}") as advance,
        ):
            for start in range(0, len(prompts), self.sample_batch_size):
                stop = start + self.sample_batch_size
                completions.extend(
                    self._sample_batch(
                        model,
                        prompts[start:stop],
                        seeds[start:stop],
                        max_new_tokens,
                        temperature,
                        top_p,
                        min_new_tokens,
                        advance,
                        top_k=top_k,
                        min_p=min_p,
                        repetition_penalty=repetition_penalty,
                    )
                )
        return completions

    @torch.no_grad()
    def sample_joint(
        self,
        requests: Mapping[str, tuple[Sequence[Sequence[Message]], Sequence[int]]],
        *,
        max_new_tokens: int = 128,
        temperature: float = POLICY_TEMPERATURE,
        top_p: float = 1.0,
        min_new_tokens: int = 0,
        top_k: int = 0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
    ) -> dict[str, list[Completion]]:
        """Several agents' requests of one turn, ``{agent: (chats, seeds)}``: each completion
        is what :meth:`sample` gives for it (the same seed, the same stream), but agents that
        are adapters of one shared base are decoded together, ``sample_batch_size`` rows of any
        agents at a time, each row through its own agent's adapter
        (:mod:`agents.trainable_lm.mixed`: the base's weights are read once per step for every
        agent's rows). Other layouts, DoRA adapters (which peft cannot mix) and a subclass
        that overrides :meth:`sample` sample agent by agent through :meth:`sample`.

        Args:
            requests: Per agent, its chats and one seed per chat.
            max_new_tokens: Most tokens per completion, >= 1.
            temperature: Sampling temperature, >= 0 (0: greedy).
            top_p: Nucleus mass in (0, 1].
            min_new_tokens: No stop token before this many tokens (see :meth:`sample`).
            top_k: The likeliest tokens sampled among, 0: all (see :meth:`sample`).
            min_p: The least probability kept, relative to the likeliest token's (see :meth:`sample`).
            repetition_penalty: The penalty of tokens seen before, 1: none (see :meth:`sample`).

        Returns:
            ``{agent: completions}``, in the order of each agent's chats.

        Raises:
            ValueError: On mismatched lengths or a bad sampling setting.
        """
        settings = {
            "max_new_tokens": max_new_tokens,
            "temperature": temperature,
            "top_p": top_p,
            "min_new_tokens": min_new_tokens,
            "top_k": top_k,
            "min_p": min_p,
            "repetition_penalty": repetition_penalty,
        }
        seats = [self._seat(agent) for agent in requests]
        shared = (
            len(seats) > 1
            and all(s.model is seats[0].model and s.adapter is not None for s in seats)
            and mixable(seats[0].model)
        )
        if not shared or type(self).sample is not Sampling.sample:
            return {
                agent: self.sample(agent, chats, seeds, **settings)
                for agent, (chats, seeds) in requests.items()
            }
        for chats, seeds in requests.values():
            check_sample_arguments(chats, seeds, **settings)
        rows = [
            (agent, self.encode(chat), seed)
            for agent, (chats, seeds) in requests.items()
            for chat, seed in zip(chats, seeds, strict=True)
        ]
        model = seats[0].model
        completions: list[Completion] = []
        with (
            progress.call(len(rows), "sample " + " + ".join(requests)) as advance,
            routed_adapters(model, self.routing, self.decoding) as route,  # once per call: mixed.py
        ):
            for start in range(0, len(rows), self.sample_batch_size):
                agents, prompts, seeds = zip(
                    *rows[start : start + self.sample_batch_size], strict=True
                )
                completions.extend(
                    self._sample_batch(
                        model,
                        list(prompts),
                        seeds,
                        max_new_tokens,
                        temperature,
                        top_p,
                        min_new_tokens,
                        advance,
                        adapters=[self.seats[agent].adapter for agent in agents],
                        route=route,
                        top_k=top_k,
                        min_p=min_p,
                        repetition_penalty=repetition_penalty,
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
        route: Route = peft_route,
        top_k: int = 0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
    ) -> list[Completion]:
        """Decode ``prompts`` together; ``adapters``: each row's adapter (a mixed-adapter
        batch of one peft model, reaching them by ``route``: :mod:`agents.trainable_lm.mixed`),
        None: the active one. Greedy (temperature 0), equal
        requests (the same adapter and prompt: a padded batch's copies) decode equal tokens
        whatever their seeds, so each is decoded once and its completion given to every copy."""
        if temperature > 0:
            return self._decode(
                model,
                prompts,
                seeds,
                max_new_tokens,
                temperature,
                top_p,
                min_new_tokens,
                advance,
                adapters,
                route,
                top_k,
                min_p,
                repetition_penalty,
            )
        names = [None] * len(prompts) if adapters is None else list(adapters)
        requests = [(name, tuple(prompt)) for name, prompt in zip(names, prompts, strict=True)]
        first: dict[tuple[str | None, tuple[int, ...]], int] = {}
        for row, request in enumerate(requests):
            first.setdefault(request, row)
        rows = list(first.values())
        decoded = self._decode(
            model,
            [prompts[row] for row in rows],
            [seeds[row] for row in rows],
            max_new_tokens,
            temperature,
            top_p,
            min_new_tokens,
            advance,
            None if adapters is None else [adapters[row] for row in rows],
            route,
            top_k,
            min_p,
            repetition_penalty,
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
        route: Route = peft_route,
        top_k: int = 0,
        min_p: float = 0.0,
        repetition_penalty: float = 1.0,
    ) -> list[Completion]:
        """Decode every row of ``prompts`` (see :meth:`_sample_batch`), stepping the way
        ``self.decoding`` names (:mod:`agents.trainable_lm.steps`; a model whose attention
        no static cache fits steps dynamically); a row that has finished is no longer read
        (dynamically it leaves the batch). A row's ``t``-th token is drawn at the ``t``-th uniform
        number of its generator, so its stream is the same whichever rows remain.
        ``route``: how a mixed-adapter batch's rows reach their adapters
        (:func:`agents.trainable_lm.mixed.routed_adapters`)."""
        started = time.perf_counter()
        rows = len(prompts)
        # each row's stream on the CPU whatever the device, one number per token it may sample,
        # drawn up front: the CPU generator gives a tensor's numbers in the order of one-by-one draws
        uniform = torch.stack(
            [torch.rand(max_new_tokens, generator=torch.Generator().manual_seed(int(seed))) for seed in seeds]
        ).to(self.device)
        tokens: list[list[int]] = [[] for _ in range(rows)]
        logprobs: list[list[float]] = [[] for _ in range(rows)]
        finish = [""] * rows
        live = list(range(rows))  # the rows still decoding, in the batch's order
        if self.decoding == "dynamic" or not static_cacheable(model):
            steps = DynamicSteps(model, prompts, self._pad_id, self.device, adapters, route)
        else:
            steps = StaticSteps(
                model, prompts, self._pad_id, self.device, adapters, route, max_new_tokens,
                compiled=self.decoding == "compiled", caches=self._static_caches,
                scope=self.compile_scope,
            )  # fmt: skip
        with steps:  # the compiled layers, where any, installed for the whole decode
            logits = steps.logits
            stop_ids = torch.tensor(sorted(self._stop_ids), dtype=torch.long, device=self.device)
            seen = seen_tokens(prompts, logits.shape[1], self.device) if repetition_penalty != 1 else None
            for step in range(max_new_tokens):
                uniforms = uniform[:, step]  # every live row samples its step-th token
                allowed = (
                    logits.index_fill(1, stop_ids, float("-inf")) if step < min_new_tokens else logits
                )
                if seen is not None:
                    allowed = penalize_repeats(allowed, seen, repetition_penalty)
                chosen = draw_tokens(allowed, temperature, top_p, uniforms, top_k, min_p)
                if seen is not None:
                    seen[torch.arange(len(live), device=self.device), chosen] = True
                scores = torch.log_softmax(logits / (temperature or 1.0), dim=-1).gather(
                    1, chosen[:, None]
                )[:, 0]
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
                    chosen, uniform = chosen[keep], uniform[keep]
                    seen = seen[keep] if seen is not None else None
                    live = [live[k] for k in staying]
                    steps.drop(keep, live)
                logits = steps.step(chosen, live)
        self._meter.generated_tokens += sum(len(row_tokens) for row_tokens in tokens)
        # .tolist() waited for the device; a compiled shape's building is timed apart
        warmup = getattr(steps, "warmup_seconds", 0.0)
        self._meter.generation_seconds += time.perf_counter() - started - warmup
        self._meter.compile_seconds += warmup
        return [
            Completion(
                text=self.tokenizer.decode(row_tokens, skip_special_tokens=True),
                prompt_ids=tuple(prompt),
                token_ids=tuple(row_tokens),
                logprobs=tuple(row_logprobs),
                finish_reason=reason or "length",
            )
            for prompt, row_tokens, row_logprobs, reason in zip(
                prompts, tokens, logprobs, finish, strict=True
            )
        ]
