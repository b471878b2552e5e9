"""The CTranslate2 backend on the bundled SmolLM2, converted once per session into a tmp cache."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import shutil

import pytest

pytest.importorskip("ctranslate2", reason="the ctranslate2 extra is not installed")
pytest.importorskip("transformers", reason="the ctranslate2 extra is not installed")

from agent_fakes import Counting, make_turn

from agents import CachedBackend, LLMAgent, make_backend, prompts
from agents import ctranslate2_backend as ct2
from agents import ctranslate2_convert as convert
from agents.base import GenerationRequest, LogprobRequest
from agents.fingerprint import directory_sha256
from agents.llamacpp_backend import default_model_path
from agents.specs import member_from_spec, parse_spec


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("ct2-models")


@pytest.fixture(scope="session")
def backend(cache_dir):
    """The bundled GGUF, converted into ``cache_dir`` (the one real conversion of the session)."""
    return make_backend("ctranslate2", cache_dir=cache_dir, n_threads=2)


def chat(text: str):
    return ({"role": "user", "content": text},)


REQUESTS = [
    GenerationRequest(chat("What is 12 + 7?"), max_tokens=12, temperature=0.7, seed=1),
    GenerationRequest(chat("Name a color."), max_tokens=5, temperature=0.7, seed=2),
    GenerationRequest(chat("Hi"), max_tokens=16, temperature=0.0, seed=3),
    GenerationRequest(chat("Count: 1, 2, 3,"), max_tokens=20, temperature=0.7, seed=4, stop=(",",)),
]


def test_generate_returns_text_with_token_counts_and_finish_reasons(backend):
    digest = directory_sha256(backend.model_dir)  # the converted model's own files
    assert backend.model_id == f"ctranslate2:SmolLM2-135M-Instruct-Q4_1-float32@sha256:{digest[:32]}"
    out = backend.generate(REQUESTS)
    assert all(g.text.strip() for g in out)
    assert all(0 < g.completion_tokens <= r.max_tokens for g, r in zip(out, REQUESTS))
    assert all(g.prompt_tokens > 20 for g in out)  # the chat template's system turn is counted
    assert out[1].completion_tokens == 5 and out[1].finish_reason == "length"  # its own budget
    assert out[2].finish_reason == "stop" and out[2].completion_tokens < 16  # greedy reply ends
    assert "," not in out[3].text


def test_a_changed_conversion_is_another_model_whose_rows_are_not_served(backend, tmp_path):
    """Red team, round twenty-two: the converted folder was named, and the model identified,
    by its GGUF alone, so weights changed in the folder (planted, edited, converted by
    another version) kept the id, and a response cache served their rows to honest runs."""
    copied = tmp_path / "ct2" / backend.model_dir.name
    shutil.copytree(backend.model_dir, copied)
    same = make_backend("ctranslate2", cache_dir=str(copied.parent), n_threads=2)
    assert same.model_dir == copied and same.model_id == backend.model_id  # the same bytes: the same model
    config = json.loads((copied / "config.json").read_text())
    (copied / "config.json").write_text(json.dumps({**config, "layer_norm_epsilon": 0.5}))
    changed = make_backend("ctranslate2", cache_dir=str(copied.parent), n_threads=2)
    assert changed.model_dir == copied and changed.model_id != backend.model_id


def test_a_batch_without_stops_or_own_budgets_decodes_the_same_without_the_callback(backend):
    """Rows sharing max_tokens and no stop string skip the per-token Python callback; the
    texts are those of the callback's path (forced here by a stop string that never occurs)."""
    plain = [GenerationRequest(chat(f"What is {k} + {k}?"), max_tokens=12, temperature=0.0) for k in (3, 40)]
    guarded = [dataclasses.replace(request, stop=("\x00",)) for request in plain]
    assert backend.generate(plain) == backend.generate(guarded)
    assert all(g.completion_tokens <= 12 for g in backend.generate(plain))


def test_prompts_of_far_apart_lengths_are_decoded_in_sub_batches_with_their_own_budgets(backend):
    """A long and a short prompt land in different sub-batches; each row still ends at its own
    max_tokens (the callback's row numbers are the sub-batch's, mapped back to the batch's)."""
    long = "Read this and then answer. " + "The sky is blue and the grass is green. " * 40 + "What is 2 + 2?"
    requests = [
        GenerationRequest(chat(long), max_tokens=3, temperature=0.0),
        GenerationRequest(chat("What is 5 + 5?"), max_tokens=12, temperature=0.0),
        GenerationRequest(chat(long + " Explain."), max_tokens=12, temperature=0.0),
    ]
    lengths = [len(backend._prompt_tokens(request.messages)) for request in requests]
    assert len(ct2.length_buckets(lengths, 12)) == 2
    got = backend.generate(requests)
    assert [g.prompt_tokens for g in got] == lengths
    assert got[0].completion_tokens == 3 and got[0].finish_reason == "length"
    assert got[1].completion_tokens > 3 and got[2].completion_tokens > 3
    assert backend.generate(requests[1:2]) == got[1:2]  # greedy, alone in its sub-batch either way


def test_the_same_batch_and_seeds_give_the_same_texts(backend, cache_dir):
    first = backend.generate(REQUESTS)
    assert backend.generate(REQUESTS) == first  # the same loaded model, called again
    assert make_backend("ctranslate2", cache_dir=cache_dir, n_threads=2).generate(REQUESTS) == first
    twice = backend.generate([REQUESTS[0], REQUESTS[1], REQUESTS[0]])
    assert twice[0] == twice[2]  # identical requests in one batch: one generation
    reseeded = [
        GenerationRequest(chat("Tell me a short story."), max_tokens=16, temperature=1.0, seed=s)
        for s in (10, 11, 12)
    ]
    assert len({g.text for g in backend.generate(reseeded)}) > 1  # sampling: seeds differ


def test_each_copy_of_the_model_draws_from_its_own_stream(backend):
    """Two rows of one prompt fall to the two copies, one each: were both copies seeded
    alike, the rows would draw the same numbers and write the same text."""
    assert backend.replicas == 2
    pair = [GenerationRequest(chat("Invent a word."), max_tokens=24, temperature=1.5, seed=s) for s in (20, 21)]
    first, second = backend.generate(pair)
    assert first.text != second.text
    with pytest.raises(ValueError, match="replicas must lie in"):
        ct2.CTranslate2Backend(backend.model_dir, n_threads=2, replicas=3)
    with pytest.raises(ValueError, match="quantization must be one of"):
        ct2.CTranslate2Backend(backend.model_dir, quantization="int4")


def test_logprobs_score_each_candidate_alike_alone_and_in_a_batch(backend):
    asks = [
        LogprobRequest(chat("Is 2 + 2 = 4? Answer Yes or No."), prompts.CRITIC_CANDIDATES),
        LogprobRequest(
            chat("A much longer question, with more words in it: is 3 > 5? Yes or No?"),
            prompts.CRITIC_CANDIDATES,
        ),
    ]
    together = backend.next_token_logprobs(asks)
    assert [backend.next_token_logprobs([ask])[0] for ask in asks] == together
    for result in together:
        assert len(result.logprobs) == 2 and all(lp < 0 for lp in result.logprobs)
        assert result.prompt_tokens > 20
    assert together[0].logprobs != together[1].logprobs


def test_agent_round_is_replayed_from_the_response_cache(backend, tmp_path):
    counted = Counting(backend)

    def team_round():
        agent = LLMAgent(CachedBackend(counted, tmp_path / "c.sqlite"), max_tokens=24)
        answers = agent.solve([make_turn(agent=a, seed=a) for a in range(3)])
        confidences = agent.introspect([make_turn(previous=a.text) for a in answers])
        return answers, confidences, agent

    answers, confidences, _ = team_round()
    assert any(a.decision is not None for a in answers)
    assert all(0.0 <= c.value <= 1.0 for c in confidences)
    assert {c.method for a, c in zip(answers, confidences) if a.decision is not None} <= {"logprob"}
    generated = counted.requests
    again, again_confidences, agent = team_round()
    assert (again, again_confidences) == (answers, confidences)
    assert counted.requests == generated and agent.backend.misses == 0


def test_the_conversion_is_reused_from_the_cache(backend, cache_dir, monkeypatch):
    def no_conversion(gguf, work, quantization):
        raise AssertionError("converted again")

    monkeypatch.setattr(convert, "convert_gguf", no_conversion)
    again = make_backend("ctranslate2", cache_dir=cache_dir)
    assert again.model_dir == backend.model_dir and again.model_dir.parent == cache_dir
    assert [p.name for p in cache_dir.iterdir()] == [backend.model_dir.name]  # no leftovers


def test_team_spec_and_bad_paths_are_clear_errors(tmp_path):
    assert parse_spec("ctranslate2") == ("ctranslate2", {})
    assert parse_spec("ctranslate2:/m/x.gguf") == ("ctranslate2", {"model_path": "/m/x.gguf"})
    assert parse_spec("ctranslate2-int8") == ("ctranslate2", {"quantization": "int8"})
    assert parse_spec("ctranslate2-int8:/m/x.gguf") == (
        "ctranslate2", {"quantization": "int8", "model_path": "/m/x.gguf"}
    )
    missing = tmp_path / "absent.gguf"
    with pytest.raises(FileNotFoundError, match=str(missing)):
        member_from_spec(f"ctranslate2:{missing}", cache=str(tmp_path / "c.sqlite"))
    text = tmp_path / "weights.txt"
    text.write_text("not a model")
    with pytest.raises(ValueError, match=f"{text} is neither a .gguf file"):
        make_backend("ctranslate2", model_path=text)
    with pytest.raises(ValueError, match=f"{tmp_path} is neither"):
        make_backend("ctranslate2", model_path=tmp_path)


def test_a_missing_extra_names_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "ctranslate2" else real(name, *args),
    )
    with pytest.raises(
        ImportError, match=r"needs ctranslate2: pip install 'deliberation-env\[ctranslate2\]'"
    ):
        make_backend("ctranslate2", model_path=default_model_path())


def test_top_k_one_samples_the_greedy_text_and_top_k_groups_decode_apart(backend):
    greedy = GenerationRequest(chat("Name three fruits."), max_tokens=12, temperature=0.0)
    top1 = [dataclasses.replace(greedy, temperature=2.0, top_k=1, seed=s) for s in range(3)]
    wide = [dataclasses.replace(greedy, temperature=2.0, top_k=40, seed=s) for s in range(3)]
    out = backend.generate([greedy, *top1, *wide])
    assert [g.text for g in out[1:4]] == [out[0].text] * 3
    assert any(g.text != out[0].text for g in out[4:])
    assert backend.generate([dataclasses.replace(greedy, temperature=1.0, top_k=10**6)])[0].text  # all tokens


def test_a_sampled_call_replaces_the_copies_held_and_a_failed_load_is_recovered(backend, monkeypatch):
    """One set of copies in memory: a sampled call's seeded copies replace the held ones
    (greedy decoding and scoring, which draw nothing at random, then use them), and a load
    that fails midway leaves a backend that loads its copies again on the next call."""
    greedy = GenerationRequest(chat("Name three fruits."), max_tokens=12, temperature=0.0)
    scored = LogprobRequest(chat("Is 2 + 2 = 4? Answer Yes or No."), candidates=("Yes", "No"))
    before = backend.generate([greedy]), backend.next_token_logprobs([scored])
    held = list(backend._generators)
    backend.generate([REQUESTS[0]])
    assert len(backend._generators) == backend.replicas
    assert not {id(g) for g in backend._generators} & {id(g) for g in held}
    del held
    assert (backend.generate([greedy]), backend.next_token_logprobs([scored])) == before

    load, calls = backend._load, []

    def failing_load():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("out of memory")
        return load()

    monkeypatch.setattr(backend, "_load", failing_load)
    with pytest.raises(RuntimeError, match="out of memory"):
        backend.generate([REQUESTS[1]])
    monkeypatch.setattr(backend, "_load", load)
    assert (backend.generate([greedy]), backend.next_token_logprobs([scored])) == before
    assert len(backend._generators) == backend.replicas


def test_progress_counts_every_row_and_its_tokens_without_changing_the_texts(backend):
    """Reporting (agents.progress) counts what the batch decoded, sub-batch by sub-batch and
    prompt by prompt, and the same batch still gives the same texts and scores."""
    from agents import progress

    asks = [LogprobRequest(chat("Is 2 + 2 = 4?"), prompts.CRITIC_CANDIDATES), LogprobRequest(chat("Hi"), ("Yes", "No"))]
    plain, plain_scores = backend.generate(REQUESTS), backend.next_token_logprobs(asks)
    with progress.reporting(enabled=False) as tally:
        reported = backend.generate(REQUESTS)
        scores = backend.next_token_logprobs(asks)
    assert reported == plain and scores == plain_scores
    assert (tally.calls, tally.requests, tally.done) == (2, len(REQUESTS) + len(asks), len(REQUESTS) + len(asks))
    assert tally.tokens == sum(g.completion_tokens for g in reported)  # reported by the decoding threads
