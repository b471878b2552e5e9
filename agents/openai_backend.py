"""Any OpenAI-compatible chat server (vLLM, llama.cpp server, Ollama) through ``openai``.

A batch is sent as concurrent requests (at most ``max_concurrency`` at once) from
``openai``'s async client, on an event loop of its own in a worker thread (so it also
works from code that runs a loop, e.g. a notebook); servers with parallel slots or
continuous batching see the whole round.

A request's temperature, top-p and seed go to the server as they are, and its top-k
(when not 0) as the ``top_k`` field that vLLM, SGLang and llama.cpp's server accept
(OpenAI's own API refuses it). The server samples in its own order: vLLM's is the
request's (:class:`agents.base.GenerationRequest`); llama.cpp's server tempers last.

The model id is ``openai:<model>@<server>``, the server being the base URL without
credentials, its default port or a trailing slash (``openai:smollm2@http://127.0.0.1:8000/v1``):
one model name on two servers is two models to the response cache. (It cannot see the
weights behind the name: serve other weights under another name or URL.)

``timeout_s`` is a deadline for a whole attempt of a request: connecting, sending, the
server's wait and reading the complete body. A server that trickles its answer cannot
hold a call longer: the attempt is cancelled and its connection closed. Each retry has
a deadline of its own, so one request takes at most ``(max_retries + 1) * timeout_s``
plus the backoff waits; so does a batch, whose requests share that budget: when one of
them has failed all its attempts, the batch fails at once, the requests in flight are
cancelled and those still queued behind ``max_concurrency`` are never sent (a batch to a
server that hangs fails as fast as one request, not once per wave of requests).

An attempt that fails is retried with exponential backoff (``backoff_s * 2**attempt``):
connection errors, the deadline, rate limits, server errors and malformed responses (a
body that is not JSON, such as a proxy's HTML page; no ``choices``; no message
content; a field of the wrong type). After ``max_retries`` retries a
:class:`~agents.base.ServerError` (a kind of :class:`~agents.base.BackendError`; the
command line shows it in one line) names the backend and its model, the server, the
request and what was wrong (a refused connection asks whether a server runs at
``base_url``). Client errors (a bad request) are not retried.

Log-probabilities come from the chat API's ``logprobs=True, top_logprobs=k`` on a
one-token greedy completion: a candidate is scored by the top entry whose token text,
stripped of spaces, equals the candidate; a candidate outside the top ``k`` is ``None``.
``supports_logprobs=None`` asks the server once, on first use, whether it returns them.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from asyncio import sleep
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pydantic

from agents import progress
from agents.base import (
    Generation,
    GenerationRequest,
    LogprobRequest,
    LogprobResult,
    Message,
    ServerError,
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
_Request = TypeVar("_Request")
_Result = TypeVar("_Result")
_PROBE = ({"role": "user", "content": "Say yes."},)


# ------------------------------------------------- what a response must hold
class _TopLogprob(pydantic.BaseModel):
    token: str
    logprob: float


class _TokenLogprobs(pydantic.BaseModel):
    top_logprobs: list[_TopLogprob]


class _Logprobs(pydantic.BaseModel):
    content: list[_TokenLogprobs] | None = None


class _Message(pydantic.BaseModel):
    content: str


class _Choice(pydantic.BaseModel):
    message: _Message
    finish_reason: str | None = None
    logprobs: _Logprobs | None = None


class _Usage(pydantic.BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Completion(pydantic.BaseModel):
    """The parts of a chat completion this backend reads (other fields are ignored)."""

    choices: list[_Choice] = pydantic.Field(min_length=1)
    usage: _Usage | None = None


class _MalformedResponse(ValueError):
    """A response body that is not a chat completion."""


def _parse(body: bytes) -> _Completion:
    """The completion in ``body``.

    Raises:
        _MalformedResponse: Not JSON, or not a chat completion; the message lists each
            problem by field and quotes the start of the body.
    """
    try:
        return _Completion.model_validate_json(body)
    except pydantic.ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, problem['loc'])) or 'body'}: {problem['msg']}"
            for problem in error.errors(include_url=False)
        )
        raise _MalformedResponse(
            f"malformed response ({problems}); the body starts {body[:100]!r}"
        ) from None


FINISHES = {"stop": "stop", "length": "length", "content_filter": "length"}
"""The servers' finish reasons this backend reads, as a :class:`Generation`'s: a reply the
server's filter stopped is not the whole answer, so it counts as cut."""


def _generation_problem(completion: _Completion) -> str | None:
    """What keeps ``completion`` from being one answer whose cost and cut are known, or None.
    A reply without ``usage`` has no token cost, and one that ends for a reason this
    backend does not know may be cut: either was cached as a whole answer that cost
    nothing. A ``null`` reason is read from the tokens used (:func:`_finish`)."""
    if completion.usage is None or not {"prompt_tokens", "completion_tokens"} <= completion.usage.model_fields_set:
        return "usage: missing, or without prompt_tokens and completion_tokens (a reply's tokens are its cost, and tell a cut reply)"
    reason = completion.choices[0].finish_reason
    if reason is not None and reason not in FINISHES:
        return f"choices.0.finish_reason: {reason!r} is none of {', '.join(FINISHES)} (or null)"
    return None


def _finish(completion: _Completion, max_tokens: int) -> str:
    """The finish reason of a checked completion (:func:`_generation_problem`)."""
    reason = completion.choices[0].finish_reason
    if reason is None:
        return "length" if completion.usage.completion_tokens >= max_tokens else "stop"
    return FINISHES[reason]


# ------------------------------------------------------------------ the backend
class OpenAIBackend:
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        base_url: The server's API root, e.g. ``"http://127.0.0.1:8000/v1"``.
        model: The model name the server knows.
        api_key: The API key (local servers accept anything).
        max_concurrency: Most requests in flight at once.
        max_retries: Retries of a failing request before giving up.
        timeout_s: Deadline of one attempt of a request, from connecting to the last
            byte of the response, in seconds; each retry has its own.
        backoff_s: Wait before the first retry; doubled at each further retry.
        supports_logprobs: Whether the server returns log-probabilities; ``None``
            asks it once, on first use (an LLM agent asks when it is built). Give it
            explicitly to build a team without a running server, e.g. for an offline
            replay from :class:`agents.CachedBackend`.
        top_logprobs: How many top next tokens to ask for when scoring candidates.

    Raises:
        ValueError: A count or time out of range, or a ``base_url`` that is not an http(s) URL.
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
        # the top-k of a score changes which candidates it finds (None past the k best): in the
        # id where it is not the default, so the default's cached rows keep their key
        scored = "" if top_logprobs == 20 else f"#top_logprobs={top_logprobs}"
        self.model_id = f"openai:{model}@{server_name(base_url)}{scored}"
        self.api_key = api_key
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.top_logprobs = top_logprobs
        self._supports_logprobs = supports_logprobs

    @property
    def supports_logprobs(self) -> bool:
        """Whether the server returns log-probabilities (asked once if not configured)."""
        if self._supports_logprobs is None:
            self._supports_logprobs = self._map(self._probe_one, [_PROBE], "probe")[0]
        return self._supports_logprobs

    # ------------------------------------------------------------------ protocol
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate one completion per request, ``max_concurrency`` at a time."""
        return self._map(self._generate_one, requests, "generate")

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Score each request's candidates from the server's top next-token log-probs."""
        return self._map(self._score_one, requests, "score")

    # ------------------------------------------------------------------ one request
    async def _generate_one(
        self, client: openai.AsyncOpenAI, index: int, request: GenerationRequest
    ) -> Generation:
        completion = await self._call(
            lambda: client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=list(request.messages),
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                top_p=request.top_p,
                seed=request.seed,
                stop=list(request.stop) or None,
                # not in OpenAI's API (which refuses it); vLLM, SGLang and llama.cpp's server take it
                extra_body={"top_k": request.top_k} if request.top_k else None,
            ),
            f"generate request {index} (seed {request.seed}, {_summary(request.messages)})",
            check=_generation_problem,
        )
        return Generation(
            text=completion.choices[0].message.content,
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            finish_reason=_finish(completion, request.max_tokens),
        )

    async def _score_one(
        self, client: openai.AsyncOpenAI, index: int, request: LogprobRequest
    ) -> LogprobResult:
        completion = await self._call(
            lambda: self._score_call(client, request.messages),
            f"logprobs request {index} ({_summary(request.messages)})",
        )
        logprobs = completion.choices[0].logprobs
        top = logprobs.content[0].top_logprobs if logprobs and logprobs.content else []
        best: dict[str, float] = {}
        for entry in top:
            token = entry.token.strip()
            best[token] = max(entry.logprob, best.get(token, float("-inf")))
        return LogprobResult(
            tuple(best.get(candidate) for candidate in request.candidates),
            prompt_tokens=(completion.usage or _Usage()).prompt_tokens,
        )

    async def _probe_one(
        self, client: openai.AsyncOpenAI, index: int, messages: Sequence[Message]
    ) -> bool:
        completion = await self._call(lambda: self._score_call(client, messages), "logprobs probe")
        logprobs = completion.choices[0].logprobs
        return bool(logprobs and logprobs.content)

    def _score_call(self, client: openai.AsyncOpenAI, messages: Sequence[Message]):
        return client.chat.completions.with_raw_response.create(
            model=self.model,
            messages=list(messages),
            max_tokens=1,
            temperature=0.0,
            logprobs=True,
            top_logprobs=self.top_logprobs,
        )

    # ------------------------------------------------- deadline, retries, parsing
    async def _call(
        self, send: Callable[[], Awaitable], what: str, check: Callable[[_Completion], str | None] | None = None
    ) -> _Completion:
        """``send()`` under the deadline, parsed (and ``check``ed: what it names is a
        malformed response); retried with backoff; a :class:`~agents.base.ServerError` in the end."""
        for attempt in range(self.max_retries + 1):
            if attempt:
                await sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                async with asyncio.timeout(self.timeout_s):
                    response = await send()
                completion = _parse(response.content)
                if check is not None and (problem := check(completion)):
                    raise _MalformedResponse(f"malformed response ({problem}); the body starts {response.content[:100]!r}")
                return completion
            except _RETRYABLE as error:
                last, failure = error, f"{type(error).__name__}: {error}"
                if isinstance(error, openai.APIConnectionError) and not isinstance(error, openai.APITimeoutError):
                    failure += f" (is a server running at {self.base_url}?)"
            except _MalformedResponse as error:
                last, failure = error, str(error)
            except TimeoutError as error:
                last, failure = error, f"no complete response within timeout_s={self.timeout_s}"
            except openai.APIError as error:
                raise ServerError(
                    f"openai backend {self.model_id}: {what} was refused: "
                    f"{type(error).__name__}: {error}"
                ) from error
        raise ServerError(
            f"openai backend {self.model_id}: {what} failed after "
            f"{self.max_retries + 1} attempts: {failure}"
        ) from last

    # ---------------------------------------------------------------- concurrency
    def _map(
        self,
        one: Callable[[openai.AsyncOpenAI, int, _Request], Awaitable[_Result]],
        requests: Sequence[_Request],
        what: str,
    ) -> list[_Result]:
        """``one`` for every request, on an event loop in a worker thread; ``what`` labels
        the call's progress (:mod:`agents.progress`)."""
        if not requests:
            return []
        with progress.call(len(requests), what) as advance, ThreadPoolExecutor(max_workers=1) as worker:
            return worker.submit(asyncio.run, self._gather(one, requests, advance)).result()

    async def _gather(
        self,
        one: Callable[[openai.AsyncOpenAI, int, _Request], Awaitable[_Result]],
        requests: Sequence[_Request],
        advance: progress.Advance,
    ) -> list[_Result]:
        """Every request, ``max_concurrency`` in flight, each reported to ``advance`` when done; when one fails (after its retries)
        the others are cancelled and its error is raised (the first in request order if
        several failed at once)."""
        slots = asyncio.Semaphore(self.max_concurrency)

        async def limited(index: int, request: _Request) -> _Result:
            await slots.acquire()
            result = await one(client, index, request)  # a failure keeps its slot: nothing more is sent
            slots.release()
            advance(1, result.completion_tokens if isinstance(result, Generation) else 0)
            return result

        # The client's own retries are off: this class retries, with its own error message.
        async with openai.AsyncOpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout_s, max_retries=0
        ) as client:
            tasks = [asyncio.create_task(limited(k, request)) for k, request in enumerate(requests)]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        for task in tasks:
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()
        return [task.result() for task in tasks]

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.model!r}, base_url={self.base_url!r})"


def server_name(base_url: str) -> str:
    """``base_url`` as a model id names its server: scheme and host in lower case, no
    credentials, default port, fragment or trailing slash.

    >>> server_name("HTTP://user:secret@LocalHost:80/v1/")
    'http://localhost/v1'

    Raises:
        ValueError: ``base_url`` is not an http(s) URL with a host.
    """
    parts = urllib.parse.urlsplit(base_url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"base_url must be an http(s) URL with a host, such as http://127.0.0.1:8000/v1; "
            f"got {base_url!r}"
        )
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = parts.port  # a ValueError names a port that is not a number
    default = {"http": 80, "https": 443}[scheme]
    address = host if port in (None, default) else f"{host}:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{address}{parts.path.rstrip('/')}{query}"


def _summary(messages: Sequence[Message]) -> str:
    last = messages[-1]["content"] if messages else ""
    return f"{len(messages)} messages, last {last[:60]!r}"
