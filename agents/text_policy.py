"""A frozen text policy: any backend writing the actions of the text-action env.

:class:`TextPolicy` reads what the text env gives each agent (``infos[agent]["messages"]``,
the prompt as chat messages, and ``infos[agent]["seed"]``) and returns one completion per
agent that acts next (``infos[agent]["active"]``). All the requests of a turn, of every
agent and, for the vector env, of every env, go to the backend in ONE ``generate`` call.

Each request's seed is ``derive_seed(info["seed"], messages)``: the env derives
``info["seed"]`` from (episode seed, problem, agent, turn), as the meta env seeds its
solvers, so the same history gives the same request and a
:class:`~agents.cache.CachedBackend` replays it. In the vector env every env draws its
own episode seed, so G envs on one problem sample G different completions.

A completion cut at the token budget (finish reason ``"length"``) is played as
``infos[agent]["text_if_cut"]`` when the env gives one (the math protocol under strict
scoring gives its neutral text: a cut completion is no answer), else as it is:
:func:`played_text`, which the LLM-weight learners' rollouts use too, so training plays
cut completions exactly as evaluation does.

Nothing here imports ``deliberation_env``: the infos are plain values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents import progress
from agents.base import Backend, BackendError, GenerationRequest
from agents.sampling import AGENT_TEMPERATURE
from agents.seeding import derive_seed


def played_text(text: str, finish_reason: str, info: Mapping[str, Any]) -> str:
    """The action for a completion ``text``: the env's ``info["text_if_cut"]`` in place of a
    completion cut at the token budget (``finish_reason == "length"``) when the info gives
    one (not ``None``), else ``text`` itself.

    >>> cut = {"text_if_cut": ""}
    >>> played_text("The answer is 1", "length", cut), played_text("The answer is 1.", "stop", cut)
    ('', 'The answer is 1.')
    >>> played_text("The answer is 1", "length", {"text_if_cut": None})
    'The answer is 1'
    """
    replacement = info.get("text_if_cut")
    return replacement if finish_reason == "length" and replacement is not None else text


class TextPolicy:
    """Completions of a backend as the actions of a text env's agents.

    Args:
        backend: A text :class:`~agents.base.Backend` (wrap it in
            :class:`agents.CachedBackend` to cache and replay its completions).
        max_tokens: Most tokens per completion.
        temperature: Sampling temperature (0 is greedy).
        top_p: Nucleus sampling mass.
        top_k: Sample among the ``top_k`` most likely tokens only (0: all).

    Raises:
        TypeError: If ``backend`` is not a text backend (e.g. the simulated team, a
            solver with no text model).
        ValueError: On ``max_tokens`` < 1, a negative ``temperature`` or ``top_k``, or
            ``top_p`` outside (0, 1].

    Example:
        >>> from agents.base import Generation
        >>> class Echo:
        ...     model_id, supports_logprobs = "echo", False
        ...     def generate(self, requests):
        ...         return [Generation(r.messages[-1]["content"], 1, 1, "stop") for r in requests]
        ...     def next_token_logprobs(self, requests):
        ...         raise NotImplementedError
        >>> info = {"messages": ({"role": "user", "content": "hi"},), "seed": 3, "active": True}
        >>> TextPolicy(Echo()).act({"agent_0": "user: hi"}, {"agent_0": info})
        {'agent_0': 'hi'}
    """

    def __init__(
        self, backend: Backend, *, max_tokens: int = 256, temperature: float = AGENT_TEMPERATURE, top_p: float = 0.95, top_k: int = 0
    ) -> None:
        if not isinstance(backend, Backend):
            raise TypeError(
                f"TextPolicy needs a text Backend (generate, next_token_logprobs), got {type(backend).__name__}; "
                "the simulated team is a Solver with no text model"
            )
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens!r}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature!r}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {top_p!r}")
        if top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0: the whole vocabulary), got {top_k!r}")
        self.backend = backend
        self.max_tokens, self.temperature, self.top_p, self.top_k = max_tokens, temperature, top_p, top_k

    def act(self, observations: Mapping[str, Any], infos: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        """The actions of a parallel env's live agents (``observations`` keys them).

        Returns:
            ``{agent: text}`` for every agent of ``observations`` whose info says it is active.
        """
        cells = [agent for agent in observations if infos[agent]["active"]]
        texts = self._generate([infos[agent] for agent in cells])
        return dict(zip(cells, texts, strict=True))

    def act_vector(
        self, observations: Mapping[str, Sequence[Any]], infos: Sequence[Mapping[str, Mapping[str, Any]]]
    ) -> dict[str, list[str]]:
        """The actions of a vector env: ``{agent: one text per env}``, in one backend call.

        The entries of envs whose episode has ended are ``""`` (the env ignores them).
        """
        cells = [(e, agent) for e, env_infos in enumerate(infos) for agent in observations if env_infos[agent]["active"]]
        texts = self._generate([infos[e][agent] for e, agent in cells])
        actions = {agent: [""] * len(infos) for agent in observations}
        for (e, agent), text in zip(cells, texts, strict=True):
            actions[agent][e] = text
        return actions

    def _generate(self, infos: Sequence[Mapping[str, Any]]) -> list[str]:
        if not infos:
            return []
        requests = [
            GenerationRequest(
                messages=tuple(info["messages"]),
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                top_p=self.top_p,
                top_k=self.top_k,
                seed=derive_seed(info["seed"], tuple(info["messages"])),
            )
            for info in infos
        ]
        with progress.call(len(requests), "generate"):
            generations = self.backend.generate(requests)
        if len(generations) != len(requests):
            raise BackendError(
                f"backend {self.backend.model_id!r} returned {len(generations)} completions for {len(requests)} requests"
            )
        return [
            played_text(generation.text, generation.finish_reason, info)
            for generation, info in zip(generations, infos, strict=True)
        ]

    def __repr__(self) -> str:
        return f"TextPolicy({self.backend.model_id}, max_tokens={self.max_tokens}, temperature={self.temperature})"
