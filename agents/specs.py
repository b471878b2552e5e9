"""Team members from spec strings, the form the command line and config files use.

=====================================  =====================================================
spec                                   member
=====================================  =====================================================
``simulated``                          the synthetic team of :mod:`agents.simulated` (no LLM)
``smollm2``                            SmolLM2-135M-Instruct, int8 CTranslate2 (the default)
``llamacpp`` / ``llamacpp:<gguf>``     a GGUF file through llama.cpp (the ``llamacpp`` extra)
``transformers:<model>``               a transformers model, a folder or a hub id (CUDA
                                       with bfloat16 where present); ``#device=<d>`` and
                                       ``#dtype=<t>`` after it choose (:mod:`agents.devices`:
                                       ``cpu``, ``cuda:1``, ...)
``ctranslate2[:<gguf or model dir>]``  batched CPU decoding (default: SmolLM2, converted once)
``ctranslate2-int8[:<gguf or dir>]``   the same in int8 (7-bit weights)
``openai:<base_url>#<model>``          an OpenAI-compatible server (vLLM, llama.cpp, Ollama)
``vllm:<model>``                       vLLM in process (a CUDA machine)
=====================================  =====================================================

The backends that render prompts with the model's own chat template here (``transformers``,
``ctranslate2`` given its model, ``vllm``) take ``#chat_template_kwargs=<JSON object>``
after the model too: variables the template reads (TRL's ``chat_template_kwargs``; Qwen3's
``transformers:Qwen/Qwen3-0.6B#chat_template_kwargs={"enable_thinking": false}``, no ``#``
inside the object). They are part of the backend's model id, so of its cache rows.

Every LLM member is an :class:`agents.LLMAgent` over a backend wrapped in the SQLite
response cache. A bad spec raises ``ValueError`` naming it before any model is loaded.

>>> parse_spec("openai:http://localhost:8000/v1#Qwen2.5-7B-Instruct")
('openai', {'base_url': 'http://localhost:8000/v1', 'model': 'Qwen2.5-7B-Instruct'})
>>> parse_spec("llamacpp")
('llamacpp', {})
>>> parse_spec("transformers:/models/qwen#device=cpu#dtype=bfloat16")
('transformers', {'model': '/models/qwen', 'device': 'cpu', 'dtype': 'bfloat16'})
>>> parse_spec('ctranslate2:/models/q.gguf#chat_template_kwargs={"enable_thinking": false}')
('ctranslate2', {'model_path': '/models/q.gguf', 'chat_template_kwargs': {'enable_thinking': False}})
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from agents.backends import make_backend
from agents.base import Backend, Solver
from agents.cache import DEFAULT_CACHE_PATH, CachedBackend
from agents.chat_templates import canonical, parse_chat_template_kwargs
from agents.llm_agent import LLMAgent

PRESETS = ("simulated", "smollm2")
SMOLLM2_BACKEND = "ctranslate2-int8"
"""The backend spec of the ``smollm2`` preset: the bundled GGUF converted once into an int8
CTranslate2 model, which decodes the main job's batches of 72 requests 2x (AVX2 CPUs) to 5x
(AVX-512 VNNI) faster than llama.cpp with answers as often right (BENCHMARKS.md, issue 14).
``llamacpp`` was the preset's backend before 2026-11-25."""
SMOLLM2_TEMPERATURE = 0.3
"""Sampling temperature of the default team: measured so the agents still disagree on
most problems while answering more often right than at 0.7 (BENCHMARKS.md)."""
SMOLLM2_TOP_K = 50
"""The default team samples among the 50 most likely tokens (as ``transformers``'
``generate`` does unless told): at temperature 0.3 the nucleus is almost always inside
them, and a bounded candidate set spares a batched backend sorting the whole vocabulary
every token (BENCHMARKS.md, issue 14)."""
SMOLLM2_SAMPLING = {"temperature": SMOLLM2_TEMPERATURE, "top_k": SMOLLM2_TOP_K}
""":class:`LLMAgent` sampling settings of a default team member (the ``smollm2`` preset)."""
BACKEND_SPECS = (
    "llamacpp[:<gguf>]",
    "ctranslate2[:<gguf or model dir>[#chat_template_kwargs=<JSON>]]",
    "ctranslate2-int8[:<gguf or model dir>[#chat_template_kwargs=<JSON>]]",
    "transformers:<model>[#device=<device>][#dtype=<dtype>][#chat_template_kwargs=<JSON>]",
    "openai:<base_url>#<model>",
    "vllm:<model>[#chat_template_kwargs=<JSON>]",
)
CHAT_TEMPLATE_KWARGS = "chat_template_kwargs"
"""The spec option (``#chat_template_kwargs=<JSON object>``) of the backends that render
prompts with the model's chat template (:mod:`agents.chat_templates`)."""
SPEC_FORMS = ", ".join((*PRESETS, *BACKEND_SPECS))
"""Every form a spec may take, for error messages."""


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split a backend spec into the backend name and its keyword arguments.

    Args:
        spec: A spec of the module table other than a preset.

    Raises:
        ValueError: When ``spec`` has none of the forms, naming it and the forms.
    """
    name, _, rest = spec.partition(":")
    if name == "llamacpp":
        if f"#{CHAT_TEMPLATE_KWARGS}=" in rest:
            raise ValueError(
                f"bad team spec {spec!r}: llamacpp takes no #{CHAT_TEMPLATE_KWARGS} (llama.cpp renders the GGUF's "
                f"template itself); ctranslate2:<gguf>#{CHAT_TEMPLATE_KWARGS}=<JSON object> reads the same file"
            )
        return name, ({"model_path": rest} if rest else {})
    if name in ("ctranslate2", "ctranslate2-int8"):
        path, options = _options(spec, rest, (CHAT_TEMPLATE_KWARGS,))
        quantization = {"quantization": "int8"} if name == "ctranslate2-int8" else {}
        return "ctranslate2", {**quantization, **({"model_path": path} if path else {}), **options}
    if name == "transformers" and rest:
        return name, _transformers_arguments(spec, rest)
    if name == "vllm" and rest:
        model, options = _options(spec, rest, (CHAT_TEMPLATE_KWARGS,))
        if model:
            return name, {"model": model, **options}
    if name == "openai" and rest:
        base_url, _, model = rest.rpartition("#")
        if base_url and model:
            return name, {"base_url": base_url, "model": model}
    raise ValueError(f"bad team spec {spec!r}: use one of {SPEC_FORMS}")


def _transformers_arguments(spec: str, rest: str) -> dict[str, str]:
    """The model and the ``#device=...``, ``#dtype=...`` options of a ``transformers:`` spec.

    Raises:
        ValueError: On an unknown option or a bad device or dtype name, naming the spec.
    """
    from agents.devices import check_names

    model, arguments = _options(spec, rest, ("device", "dtype", CHAT_TEMPLATE_KWARGS))
    try:
        check_names(arguments.get("device", "auto"), arguments.get("dtype", "auto"))
    except ValueError as error:
        raise ValueError(f"bad team spec {spec!r}: {error}") from error
    return {"model": model, **arguments}


def _options(spec: str, rest: str, allowed: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """The model of ``rest`` (a spec after its backend's name) and its ``#key=value`` options,
    each of ``allowed`` once at most (``chat_template_kwargs`` read as a JSON object).

    Raises:
        ValueError: On another option, one given twice, or template variables that are no
            JSON object, naming the spec.
    """
    model, *options = rest.split("#")
    arguments: dict[str, Any] = {}
    for option in options:
        key, equals, value = option.partition("=")
        if key not in allowed or not equals or key in arguments:
            forms = " and/or ".join(f"#{name}=<{'JSON object' if name == CHAT_TEMPLATE_KWARGS else name}>" for name in allowed)
            raise ValueError(f"bad team spec {spec!r}: after the model, give {forms} once each")
        arguments[key] = value
    if CHAT_TEMPLATE_KWARGS in arguments:
        try:
            arguments[CHAT_TEMPLATE_KWARGS] = parse_chat_template_kwargs(arguments[CHAT_TEMPLATE_KWARGS])
        except ValueError as error:
            raise ValueError(f"bad team spec {spec!r}: #{CHAT_TEMPLATE_KWARGS}: {error}") from None
    return model, arguments


def with_chat_template_kwargs(spec: str, kwargs: dict[str, Any]) -> str:
    """``spec`` with the template variables ``kwargs`` as its ``#chat_template_kwargs``
    option (``run text --chat-template-kwargs``); ``spec`` itself where there are none.

    Raises:
        ValueError: For a spec whose backend takes no template variables (a preset,
            ``llamacpp``, ``openai``: the server renders its own prompts; ``ctranslate2``
            without its model), or one that gives its own.
    """
    if not kwargs:
        return spec
    name = "" if spec in PRESETS else parse_spec(spec)[0]
    if name not in ("transformers", "ctranslate2", "vllm") or ":" not in spec:
        raise ValueError(
            f"--chat-template-kwargs: team spec {spec!r} takes no chat template variables: give a transformers:, "
            "ctranslate2:<gguf or model dir> or vllm: spec (its backend renders the model's chat template)"
        )
    if f"#{CHAT_TEMPLATE_KWARGS}=" in spec:
        raise ValueError(f"--chat-template-kwargs: team spec {spec!r} gives its own #{CHAT_TEMPLATE_KWARGS}: give them once")
    return f"{spec}#{CHAT_TEMPLATE_KWARGS}={canonical(kwargs)}"


def check_spec(spec: str) -> None:
    """Raise ``ValueError`` naming ``spec`` if it is neither a preset nor a backend spec."""
    if spec not in PRESETS:
        parse_spec(spec)


@functools.cache
def backend_from_spec(spec: str, cache: str | None = None, offline: bool = False) -> Backend:
    """The cached backend of a spec (one per process and arguments, so that agents and envs
    given the same spec share one loaded model and one batched call).

    Args:
        spec: ``smollm2`` or a backend spec of the module table.
        cache: The response cache file (default :data:`agents.cache.DEFAULT_CACHE_PATH`).
        offline: Serve every request from the cache; a miss is an error.
    """
    if spec == "simulated":
        raise ValueError("team spec 'simulated' has no text backend: it is a synthetic solver")
    name, kwargs = parse_spec(SMOLLM2_BACKEND if spec == "smollm2" else spec)
    backend = make_backend(name, **kwargs)
    return CachedBackend(backend, path=Path(cache) if cache else DEFAULT_CACHE_PATH, offline=offline)


def member_from_spec(
    spec: str,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
    top_k: int | None = None,
    cache: str | None = None,
    offline: bool = False,
    simulated: dict[str, Any] | None = None,
) -> Solver:
    """The team member a spec names.

    Args:
        spec: A spec of the module table.
        temperature: Sampling temperature of an LLM member (default: SmolLM2's tuned
            temperature for ``smollm2``, which also samples within the top 50 tokens,
            else :class:`LLMAgent`'s).
        max_tokens: Most completion tokens per LLM answer (default :class:`LLMAgent`'s).
        top_k: An LLM member samples among its ``top_k`` most likely tokens (0: all;
            default 50 for ``smollm2``, else :class:`LLMAgent`'s, 0).
        cache: The response cache file of an LLM member.
        offline: Serve every LLM request from the cache; a miss is an error.
        simulated: Keyword arguments of :class:`agents.SimulatedTeam` for ``simulated``.

    Raises:
        ValueError: For a bad spec, or sampling settings given to the simulated team.
    """
    from agents.simulated import SimulatedTeam

    check_spec(spec)
    if spec == "simulated":
        if temperature is not None or max_tokens is not None or top_k is not None:
            raise ValueError("temperature, max_tokens and top_k apply to LLM team members, not to team spec 'simulated'")
        return SimulatedTeam(**(simulated or {}))
    sampling = dict(SMOLLM2_SAMPLING) if spec == "smollm2" else {}
    if temperature is not None:
        sampling["temperature"] = temperature
    if max_tokens is not None:
        sampling["max_tokens"] = max_tokens
    if top_k is not None:
        sampling["top_k"] = top_k
    return LLMAgent(backend_from_spec(spec, cache, offline), **sampling)
