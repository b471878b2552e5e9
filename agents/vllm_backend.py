"""In-process vLLM backend (optional extra ``vllm``; needs a GPU).

A batch goes to ``vllm.LLM.generate`` in one call, so vLLM's continuous batching sees
the whole round. Prompts are rendered with the tokenizer's chat template and passed as
token ids; each request carries its own ``SamplingParams(seed=...)``, so a request gives
the same text whatever else is in the batch.

Log-probabilities are exact, not top-k: for each candidate the prompt is extended by the
candidate's first token and vLLM returns that token's log-probability
(``prompt_logprobs=0``); prefix caching makes the shared prompt cheap.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.base import Generation, GenerationRequest, LogprobRequest, LogprobResult, Message
from agents.chat_templates import check_chat_template_kwargs, model_id_with, render_chat
from agents.fingerprint import directory_sha256, fingerprinted

try:  # optional: this module imports without vLLM (docs, doctests); the backend needs it
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
except ImportError:
    LLM = None


PLACEMENT_SETTINGS = frozenset({
    "gpu_memory_utilization", "tensor_parallel_size", "pipeline_parallel_size", "enable_prefix_caching",
    "swap_space", "cpu_offload_gb", "max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill",
    "disable_log_stats", "distributed_executor_backend", "disable_custom_all_reduce", "enforce_eager",
    "max_seq_len_to_capture", "block_size", "enable_lora", "max_loras", "max_lora_rank", "max_cpu_loras",
})
"""The ``vllm.LLM`` settings that change only where and how fast a model runs, not what it
generates; every other setting (``dtype``, ``quantization``, ``max_model_len``,
``tokenizer``, ``revision``, ``load_format``, ``generation_config``, ``rope_scaling``, ...)
is part of the model id."""


def vllm_model_id(model: str, engine_kwargs: Mapping[str, Any] | None = None) -> str:
    """The model id of ``model`` served with ``engine_kwargs``: ``vllm:<model>`` (a hub name
    whole, organisation included: ``orgA/M`` and ``orgB/M`` are other models), and for a
    local model directory ``vllm:<folder name>`` with the hash of its files
    (:mod:`agents.fingerprint`), so two models saved under one name never share cached
    rows (a hub name cannot be hashed here: it names what vLLM finds under it). Every
    setting but the :data:`PLACEMENT_SETTINGS` follows, as ``+`` and a hash of the
    settings (a local tokenizer folder by the hash of its files): a model quantized to
    fp8, cut to a shorter context or loaded with dummy weights is served its own rows.

    >>> vllm_model_id("Qwen/Qwen2.5-3B-Instruct")
    'vllm:Qwen/Qwen2.5-3B-Instruct'
    >>> vllm_model_id("Qwen/Qwen2.5-3B-Instruct", {"gpu_memory_utilization": 0.5})  # where, not what
    'vllm:Qwen/Qwen2.5-3B-Instruct'
    """
    if Path(model).is_dir():
        name = fingerprinted(f"vllm:{Path(model).resolve().name}", directory_sha256(model))
    else:
        name = f"vllm:{model}"
    settings = {key: value for key, value in (engine_kwargs or {}).items() if key not in PLACEMENT_SETTINGS}
    tokenizer = settings.get("tokenizer")
    if isinstance(tokenizer, (str, Path)) and Path(tokenizer).is_dir():
        settings["tokenizer"] = directory_sha256(tokenizer)
    if not settings:
        return name
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()
    return f"{name}+{digest[:16]}"


class VLLMBackend:
    """A model served in this process by vLLM.

    Args:
        model: A local model directory (or any model name vLLM can load offline).
        chat_template_kwargs: Variables the chat template reads besides the messages (TRL's
            ``chat_template_kwargs``: ``{"enable_thinking": False}`` for Qwen3). Part of the
            model id.
        **engine_kwargs: Passed to ``vllm.LLM`` (``dtype``, ``gpu_memory_utilization``,
            ``max_model_len``, ``tensor_parallel_size``, ...).

    Raises:
        ImportError: If vLLM is not installed, with the command that installs it.
    """

    supports_logprobs = True

    def __init__(self, model: str, *, chat_template_kwargs: Mapping[str, Any] | None = None, **engine_kwargs: Any) -> None:
        self.chat_template_kwargs = check_chat_template_kwargs(chat_template_kwargs or {})
        if LLM is None:
            raise ImportError(
                "the vllm backend needs vLLM (a CUDA machine): pip install 'deliberation-env[vllm]'"
            )
        engine_kwargs.setdefault("enable_prefix_caching", True)
        self._llm = LLM(model=model, **engine_kwargs)
        self._tokenizer = self._llm.get_tokenizer()
        self.model_id = model_id_with(vllm_model_id(model, engine_kwargs), self.chat_template_kwargs)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """Generate every request in one ``LLM.generate`` call."""
        prompts = [self._prompt(r.messages) for r in requests]
        params = [
            SamplingParams(
                max_tokens=r.max_tokens,
                temperature=r.temperature,
                top_p=r.top_p,
                top_k=r.top_k if r.top_k > 0 else -1,  # vLLM's order is the request's
                seed=r.seed,
                stop=list(r.stop) or None,
            )
            for r in requests
        ]
        outputs = self._llm.generate(
            [TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False
        )
        return [
            Generation(
                text=out.outputs[0].text,
                prompt_tokens=len(prompt),
                completion_tokens=len(out.outputs[0].token_ids),
                finish_reason="length" if out.outputs[0].finish_reason == "length" else "stop",
            )
            for prompt, out in zip(prompts, outputs, strict=True)
        ]

    def next_token_logprobs(self, requests: Sequence[LogprobRequest]) -> list[LogprobResult]:
        """Exact log-probabilities of each candidate's first token, in one call."""
        prompts = [self._prompt(r.messages) for r in requests]
        extended = [
            TokensPrompt(prompt_token_ids=[*prompt, self._first_token(candidate)])
            for prompt, request in zip(prompts, requests, strict=True)
            for candidate in request.candidates
        ]
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        outputs = iter(self._llm.generate(extended, params, use_tqdm=False))
        results = []
        for prompt, request in zip(prompts, requests, strict=True):
            scores = []
            for candidate in request.candidates:
                last = next(outputs).prompt_logprobs[
                    -1
                ]  # {token id: Logprob} of the appended token
                scores.append(last[self._first_token(candidate)].logprob)
            results.append(LogprobResult(tuple(scores), prompt_tokens=len(prompt)))
        return results

    def _prompt(self, messages: Sequence[Message]) -> list[int]:
        text = render_chat(self._tokenizer, messages, self.chat_template_kwargs)
        return self._tokenizer.encode(text, add_special_tokens=False)  # the template wrote them

    def _first_token(self, candidate: str) -> int:
        return self._tokenizer.encode(candidate, add_special_tokens=False)[0]

    def __repr__(self) -> str:
        return f"VLLMBackend({self.model_id})"
