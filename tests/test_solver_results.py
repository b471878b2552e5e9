"""A solver's results are checked before they reach an observation: a NaN, infinite or
out-of-range confidence, a malformed profile or a negative token count raises an error
naming the solver, the env stays as it was, and observations always lie in their space."""

import dataclasses
import math

import numpy as np
import pytest
from helpers import FixedTask, ScriptedSolver

import deliberation_env as de

ACTIONS = {"agent_0": 0, "agent_1": 1, "agent_2": 2}
VALID = object()
"""``bad_confidence`` when the solver behaves."""


class HostileSolver(ScriptedSolver):
    """A scripted team whose results for agent 1 the test can spoil: ``bad_confidence``
    replaces its confidence, ``bad_answer`` (Answer fields) its answers."""

    model_id = "hostile"

    def __init__(self, confidence=None):
        super().__init__(["7", "5", "6"], refine={1: "7"}, confidence=confidence)
        self.bad_confidence, self.bad_answer = VALID, None

    def _spoil(self, turns, results, **changes):
        return [dataclasses.replace(r, **changes) if changes and t.agent == 1 else r for t, r in zip(turns, results)]

    def solve(self, turns):
        return self._spoil(turns, super().solve(turns), **(self.bad_answer or {}))

    def refine(self, turns):
        return self._spoil(turns, super().refine(turns), **(self.bad_answer or {}))

    def introspect(self, turns):
        results = super().introspect(turns)
        if self.bad_confidence is VALID:
            return results
        return self._spoil(turns, results, value=self.bad_confidence)


def make(solver):
    return de.parallel_env(task=FixedTask(), team=solver, n_agents=3, max_rounds=2)


def assert_in_spaces(env, obs):
    for agent, o in obs.items():
        assert env.observation_space(agent).contains(o), (agent, o)
    assert env.state_space.contains(env.state())


BAD_CONFIDENCES = [math.nan, math.inf, -math.inf, -0.01, 1.5, None]
BAD_ANSWERS = [
    ({"profile": (0.5,) * 5}, r"a profile that is not 6 numbers in \[0, 1\]"),
    ({"profile": (0.5,) * 5 + (1.2,)}, r"a profile that is not 6 numbers in \[0, 1\]"),
    ({"profile": (0.5,) * 5 + (math.nan,)}, r"a profile that is not 6 numbers in \[0, 1\]"),
    ({"prompt_tokens": -1}, "a negative token count"),
    ({"completion_tokens": -5}, "a negative token count"),
]


@pytest.mark.parametrize("value", BAD_CONFIDENCES)
def test_bad_confidence_at_reset_names_the_solver(value):
    solver = HostileSolver()
    solver.bad_confidence = value
    env = make(solver)
    with pytest.raises(ValueError, match=r"solver 'hostile' returned a confidence outside \[0, 1\] for agent_1 \(env 0\)"):
        env.reset(seed=0)
    assert env.agents == [] and env.render() is None


@pytest.mark.parametrize("value", BAD_CONFIDENCES)
def test_bad_confidence_at_step_changes_nothing(value):
    solver = HostileSolver()
    env = make(solver)
    obs, _ = env.reset(seed=0, options={"problem_index": 0})
    assert_in_spaces(env, obs)
    state = env.state().copy()
    solver.bad_confidence = value
    with pytest.raises(ValueError, match=r"solver 'hostile' returned a confidence outside \[0, 1\] for agent_1"):
        env.step(ACTIONS)
    np.testing.assert_array_equal(env.state(), state)
    solver.bad_confidence = VALID
    obs, rewards, _, _, infos = env.step(ACTIONS)
    assert_in_spaces(env, obs)
    reference = make(HostileSolver())
    reference.reset(seed=0, options={"problem_index": 0})
    _, expected_rewards, _, _, expected_infos = reference.step(ACTIONS)
    assert (rewards, infos) == (expected_rewards, expected_infos)


@pytest.mark.parametrize("changes,message", BAD_ANSWERS)
def test_bad_answers_name_the_solver_and_change_nothing(changes, message):
    solver = HostileSolver()
    solver.bad_answer = changes
    with pytest.raises(ValueError, match=f"solver 'hostile' returned {message} for agent_1"):
        make(solver).reset(seed=0)
    solver.bad_answer = None
    env = make(solver)
    env.reset(seed=0, options={"problem_index": 0})
    state = env.state().copy()
    solver.bad_answer = changes
    with pytest.raises(ValueError, match=f"solver 'hostile' returned {message} for agent_1"):
        env.step(ACTIONS)  # agent 1 refines
    np.testing.assert_array_equal(env.state(), state)
    assert env.agents == ["agent_0", "agent_1", "agent_2"]


def test_boundary_confidences_are_valid_and_observations_stay_in_space():
    solver = HostileSolver(confidence={"7": 1.0, "5": 0.0, "6": 1.0})
    env = make(solver)
    obs, infos = env.reset(seed=0, options={"problem_index": 0})
    assert_in_spaces(env, obs)
    assert [infos[a]["confidence"] for a in env.agents] == [1.0, 0.0, 1.0]
    while env.agents:
        obs, *_ = env.step(ACTIONS)
        assert_in_spaces(env, obs)
