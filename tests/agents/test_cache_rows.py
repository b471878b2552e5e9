"""Forged cache rows: a valid checksum over values no backend returns is never served or
merged (the error or warning names the row's key); a backend returning such values is an
error and nothing of its call is stored; request parameters reach the backend normalized."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np
import pytest
from agent_fakes import FakeBackend

from agents import CachedBackend
from agents.base import BackendError, Generation, GenerationRequest, LogprobRequest, LogprobResult
from agents.cache import CacheMissError, cache_stats
from agents.cache_merge import CacheRowError, merge_caches

ASK = GenerationRequest(({"role": "user", "content": "What is 3 + 4?"},), seed=4)
SCORE = LogprobRequest(({"role": "user", "content": "Is 7 right?"},), ("Yes", "No"))
COLUMNS = {
    "generations": ("text", "prompt_tokens", "completion_tokens", "finish_reason"),
    "logprobs": ("logprobs", "prompt_tokens"),
}


def forge(path, table: str, **values) -> str:
    """Overwrite the one row of ``table`` with ``values`` and a checksum that matches them,
    as anyone who read this package's source could; return the row's key."""
    with sqlite3.connect(path) as db:
        key, *row = db.execute(f"SELECT key, {', '.join(COLUMNS[table])} FROM {table}").fetchone()
        row = dict(zip(COLUMNS[table], row, strict=True)) | values
        db.execute(f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in row)} WHERE key = ?", (*row.values(), key))
        stored = db.execute(f"SELECT {', '.join(COLUMNS[table])} FROM {table}").fetchone()
        checksum = hashlib.sha256(json.dumps([key, *stored]).encode()).hexdigest()
        db.execute(f"UPDATE {table} SET checksum = ? WHERE key = ?", (checksum, key))
    return key


FORGERIES = [
    ("generations", {"prompt_tokens": "many"}, "prompt_tokens is 'many', not an integer >= 0"),
    ("generations", {"completion_tokens": -7}, "completion_tokens is -7, not an integer >= 0"),
    ("generations", {"completion_tokens": 2.5}, "completion_tokens is 2.5, not an integer >= 0"),
    ("generations", {"finish_reason": "pwned"}, "finish_reason is 'pwned', not one of"),
    ("generations", {"finish_reason": "stop "}, "finish_reason is 'stop ', not one of"),
    ("logprobs", {"logprobs": "[0.0, 3.0]"}, "not a JSON list of floats <= 0 and nulls"),
    ("logprobs", {"logprobs": "[NaN, -1.0]"}, "not a JSON list of floats <= 0 and nulls"),
    ("logprobs", {"logprobs": '["Yes", -1.0]'}, "not a JSON list of floats <= 0 and nulls"),
    ("logprobs", {"logprobs": '{"Yes": -0.1}'}, "not a JSON list of floats <= 0 and nulls"),
    ("logprobs", {"logprobs": "not json"}, "not a JSON list of floats <= 0 and nulls"),
    ("logprobs", {"logprobs": "[-0.1]"}, "logprobs holds 1 scores for 2 candidates"),
    ("logprobs", {"prompt_tokens": -1}, "prompt_tokens is -1, not an integer >= 0"),
]


def filled(path) -> tuple[Generation, LogprobResult]:
    cache = CachedBackend(FakeBackend(), path)
    return cache.generate([ASK])[0], cache.next_token_logprobs([SCORE])[0]


def serve(cache: CachedBackend, table: str):
    return cache.generate([ASK]) if table == "generations" else cache.next_token_logprobs([SCORE])


@pytest.mark.parametrize(("table", "values", "problem"), FORGERIES)
def test_a_forged_row_is_never_served_and_its_key_is_named(tmp_path, table, values, problem):
    path = tmp_path / "c.sqlite"
    original = filled(path)
    key = forge(path, table, **values)

    with pytest.raises(CacheMissError, match=rf"1 cached with invalid values \(key {key}: .*{problem}"):
        serve(CachedBackend(FakeBackend(), path, offline=True), table)

    inner = FakeBackend()
    with pytest.warns(RuntimeWarning, match=rf"key {key}: .*{problem}.*regenerated and replaced"):
        again = serve(CachedBackend(inner, path), table)
    assert again == [original[table == "logprobs"]] and len(inner.calls) == 1
    assert serve(CachedBackend(FakeBackend(), path, offline=True), table) == again  # replaced


@pytest.mark.parametrize(("table", "values", "problem"), [f for f in FORGERIES if "candidates" not in f[2]])
def test_merging_a_forged_row_is_refused_naming_its_key(tmp_path, table, values, problem):
    good, forged, out = tmp_path / "good.sqlite", tmp_path / "forged.sqlite", tmp_path / "out.sqlite"
    CachedBackend(FakeBackend(), good).generate([GenerationRequest(({"role": "user", "content": "other"},))])
    filled(forged)
    key = forge(forged, table, **values)
    with pytest.raises(CacheRowError, match=rf"forged\.sqlite holds a {table} row .* key {key} .*{problem}"):
        merge_caches(out, [good, forged])
    assert cache_stats(out)["generations"] == cache_stats(out)["logprobs"] == 0  # nothing merged


def test_a_forged_file_with_columns_of_other_types_is_refused(tmp_path):
    """A forger also writes the schema: a text column without a type keeps a number."""
    path = tmp_path / "forged.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE generations (key TEXT PRIMARY KEY, model_id TEXT NOT NULL, text, "
            "prompt_tokens, completion_tokens, finish_reason, created REAL NOT NULL, checksum TEXT)"
        )
    CachedBackend(FakeBackend(), path).generate([ASK])
    key = forge(path, "generations", text=42, prompt_tokens=1.0)
    with pytest.raises(CacheMissError, match=rf"key {key}: text is a int, not a string"):
        CachedBackend(FakeBackend(), path, offline=True).generate([ASK])
    with pytest.raises(CacheRowError, match=rf"key {key} .*text is a int, not a string"):
        merge_caches(tmp_path / "out.sqlite", [path])


def test_the_cli_refuses_a_forged_row(tmp_path, capsys):
    from algorithms.cli import main

    filled(tmp_path / "a.sqlite")
    key = forge(tmp_path / "a.sqlite", "generations", completion_tokens=-7)
    with pytest.raises(SystemExit):
        main(["cache", "merge", str(tmp_path / "out.sqlite"), str(tmp_path / "a.sqlite")])
    err = capsys.readouterr().err  # one line in command-line terms; --debug raises the CacheRowError
    assert err.startswith("deliberate cache merge: error:") and key in err and "nothing was merged" in err
    with pytest.raises(CacheRowError, match=key):
        main(["cache", "merge", str(tmp_path / "out.sqlite"), str(tmp_path / "a.sqlite"), "--debug"])


class Returning(FakeBackend):
    """A backend whose second result of every call is ``bad``."""

    def __init__(self, bad):
        super().__init__()
        self.bad = bad

    def generate(self, requests):
        results = super().generate(requests)
        return [results[0], self.bad, *results[2:]]

    def next_token_logprobs(self, requests):
        results = super().next_token_logprobs(requests)
        return [results[0], self.bad, *results[2:]]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (Generation("x", np.int64(3), 1, "stop"), "prompt_tokens is np.int64.3., not an integer >= 0"),
        (Generation("x", 3, -1, "stop"), "completion_tokens is -1"),
        (Generation("x", 3, True, "stop"), "completion_tokens is True"),
        (Generation(None, 3, 1, "stop"), "text is a NoneType"),
        (Generation("x", 3, 1, "eos"), "finish_reason is 'eos'"),
        ("just a text", "a str, not a Generation"),
        (LogprobResult((0.5, -1.0), 3), "not a JSON list of floats <= 0"),
        (LogprobResult((np.float32(-0.5), -1.0), 3), "cannot be stored"),
        (LogprobResult((-0.5,), 3), "1 scores for 2 candidates"),
    ],
)
def test_a_backend_returning_what_no_row_may_hold_is_a_named_error_and_nothing_is_stored(
    tmp_path, bad, problem
):
    path = tmp_path / "c.sqlite"
    cache = CachedBackend(Returning(bad), path)
    if isinstance(bad, LogprobResult):
        calls = [LogprobRequest(SCORE.messages + ({"role": "user", "content": str(k)},), ("Yes", "No")) for k in range(3)]
        call = cache.next_token_logprobs
    else:
        calls, call = [GenerationRequest(ASK.messages, seed=k) for k in range(3)], cache.generate
    with pytest.raises(BackendError, match=rf"fake:model .* returned an invalid result for .*{problem}"):
        call(calls)
    assert cache_stats(path)["generations"] == cache_stats(path)["logprobs"] == 0


def test_numpy_parameters_reach_the_backend_as_python_numbers(tmp_path):
    inner = FakeBackend()
    cache = CachedBackend(inner, tmp_path / "c.sqlite")
    cache.generate([GenerationRequest(ASK.messages, seed=np.int64(9), max_tokens=np.int32(5), top_p=np.float32(0.5))])
    sent = inner.calls[0][1][0]
    assert (sent.seed, sent.max_tokens, sent.top_p) == (9, 5, 0.5)
    assert (type(sent.seed), type(sent.max_tokens), type(sent.top_p)) == (int, int, float)
    json.dumps(sent.seed)  # what an HTTP backend does with it


@pytest.mark.parametrize("seed", [True, np.bool_(False)])
def test_a_boolean_seed_is_a_type_error(tmp_path, seed):
    with pytest.raises(TypeError, match="^seed must be an integer"):
        CachedBackend(FakeBackend(), tmp_path / "c.sqlite").generate([GenerationRequest(ASK.messages, seed=seed)])


def test_a_text_that_starts_with_a_nul_is_measured_whole(tmp_path):
    """Red team: SQLite's ``length`` of a text stops at its first NUL, so a 2 MiB row led by
    one was served to a one-token request and merged with ``--trust``."""
    path, out = tmp_path / "c.sqlite", tmp_path / "out.sqlite"
    filled(path)
    key = forge(path, "generations", text="\x00" + "7" * 2**21)
    with pytest.raises(CacheMissError, match=rf"key {key}: 2,097,153 characters, over the limit"):
        CachedBackend(FakeBackend(), path, offline=True).generate([ASK])
    with pytest.raises(CacheRowError, match=r"row of 2,097,153 characters, over the 1,048,576 any row may hold"):
        merge_caches(out, [path], trust=True)
