"""Conversion into CTranslate2 models (agents.ctranslate2_convert): a GGUF is converted once
into the cache, renamed into place only when complete; int8 weights are written in 7 bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("ctranslate2", reason="the ctranslate2 extra is not installed")
pytest.importorskip("transformers", reason="the ctranslate2 extra is not installed")

from agents import ctranslate2_convert as convert


def test_a_conversion_is_announced_and_renamed_into_place_only_when_complete(
    tmp_path, monkeypatch, capsys
):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"a gguf")
    calls = []

    def fake_conversion(gguf, work, quantization):
        calls.append(work)
        (work / "out").mkdir()
        (work / "out" / "model.bin").write_bytes(b"weights")
        return work / "out"

    def failing_conversion(gguf, work, quantization):
        (work / "half").mkdir()
        raise RuntimeError("killed")

    monkeypatch.setattr(convert, "convert_gguf", failing_conversion)
    with pytest.raises(RuntimeError, match="killed"):
        convert.converted_model_dir(gguf, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half-written is left to reuse

    monkeypatch.setattr(convert, "convert_gguf", fake_conversion)
    first = convert.converted_model_dir(gguf, tmp_path / "cache")
    assert "converting model.gguf" in capsys.readouterr().err
    assert convert.converted_model_dir(gguf, tmp_path / "cache") == first and len(calls) == 1
    assert capsys.readouterr().err == ""
    assert (first / "model.bin").read_bytes() == b"weights"
    int8 = convert.converted_model_dir(gguf, tmp_path / "cache", "int8")  # another quantization: another model
    assert int8 != first and len(calls) == 2
    assert int8.name.endswith("-int8-7bit")  # never a conversion of the 8-bit format
    gguf.write_bytes(b"another gguf")  # other bytes: another model
    assert convert.converted_model_dir(gguf, tmp_path / "cache") not in (first, int8) and len(calls) == 3


def test_the_default_cache_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert convert.default_cache_dir() == tmp_path / "deliberation_env" / "ct2"


def test_quantize_rows_writes_7_bit_values_that_round_to_the_nearest_level():
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(5, 40)).astype(np.float32)
    weight[1] = 0.0
    weight[2, 3] = 50.0  # an outlier sets its row's scale
    quantized, scale = convert.quantize_rows(weight)
    assert quantized.dtype == np.int8 and scale.dtype == np.float32 and np.isfinite(scale).all()
    assert np.abs(quantized).max() == convert.INT8_WEIGHT_LEVELS == 63
    assert (np.abs(quantized[[0, 2, 3, 4]]).max(axis=1) == 63).all() and not quantized[1].any()
    error = np.abs(weight - quantized / scale[:, None])
    assert (error <= 0.5 / scale[:, None] + 1e-6).all()


def test_an_int8_conversion_writes_every_linear_weight_in_7_bits(tmp_path, monkeypatch):
    """Every linear layer (the output projection too) goes through :func:`quantize_rows`, and
    the int8 model computes the float32 model's logits up to quantization error."""
    import ctranslate2

    from agents.trainable_lm import tiny_model

    quantized = []

    def spy(weight, levels=convert.INT8_WEIGHT_LEVELS):
        values, scale = quantize_rows(weight, levels)
        quantized.append(values)
        return values, scale

    quantize_rows = convert.quantize_rows
    monkeypatch.setattr(convert, "quantize_rows", spy)
    model, tokenizer = tiny_model(seed=0)
    linear_weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    int8_dir = convert.convert_model(model, tokenizer, tmp_path / "int8", "int8")
    # CTranslate2 fuses q, k and v into one layer: count the weights, not the layers
    assert sum(q.size for q in quantized) == linear_weights
    assert max(int(np.abs(q).max()) for q in quantized) == 63
    model, tokenizer = tiny_model(seed=0)
    float32_dir = convert.convert_model(model, tokenizer, tmp_path / "float32", "float32")
    assert sum(q.size for q in quantized) == linear_weights  # float32 quantizes nothing

    tokens = tokenizer.convert_ids_to_tokens(list(range(3, 40)))
    exact, approximate = (
        np.array(ctranslate2.Generator(str(d), compute_type=c).forward_batch([tokens]))[0]
        for d, c in ((float32_dir, "float32"), (int8_dir, "int8"))
    )
    assert exact.shape == approximate.shape and not np.allclose(exact, approximate, atol=1e-6)
    assert np.corrcoef(exact.ravel(), approximate.ravel())[0, 1] > 0.99
