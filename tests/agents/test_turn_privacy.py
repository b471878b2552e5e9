"""Ground truth reaches only privileged solvers: a plain solver's turns never carry the
reference answer, while a :class:`PrivilegedSolver` is handed it, turn by turn."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from helpers import FixedTask

import deliberation_env as de
from agents.base import Answer, Confidence, PrivilegedSolver, Turn
from agents.profile import PROFILE_SIZE

REFERENCES = {"What is 6 x 7 x 10101?": "424242", "What is 17 x 10101?": "171717"}
TASK = FixedTask(tuple(REFERENCES.items()))
ACTIONS = [de.MetaAction.REFINE, de.MetaAction.CONCEDE, de.MetaAction.REFINE]


def _answer(turn: Turn) -> Answer:
    text = f"The answer is {turn.agent + 1}."  # always wrong, so no peer ever holds a reference
    return Answer(text, turn.parse(text), (0.5,) * PROFILE_SIZE)


class RecordingSolver:
    """A plain (non-privileged) solver that keeps every turn it is given."""

    model_id = "recording"

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def solve(self, turns: Sequence[Turn]) -> list[Answer]:
        self.turns += turns
        return [_answer(turn) for turn in turns]

    def refine(self, turns: Sequence[Turn]) -> list[Answer]:
        self.turns += turns
        return [_answer(turn) for turn in turns]

    def introspect(self, turns: Sequence[Turn]) -> list[Confidence]:
        self.turns += turns
        return [Confidence(0.5, "verbalized") for _ in turns]


class RecordingPrivilegedSolver(PrivilegedSolver):
    """A privileged solver that keeps every (turn, reference) pair it is given."""

    model_id = "recording-privileged"

    def __init__(self) -> None:
        self.pairs: list[tuple[Turn, str]] = []

    def _record(self, turns: Sequence[Turn], references: Sequence[str]) -> None:
        assert len(turns) == len(references)
        self.pairs += zip(turns, references, strict=True)

    def solve(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        self._record(turns, references)
        return [_answer(turn) for turn in turns]

    def refine(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        self._record(turns, references)
        return [_answer(turn) for turn in turns]

    def introspect(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Confidence]:
        self._record(turns, references)
        return [Confidence(0.5, "verbalized") for _ in turns]


def play(team: Any) -> None:
    """Two envs (one per problem), three rounds of REFINE / CONCEDE / REFINE."""
    venv = de.vector_env(2, task=TASK, team=team, n_agents=3, max_rounds=3)
    venv.reset(seed=0, options={"problem_index": [0, 1]})
    for _ in range(3):
        venv.step({agent: [action, action] for agent, action in zip(venv.agents, ACTIONS, strict=True)})


def held_values(value: Any) -> Iterator[Any]:
    """Every value a turn holds, through its answers and peers."""
    if dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            yield from held_values(getattr(value, field.name))
    elif isinstance(value, tuple):
        for item in value:
            yield from held_values(item)
    else:
        yield value


def test_turns_have_no_reference_field():
    assert "reference" not in {field.name for field in dataclasses.fields(Turn)}


def test_a_plain_solvers_turns_never_hold_the_reference():
    solver = RecordingSolver()
    play([solver] * 3)
    assert {turn.round for turn in solver.turns} == {0, 1, 2, 3}  # solve, refine and introspect turns
    assert any(turn.peers for turn in solver.turns)
    for turn in solver.turns:
        for reference in REFERENCES.values():
            assert reference not in repr(turn)  # what a solver that logs its turns would write
            assert not any(reference in str(value) for value in held_values(turn))


def test_a_plain_solvers_parser_still_works_on_the_reference():
    solver = RecordingSolver()
    play([solver] * 3)
    for turn in solver.turns:
        reference = REFERENCES[turn.question]
        assert turn.parse(f"So the answer is {reference}.") == reference


def test_a_privileged_solver_gets_each_turns_reference():
    privileged, plain = RecordingPrivilegedSolver(), RecordingSolver()
    play([privileged, plain, privileged])
    assert {turn.agent for turn, _ in privileged.pairs} == {0, 2}
    assert {turn.round for turn, _ in privileged.pairs} == {0, 1, 2, 3}
    assert all(reference == REFERENCES[turn.question] for turn, reference in privileged.pairs)
    assert {turn.agent for turn in plain.turns} == {1}
