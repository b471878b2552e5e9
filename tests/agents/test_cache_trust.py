"""The response cache serves a row for the model that made it, from a source the user trusts.

A checksum proves a row intact, not who wrote it: a row planted with a correct checksum is
foreign (no MAC of this install's key) and is not served; a row this install wrote is. A
foreign file is served once the user trusts it (``deliberate cache merge --trust``, or
``trust_foreign=True``), and the reports count its rows. No row larger than its request's
result can be is stored or served. The key file is its user's alone.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import stat
import time

import pytest
from agent_fakes import FakeBackend

from agents import CachedBackend
from agents.base import BackendError, GenerationRequest
from agents.cache import CacheKeyError, CacheMissError, cache_stats, key_path, mac, signing_key
from agents.cache_merge import CacheRowError, merge_caches
from algorithms.cli import main

ASK = GenerationRequest(({"role": "user", "content": "What is 3 + 4?"},), max_tokens=16, seed=4)
OTHER = GenerationRequest(ASK.messages, max_tokens=16, seed=5)
HONEST = "Some steps.\nThe answer is 4."  # FakeBackend's answer to ASK


def public_key(request: GenerationRequest) -> str:
    """The row key of ``request``, computed from public data as anyone can."""
    parts = ("generate", "fake:model", request.messages, request.max_tokens, request.temperature, request.top_p,
             request.seed, request.stop)  # fmt: skip
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def plant(path, text: str, request: GenerationRequest = ASK, tag: str | None = None) -> str:
    """Write a generation row of ``request`` straight into the file with a correct checksum
    (and the MAC ``tag``, if given); return its key."""
    key = public_key(request)
    row = {"key": key, "text": text, "prompt_tokens": 3, "completion_tokens": 7, "finish_reason": "stop"}
    row["checksum"] = hashlib.sha256(json.dumps(list(row.values())).encode()).hexdigest()
    row |= {"model_id": "fake:model", "created": time.time()} | ({"mac": tag} if tag else {})
    with sqlite3.connect(path) as db:
        marks = ", ".join("?" * len(row))
        db.execute(f"INSERT OR REPLACE INTO generations ({', '.join(row)}) VALUES ({marks})", [*row.values()])
    db.close()
    return key


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Writes a cache file as another install (another machine, with its own key) would."""

    def write(path, requests=(ASK,)):
        with monkeypatch.context() as patch:
            patch.setenv("DELIBERATION_ENV_CACHE_KEY", str(tmp_path / "other.key"))
            return CachedBackend(FakeBackend(), path).generate(list(requests))

    return write


# ---------------------------------------------------------------- planted and own rows
def test_a_planted_row_with_a_correct_checksum_is_not_served(tmp_path):
    path = tmp_path / "c.sqlite"
    CachedBackend(FakeBackend(), path)  # the file and its tables
    plant(path, "The answer is 99.")

    with pytest.raises(CacheMissError, match=r"1 cached in a foreign row \(no valid MAC .*--trust"):
        CachedBackend(FakeBackend(), path, offline=True).generate([ASK])

    inner = FakeBackend()
    cache = CachedBackend(inner, path)
    with pytest.warns(RuntimeWarning, match="1 rows of fake:model are foreign.* regenerated and replaced"):
        assert cache.generate([ASK])[0].text == HONEST
    assert len(inner.calls) == 1 and (cache.hits, cache.foreign_ignored) == (0, 1)
    assert CachedBackend(FakeBackend(), path, offline=True).generate([ASK])[0].text == HONEST  # replaced, signed


def test_a_row_written_by_this_install_is_served(tmp_path):
    path = tmp_path / "c.sqlite"
    original = CachedBackend(FakeBackend(), path).generate([ASK])
    inner = FakeBackend()
    cache = CachedBackend(inner, path)
    assert cache.generate([ASK]) == original and inner.calls == []
    assert (cache.hits, cache.trusted_foreign, cache.foreign_ignored) == (1, 0, 0)
    assert (cache_stats(path)["foreign"], cache_stats(path)["trusted_foreign"]) == (0, {})


def test_a_mac_copied_from_another_row_signs_nothing_else(tmp_path):
    path = tmp_path / "c.sqlite"
    CachedBackend(FakeBackend(), path).generate([ASK])
    with sqlite3.connect(path) as db:
        (tag,) = db.execute("SELECT mac FROM generations").fetchone()
    db.close()
    plant(path, "The answer is 99.", OTHER, tag=tag)
    inner = FakeBackend()
    with pytest.warns(RuntimeWarning, match="are foreign"):
        assert CachedBackend(inner, path).generate([OTHER])[0].text == "Some steps.\nThe answer is 5."
    assert len(inner.calls) == 1


# --------------------------------------------------------------------- foreign files
def test_a_foreign_file_is_not_served_or_merged_untrusted(tmp_path, elsewhere):
    foreign, out = tmp_path / "foreign.sqlite", tmp_path / "out.sqlite"
    elsewhere(foreign)
    with pytest.warns(UserWarning, match=r"foreign\.sqlite: skipped 1 foreign generations rows .* --trust"):
        counts = merge_caches(out, [foreign])
    assert counts == {"added": 0, "duplicates": 0, "skipped": 0, "trusted": 0, "foreign": 1}
    with pytest.raises(CacheMissError, match="1 not cached"):
        CachedBackend(FakeBackend(), out, offline=True).generate([ASK])
    with pytest.raises(CacheMissError, match="1 cached in a foreign row"):
        CachedBackend(FakeBackend(), foreign, offline=True).generate([ASK])
    assert cache_stats(foreign)["foreign"] == 1

    inner = FakeBackend()
    with pytest.warns(RuntimeWarning, match="are foreign"):
        CachedBackend(inner, foreign).generate([ASK])
    assert len(inner.calls) == 1


def test_a_foreign_file_merged_with_trust_is_served_and_counted(tmp_path, elsewhere, capsys):
    foreign, out = tmp_path / "foreign.sqlite", tmp_path / "out.sqlite"
    original = elsewhere(foreign, (ASK, OTHER))
    main(["cache", "merge", str(out), str(foreign), "--trust"])
    assert json.loads(capsys.readouterr().out) == {
        "out": str(out), "added": 2, "duplicates": 0, "skipped": 0, "trusted": 2, "foreign": 0
    }  # fmt: skip

    inner = FakeBackend()
    replay = CachedBackend(inner, out, offline=True)
    assert replay.generate([ASK, OTHER]) == original and inner.calls == []
    assert (replay.hits, replay.trusted_foreign) == (2, 2)
    main(["cache", "stats", "--path", str(out)])
    stats = json.loads(capsys.readouterr().out)
    assert stats["trusted_foreign"] == {str(foreign.resolve()): 2} and stats["foreign"] == 0

    again = tmp_path / "again.sqlite"  # merged on, the rows keep the file they came from
    assert merge_caches(again, [out])["trusted"] == 0
    assert cache_stats(again)["trusted_foreign"] == {str(foreign.resolve()): 2}


def test_a_planted_row_in_the_output_is_replaced_by_a_merged_one_not_a_conflict(tmp_path):
    mine, out = tmp_path / "mine.sqlite", tmp_path / "out.sqlite"
    original = CachedBackend(FakeBackend(), mine).generate([ASK])
    CachedBackend(FakeBackend(), out)
    plant(out, "The answer is 99.")
    assert merge_caches(out, [mine])["added"] == 1
    assert CachedBackend(FakeBackend(), out, offline=True).generate([ASK]) == original


def test_trust_foreign_serves_a_foreign_file_from_python_and_counts_it(tmp_path, elsewhere):
    foreign = tmp_path / "foreign.sqlite"
    original = elsewhere(foreign)
    inner = FakeBackend()
    cache = CachedBackend(inner, foreign, offline=True, trust_foreign=True)
    assert cache.generate([ASK]) == original and inner.calls == []
    assert (cache.hits, cache.trusted_foreign) == (1, 1)


def test_a_cache_of_an_older_version_is_foreign_until_merged_with_trust(tmp_path):
    old, new = tmp_path / "old.sqlite", tmp_path / "new.sqlite"
    original = CachedBackend(FakeBackend(), old).generate([ASK])
    with sqlite3.connect(old) as db:  # the file as version 0.1 wrote it: checksums, no MACs
        db.execute("ALTER TABLE generations DROP COLUMN mac")
        db.execute("ALTER TABLE generations DROP COLUMN origin")
        db.execute("PRAGMA user_version = 1")
    db.close()
    with pytest.raises(CacheMissError, match="1 cached in a foreign row"):
        CachedBackend(FakeBackend(), old, offline=True).generate([ASK])
    assert merge_caches(new, [old], trust=True)["trusted"] == 1
    assert CachedBackend(FakeBackend(), new, offline=True).generate([ASK]) == original


# ------------------------------------------------------------------------ row sizes
class Verbose(FakeBackend):
    """Answers with ``size`` characters, whatever the budget."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def generate(self, requests):
        return [result.__class__("x" * self.size, 3, 7, "stop") for result in super().generate(requests)]


@pytest.mark.parametrize(
    ("max_tokens", "size", "limit"),
    [(16, 5_121, "5,120 for max_tokens=16"), (100_000, 50 << 20, "1,048,576, the most any row may hold")],
)
def test_an_oversized_result_is_refused_at_write_naming_its_key(tmp_path, max_tokens, size, limit):
    path = tmp_path / "c.sqlite"
    ask = GenerationRequest(ASK.messages, max_tokens=max_tokens, seed=4)
    with pytest.raises(BackendError, match=rf"key {public_key(ask)}, .*{size:,} characters, over the limit of {limit}"):
        CachedBackend(Verbose(size), path).generate([ask])
    assert cache_stats(path)["generations"] == 0
    CachedBackend(Verbose(5_120), path).generate([GenerationRequest(ASK.messages, max_tokens=16, seed=4)])  # at the limit
    assert cache_stats(path)["generations"] == 1


@pytest.mark.parametrize("size", [6_000, 50 << 20])
def test_an_oversized_row_is_refused_at_read_even_with_a_valid_mac(tmp_path, size):
    path = tmp_path / "c.sqlite"
    CachedBackend(FakeBackend(), path)
    text = "x" * size
    key = public_key(ASK)
    plant(path, text, tag=mac(signing_key(), "generations", key, "fake:model", None, [text, 3, 7, "stop"]))

    with pytest.raises(CacheMissError, match=rf"1 cached in an oversized row \(key {key}: {size:,} characters"):
        CachedBackend(FakeBackend(), path, offline=True).generate([ASK])
    if size > 1 << 20:
        with pytest.raises(CacheRowError, match=rf"{size:,} characters, over the 1,048,576 any row may hold, key {key}"):
            merge_caches(tmp_path / "out.sqlite", [path])
    inner = FakeBackend()
    with pytest.warns(RuntimeWarning, match=rf"larger than a result of their request can be \(key {key}"):
        assert CachedBackend(inner, path).generate([ASK])[0].text == HONEST
    assert len(inner.calls) == 1


# ---------------------------------------------------------------------------- the key
def test_the_key_file_is_made_at_first_use_readable_by_its_user_alone(tmp_path, monkeypatch):
    monkeypatch.delenv("DELIBERATION_ENV_CACHE_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    made = tmp_path / "config" / "deliberation-env" / "cache.key"
    assert key_path() == made and not made.exists()
    CachedBackend(FakeBackend(), tmp_path / "c.sqlite").generate([ASK])
    assert stat.S_IMODE(made.stat().st_mode) == 0o600 and len(made.read_bytes()) == 32
    assert made.read_bytes() == signing_key()

    monkeypatch.setenv("DELIBERATION_ENV_CACHE_KEY", str(tmp_path / "ci" / "key"))
    assert key_path() == tmp_path / "ci" / "key"


def test_a_key_file_others_can_read_or_too_short_is_refused(tmp_path, monkeypatch):
    loose, short = tmp_path / "loose.key", tmp_path / "short.key"
    loose.write_bytes(bytes(32))
    loose.chmod(0o644)
    short.write_bytes(b"secret")
    short.chmod(0o600)
    monkeypatch.setenv("DELIBERATION_ENV_CACHE_KEY", str(loose))
    with pytest.raises(CacheKeyError, match=rf"{loose} can be read or written by others .*`chmod 600 {loose}`"):
        CachedBackend(FakeBackend(), tmp_path / "c.sqlite")
    monkeypatch.setenv("DELIBERATION_ENV_CACHE_KEY", str(short))
    with pytest.raises(CacheKeyError, match="holds 6 bytes, fewer than 32"):
        CachedBackend(FakeBackend(), tmp_path / "c.sqlite")
