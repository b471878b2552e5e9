"""A GGUF read by transformers once (agents.dequantized_gguf): the folder holds transformers'
own reading of the file, is written once and whole, and a backend names the model by it."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers", reason="the transformers extra is not installed")
pytest.importorskip("gguf", reason="the transformers extra is not installed")

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from agents import dequantized_gguf
from agents.dequantized_gguf import dequantized
from agents.llamacpp_backend import default_model_path

MESSAGES = [
    [{"role": "user", "content": "What is 12 + 7?"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Ünïcödé, 😀 and\ttabs"},
     {"role": "assistant", "content": "19"}, {"role": "user", "content": "Again?"}],
]  # fmt: skip


def test_the_folder_holds_transformers_own_reading_of_the_gguf():
    """The weights bit for bit, the config but for the quantization mark, the generation
    settings, and the tokenizer's chat template and tokens."""
    gguf = default_model_path()
    folder = dequantized(gguf)
    read = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, local_files_only=True)
    loaded = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    ours, theirs = loaded.state_dict(), read.state_dict()
    assert ours.keys() == theirs.keys()
    assert all(ours[name].dtype == torch.float32 and torch.equal(ours[name], theirs[name]) for name in ours)
    metadata = {"_name_or_path", "quantization_config", "transformers_version", "architectures"}  # save_pretrained's
    described = [{k: v for k, v in model.config.to_dict().items() if k not in metadata} for model in (loaded, read)]
    assert described[0] == described[1]
    assert loaded.generation_config.to_dict() == read.generation_config.to_dict()

    tokenizers = [AutoTokenizer.from_pretrained(folder), AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)]
    for messages in MESSAGES:
        rendered = [t.apply_chat_template(messages, add_generation_prompt=True, tokenize=False) for t in tokenizers]
        assert rendered[0] == rendered[1]
        assert tokenizers[0](rendered[0])["input_ids"] == tokenizers[1](rendered[1])["input_ids"]
    assert [(t.eos_token, t.bos_token, t.pad_token) for t in tokenizers[:1]] == [
        (t.eos_token, t.bos_token, t.pad_token) for t in tokenizers[1:]
    ]


def fake_writer(calls: list[str], fail: BaseException | None = None):
    def write(gguf, folder):
        calls.append(gguf.name)
        (folder / "model.safetensors").write_bytes(gguf.read_bytes())
        if fail is not None:
            raise fail
        (folder / "config.json").write_text("{}")

    return write


def test_a_gguf_is_dequantized_once_and_a_killed_conversion_leaves_nothing_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls: list[str] = []
    gguf = tmp_path / "a.gguf"
    gguf.write_bytes(b"weights")
    monkeypatch.setattr(dequantized_gguf, "_write_plain", fake_writer(calls, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        dequantized(gguf)
    assert [path for path in (tmp_path / "cache" / "deliberation_env" / "gguf").iterdir() if path.is_dir()] == []  # nothing half written

    monkeypatch.setattr(dequantized_gguf, "_write_plain", fake_writer(calls))
    folder = dequantized(gguf)
    assert dequantized(gguf) == folder and calls == ["a.gguf", "a.gguf"]  # written once, then reused
    assert folder.parent == tmp_path / "cache" / "deliberation_env" / "gguf"
    gguf.write_bytes(b"other weights")  # a changed file is another model
    assert dequantized(gguf) != folder and len(calls) == 3


def test_an_edited_folder_is_another_model_to_the_response_cache(tmp_path, monkeypatch):
    """As a CTranslate2 conversion (red team 22): the transformers backend names a GGUF's
    model by the files of the folder it loaded, not by the GGUF."""
    from agents.transformers_backend import TransformersBackend

    copied = tmp_path / "copy"
    shutil.copytree(dequantized(default_model_path()), copied)
    original = TransformersBackend(default_model_path(), device="cpu").model_id
    monkeypatch.setattr("agents.transformers_backend.dequantized", lambda gguf: copied)
    assert TransformersBackend(default_model_path(), device="cpu").model_id == original  # the same bytes
    config = json.loads((copied / "config.json").read_text())
    (copied / "config.json").write_text(json.dumps({**config, "rms_norm_eps": 0.5}))
    edited = TransformersBackend(default_model_path(), device="cpu").model_id
    assert edited != original and edited.startswith("transformers:SmolLM2-135M-Instruct.Q4_1-float32@sha256:")


def test_processes_started_together_dequantize_once(tmp_path, monkeypatch):
    """The ranks of a job started together on a new machine: the writer holds a lock while
    it writes, and a process that waited on the lock finds the folder written and writes
    nothing (its own copy of the model is never built)."""
    import contextlib
    import fcntl

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    gguf = tmp_path / "a.gguf"
    gguf.write_bytes(b"weights")
    calls: list[str] = []
    write = fake_writer(calls)

    def write_while_locked(gguf, folder):
        lock = next((tmp_path / "cache").rglob(".*.lock"))
        with open(lock, "w") as other, pytest.raises(BlockingIOError):  # another process's attempt
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        write(gguf, folder)

    monkeypatch.setattr(dequantized_gguf, "_write_plain", write_while_locked)
    folder = dequantized(gguf)
    assert calls == ["a.gguf"]

    shutil.rmtree(folder)
    held = dequantized_gguf._one_writer

    written = tmp_path / "written"  # what the process this one waited for wrote
    written.mkdir()
    (written / "config.json").write_text("{}")

    @contextlib.contextmanager
    def another_wrote_it_meanwhile(target):
        with held(target):
            shutil.copytree(written, target)
            yield

    monkeypatch.setattr(dequantized_gguf, "_one_writer", another_wrote_it_meanwhile)
    assert dequantized(gguf) == folder and calls == ["a.gguf"]  # the waiter wrote nothing
