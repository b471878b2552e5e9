"""Progress of batched generation (agents.progress): calls count what they did, nested calls
advance the outer bar, and reporting changes no output."""

from __future__ import annotations

import threading

import pytest
from agent_fakes import FakeBackend

from agents import CachedBackend, progress
from agents.base import GenerationRequest, LogprobRequest


def chat(text: str):
    return ({"role": "user", "content": text},)


REQUESTS = [GenerationRequest(chat(f"What is {k} + {k}?"), max_tokens=8, seed=k) for k in range(6)]


def test_a_call_outside_reporting_counts_nothing():
    with progress.call(3) as advance:
        advance(3, 10)  # no error, nothing to count into
    with progress.reporting() as tally:
        pass
    assert (tally.calls, tally.requests, tally.done, tally.tokens) == (0, 0, 0, 0)


def test_a_call_counts_its_requests_and_tokens_and_completes_when_it_returns():
    with progress.reporting(enabled=False) as tally, progress.call(5) as advance:
        advance(2, 30)
        assert (tally.done, tally.tokens) == (2, 30)
    assert (tally.calls, tally.requests, tally.done, tally.tokens) == (1, 5, 5, 30)  # the rest on return


def test_a_call_that_raises_is_not_completed():
    with progress.reporting(enabled=False) as tally, pytest.raises(RuntimeError), progress.call(4) as advance:
        advance(1, 5)
        raise RuntimeError("backend failed")
    assert (tally.requests, tally.done) == (4, 1)


def test_a_nested_call_advances_the_outer_one_and_opens_no_bar():
    with progress.reporting(enabled=False) as tally, progress.call(6) as outer:
        outer(2, 0)
        with progress.call(4) as inner:
            assert inner == outer
            inner(4, 40)
        assert tally.done == 6
    assert (tally.calls, tally.requests, tally.done, tally.tokens) == (1, 6, 6, 40)


def test_threads_handed_the_advance_count_every_row():
    with progress.reporting(enabled=False) as tally, progress.call(400) as advance:
        threads = [threading.Thread(target=lambda: [advance(1, 2) for _ in range(100)]) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert (tally.done, tally.tokens) == (400, 800)


def test_the_innermost_reporting_block_gets_the_calls():
    with progress.reporting(enabled=False) as outer:
        with progress.reporting(enabled=False) as inner, progress.call(2):
            pass
        with progress.call(3):
            pass
    assert (inner.requests, outer.requests) == (2, 3)


def test_the_cache_advances_by_its_hits_and_its_misses_with_outputs_unchanged(tmp_path):
    unreported, backend = (CachedBackend(FakeBackend(), tmp_path / f"{name}.sqlite") for name in ("a", "b"))
    for cache in (unreported, backend):
        cache.generate(REQUESTS[:2])  # two hits in the next call
    plain = unreported.generate(REQUESTS)
    with progress.reporting(enabled=False) as tally:
        again = backend.generate(REQUESTS)
    assert again == plain
    assert (tally.calls, tally.requests, tally.done) == (1, 6, 6)
    assert backend.hits == 2 and backend.misses == 6  # 2 + 4: one call's misses, one bar


def test_a_bar_is_drawn_on_stderr_only_when_enabled(monkeypatch, capsys):
    monkeypatch.setattr(progress, "BAR_DELAY_S", 0.0)
    with progress.reporting(enabled=False), progress.call(3, "generate") as advance:
        advance(3, 12)
    assert capsys.readouterr().err == ""
    with progress.reporting(), progress.call(3, "generate") as advance:
        advance(3, 12)
    assert "generate:" in capsys.readouterr().err  # the bar, cleared when the call returned


def test_logprob_calls_are_reported_too(tmp_path):
    backend = CachedBackend(FakeBackend(), tmp_path / "cache.sqlite")
    asks = [LogprobRequest(chat(f"Is {k} even?"), ("Yes", "No")) for k in range(3)]
    with progress.reporting(enabled=False) as tally:
        backend.next_token_logprobs(asks)
    assert (tally.requests, tally.done, tally.tokens) == (3, 3, 0)


def test_sampling_a_tiny_trainable_lm_advances_row_by_row_without_changing_outputs():
    pytest.importorskip("peft", reason="the train extra is not installed")
    from agents.trainable_lm import TrainableLM, tiny_model

    model, tokenizer = tiny_model()
    lm = TrainableLM(model, tokenizer, agents=["agent_0"], micro_batch_size=3)
    chats = [chat(f"Say {word}.") for word in ("yes", "no", "up", "down", "red")]
    seeds = list(range(5))
    plain = lm.sample("agent_0", chats, seeds, max_new_tokens=12, temperature=1.0)
    with progress.reporting(enabled=False) as tally:
        reported = lm.sample("agent_0", chats, seeds, max_new_tokens=12, temperature=1.0)
    assert reported == plain
    assert (tally.calls, tally.requests, tally.done) == (1, 5, 5)
    assert tally.tokens == sum(len(c.token_ids) for c in reported)  # the rows reported, not the top-up
