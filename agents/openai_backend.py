"""Any OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama) through ``openai``.

A batch is sent as concurrent requests (at most ``max_concurrency`` at once, from a
thread pool), so servers with parallel slots or continuous batching see the whole
round. Each request is retried on connection errors, timeouts, rate limits and server
errors with exponential backoff (``backoff_s * 2**attempt``); after ``max_retries``
retries a :class:`~agents.base.BackendError` names the backend, the server and the
request. Client errors (a bad request) are not retried.

Log-probabilities come from the chat API's ``logprobs=True, top_logprobs=k`` on a
one-token greedy completion: a candidate is scored by the top entry whose token text,
stripped of spaces, equals the candidate; a candidate outside the top ``k`` is ``None``.
``supports_logprobs=None`` asks the server once, on first use, whether it returns them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from agents.base import (
    BackendError,
    Generation,
    GenerationRequest,
    LogprobRequest,
    LogprobResult,
    Message,
)

try:
    import openai
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "the openai backend needs openai: pip install 'deliberation-env[openai]'"
    ) from error

_RETRYABLE = (
    openai.APIConnectionError,  # includes APITimeoutError
    openai.RateLimitError,
    openai.InternalServerError,
)
_T = TypeVar("_T")
_PROBE = ({"role": "user", "content": "Say yes."},)


class OpenAIBackend:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        base_url: The server's API root, e.g. ``"http://127.0.0.1:8000/v1"``.
        model: The model name the server knows.
        api_key: The API key (local servers accept anything).
        max_concurrency: Most requests in flight at once.
        max_retries: Retries of a failing request before giving up.
        timeout_s: Timeout of one HTTP request, in seconds.
        backoff_s: Wait before the first retry; doubled at each further retry.
        supports_logprobs: Whether the server returns log-probabilities; ``None``
            asks it once, on first use (an LLM agent asks when it is built). Give it
            explicitly to build a team without a running server, e.g. for an offline
            replay from :class:`agents.CachedBackend`.
        top_logprobs: How many top next tokens to ask for when scoring candidates.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str = "EMPTY",
        max_concurrency: int = 8,
        max_retries: int = 3,
        timeout_s: float = 60.0,
        backoff_s: float = 0.5,
        supports_logprobs: bool | None = None,
        top_logprobs: int = 20,
    ) -> None:
        if max_concurrency < 1 or max_retries < 0 or timeout_s <= 0 or backoff_s < 0:
            raise ValueError(
                "need max_concurrency >= 1, max_retries >= 0, timeout_s > 0 and backoff_s >= 0; got "
                f"{max_concurrency}, {max_retries}, {timeout_s}, {backoff_s}"
            )
        self.base_url = base_url
        self.model = model
        self.model_id = f"openai:{model}"
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.top_logprobs = top_logprobs
        self._supports_logprobs = supports_logprobs
        # The client's own retries are off: this class retries, with its own error message.
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0
        )

    @property
    def supports_logprobs(self) -> bool:
        """Whether the server returns log-probabilities (asked once if not configured)."""
        if self._supports_logprobs is None:
            probe = self._call(lambda: self._score_call(_PROBE), "logprobs probe")
            self._supports_logprobs = bool(
                probe.choices[0].logprobs and probe.choices[0].logprobs.content
            )
        return self._supports_logprobs

    # ------------------------------------------------------------------ protocol
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate one completion per request, ``max_concurrency`` at a time."""
        return self._map(self._generate_one, requests)

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Score each request's candidates from the server's top next-token log-probs."""
        return self._map(self._score_one, requests)

    # ------------------------------------------------------------------ one request
    def _generate_one(self, index: int, request: GenerationRequest) -> Generation:
        response = self._call(
            lambda: self._client.chat.completions.create(
                model=self.model,
                messages=list(request.messages),
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                top_p=request.top_p,
                seed=request.seed,
                stop=list(request.stop) or None,
            ),
            f"generate request {index} (seed {request.seed}, {_summary(request.messages)})",
        )
        choice = response.choices[0]
        return Generation(
            text=choice.message.content or "",
            prompt_tokens=response.usage.prompt_tokens if response.usage else 0,
            completion_tokens=response.usage.completion_tokens if response.usage else 0,
            finish_reason="length" if choice.finish_reason == "length" else "stop",
        )

    def _score_one(self, index: int, request: LogprobRequest) -> LogprobResult:
        response = self._call(
            lambda: self._score_call(request.messages),
            f"logprobs request {index} ({_summary(request.messages)})",
        )
        logprobs = response.choices[0].logprobs
        top = logprobs.content[0].top_logprobs if logprobs and logprobs.content else []
        best: dict[str, float] = {}
        for entry in top:
            token = entry.token.strip()
            best[token] = max(entry.logprob, best.get(token, float("-inf")))
        return LogprobResult(
            tuple(best.get(candidate) for candidate in request.candidates),
            prompt_tokens=response.usage.prompt_tokens if response.usage else 0,
        )

    def _score_call(self, messages: Sequence[Message]):
        return self._client.chat.completions.create(
            model=self.model,
            messages=list(messages),
            max_tokens=1,
            temperature=0.0,
            logprobs=True,
            top_logprobs=self.top_logprobs,
        )

    # ------------------------------------------------------------ retries, threads
    def _call(self, send: Callable[[], _T], what: str) -> _T:
        """``send()`` with retries and backoff; a :class:`BackendError` in the end."""
        attempt = 0
        while True:
            try:
                return send()
            except _RETRYABLE as error:
                if attempt == self.max_retries:
                    raise BackendError(
                        f"openai backend {self.model_id} at {self.base_url}: {what} failed after "
                        f"{attempt + 1} attempts: {type(error).__name__}: {error}"
                    ) from error
                time.sleep(self.backoff_s * 2**attempt)
                attempt += 1
            except openai.APIError as error:
                raise BackendError(
                    f"openai backend {self.model_id} at {self.base_url}: {what} was refused: "
                    f"{type(error).__name__}: {error}"
                ) from error

    def _map(self, one: Callable[[int, _T], object], requests: Sequence[_T]) -> list:
        if len(requests) <= 1:
            return [one(index, request) for index, request in enumerate(requests)]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(one, range(len(requests)), requests))

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.model!r}, base_url={self.base_url!r})"


def _summary(messages: Sequence[Message]) -> str:
    last = messages[-1]["content"] if messages else ""
    return f"{len(messages)} messages, last {last[:60]!r}"
