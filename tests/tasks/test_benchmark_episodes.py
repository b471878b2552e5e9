"""Each benchmark task runs in the env end to end, with scripted solvers and fixture data."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import deliberation_env as de
from agents.base import Answer, Confidence, PrivilegedSolver, Turn
from agents.profile import PROFILE_SIZE
from deliberation_env.tasks.humaneval import HumanEvalTask


class ScriptedSolver(PrivilegedSolver):
    """A team member that writes ``reply(turn, reference)`` and is always 90% confident;
    privileged, so that it can script right answers from the reference."""

    model_id = "scripted"

    def __init__(self, reply: Callable[[Turn, str], str]) -> None:
        self.reply = reply

    def solve(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        return [self._answer(turn, reference) for turn, reference in zip(turns, references, strict=True)]

    def refine(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        return [self._answer(turn, reference) for turn, reference in zip(turns, references, strict=True)]

    def introspect(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Confidence]:
        return [Confidence(0.9, "verbalized") for _ in turns]

    def _answer(self, turn: Turn, reference: str) -> Answer:
        text = self.reply(turn, reference)
        return Answer(text, turn.parse(text), (0.5,) * PROFILE_SIZE)


def run_episode(
    right: Callable[[Turn, str], str], wrong: Callable[[Turn, str], str], **task: Any
) -> list[dict]:
    """Two right agents and one wrong one on the first test problem; all persist for two rounds.

    ``task`` holds the env's ``task`` argument (and ``task_kwargs`` with a task name).
    """
    team = [ScriptedSolver(right), ScriptedSolver(right), ScriptedSolver(wrong)]
    env = de.parallel_env(**task, team=team, n_agents=3, max_rounds=2, split="test")
    _, infos = env.reset(seed=0, options={"problem_index": 0})
    history = [infos]
    while env.agents:
        _, _, _, _, infos = env.step({agent: de.MetaAction.PERSIST for agent in env.agents})
        history.append(infos)
    return history


def assert_right_right_wrong(history: list[dict]) -> None:
    for infos in history:
        assert [infos[a]["correct"] for a in ("agent_0", "agent_1", "agent_2")] == [
            True,
            True,
            False,
        ]
        assert infos["agent_0"]["consensus_correct"] is True
    assert history[-1]["agent_0"]["team_reward"] == 1.0


def test_math_episode(tmp_path):
    records = [
        {"problem": f"What is {i}/{i + 1} of {i + 1}?", "solution": f"It is $\\boxed{{{i}}}$."}
        for i in range(1, 9)
    ]
    (tmp_path / "math.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    history = run_episode(
        task=de.tasks.get("math", path=tmp_path / "math.jsonl"),
        right=lambda turn, reference: (
            f"Step by step... so the answer is $\\boxed{{\\frac{{{2 * int(reference)}}}{{2}}}}$."
        ),
        wrong=lambda turn, reference: "The answer is $\\boxed{1000}$.",
    )
    assert_right_right_wrong(history)
    assert history[0]["agent_2"]["decision"] == "1000"


def test_math_consensus_groups_answers_the_checker_calls_one(tmp_path):
    """A wrong majority written in two forms (``x = 1000`` and ``1000``) is one vote: it
    beats the single right answer, which a grouping by text key left to a three-way tie
    (won by the right agent, agent 0), paying consensus for a wrong team."""
    records = [{"problem": f"What is {i} + 1?", "solution": f"$\\boxed{{{i + 1}}}$"} for i in range(8)]
    (tmp_path / "math.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    team = [
        ScriptedSolver(lambda turn, reference: f"\\boxed{{{reference}}}"),
        ScriptedSolver(lambda turn, reference: "\\boxed{x = 1000}"),
        ScriptedSolver(lambda turn, reference: "\\boxed{1000}"),
    ]
    env = de.parallel_env(task=de.tasks.get("math", path=tmp_path / "math.jsonl"), team=team, n_agents=3, max_rounds=1)
    _, infos = env.reset(seed=0, options={"problem_index": 0})
    assert [infos[a]["correct"] for a in env.agents] == [True, False, False]
    assert infos["agent_1"]["decision"] != infos["agent_2"]["decision"]  # two texts, one answer
    assert infos["agent_0"]["consensus_correct"] is False
    _, _, _, _, infos = env.step({agent: de.MetaAction.PERSIST for agent in env.agents})
    assert infos["agent_0"]["team_reward"] == 0.0


@pytest.mark.parametrize("name", ["aime", "amc"])
def test_aime_and_amc_episodes(tmp_path, name):
    records = [{"problem": f"Problem {i}", "answer": str(100 + i)} for i in range(8)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    history = run_episode(
        task=name,  # by name, as users do
        task_kwargs={"path": tmp_path / "data.jsonl"},
        right=lambda turn, reference: f"\\boxed{{{reference}}}",
        wrong=lambda turn, reference: "\\boxed{-1}",
    )
    assert_right_right_wrong(history)


def test_mmlu_episode(tmp_path):
    with (tmp_path / "logic_test.csv").open("w", newline="") as file:
        csv.writer(file).writerows(
            [[f"Question {i}?", "a", "b", "c", "d", "ABCD"[i % 4]] for i in range(4)]
        )
    history = run_episode(
        task="mmlu",
        task_kwargs={"path": tmp_path},
        right=lambda turn, reference: f"Let me think. Answer: {reference}",
        wrong=lambda turn, reference: "Answer: " + ("B" if reference == "A" else "A"),
    )
    assert_right_right_wrong(history)


def test_humaneval_episode():
    task = HumanEvalTask()
    history = run_episode(
        task=task,
        right=lambda turn, reference: f"Here you go:\n```python\n{reference}```",
        wrong=lambda turn, reference: "```python\n" + turn.question + "    return None\n```",
    )
    assert_right_right_wrong(history)
    assert history[-1]["agent_0"]["problem_id"] == task.problems("test")[0].id


def test_humaneval_conceding_agent_adopts_the_behaviourally_different_answer():
    right = ScriptedSolver(lambda turn, reference: f"```python\n{reference}```")
    wrong = ScriptedSolver(lambda turn, reference: "```python\n" + turn.question + "    return None\n```")
    env = de.parallel_env(
        task=HumanEvalTask(), team=[right, right, wrong], n_agents=3, max_rounds=1, split="test"
    )
    _, infos = env.reset(seed=0, options={"problem_index": 1})
    assert infos["agent_2"]["correct"] is False
    actions = {"agent_0": de.MetaAction.PERSIST, "agent_1": de.MetaAction.PERSIST}
    _, rewards, _, _, infos = env.step({**actions, "agent_2": de.MetaAction.CONCEDE})
    assert rewards["agent_2"] > 0
    assert infos["agent_2"]["correct"] is True
    assert infos["agent_2"]["decision"] == infos["agent_0"]["decision"]
    assert infos["agent_2"]["reward_components"]["local"] == 1.0


def test_humaneval_a_program_right_only_on_the_examples_does_not_share_the_right_ones_vote():
    """``return 0.5`` passes the prompt's example of ``truncate_number`` and fails its
    tests. The team sees it agree with the right program (same behaviour on the examples:
    the observations hold no ground truth), but the vote that is paid splits them: the
    most confident answer, the wrong one, is the consensus. Grouped by behaviour alone, the
    pair's vote counted as right because the right program sat at agent 0."""
    right = lambda turn, reference: f"```python\n{reference}```"
    example_only = lambda turn, reference: "```python\n" + turn.question + "    return 0.5\n```"
    other = lambda turn, reference: "```python\n" + turn.question + "    return 0.0\n```"
    team = [ConfidentSolver(right, 0.5), ConfidentSolver(example_only, 0.9), ConfidentSolver(other, 0.8)]
    env = de.parallel_env(task=HumanEvalTask(), team=team, n_agents=3, max_rounds=1, split="test")
    obs, infos = env.reset(seed=0, options={"problem_index": 1})
    assert [infos[a]["correct"] for a in env.agents] == [True, False, False]
    assert obs["agent_0"]["self"][1] == obs["agent_1"]["self"][1] == 0.5  # each agrees with one peer of two
    assert obs["agent_0"]["self"][2] == 1.0  # and holds the plurality, as the team sees it
    assert infos["agent_0"]["consensus_correct"] is False


class ConfidentSolver(ScriptedSolver):
    """:class:`ScriptedSolver` at a confidence of one's choosing."""

    def __init__(self, reply: Callable[[Turn, str], str], confidence: float) -> None:
        super().__init__(reply)
        self.confidence = confidence

    def introspect(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Confidence]:
        return [Confidence(self.confidence, "verbalized") for _ in turns]


def test_math_an_answer_rewritten_in_another_form_has_not_changed(tmp_path):
    """``changed_last_round`` reads decisions as the vote does: refining ``1000`` into
    ``x = 1000`` changes nothing, refining it into ``999`` does."""
    records = [{"problem": f"What is {i} + 1?", "solution": f"$\\boxed{{{i + 1}}}$"} for i in range(8)]
    (tmp_path / "math.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    def rewrites(into):
        return lambda turn, reference: "\\boxed{1000}" if turn.previous is None else f"\\boxed{{{into}}}"

    team = [ScriptedSolver(rewrites("x = 1000")), ScriptedSolver(rewrites("999")), ScriptedSolver(rewrites("1000"))]
    env = de.parallel_env(task=de.tasks.get("math", path=tmp_path / "math.jsonl"), team=team, n_agents=3, max_rounds=1)
    env.reset(seed=0, options={"problem_index": 0})
    obs, *_ = env.step({agent: de.MetaAction.REFINE for agent in env.agents})
    assert [float(obs[agent]["self"][4]) for agent in env.possible_agents] == [0.0, 1.0, 0.0]
