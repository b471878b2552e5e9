"""merge_caches: the nodes' caches become one that replays offline; conflicts refused, corrupt rows skipped."""

from __future__ import annotations

import os
import sqlite3

import pytest
from agent_fakes import FakeBackend

from agents import CachedBackend
from agents.base import Generation, GenerationRequest, LogprobRequest
from agents.cache import cache_stats
from agents.cache_merge import CacheConflictError, merge_caches
from algorithms.cli import main


def request(text: str, seed: int = 0) -> GenerationRequest:
    return GenerationRequest(({"role": "user", "content": text},), seed=seed)


def fill(path, texts, backend=None):
    """A node's cache holding one generation per text (and a critic's log-probs)."""
    cache = CachedBackend(backend or FakeBackend(), path)
    results = cache.generate([request(text, seed=k) for k, text in enumerate(texts)])
    cache.next_token_logprobs([LogprobRequest(({"role": "user", "content": texts[0]},), ("Yes", "No"))])
    return results


class OtherAnswers(FakeBackend):
    """A backend that answers the same requests differently (another model under one id)."""

    def generate(self, requests):
        return [Generation("Something else.", 1, 1, "stop") for _ in requests]


def test_merged_caches_replay_every_node_offline(tmp_path):
    node_a = fill(tmp_path / "a.sqlite", ["q1", "q2"])
    node_b = fill(tmp_path / "b.sqlite", ["q1", "q3"])  # q1 with seed 0 is on both nodes
    counts = merge_caches(tmp_path / "merged" / "all.sqlite", [tmp_path / "a.sqlite", tmp_path / "b.sqlite"])
    assert counts == {"added": 4, "duplicates": 2, "skipped": 0, "trusted": 0, "foreign": 0}  # 3 generations + 1 log-probs row
    replay = CachedBackend(FakeBackend(), tmp_path / "merged" / "all.sqlite", offline=True)
    assert replay.generate([request("q1", 0), request("q2", 1), request("q3", 1)]) == [*node_a, node_b[1]]


def test_conflicting_rows_are_refused_and_the_output_is_unchanged(tmp_path):
    fill(tmp_path / "a.sqlite", ["q1"])
    fill(tmp_path / "b.sqlite", ["q2", "q1"], backend=OtherAnswers())  # q1, seed 1: no clash
    fill(tmp_path / "c.sqlite", ["q1"], backend=OtherAnswers())  # q1, seed 0: clashes with a
    out = tmp_path / "out.sqlite"
    merge_caches(out, [tmp_path / "a.sqlite"])
    with pytest.raises(CacheConflictError, match=r"c\.sqlite and the caches merged before it.*different generations"):
        merge_caches(out, [tmp_path / "b.sqlite", tmp_path / "c.sqlite"])
    assert cache_stats(out)["generations"] == 1  # b's rows were rolled back too


def test_corrupt_rows_are_skipped_with_a_warning(tmp_path):
    fill(tmp_path / "a.sqlite", ["q1", "q2"])
    with sqlite3.connect(tmp_path / "a.sqlite") as db:
        db.execute("UPDATE generations SET text = 'flipped' WHERE text LIKE '%answer is 1.'")
    with pytest.warns(UserWarning, match=r"a\.sqlite: skipped 1 generations rows that failed their checksum"):
        counts = merge_caches(tmp_path / "out.sqlite", [tmp_path / "a.sqlite"])
    assert counts == {"added": 2, "duplicates": 0, "skipped": 1, "trusted": 0, "foreign": 0}
    replay = CachedBackend(FakeBackend(), tmp_path / "out.sqlite", offline=True)
    assert replay.generate([request("q1", 0)])[0].text.endswith("The answer is 0.")


def test_bad_arguments_are_errors_that_name_them(tmp_path):
    with pytest.raises(ValueError, match="at least one input"):
        merge_caches(tmp_path / "out.sqlite", [])
    with pytest.raises(ValueError, match="is the output cache"):
        merge_caches(tmp_path / "out.sqlite", [tmp_path / "out.sqlite"])
    CachedBackend(FakeBackend(), tmp_path / "out.sqlite").generate([request("q1", 0)])
    os.link(tmp_path / "out.sqlite", tmp_path / "linked.sqlite")  # red team: a bare "disk I/O error"
    with pytest.raises(ValueError, match=r"input .*linked\.sqlite is the output cache"):
        merge_caches(tmp_path / "out.sqlite", [tmp_path / "linked.sqlite"])
    with pytest.raises(Exception, match=r"missing\.sqlite does not exist"):
        merge_caches(tmp_path / "out.sqlite", [tmp_path / "missing.sqlite"])


def test_cli_cache_merge(tmp_path, capsys):
    fill(tmp_path / "a.sqlite", ["q1"])
    fill(tmp_path / "b.sqlite", ["q2"])
    main(["cache", "merge", str(tmp_path / "out.sqlite"), str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")])
    assert '"added": 4' in capsys.readouterr().out
    assert cache_stats(tmp_path / "out.sqlite")["generations"] == 2
