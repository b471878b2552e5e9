"""Model ids name a model by its bytes: two models saved under one name (two runs'
``agent_0``, or one directory overwritten with other weights) never share cached rows; the
same bytes anywhere share them. Digests of large files are remembered, never stale."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from agent_fakes import FakeBackend

from agents import CachedBackend, fingerprint
from agents.base import GenerationRequest
from agents.cache import CacheMissError
from agents.fingerprint import directory_sha256, file_sha256, fingerprinted

ASK = [GenerationRequest(({"role": "user", "content": "What is 3 + 4?"},), max_tokens=6, temperature=0.0)]


@pytest.fixture
def digests(tmp_path, monkeypatch):
    """Remembered digests go to a fresh directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "deliberation_env" / "digests"


# ---------------------------------------------------------------- fingerprints
def test_a_large_file_rewritten_in_place_with_its_times_set_back_gets_a_new_digest(tmp_path, digests):
    """The digest of a large file is remembered by the file's identity, which includes the
    change time: rewriting the bytes in place (same inode, same size) and setting the
    modification time back cannot make the old digest be served."""
    path = tmp_path / "weights.gguf"
    with path.open("wb") as file:
        file.truncate(fingerprint.MEMO_MIN_BYTES)
    before = file_sha256(path)
    assert before == hashlib.sha256(path.read_bytes()).hexdigest()
    assert len(list(digests.iterdir())) == 1  # remembered on disk
    times, inode = path.stat(), path.stat().st_ino
    with path.open("r+b") as file:
        file.seek(fingerprint.MEMO_MIN_BYTES // 2)
        file.write(b"\x01")
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_size, path.stat().st_mtime_ns) == (inode, times.st_size, times.st_mtime_ns)
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest() != before


def test_a_remembered_digest_is_read_back_and_a_damaged_one_recomputed(tmp_path, digests):
    path = tmp_path / "weights.gguf"
    with path.open("wb") as file:
        file.truncate(fingerprint.MEMO_MIN_BYTES)
    expected = file_sha256(path)
    (memo,) = digests.iterdir()
    assert memo.read_text() == expected
    fingerprint._remembered_sha256.cache_clear()  # as a new process
    memo.write_text("garbage")
    assert file_sha256(path) == expected and memo.read_text() == expected


def test_a_remembered_digest_that_others_could_write_is_not_served(tmp_path, digests):
    """Red team: a digest planted in a group-writable digests folder gave one model
    another's id, and so the other's cached responses."""
    path = tmp_path / "weights.gguf"
    with path.open("wb") as file:
        file.truncate(fingerprint.MEMO_MIN_BYTES)
    expected = file_sha256(path)
    (memo,) = digests.iterdir()
    assert digests.stat().st_mode & 0o777 == 0o700 and memo.stat().st_mode & 0o022 == 0
    fingerprint._remembered_sha256.cache_clear()  # as a new process
    memo.write_text("0" * 64)
    os.chmod(memo, 0o664)  # another's digest, in a file the group may write
    assert file_sha256(path) == expected
    fingerprint._remembered_sha256.cache_clear()
    os.chmod(digests, 0o775)  # a folder an older version made under a umask of 002
    assert file_sha256(path) == expected and digests.stat().st_mode & 0o777 == 0o700


def test_a_directory_digest_covers_every_top_level_file_but_other_ggufs(tmp_path):
    model = tmp_path / "agent_0"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "tokenizer_config.json").write_text('{"chat_template": "a"}')
    (model / "other.gguf").write_bytes(b"a model not loaded")
    (model / "checkpoint-5").mkdir()  # a trainer's subfolder: from_pretrained never reads it
    (model / "checkpoint-5" / "optimizer.pt").write_bytes(b"state")
    digest = directory_sha256(model)
    (model / "other.gguf").write_bytes(b"another model not loaded")
    (model / "checkpoint-5" / "optimizer.pt").write_bytes(b"other state")
    assert directory_sha256(model) == digest
    assert directory_sha256(model, "other.gguf") != digest  # the loaded GGUF counts
    for name, content in (("tokenizer_config.json", '{"chat_template": "b"}'), ("model.safetensors", "other")):
        kept = (model / name).read_text()
        (model / name).write_text(content)
        assert directory_sha256(model) != digest, name
        (model / name).write_text(kept)
    assert directory_sha256(model) == digest
    (model / "chat_template.jinja").write_text("{{ messages }}")  # a file added counts too
    assert directory_sha256(model) != digest


def test_an_adapters_digest_covers_its_base_model(tmp_path):
    base, adapter = tmp_path / "base", tmp_path / "run" / "agent_0"
    base.mkdir()
    adapter.mkdir(parents=True)
    (base / "model.safetensors").write_bytes(b"base weights")
    (adapter / "adapter_model.safetensors").write_bytes(b"lora weights")
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(base)}))
    digest = directory_sha256(adapter)
    (base / "model.safetensors").write_bytes(b"other base weights")
    assert directory_sha256(adapter) != digest


# ---------------------------------------------------------------- the backends
def save_tiny(directory, seed: int) -> None:
    from agents.trainable_lm import tiny_model

    model, tokenizer = tiny_model(seed)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)


def test_two_runs_agent_0_never_share_cached_rows(tmp_path):
    """Two training runs save their (different) models as ``<run>/agent_0``; a cache filled
    by run a's must not serve run b's, nor a directory overwritten with b's weights; a copy
    of a's weights elsewhere is a's model and shares its rows."""
    pytest.importorskip("transformers")
    from agents.transformers_backend import TransformersBackend

    save_tiny(tmp_path / "a" / "agent_0", seed=0)
    save_tiny(tmp_path / "b" / "agent_0", seed=1)
    path = tmp_path / "c.sqlite"

    def cached(directory) -> CachedBackend:
        return CachedBackend(TransformersBackend(directory, device="cpu"), path)

    a = cached(tmp_path / "a" / "agent_0")
    texts_a = a.generate(ASK)
    assert a.model_id.startswith("transformers:agent_0-float32@sha256:")
    b = cached(tmp_path / "b" / "agent_0")
    assert b.model_id != a.model_id
    assert b.generate(ASK) == b.backend.generate(ASK) and (b.hits, b.misses) == (0, 1)

    shutil.copytree(tmp_path / "a" / "agent_0", tmp_path / "copy" / "agent_0")
    copy = cached(tmp_path / "copy" / "agent_0")
    assert copy.model_id == a.model_id and copy.generate(ASK) == texts_a and copy.hits == 1

    save_tiny(tmp_path / "a" / "agent_0", seed=2)  # run a's folder overwritten by other weights
    overwritten = cached(tmp_path / "a" / "agent_0")
    assert overwritten.model_id not in (a.model_id, b.model_id)
    assert overwritten.generate(ASK) and (overwritten.hits, overwritten.misses) == (0, 1)


def test_two_ctranslate2_model_directories_under_one_name_never_share_cached_rows(tmp_path):
    pytest.importorskip("ctranslate2")
    from agents.ctranslate2_backend import CTranslate2Backend
    from agents.ctranslate2_convert import convert_model
    from agents.trainable_lm import tiny_model

    paths = []
    for run, seed in (("a", 0), ("b", 1)):
        converted = convert_model(*tiny_model(seed), tmp_path / "work" / run)
        paths.append(shutil.move(converted, tmp_path / run / "agent_0"))
    path = tmp_path / "c.sqlite"
    a = CachedBackend(CTranslate2Backend(paths[0], n_threads=1), path)
    b = CachedBackend(CTranslate2Backend(paths[1], n_threads=1), path)
    assert a.model_id.startswith("ctranslate2:agent_0-float32@sha256:") and a.model_id != b.model_id
    a.generate(ASK)
    assert b.generate(ASK) == b.backend.generate(ASK) and (b.hits, b.misses) == (0, 1)


@pytest.fixture(scope="module")
def two_ggufs(tmp_path_factory):
    """The bundled GGUF as ``a/model.gguf`` and, one weight byte changed, as ``b/model.gguf``."""
    from agents.llamacpp_backend import default_model_path

    root = tmp_path_factory.mktemp("ggufs")
    data = bytearray(default_model_path().read_bytes())
    paths = [root / "a" / "model.gguf", root / "b" / "model.gguf"]
    for path, last in zip(paths, (data[-1], data[-1] ^ 1), strict=True):
        path.parent.mkdir()
        data[-1] = last
        path.write_bytes(data)
    return paths


def test_two_ggufs_of_one_name_have_two_model_ids(two_ggufs):
    pytest.importorskip("llama_cpp")
    from agents.llamacpp_backend import LlamaCppBackend

    ids = [LlamaCppBackend(gguf, n_ctx=256).model_id for gguf in two_ggufs]
    digests = [hashlib.sha256(gguf.read_bytes()).hexdigest() for gguf in two_ggufs]
    assert ids == [f"llamacpp:model-ctx256@sha256:{digest[:32]}" for digest in digests]
    assert ids[0] != ids[1]


def test_an_offline_miss_names_the_rows_an_older_version_wrote_under_a_bare_name(tmp_path):
    path = tmp_path / "c.sqlite"
    old = FakeBackend()
    old.model_id = "llamacpp:SmolLM2-135M-Instruct-Q4_1"  # an id of an older version
    CachedBackend(old, path).generate(ASK)
    new = FakeBackend()
    new.model_id = fingerprinted("llamacpp:SmolLM2-135M-Instruct-Q4_1", "ab" * 32)
    with pytest.raises(
        CacheMissError,
        match=r"1 not cached .*holds rows of llamacpp:SmolLM2-135M-Instruct-Q4_1 \(1\), written by an "
        r"older version .* never served.*offline=False",
    ):
        CachedBackend(new, path, offline=True).generate(ASK)
    other = FakeBackend()
    other.model_id = fingerprinted("llamacpp:other", "cd" * 32)  # another model: no note
    with pytest.raises(CacheMissError) as error:
        CachedBackend(other, path, offline=True).generate(ASK)
    assert "older version" not in str(error.value)


def test_vllm_ids_of_local_directories_hold_their_hash(tmp_path):
    from agents.vllm_backend import vllm_model_id

    for run, weights in (("a", b"one"), ("b", b"two")):
        (tmp_path / run / "agent_0").mkdir(parents=True)
        (tmp_path / run / "agent_0" / "model.safetensors").write_bytes(weights)
    ids = [vllm_model_id(str(tmp_path / run / "agent_0")) for run in ("a", "b")]
    assert ids[0].startswith("vllm:agent_0@sha256:") and ids[0] != ids[1]
    assert vllm_model_id("Qwen/Qwen2.5-3B-Instruct") == "vllm:Qwen/Qwen2.5-3B-Instruct"  # a hub name: by name


def test_vllm_ids_name_the_hub_organisation_and_the_settings_that_change_the_texts():
    from agents.vllm_backend import vllm_model_id

    ids = {
        vllm_model_id("orgA/Model-7B"),
        vllm_model_id("orgB/Model-7B"),  # a fine-tune or re-upload under the same name
        vllm_model_id("orgA/Model-7B", {"quantization": "fp8"}),
        vllm_model_id("orgA/Model-7B", {"max_model_len": 256}),
        vllm_model_id("orgA/Model-7B", {"revision": "v2"}),
        vllm_model_id("orgA/Model-7B", {"load_format": "dummy"}),  # random weights
        vllm_model_id("orgA/Model-7B", {"generation_config": "vllm"}),  # not the model's sampling defaults
    }
    assert len(ids) == 7
    assert vllm_model_id("orgA/Model-7B", {"max_model_len": 256, "dtype": "bfloat16"}) == vllm_model_id(
        "orgA/Model-7B", {"dtype": "bfloat16", "max_model_len": 256}
    )  # the same settings in any order
    assert vllm_model_id("orgA/Model-7B", {"gpu_memory_utilization": 0.5, "tensor_parallel_size": 2}) == (
        "vllm:orgA/Model-7B"
    )  # where and how fast it runs: the same texts, the same rows


def test_a_local_vllm_tokenizer_is_named_by_its_files(tmp_path):
    from agents.vllm_backend import vllm_model_id

    for folder, vocab in (("a", b"one"), ("b", b"two")):
        (tmp_path / folder / "tok").mkdir(parents=True)
        (tmp_path / folder / "tok" / "tokenizer.json").write_bytes(vocab)
    ids = {vllm_model_id("orgA/Model-7B", {"tokenizer": str(tmp_path / folder / "tok")}) for folder in ("a", "b")}
    assert len(ids) == 2  # one folder name, other files: other texts


def test_a_llamacpp_backend_of_another_context_window_is_another_model():
    from agents.llamacpp_backend import DEFAULT_N_CTX, LlamaCppBackend
    from agents.local import default_model_path

    assert LlamaCppBackend(n_ctx=DEFAULT_N_CTX).model_id.startswith("llamacpp:SmolLM2-135M-Instruct-Q4_1@sha256:")
    short = LlamaCppBackend(n_ctx=512).model_id
    assert short.startswith("llamacpp:SmolLM2-135M-Instruct-Q4_1-ctx512@sha256:")
    assert short.split("@")[1] == LlamaCppBackend(default_model_path()).model_id.split("@")[1]  # the same file
