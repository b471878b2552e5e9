"""Evaluation of policies on fixed problems, and the baselines' defining behaviour."""

import dataclasses
import inspect

import numpy as np
import pytest

import agents.progress
import deliberation_env as de
from agents import Generation, LLMAgent
from algorithms import baselines, meta, text
from algorithms.core.evaluation import Evaluation
from algorithms.meta.evaluate import evaluate_rounds


def venv(num_envs, max_rounds=2):
    return de.vector_env(num_envs, task="arithmetic", team="simulated", max_rounds=max_rounds, split="test")


def test_evaluate_returns_the_result_both_families_share():
    """``algorithms.meta.evaluate`` is :func:`evaluate_rounds` summed up as an Evaluation, the
    type ``algorithms.text.evaluate`` returns (tests/algorithms/text/test_text_learners.py)."""
    rounds = evaluate_rounds(baselines.get("debate"), venv(4), range(10), seed=3, progress=False)
    result = meta.evaluate(baselines.get("debate"), venv(4), range(10), seed=3, progress=False)
    assert type(result) is Evaluation
    assert [f.name for f in dataclasses.fields(result)] == [
        "accuracy", "answered_share", "cut_share", "tokens_per_answer", "metrics",
    ]
    assert result.accuracy == rounds.consensus_accuracy[-1]  # the team's answer
    assert (result.answered_share, result.cut_share, result.tokens_per_answer) == (
        rounds.answered_share, rounds.cut_share, rounds.answer_tokens,
    )
    assert result.metrics == {
        "eval/accuracy": rounds.accuracy[-1],
        "eval/consensus_accuracy": rounds.consensus_accuracy[-1],
        "eval/tokens": rounds.tokens_per_problem,
        "eval/persist_share": rounds.action_shares["persist"],
        "eval/refine_share": rounds.action_shares["refine"],
        "eval/concede_share": rounds.action_shares["concede"],
    }


def test_both_families_evaluate_with_the_same_arguments():
    """The policy (meta) or learner (text), then the same four arguments with the same defaults."""
    shapes = [
        [(p.name, p.default) for p in list(inspect.signature(family.evaluate).parameters.values())[1:]]
        for family in (meta, text)
    ]
    empty = inspect.Parameter.empty
    assert shapes[0] == shapes[1] == [("venv", empty), ("problem_indices", empty), ("seed", 0), ("progress", True)]


def test_meta_evaluate_takes_a_learner_as_the_text_one_does_and_names_bad_arguments():
    """A real client passed a meta learner as README says ("policy or learner") and got
    AttributeError 'act'; indices past the split and scalar actions raised IndexError."""
    config = meta.GRPOConfig(groups_per_update=2, group_size=2, hidden_size=16, num_heads=2)
    learner = meta.GRPO(config, de.vector_env(config.num_envs, task="arithmetic", team="simulated", max_rounds=2))
    assert meta.evaluate(learner, venv(4), range(6), progress=False) == meta.evaluate(
        learner.policy(), venv(4), range(6), progress=False
    )
    with pytest.raises(ValueError, match=r"problem_indices \[200\] are not indices of the env's 200 problems"):
        meta.evaluate(learner, venv(4), [0, 200], progress=False)
    with pytest.raises(ValueError, match=r"problem_indices \[0.5\] are not indices"):  # was a TypeError of tuples
        meta.evaluate(learner, venv(4), [0.5], progress=False)

    class Scalars:
        name = "scalars"

        def act(self, obs, infos):
            return dict.fromkeys(obs, 1)

    with pytest.raises(ValueError, match=r"actions\['agent_0'\] must have shape \(4,\)"):
        meta.evaluate(Scalars(), venv(4), range(4), progress=False)
    with pytest.raises(TypeError, match="a policy .* or a learner with policy"):
        meta.evaluate(object(), venv(4), range(4), progress=False)


def test_independent_keeps_round_zero_answers():
    result = evaluate_rounds(baselines.get("independent"), venv(8), range(16), progress=False)
    assert result.action_shares == {"persist": 1.0, "refine": 0.0, "concede": 0.0}
    assert result.accuracy[0] == result.accuracy[-1]
    assert result.consensus_accuracy[0] == result.consensus_accuracy[-1]


def test_final_consensus_lists_each_problem_in_order():
    result = evaluate_rounds(baselines.get("debate"), venv(4), range(10), progress=False)
    assert len(result.final_consensus) == result.n_problems == 10
    assert np.mean(result.final_consensus) == pytest.approx(result.consensus_accuracy[-1])
    assert "final_consensus" not in result.summary()


def test_only_a_privileged_policy_reads_the_ground_truth_in_the_evaluation():
    """A user's policy that copies the oracle but is not marked privileged sees no
    correctness in its infos (it would score as the oracle does); the oracle still does."""

    class Copycat(baselines.Oracle):
        name, privileged = "copycat", False

        def __init__(self):
            self.seen = set()

        def act(self, obs, infos):
            self.seen |= {key for env_infos in infos for info in env_infos.values() for key in info}
            return {agent: np.zeros(len(o["self"]), dtype=np.int64) for agent, o in obs.items()}

    copycat = Copycat()
    evaluate_rounds(copycat, venv(4), range(4), progress=False)
    assert copycat.seen and not copycat.seen & {"correct", "consensus_correct", "reward_components", "team_reward"}
    assert "decision" in copycat.seen and "concede_target" in copycat.seen
    oracle = evaluate_rounds(baselines.get("oracle"), venv(4), range(16), progress=False)
    independent = evaluate_rounds(baselines.get("independent"), venv(4), range(16), progress=False)
    assert oracle.consensus_accuracy[-1] > independent.consensus_accuracy[-1]


def test_results_do_not_depend_on_the_batch_size():
    """Padding the last batch and splitting problems across batches change nothing."""
    small = evaluate_rounds(baselines.get("minority-concedes"), venv(3), range(10), progress=False)
    large = evaluate_rounds(baselines.get("minority-concedes"), venv(10), range(10), progress=False)
    assert small.final_consensus == large.final_consensus
    assert small.accuracy == large.accuracy and small.tokens_per_problem == large.tokens_per_problem
    # the per-answer lists are ordered by batch, so compare them as multisets
    assert sorted(zip(small.confidence, small.correct)) == sorted(zip(large.confidence, large.correct))


def test_the_evaluation_seed_fixes_the_episodes():
    a = evaluate_rounds(baselines.get("debate"), venv(8), range(16), seed=1, progress=False)
    b = evaluate_rounds(baselines.get("debate"), venv(8), range(16), seed=1, progress=False)
    c = evaluate_rounds(baselines.get("debate"), venv(8), range(16), seed=2, progress=False)
    assert a.correct == b.correct and a.confidence == b.confidence
    assert a.confidence != c.confidence


def test_minority_concedes_never_refines():
    result = evaluate_rounds(baselines.get("minority-concedes"), venv(8, max_rounds=1), range(16), progress=False)
    assert result.action_shares["refine"] == 0.0 and result.action_shares["concede"] > 0.0


def test_unknown_baseline_lists_the_known_ones():
    with pytest.raises(ValueError, match="baselines: independent, debate"):
        baselines.get("majority")
    with pytest.raises(ValueError, match="no problems|empty"):
        evaluate_rounds(baselines.get("debate"), venv(2), [], progress=False)


def test_progress_changes_no_result_and_counts_every_problem_round(capsys):
    quiet = evaluate_rounds(baselines.get("debate"), venv(4), range(10), progress=False)
    assert capsys.readouterr().err == ""
    shown = evaluate_rounds(baselines.get("debate"), venv(4), range(10), progress=True)
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
    evaluate_rounds(baselines.get("debate"), team, range(4), progress=False)
    assert capsys.readouterr().err == ""
    evaluate_rounds(baselines.get("debate"), team, range(4), progress=True)
    err = capsys.readouterr().err
    assert all(f"{phase}:" in err for phase in ("solve", "confidence", "refine"))  # one bar per LLM call


def test_the_meta_held_out_env_reads_strictly_whatever_the_training_scoring():
    """Held-out scores are strict: a run trained with ``scoring="lenient"`` is evaluated
    on the test split under strict scoring (it reported lenient accuracy before)."""
    from algorithms.meta.config import GRPOConfig
    from algorithms.meta.train import held_out_env

    config = GRPOConfig()
    config = dataclasses.replace(config, env=dataclasses.replace(config.env, scoring="lenient", team="simulated"))
    held_out = held_out_env(config, 4)
    assert held_out.task.scoring == "strict"
    assert held_out.problems == held_out.task.problems("test")
    assert config.env.scoring == "lenient"  # training reads as it was asked to


def test_the_flattened_parts_of_the_ground_truth_are_stripped_too():
    from algorithms.meta.policy import without_ground_truth

    infos = [{"agent_0": {"reward_components/local": 1.0, "correct": True, "decision": "7", "confidence": 0.5}}]
    assert without_ground_truth(infos) == [{"agent_0": {"decision": "7", "confidence": 0.5}}]
