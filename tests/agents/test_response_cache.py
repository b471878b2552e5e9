"""CachedBackend: hits and misses, offline replay, several processes, a killed writer;
damaged, old, read-only and full files; normalized keys; a backend miscounting."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from agent_fakes import FakeBackend
from helpers import wait_until

from agents import CachedBackend
from agents.base import BackendError, GenerationRequest, LogprobRequest
from agents.cache import (
    CacheFileError,
    CacheMissError,
    CacheReadOnlyError,
    cache_clear,
    cache_stats,
)


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
        request("a", top_k=50),
        request("a", stop=("\n",)),
    ]
    cache.generate(variants)
    cache.generate(variants)
    assert len(inner.calls) == 1 and len(inner.calls[0][1]) == 7


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


def test_the_cli_clears_a_cache_only_when_told_to(tmp_path):
    """`deliberate cache clear` deleted an hour of generation without asking: without a
    terminal it now refuses unless --yes, and says how many responses are at stake."""
    path = tmp_path / "c.sqlite"
    CachedBackend(FakeBackend(), path).generate([request("a"), request("b")])
    command = [sys.executable, "-m", "algorithms.cli", "cache", "clear", "--path", str(path)]
    refused = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    assert refused.returncode != 0 and "2 cached responses: add --yes" in refused.stderr
    assert cache_stats(path)["generations"] == 2
    cleared = subprocess.run([*command, "--yes"], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    assert cleared.returncode == 0 and cache_stats(path)["generations"] == 0


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


# An opener process: waits for `go` to exist, then opens (creates) the cache at `path`.
OPENER = textwrap.dedent(
    """
    import os, sys
    from agents.cache import CachedBackend

    class Silent:
        model_id, supports_logprobs = "fake:silent", False

    path, ready, go = sys.argv[1:]
    open(ready, "w").close()
    while not os.path.exists(go):
        pass
    CachedBackend(Silent(), path)
    print("done")
    """
)


def test_processes_that_create_one_cache_file_at_once_all_open_it(tmp_path):
    # SQLite reports the switch of a new file to WAL busy at once, without waiting, when
    # another process is switching it too: without retries about one trio in three failed.
    for trial in range(6):
        folder = tmp_path / str(trial)
        folder.mkdir()
        go = folder / "go"
        readies = [folder / f"ready{k}" for k in range(3)]
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", OPENER, str(folder / "c.sqlite"), str(ready), str(go)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for ready in readies
        ]
        while not all(ready.exists() for ready in readies):
            assert all(opener.poll() is None for opener in openers), openers[0].communicate()
            time.sleep(0.01)
        go.touch()
        for opener in openers:
            out, err = opener.communicate(timeout=120)
            assert opener.returncode == 0 and out.strip() == "done", err


def test_killed_mid_batch_keeps_finished_chunks(tmp_path):
    path = tmp_path / "c.sqlite"
    writer = spawn_writer(path, "killed", 100, 0.2)  # 22 chunks of 5, 0.2 s each
    wait_until(lambda: stored_so_far(path) >= 10)  # the writer's Python starts slowly on a loaded machine
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=10)
    stored = rows(path)
    assert 10 <= len(stored) < 110 and len(stored) % 5 == 0  # whole chunks only
    assert all(text.startswith("text of killed-") for _, text in stored)
    assert cache_stats(path)["generations"] == len(stored)


# ------------------------------------------------------------- nothing wrong is served
def test_a_flipped_byte_is_a_miss_regenerated_online_and_an_error_offline(tmp_path):
    path = tmp_path / "c.sqlite"
    original = CachedBackend(FakeBackend(), path).generate([request("a", 4)])
    assert original[0].text == "Some steps.\nThe answer is 4."
    data = path.read_bytes()
    assert data.count(b"The answer is 4.") == 1  # the row is in the file itself
    path.write_bytes(data.replace(b"The answer is 4.", b"The answer is 5."))

    offline = CachedBackend(FakeBackend(), path, offline=True)
    with (
        pytest.warns(RuntimeWarning, match="1 rows of fake:model failed their checksum"),
        pytest.raises(CacheMissError, match=r"1 cached in a corrupt row \(checksum mismatch\)"),
    ):
        offline.generate([request("a", 4)])

    inner = FakeBackend()
    with pytest.warns(RuntimeWarning, match="failed their checksum .* regenerated and replaced"):
        assert CachedBackend(inner, path).generate([request("a", 4)]) == original
    assert len(inner.calls) == 1
    assert CachedBackend(FakeBackend(), path, offline=True).generate([request("a", 4)]) == original


def test_rows_of_an_older_version_are_never_served_unverified(tmp_path):
    path = tmp_path / "c.sqlite"
    original = CachedBackend(FakeBackend(), path).generate([request("a", 4), request("b", 5)])
    with sqlite3.connect(path) as db:  # the file as an older version wrote it, one row stale
        db.execute("ALTER TABLE generations DROP COLUMN checksum")
        db.execute("UPDATE generations SET text = 'stale' WHERE text LIKE '%answer is 4.'")

    offline = CachedBackend(FakeBackend(), path, offline=True)
    with (
        pytest.warns(RuntimeWarning, match="1 rows .* older version without a checksum"),
        pytest.raises(CacheMissError, match="1 cached without a checksum by an older version"),
    ):
        offline.generate([request("a", 4)])

    inner = FakeBackend()
    with pytest.warns(RuntimeWarning, match="cannot be verified; .* regenerated and replaced"):
        again = CachedBackend(inner, path).generate([request("a", 4), request("b", 5)])
    assert again == original and [len(requests) for _, requests in inner.calls] == [2]
    replay = CachedBackend(FakeBackend(), path, offline=True)
    assert replay.generate([request("a", 4), request("b", 5)]) == original
    assert cache_stats(path)["generations"] == 2  # replaced, not duplicated


def test_a_backend_returning_too_few_or_too_many_results_is_a_named_error(tmp_path):
    class Miscounting(FakeBackend):
        def __init__(self, extra: int):
            super().__init__()
            self.extra = extra

        def generate(self, requests):
            results = super().generate(requests)
            return results[: len(results) + self.extra] if self.extra < 0 else results * 2

    path = tmp_path / "c.sqlite"
    for extra, returned in ((-1, 1), (1, 4)):
        cache = CachedBackend(Miscounting(extra), path, chunk_size=2)
        with pytest.raises(
            BackendError, match=rf"fake:model .* returned {returned} results for 2 requests"
        ):
            cache.generate([request("a", 1), request("b", 2)])
    assert cache_stats(path)["generations"] == 0


# ----------------------------------------------------------------- unusable files
def test_garbage_and_truncated_files_are_clear_errors_naming_the_file(tmp_path):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database\n" * 100)
    for offline in (False, True):
        with pytest.raises(
            CacheFileError, match=rf"{garbage} is not a SQLite database .* move it away"
        ):
            CachedBackend(FakeBackend(), garbage, offline=offline)
    with pytest.raises(CacheFileError, match=str(garbage)):
        cache_stats(garbage)
    assert garbage.read_bytes() == b"this is not a database\n" * 100  # changed nothing

    missing = tmp_path / "missing.sqlite"
    with pytest.raises(CacheFileError, match=rf"{missing} does not exist"):
        CachedBackend(FakeBackend(), missing, offline=True)
    assert not missing.exists()

    truncated = tmp_path / "truncated.sqlite"
    many = [request("long question " * 40, seed) for seed in range(300)]
    CachedBackend(FakeBackend(), truncated).generate(many)
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 2])
    for offline in (False, True):
        with pytest.raises(
            CacheFileError, match=rf"{truncated} is not a SQLite database or is damaged"
        ):
            CachedBackend(FakeBackend(), truncated, offline=offline).generate(many)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A fresh directory any user can enter (pytest's temporary directories are private)."""
    with tempfile.TemporaryDirectory() as directory:
        os.chmod(directory, 0o755)
        yield Path(directory)
        os.chmod(directory, 0o755)  # writable again, to be removed


@contextmanager
def unprivileged() -> Iterator[None]:
    """Act as an unprivileged user: root writes through any file permission."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


@pytest.mark.parametrize("read_only", ["file", "directory"])
def test_replay_from_read_only_media_offline_and_online(shared_dir, read_only):
    path = shared_dir / "c.sqlite"
    original = CachedBackend(FakeBackend(), path).generate([request("a", 4)])
    path.chmod(0o444)
    shared_dir.chmod(0o555 if read_only == "directory" else 0o777)
    inner = FakeBackend()
    with unprivileged():
        replay = CachedBackend(inner, path, offline=True)
        assert replay.generate([request("a", 4)]) == original
        with pytest.raises(CacheMissError, match="1 not cached"):
            replay.generate([request("new")])
        assert cache_stats(path)["generations"] == 1
        online = CachedBackend(inner, path)  # opened read-only: it replays what it holds
        assert not online.writable and online.generate([request("a", 4)]) == original
        with pytest.raises(CacheReadOnlyError, match=rf"{path} cannot be written .* 1 not cached"):
            online.generate([request("a", 4), request("new")])
    assert inner.calls == []  # nothing was generated that could not be stored
    assert cache_stats(path)["generations"] == 1


@pytest.mark.parametrize("read_only", ["file", "directory"])
def test_a_cache_marked_read_only_is_never_written_even_by_root(shared_dir, read_only):
    """``chmod a-w`` marks a cache (say, one shipped beside a paper's results) read-only;
    root, whom permissions do not stop, replays it all the same and changes nothing in it."""
    path = shared_dir / "c.sqlite"
    original = CachedBackend(FakeBackend(), path).generate([request("a", 4)])
    (path if read_only == "file" else shared_dir).chmod(0o444 if read_only == "file" else 0o555)
    before = path.read_bytes()
    inner = FakeBackend()
    cache = CachedBackend(inner, path)
    assert not cache.writable and cache.generate([request("a", 4)]) == original
    with pytest.raises(CacheReadOnlyError, match=rf"{path} cannot be written .* 1 not cached"):
        cache.generate([request("new")])
    assert inner.calls == [] and path.read_bytes() == before


def test_a_cache_in_a_missing_read_only_directory_is_a_clear_error(shared_dir):
    shared_dir.chmod(0o555)
    with unprivileged(), pytest.raises(CacheFileError, match=rf"{shared_dir}.* cannot be written"):
        CachedBackend(FakeBackend(), shared_dir / "new.sqlite")


def read_only_mount(directory: Path, script: str) -> subprocess.CompletedProcess:
    """Run ``script`` in Python with ``directory`` bind-mounted read-only over itself (a mount
    namespace of its own: nothing changes outside), as a read-only file system would be."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) to mount a read-only file system")
    command = (
        f'mount --bind "{directory}" "{directory}" && mount -o remount,ro,bind "{directory}" '
        f'&& exec "{sys.executable}" -c "$0"'
    )
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    probe = subprocess.run([*unshare, "sh", "-c", command, "pass"], check=False, capture_output=True)
    if probe.returncode:
        pytest.skip(f"cannot mount read-only here: {probe.stderr.decode().strip()}")
    return subprocess.run(
        [*unshare, "sh", "-c", command, textwrap.dedent(script)],
        check=False,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


@pytest.mark.parametrize("with_log", [False, True])
def test_replay_from_a_read_only_file_system(tmp_path, with_log):
    """On a read-only mount SQLite cannot open a WAL file with ``mode=ro`` (SQLITE_CANTOPEN);
    it is replayed all the same, offline and online, and a miss changes nothing."""
    path = tmp_path / "c.sqlite"
    original = CachedBackend(FakeBackend(), path).generate([request("a", 4)])
    if with_log:  # a killed writer left its write-ahead log (and index) beside the file
        writer = f"""if True:
            import os, sqlite3
            db = sqlite3.connect({str(path)!r})
            db.execute("UPDATE generations SET created = 0")
            db.commit()
            os._exit(0)
        """
        subprocess.run([sys.executable, "-c", writer], check=True)
        assert Path(f"{path}-wal").stat().st_size > 0
    before = sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir())
    result = read_only_mount(tmp_path, f"""
        import json, warnings
        from agent_fakes import FakeBackend
        from agents import CachedBackend
        from agents.base import GenerationRequest
        from agents.cache import CacheMissError, CacheReadOnlyError, cache_stats
        ask = lambda text, seed=0: GenerationRequest(({{"role": "user", "content": text}},), seed=seed)
        inner = FakeBackend()
        for offline in (True, False):
            cache = CachedBackend(inner, {str(path)!r}, offline=offline)
            print(json.dumps([cache.writable, cache.generate([ask("a", 4)])[0].text]))
            try:
                cache.generate([ask("new")])
            except CacheMissError as error:
                print(json.dumps([type(error).__name__, str(error)]))
        print(json.dumps([cache_stats({str(path)!r})["generations"], len(inner.calls)]))
    """)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0] == lines[2] == [False, original[0].text]
    assert lines[1][0] == "CacheMissError" and "1 not cached" in lines[1][1]
    assert lines[3][0] == "CacheReadOnlyError" and f"{path} cannot be written" in lines[3][1]
    assert lines[4] == [1, 0]
    assert sorted((p.name, p.read_bytes()) for p in tmp_path.iterdir()) == before


def test_a_full_disk_warns_and_returns_the_completions_uncached(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite"
    cache = CachedBackend(FakeBackend(), path)
    cached = cache.generate([request("before")])
    connect = sqlite3.connect

    def connect_to_a_full_database(*args, **kwargs):  # no page can be added: SQLITE_FULL
        db = connect(*args, **kwargs)
        db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")
        return db

    monkeypatch.setattr(sqlite3, "connect", connect_to_a_full_database)
    many = [request("long question " * 40, seed) for seed in range(100)]
    with pytest.warns(
        RuntimeWarning, match=rf"{path}: the disk is full .* returned but not cached"
    ):
        results = cache.generate([request("before"), *many])
    assert results[0] == cached[0]
    assert [r.text for r in results[1:]] == [r.text for r in FakeBackend().generate(many)]
    monkeypatch.undo()
    assert len(rows(path)) == 1  # intact, the failed transactions rolled back


# ------------------------------------------------------------------------ keys
def test_equal_parameter_values_make_equal_keys(tmp_path):
    path = tmp_path / "c.sqlite"
    inner = FakeBackend()
    cache = CachedBackend(inner, path)
    plain = request("a", 3, temperature=0.0, top_p=0.5, max_tokens=9)
    cache.generate([plain])
    variants = [
        request("a", 3, temperature=0, top_p=0.5, max_tokens=9),
        request(
            "a",
            np.int64(3),
            temperature=np.float64(0.0),
            top_p=np.float64(0.5),
            max_tokens=np.int32(9),
        ),
        request("a", np.uint8(3), temperature=np.int64(0), top_p=0.5, max_tokens=9),
    ]
    offline = CachedBackend(FakeBackend(), path, offline=True)
    assert offline.generate(variants) == cache.generate(variants) == cache.generate([plain]) * 3
    assert len(inner.calls) == 1


def test_keys_of_plain_values_are_those_of_earlier_versions(tmp_path):
    path = tmp_path / "c.sqlite"
    messages = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "a"})
    ask = GenerationRequest(
        messages, max_tokens=64, temperature=0.3, top_p=0.9, seed=7, stop=("\n",)
    )
    CachedBackend(FakeBackend(), path).generate([ask])
    earlier = ("generate", "fake:model", messages, 64, 0.3, 0.9, 7, ("\n",))
    expected = hashlib.sha256(json.dumps(earlier, sort_keys=True).encode()).hexdigest()
    assert [key for key, _ in rows(path)] == [expected]


@pytest.mark.parametrize(
    ("bad", "parameter"),
    [
        (request("a", 3.5), "seed"),
        (request("a", max_tokens=9.0), "max_tokens"),
        (request("a", temperature="hot"), "temperature"),
        (request("a", top_p=None), "top_p"),
        (request("a", stop="\n"), "stop"),
        (GenerationRequest(({"role": "user", "content": 5},)), "messages"),
    ],
)
def test_values_that_cannot_be_keys_are_type_errors_naming_the_parameter(tmp_path, bad, parameter):
    inner = FakeBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    with pytest.raises(TypeError, match=rf"^{parameter} must"):
        cache.generate([request("fine"), bad])
    assert inner.calls == [] and cache_stats(tmp_path / "c.sqlite")["generations"] == 0


def test_a_batching_backend_gets_a_whole_phase_per_call(tmp_path):
    """A backend's ``preferred_chunk`` sets the chunk: 72 misses reach a batching backend in
    one call (the main job's phase), a sequential one in chunks of 64."""
    batching, sequential = FakeBackend(), FakeBackend()
    batching.preferred_chunk = 512
    phase = [request(f"q{k}", k) for k in range(72)]
    CachedBackend(batching, tmp_path / "b.sqlite").generate(phase)
    CachedBackend(sequential, tmp_path / "s.sqlite").generate(phase)
    assert [len(requests) for _, requests in batching.calls] == [72]
    assert [len(requests) for _, requests in sequential.calls] == [64, 8]


def test_the_first_row_of_a_key_is_kept_and_a_later_writer_serves_it(tmp_path):
    """Red team: two processes on one cache missed the same request at once; the last to
    store replaced the first's row, so the first run's replay served another text than it
    was rewarded on (a batched backend's text can depend on its batch)."""
    from agents.base import Generation

    class BatchDependent:
        model_id = "ctranslate2:demo@sha256:" + "0" * 32
        supports_logprobs = False

        def __init__(self, text, meanwhile=None):
            self.text, self.meanwhile = text, meanwhile

        def generate(self, requests):
            if self.meanwhile:
                self.meanwhile()  # the other process generates and stores while this one decodes
            return [Generation(self.text, 10, 4, "stop") for _ in requests]

    path, asked, served = tmp_path / "shared.sqlite", request("What is 2+2?"), {}
    first = CachedBackend(BatchDependent("The answer is 5."), path)
    late = CachedBackend(
        BatchDependent("The answer is 4.", meanwhile=lambda: served.setdefault("first", first.generate([asked])[0].text)),
        path,
    )
    served["late"] = late.generate([asked])[0].text
    replay = CachedBackend(BatchDependent("never called"), path, offline=True).generate([asked])[0].text
    assert served == {"first": "The answer is 5.", "late": "The answer is 5."} and replay == "The answer is 5."
