"""reset and step are atomic: a fault in any phase leaves the env as it was, and a retry
plays exactly the episode a fault-free env plays."""

import numpy as np
import pytest

import deliberation_env as de
from agents.base import BackendError, PrivilegedSolver
from agents.simulated import SimulatedTeam

ROUND_ACTIONS = [{"agent_0": 1, "agent_1": 2, "agent_2": 0}, {"agent_0": 1, "agent_1": 1, "agent_2": 2}]
# Every call of the script: a reset without a seed draws from the env's RNG, which a failed
# reset must not consume.
SCRIPT = [("reset", 3), ("step", 0), ("step", 1), ("reset", None), ("step", 1), ("step", 0)]


class FaultySolver(PrivilegedSolver):
    """The simulated team, except that the ``fail_at``-th call of ``phase`` raises."""

    def __init__(self, phase: str | None = None, fail_at: int = 0):
        self.inner = SimulatedTeam()
        self.model_id = self.inner.model_id
        self.phase, self.fail_at = phase, fail_at
        self.count = 0

    def _call(self, phase, turns, references):
        if phase == self.phase:
            self.count += 1
            if self.count == self.fail_at:
                raise BackendError(f"backend {self.model_id!r} failed on {phase} call {self.count}")
        return getattr(self.inner, phase)(turns, references)

    def solve(self, turns, references):
        return self._call("solve", turns, references)

    def refine(self, turns, references):
        return self._call("refine", turns, references)

    def introspect(self, turns, references):
        return self._call("introspect", turns, references)


def call(env, kind, arg):
    if kind == "reset":
        return env.reset(seed=arg)
    return env.step({a: ROUND_ACTIONS[arg][a] for a in env.agents})


def as_plain(value):
    """Observations, rewards and infos with arrays as lists, comparable with ``==``."""
    if isinstance(value, dict):
        return {k: as_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def visible(env):
    """Everything a user can read off the env without stepping it (render: round, answers,
    confidences, correctness, last actions; state: every agent's observation row)."""
    table = env.render()
    return list(env.agents), table, None if table is None else env.state().tolist()


def play(env):
    """Run SCRIPT; a call that raises is checked to change nothing, then retried once."""
    transcript, faults = [], 0
    for kind, arg in SCRIPT:
        before = visible(env)
        try:
            transcript.append(as_plain(call(env, kind, arg)))
            continue
        except BackendError:
            faults += 1
        assert visible(env) == before
        transcript.append(as_plain(call(env, kind, arg)))
    return transcript, faults


# One shared simulated solver: each reset makes one solve and one introspect call, each
# step one refine and one introspect call (every step here has a refining agent). So
# ("solve", 2) and ("introspect", 4) hit the seedless reset, ("refine", 4) the last step.
FAULTS = [("solve", 1), ("solve", 2), ("introspect", 1), ("introspect", 2), ("introspect", 3),
          ("introspect", 4), ("refine", 1), ("refine", 2), ("refine", 4)]


@pytest.mark.parametrize("phase,fail_at", FAULTS)
def test_a_fault_changes_nothing_and_a_retry_plays_the_fault_free_episode(phase, fail_at):
    expected, _ = play(de.parallel_env(team=FaultySolver(), render_mode="ansi", max_rounds=2))
    transcript, faults = play(de.parallel_env(team=FaultySolver(phase, fail_at), render_mode="ansi", max_rounds=2))
    assert faults == 1
    assert transcript == expected


def test_step_after_a_failed_first_reset_says_to_call_reset():
    env = de.parallel_env(team=FaultySolver("introspect", 1))
    with pytest.raises(BackendError):
        env.reset(seed=0)
    assert env.agents == []
    with pytest.raises(ValueError, match="call reset"):
        env.step(ROUND_ACTIONS[0])
    with pytest.raises(ValueError, match="call reset"):
        env.state()
    env.reset(seed=0)  # the retry works
    env.step(ROUND_ACTIONS[0])


def test_introspection_fault_does_not_advance_the_round():
    env = de.parallel_env(team=FaultySolver("introspect", 2), max_rounds=2)
    _, infos = env.reset(seed=0)
    with pytest.raises(BackendError):
        env.step(ROUND_ACTIONS[0])
    _, _, terms, _, infos = env.step(ROUND_ACTIONS[0])
    assert infos["agent_0"]["round"] == 1 and not any(terms.values())


def vector_play(venv):
    """Reset, then both rounds; a step that raises is checked to change nothing, then retried."""
    transcript, faults = [as_plain(venv.reset(seed=4))], 0
    for act in ROUND_ACTIONS:
        actions = {a: np.full(venv.num_envs, act[a]) for a in venv.agents}
        before = venv.state().tolist(), venv.active.tolist()
        try:
            transcript.append(as_plain(venv.step(actions)))
            continue
        except BackendError:
            faults += 1
        assert (venv.state().tolist(), venv.active.tolist()) == before
        transcript.append(as_plain(venv.step(actions)))
    return transcript, faults


@pytest.mark.parametrize("phase,fail_at", [("refine", 1), ("refine", 2), ("introspect", 2), ("introspect", 3)])
def test_vector_env_step_fault_changes_nothing(phase, fail_at):
    expected, _ = vector_play(de.vector_env(3, team=FaultySolver(), max_rounds=2))
    transcript, faults = vector_play(de.vector_env(3, team=FaultySolver(phase, fail_at), max_rounds=2))
    assert faults == 1
    assert transcript == expected


def test_vector_env_reset_fault_changes_nothing():
    venv = de.vector_env(2, team=FaultySolver("solve", 2), max_rounds=2)
    venv.reset(seed=1)
    venv.step({a: np.ones(2, dtype=int) for a in venv.agents})
    state, active = venv.state(), venv.active
    with pytest.raises(BackendError):
        venv.reset()
    np.testing.assert_array_equal(venv.state(), state)
    np.testing.assert_array_equal(venv.active, active)
    retried = venv.reset()
    reference = de.vector_env(2, team=FaultySolver(), max_rounds=2)
    reference.reset(seed=1)
    reference.step({a: np.ones(2, dtype=int) for a in reference.agents})
    assert as_plain(retried) == as_plain(reference.reset())


def test_vector_step_after_a_failed_first_reset_says_to_call_reset():
    venv = de.vector_env(2, team=FaultySolver("solve", 1))
    with pytest.raises(BackendError):
        venv.reset(seed=0)
    with pytest.raises(ValueError, match="call reset"):
        venv.step({a: np.zeros(2, dtype=int) for a in venv.agents})
