"""CachedBackend: hits and misses, offline replay, several processes, a killed writer."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from agent_fakes import FakeBackend

from agents import CachedBackend
from agents.base import BackendError, GenerationRequest, LogprobRequest
from agents.cache import CacheMissError, cache_clear, cache_stats


def request(text: str, seed: int = 0, **kwargs) -> GenerationRequest:
    return GenerationRequest(({"role": "user", "content": text},), seed=seed, **kwargs)


def test_only_misses_reach_the_backend_in_one_call(tmp_path):
    inner = FakeBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    first = cache.generate([request("a", 1), request("b", 2)])
    mixed = cache.generate([request("b", 2), request("c", 3), request("a", 1), request("c", 3)])
    assert [len(requests) for _, requests in inner.calls] == [2, 1]  # "c" once, in one call
    assert inner.calls[1][1] == [request("c", 3)]
    assert mixed[0] == first[1] and mixed[2] == first[0] and mixed[1] == mixed[3]
    assert (cache.hits, cache.misses) == (2, 3)


def test_key_holds_sampling_parameters_and_seed(tmp_path):
    inner = FakeBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    variants = [
        request("a"),
        request("a", 1),
        request("a", max_tokens=9),
        request("a", temperature=0.0),
        request("a", top_p=0.5),
        request("a", stop=("\n",)),
    ]
    cache.generate(variants)
    cache.generate(variants)
    assert len(inner.calls) == 1 and len(inner.calls[0][1]) == 6


def test_results_survive_a_new_process_and_other_model_ids_miss(tmp_path):
    path = tmp_path / "c.sqlite"
    texts = CachedBackend(FakeBackend(), path).generate([request("a", 4)])
    inner = FakeBackend()
    assert CachedBackend(inner, path).generate([request("a", 4)]) == texts and inner.calls == []
    other = FakeBackend()
    other.model_id = "fake:other"
    CachedBackend(other, path).generate([request("a", 4)])
    assert len(other.calls) == 1


def test_logprobs_are_cached_with_none(tmp_path):
    inner = FakeBackend(logprobs=(-0.5, None))
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    ask = [LogprobRequest(({"role": "user", "content": "ok?"},), ("Yes", "No"))]
    assert cache.next_token_logprobs(ask) == cache.next_token_logprobs(ask)
    assert cache.next_token_logprobs(ask)[0].logprobs == (-0.5, None)
    assert len(inner.calls) == 1


def test_offline_miss_is_a_clear_error(tmp_path):
    path = tmp_path / "c.sqlite"
    CachedBackend(FakeBackend(), path).generate([request("cached")])
    inner = FakeBackend()
    offline = CachedBackend(inner, path, offline=True)
    assert offline.generate([request("cached")])[0].text.startswith("Some steps.")
    with pytest.raises(CacheMissError, match="1 of 2 requests .* not cached") as error:
        offline.generate([request("cached"), request("new")])
    assert isinstance(error.value, BackendError) and "'new'" in str(error.value)
    assert inner.calls == []


def test_stats_and_clear(tmp_path):
    path = tmp_path / "c.sqlite"
    assert cache_stats(path)["exists"] is False and cache_clear(path) == 0
    cache = CachedBackend(FakeBackend(), path)
    cache.generate([request("a"), request("b")])
    cache.next_token_logprobs([LogprobRequest(({"role": "user", "content": "?"},), ("Yes", "No"))])
    stats = cache_stats(path)
    assert (stats["generations"], stats["logprobs"], stats["models"]) == (2, 1, {"fake:model": 3})
    assert stats["completion_tokens"] == 14 and stats["size_bytes"] > 0
    assert cache_clear(path) == 3
    assert cache_stats(path)["generations"] == 0


# A writer process: generates `count` requests (named by `prefix`) through a cache, in
# chunks of 5, sleeping `delay` seconds per chunk inside the "backend".
WRITER = textwrap.dedent(
    """
    import sys, time
    from agents.base import Generation, GenerationRequest
    from agents.cache import CachedBackend

    path, prefix, count, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])

    class Slow:
        model_id, supports_logprobs = "fake:slow", False
        def generate(self, requests):
            time.sleep(delay)
            return [Generation("text of " + r.messages[0]["content"], 3, 4, "stop") for r in requests]

    cache = CachedBackend(Slow(), path, chunk_size=5)
    names = [f"{prefix}-{k}" for k in range(count)] + [f"shared-{k}" for k in range(10)]
    out = cache.generate([GenerationRequest(({"role": "user", "content": n},)) for n in names])
    assert [g.text for g in out] == ["text of " + n for n in names]
    print("done")
    """
)


def spawn_writer(path, prefix: str, count: int, delay: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), prefix, str(count), str(delay)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def rows(path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return db.execute("SELECT key, text FROM generations").fetchall()


def stored_so_far(path) -> int:
    """Rows written so far; 0 until the writer has created the file and its tables."""
    try:
        return len(rows(path)) if path.exists() else 0
    except sqlite3.OperationalError:  # the writer is still creating the schema
        return 0


def test_two_processes_write_concurrently(tmp_path):
    path = tmp_path / "c.sqlite"
    writers = [spawn_writer(path, name, 60, 0.01) for name in ("left", "right")]
    for writer in writers:
        out, err = writer.communicate(timeout=60)
        assert writer.returncode == 0 and out.strip() == "done", err
    stored = rows(path)
    assert len(stored) == 130  # 60 + 60 + the 10 shared ones once
    assert all(text.startswith("text of ") for _, text in stored)


def test_killed_mid_batch_keeps_finished_chunks(tmp_path):
    path = tmp_path / "c.sqlite"
    writer = spawn_writer(path, "killed", 100, 0.2)  # 22 chunks of 5, 0.2 s each
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and stored_so_far(path) < 10:
        time.sleep(0.05)
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=10)
    stored = rows(path)
    assert 10 <= len(stored) < 110 and len(stored) % 5 == 0  # whole chunks only
    assert all(text.startswith("text of killed-") for _, text in stored)
    assert cache_stats(path)["generations"] == len(stored)
