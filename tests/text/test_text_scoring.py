"""Scoring through the envs: the ``scoring`` argument, and a completion cut at the token
budget counted as no answer under strict scoring, by TextPolicy, the learners' rollouts,
their evaluation and the meta env's LLM agents alike."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from helpers import FixedTask
from text_fakes import DOCUMENTS, write_corpus

import deliberation_env as de
from agents.base import Generation
from agents.text_policy import TextPolicy, played_text
from agents.trainable_lm import TrainableLM, default_lora, tiny_model
from algorithms import cli
from algorithms.text import TextMAGRPO, TextMAGRPOConfig
from algorithms.text.config import text_run
from deliberation_env.tasks import Problem
from deliberation_env.text import MathProtocol, WritingProtocol, text_env, text_vector_env

torch.set_num_threads(1)  # tiny matrices on shared cores

SEVEN = (("What is 3 + 4?", "7"),)
STATED = "3 + 4 = 7.\nThe answer is 7."
UNFORMATTED = "3 + 4 = 7"
LOOPING = "The answer is 7.\n\nThe answer is 7.\n\nThe answer is"  # stated, then cut mid-repeat


class FixedBackend:
    """Writes ``text`` for every request, with ``finish_reason``; counts requests."""

    model_id = "fake:fixed"
    supports_logprobs = False

    def __init__(self, text: str, finish_reason: str = "stop") -> None:
        self.text, self.finish_reason, self.requests = text, finish_reason, 0

    def generate(self, requests):
        self.requests += len(requests)
        return [Generation(self.text, 10, 48, self.finish_reason) for _ in requests]

    def next_token_logprobs(self, requests):
        raise NotImplementedError


def step_once(env, actions):
    env.reset(seed=0, options={"problem_index": 0})
    _, rewards, _, _, infos = env.step(actions)
    return rewards["agent_0"], infos["agent_0"]["reward_components"]


# ------------------------------------------------------------------ the scoring argument
def test_text_env_scores_strictly_by_default_and_leniently_when_asked():
    both = {"agent_0": UNFORMATTED, "agent_1": UNFORMATTED}
    reward, parts = step_once(text_env(task=FixedTask(SEVEN), protocol="math"), both)
    assert (reward, parts["correct"], parts["format"]) == (0.0, 0.0, 0.0)
    reward, parts = step_once(text_env(task=FixedTask(SEVEN), protocol="math", scoring="lenient"), both)
    assert (parts["correct"], parts["format"]) == (1.0, 0.0)  # right by the last number, never stated
    assert reward == pytest.approx(1.0)
    stated = {"agent_0": STATED, "agent_1": STATED}
    for scoring in ("strict", "lenient"):
        _, parts = step_once(text_env(task=FixedTask(SEVEN), scoring=scoring), stated)
        assert (parts["correct"], parts["format"]) == (1.0, 1.0)


def test_every_text_entry_point_takes_scoring():
    venv = text_vector_env(2, task="arithmetic", protocol="math", scoring="lenient")
    assert venv.protocol.scoring == venv.protocol.task.scoring == "lenient"
    assert de.make("text-deliberation-v1", task="arithmetic", scoring="lenient").protocol.scoring == "lenient"
    env = de.text_env(task="arithmetic", protocol="math", scoring="strict")
    assert env.protocol.scoring == env.protocol.task.scoring == "strict"


def test_a_bad_scoring_is_named_before_anything_is_built(tmp_path):
    with pytest.raises(ValueError, match="scoring must be 'strict'"):
        text_env(task="arithmetic", scoring="loose")
    with pytest.raises(ValueError, match="'humaneval' is judged by its tests"):
        text_env(task="humaneval", scoring="lenient")
    protocol = MathProtocol(FixedTask(SEVEN), scoring="lenient")
    with pytest.raises(ValueError, match="brings its own scoring"):
        text_env(protocol=protocol, scoring="lenient")
    assert text_env(protocol=protocol).protocol.scoring == "lenient"
    with pytest.raises(ValueError, match="scoring must be 'strict'"):
        de.parallel_env(task="arithmetic", team="simulated", scoring="Lenient")


class OwnTask:
    """A user's task without the scoring option: it reads its own way."""

    name, instructions = "own", "Say the number."

    def problems(self, split):
        return [Problem("own-0", "3 + 4?", "7")]

    def parse(self, problem, text):
        return text.strip() or None

    def is_correct(self, problem, decision):
        return decision == problem.answer

    def decision_key(self, problem, decision):
        return decision


def test_a_task_without_the_option_reads_its_own_way_and_has_no_lenient_scoring():
    assert MathProtocol(OwnTask()).score(OwnTask().problems("test")[0], ["7", "7"]).parts["correct"] == 1.0
    with pytest.raises(ValueError, match="'own' has no lenient scoring"):
        MathProtocol(OwnTask(), scoring="lenient")


# ------------------------------------------------------------------ cut completions
def test_the_env_tells_what_replaces_a_cut_completion(tmp_path):
    _, infos = text_env(task=FixedTask(SEVEN)).reset(seed=0)
    assert {info["text_if_cut"] for info in infos.values()} == {""}  # strict: the neutral text, no answer
    _, infos = text_env(task=FixedTask(SEVEN), scoring="lenient").reset(seed=0)
    assert {info["text_if_cut"] for info in infos.values()} == {None}  # lenient: played as it is
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for split, docs in (("train", DOCUMENTS[:6]), ("test", DOCUMENTS[6:])):
        write_corpus(corpus / f"{split}.jsonl", docs)
    _, infos = text_env(protocol=WritingProtocol(corpus)).reset(seed=0)
    assert {info["text_if_cut"] for info in infos.values()} == {None}  # a protocol without the rule


@pytest.mark.parametrize(
    ("scoring", "finish_reason", "correct"),
    [("strict", "length", 0.0), ("strict", "stop", 1.0), ("lenient", "length", 1.0)],
)
def test_text_policy_plays_a_cut_completion_as_no_answer_under_strict_scoring(scoring, finish_reason, correct):
    env = text_env(task=FixedTask(SEVEN), n_agents=2, scoring=scoring)
    obs, infos = env.reset(seed=0)
    actions = TextPolicy(FixedBackend(LOOPING, finish_reason), max_tokens=48).act(obs, infos)
    _, rewards, _, _, infos = env.step(actions)
    assert infos["agent_0"]["reward_components"]["correct"] == correct
    assert rewards["agent_0"] == pytest.approx(1.1 * correct)  # format too: a cut text states nothing
    assert infos["agent_0"]["text"] == ("" if correct == 0.0 else LOOPING)
    assert played_text(LOOPING, finish_reason, {}) == LOOPING  # infos built by hand: played as written


class ScriptedLM(TrainableLM):
    """The tiny random Llama, whose completions are rewritten to ``text`` with ``finish_reason``
    (its tokens, log-probabilities and everything the learner trains on stay the model's)."""

    def __init__(self, text: str, finish_reason: str) -> None:
        model, tokenizer = tiny_model(seed=0)
        super().__init__(model, tokenizer, ["agent_0", "agent_1"], lora=default_lora(rank=4, alpha=8.0), seed=0)
        self.text, self.finish_reason = text, finish_reason

    def sample(self, agent, chats, seeds, **settings):
        return [
            dataclasses.replace(c, text=self.text, finish_reason=self.finish_reason)
            for c in super().sample(agent, chats, seeds, **settings)
        ]


def learner(scoring: str, finish_reason: str) -> TextMAGRPO:
    config = TextMAGRPOConfig(groups_per_update=2, group_size=2, max_new_tokens=6, micro_batch_size=4, run=text_run(progress=False))
    venv = text_vector_env(config.num_envs, task=FixedTask(SEVEN), n_agents=2, scoring=scoring)
    return TextMAGRPO(config, ScriptedLM(LOOPING, finish_reason), venv)


@pytest.mark.parametrize(
    ("scoring", "finish_reason", "reward"),
    [("strict", "length", 0.0), ("strict", "stop", 1.1), ("lenient", "length", 1.1)],
)
def test_a_cut_completion_earns_nothing_in_a_training_rollout_under_strict_scoring(scoring, finish_reason, reward):
    subject = learner(scoring, finish_reason)
    rollouts = subject.collect()
    assert rollouts.rewards.flatten().tolist() == pytest.approx([reward] * rollouts.rewards.numel())
    assert rollouts.metrics["truncated/agent_0"] == float(finish_reason == "length")
    assert {s.completion.text for s in rollouts.samples} == {LOOPING}  # trained on what it wrote


@pytest.mark.parametrize(
    ("scoring", "finish_reason", "correct"),
    [("strict", "length", 0.0), ("strict", "stop", 1.0), ("lenient", "length", 1.0)],
)
def test_evaluation_counts_a_cut_completion_as_wrong_under_strict_scoring(scoring, finish_reason, correct):
    subject = learner(scoring, finish_reason)
    held_out = text_vector_env(2, task=FixedTask(SEVEN), n_agents=2, scoring=scoring, split="test")
    from algorithms.text import evaluate

    evaluation = evaluate(subject, held_out, [0], progress=False)
    results = evaluation.metrics
    assert evaluation.accuracy == results["eval/correct"] == correct
    assert evaluation.answered_share == results["eval/asked_form_share"]
    assert evaluation.cut_share == results["eval/truncated_share"]
    assert results["eval/truncated_share"] == float(finish_reason == "length")
    assert results["eval/asked_form_share"] == (0.0 if scoring == "strict" and finish_reason == "length" else 1.0)
    assert 1 <= results["eval/mean_completion_tokens"] <= 6


# ------------------------------------------------------------------ the meta env
@pytest.mark.parametrize(
    ("scoring", "text", "finish_reason", "decision"),
    [
        ("strict", STATED, "stop", "7"),
        ("strict", UNFORMATTED, "stop", None),
        ("strict", LOOPING, "length", None),  # cut at the budget: no answer
        ("lenient", UNFORMATTED, "stop", "7"),
        ("lenient", LOOPING, "length", "7"),
    ],
)
def test_the_meta_env_reads_answers_under_its_scoring(scoring, text, finish_reason, decision):
    backend = FixedBackend(text, finish_reason)
    env = de.parallel_env(task=FixedTask(SEVEN), team=backend, n_agents=2, max_rounds=1, scoring=scoring)
    _, infos = env.reset(seed=0, options={"problem_index": 0})
    assert [infos[a]["decision"] for a in env.agents] == [decision, decision]
    assert [infos[a]["correct"] for a in env.agents] == [decision is not None] * 2
    assert [infos[a]["cut"] for a in env.agents] == [finish_reason == "length"] * 2
    assert [infos[a]["answer_tokens"] for a in env.agents] == [48, 48]


@pytest.mark.parametrize(("scoring", "finish_reason"), [("strict", "length"), ("strict", "stop"), ("lenient", "length")])
def test_the_meta_evaluation_reports_cut_and_answered_shares_and_answer_length(scoring, finish_reason):
    from algorithms.meta import evaluate
    from algorithms.meta.baselines import Independent

    venv = de.vector_env(2, task=FixedTask(SEVEN), team=FixedBackend(LOOPING, finish_reason), n_agents=2, max_rounds=1,
                         scoring=scoring)
    result = evaluate(Independent(), venv, [0, 0, 0], progress=False)
    assert result.cut_share == float(finish_reason == "length")
    assert result.answered_share == float(not (scoring == "strict" and finish_reason == "length"))
    assert result.tokens_per_answer == 48


def test_the_command_line_takes_scoring():
    def parse(*args):
        return cli.parse(list(args)).command.command

    assert parse("train", "text", "grpo", "--scoring", "lenient").learner.env.scoring == "lenient"
    assert parse("train", "text", "magrpo").learner.env.scoring == "strict"
    assert parse("run", "--scoring", "lenient").env.scoring == "lenient"
    assert parse("train", "meta", "grpo", "--scoring", "lenient").learner.env.scoring == "lenient"
