"""Evaluation of policies on fixed problems, and the baselines' defining behaviour."""

import numpy as np
import pytest

import agents.progress
import deliberation_env as de
from agents import Generation, LLMAgent
from algorithms import baselines
from algorithms.meta.evaluate import evaluate


def venv(num_envs, max_rounds=2):
    return de.vector_env(num_envs, task="arithmetic", team="simulated", max_rounds=max_rounds, split="test")


def test_independent_keeps_round_zero_answers():
    result = evaluate(baselines.get("independent"), venv(8), range(16), progress=False)
    assert result.action_shares == {"persist": 1.0, "refine": 0.0, "concede": 0.0}
    assert result.accuracy[0] == result.accuracy[-1]
    assert result.consensus_accuracy[0] == result.consensus_accuracy[-1]


def test_final_consensus_lists_each_problem_in_order():
    result = evaluate(baselines.get("debate"), venv(4), range(10), progress=False)
    assert len(result.final_consensus) == result.n_problems == 10
    assert np.mean(result.final_consensus) == pytest.approx(result.consensus_accuracy[-1])
    assert "final_consensus" not in result.summary()


def test_results_do_not_depend_on_the_batch_size():
    """Padding the last batch and splitting problems across batches change nothing."""
    small = evaluate(baselines.get("minority-concedes"), venv(3), range(10), progress=False)
    large = evaluate(baselines.get("minority-concedes"), venv(10), range(10), progress=False)
    assert small.final_consensus == large.final_consensus
    assert small.accuracy == large.accuracy and small.tokens_per_problem == large.tokens_per_problem
    # the per-answer lists are ordered by batch, so compare them as multisets
    assert sorted(zip(small.confidence, small.correct)) == sorted(zip(large.confidence, large.correct))


def test_the_evaluation_seed_fixes_the_episodes():
    a = evaluate(baselines.get("debate"), venv(8), range(16), seed=1, progress=False)
    b = evaluate(baselines.get("debate"), venv(8), range(16), seed=1, progress=False)
    c = evaluate(baselines.get("debate"), venv(8), range(16), seed=2, progress=False)
    assert a.correct == b.correct and a.confidence == b.confidence
    assert a.confidence != c.confidence


def test_minority_concedes_never_refines():
    result = evaluate(baselines.get("minority-concedes"), venv(8, max_rounds=1), range(16), progress=False)
    assert result.action_shares["refine"] == 0.0 and result.action_shares["concede"] > 0.0


def test_unknown_baseline_lists_the_known_ones():
    with pytest.raises(ValueError, match="baselines: independent, debate"):
        baselines.get("majority")
    with pytest.raises(ValueError, match="no problems|empty"):
        evaluate(baselines.get("debate"), venv(2), [], progress=False)


def test_progress_changes_no_result_and_counts_every_problem_round(capsys):
    quiet = evaluate(baselines.get("debate"), venv(4), range(10), progress=False)
    assert capsys.readouterr().err == ""
    shown = evaluate(baselines.get("debate"), venv(4), range(10), progress=True)
    assert shown == quiet
    assert "30/30" in capsys.readouterr().err  # 10 problems x (round 0 + 2 rounds), 3 batches


class ScriptedBackend:
    """Answers every request with its seed's last digit; no log-probabilities."""

    model_id, supports_logprobs = "scripted:digit", False

    def generate(self, requests):
        return [Generation(f"The answer is {r.seed % 10}.", 10, 5, "stop") for r in requests]


def test_the_llm_calls_of_an_evaluation_draw_their_own_bars(monkeypatch, capsys):
    monkeypatch.setattr(agents.progress, "BAR_DELAY_S", 0.0)
    team = de.vector_env(4, task="arithmetic", team=LLMAgent(ScriptedBackend()), max_rounds=1, split="test")
    evaluate(baselines.get("debate"), team, range(4), progress=False)
    assert capsys.readouterr().err == ""
    evaluate(baselines.get("debate"), team, range(4), progress=True)
    err = capsys.readouterr().err
    assert all(f"{phase}:" in err for phase in ("solve", "confidence", "refine"))  # one bar per LLM call
