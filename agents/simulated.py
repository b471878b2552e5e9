"""A simulated team: a documented generative model of LLM solvers with no text model.

It exists for teaching, for fast optimizer comparisons and so the env's tests run in
seconds. Its texts start with ``[simulated]`` and its ``model_id`` with ``simulated:``,
so its results cannot be mistaken for a real LLM's.

It is a :class:`~agents.base.PrivilegedSolver`: having no text model, it must know what
"correct" is, so the environment hands it the reference decision of every turn as a
separate ``references`` argument (turns themselves never carry it).

The model, for agent i (every parameter is a scalar or one value per agent):

- **solve** (round 0): correct with probability ``skill[i]``; a wrong answer is drawn
  uniformly from a pool of ``distractors`` wrong decisions per problem, so wrong agents
  can agree. With probability ``parse_failure`` the answer is unparseable (``None``).
- **refine**: let s be the confidence-weighted share of peers whose answer is correct,
  s = sum_j c_j 1[j correct] / sum_j c_j. A correct agent stays correct with probability
  1 - ``corruption[i]`` (1 - s); a wrong one becomes correct with probability
  ``self_fix[i]`` + ``refine_gain[i]`` s (clipped to 1). A wrong result is a distractor.
- **introspect**: z_conf = sigmoid(``calibration`` (+1 if correct else -1) +
  ``confidence_noise`` eps), eps ~ N(0, 1). ``calibration=0`` makes confidence
  uninformative; large values make it a perfect correctness signal.
- **profile**: each feature is clip(0.5 + 0.1 (+1 if correct else -1) + 0.2 eps, 0, 1),
  weakly informative.
- **tokens**: completions of about ``solve_tokens`` / ``refine_tokens`` tokens (uniform
  in [0.5, 1.5] times the mean), prompts sized from the question and context.

Every random number is a counter-based hash of the turn's seed (see
:mod:`agents.seeding`), so results are deterministic and G rollouts of one problem share
their random numbers (common random numbers).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import expit, ndtri

from agents.base import Answer, Confidence, PrivilegedSolver, Turn
from agents.profile import PROFILE_SIZE
from agents.seeding import uniforms

# Random streams (any distinct integers).
_CORRECT, _DISTRACTOR, _PARSE, _TOKENS, _CONF, _PROFILE = 1, 2, 3, 4, 5, 16


def _per_agent(name: str, value: float | Sequence[float], low: float, high: float) -> np.ndarray:
    values = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a number or a non-empty sequence, got {value!r}")
    if np.any(~np.isfinite(values)) or np.any(values < low) or np.any(values > high):
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value!r}")
    return values


class SimulatedTeam(PrivilegedSolver):
    """Calibrated synthetic solvers (see the module docstring for the model).

    Per-agent parameters take a scalar (all agents) or a sequence indexed by agent,
    cycled if the team is larger than the sequence.

    Args:
        skill: P(correct first answer) per agent.
        refine_gain: How strongly REFINE pulls a wrong agent to the peers' correct answer.
        self_fix: P(a wrong agent fixes its answer alone when refining).
        corruption: How strongly wrong peers pull a correct refining agent away.
        calibration: Logit separation of confidence between correct and wrong answers.
        confidence_noise: Standard deviation of the confidence logit noise.
        distractors: Number of distinct wrong decisions per problem (>= 1).
        parse_failure: P(an answer is unparseable).
        solve_tokens: Mean completion tokens of a solve.
        refine_tokens: Mean completion tokens of a refine.

    Example:
        >>> from agents.base import Turn
        >>> team = SimulatedTeam(skill=1.0, parse_failure=0.0)
        >>> turn = Turn("1+1?", "", lambda text: None, agent=0, round=0, seed=7)
        >>> team.solve([turn], references=["2"])[0].decision
        '2'
    """

    def __init__(
        self,
        skill: float | Sequence[float] = (0.8, 0.55, 0.35),
        refine_gain: float | Sequence[float] = 0.6,
        self_fix: float | Sequence[float] = 0.1,
        corruption: float | Sequence[float] = 0.3,
        calibration: float = 1.5,
        confidence_noise: float = 1.0,
        distractors: int = 3,
        parse_failure: float = 0.02,
        solve_tokens: int = 180,
        refine_tokens: int = 220,
    ) -> None:
        self.skill = _per_agent("skill", skill, 0.0, 1.0)
        self.refine_gain = _per_agent("refine_gain", refine_gain, 0.0, 1.0)
        self.self_fix = _per_agent("self_fix", self_fix, 0.0, 1.0)
        self.corruption = _per_agent("corruption", corruption, 0.0, 1.0)
        self.calibration = float(_per_agent("calibration", calibration, 0.0, 50.0)[0])
        self.confidence_noise = float(_per_agent("confidence_noise", confidence_noise, 0.0, 50.0)[0])
        self.parse_failure = float(_per_agent("parse_failure", parse_failure, 0.0, 1.0)[0])
        if not isinstance(distractors, int) or distractors < 1:
            raise ValueError(f"distractors must be an integer >= 1, got {distractors!r}")
        for name, tokens in (("solve_tokens", solve_tokens), ("refine_tokens", refine_tokens)):
            if not isinstance(tokens, int) or tokens < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {tokens!r}")
        self.distractors = distractors
        self.solve_tokens = solve_tokens
        self.refine_tokens = refine_tokens
        skills = "/".join(f"{s:g}" for s in self.skill)
        self.model_id = f"simulated:skill={skills},calibration={self.calibration:g}"

    # ------------------------------------------------------------------ Solver API
    def solve(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        """Round-0 answers: correct with probability ``skill``."""
        seeds, agents = self._seeds_agents(turns)
        p_correct = self.skill[agents % self.skill.size]
        prompt = np.array([len(t.question) // 4 + 60 for t in turns])
        return self._answers(turns, references, seeds, p_correct, self.solve_tokens, prompt)

    def refine(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        """Refined answers, pulled towards the confidence-weighted correct peers."""
        seeds, agents = self._seeds_agents(turns)
        rows = list(zip(turns, references, strict=True))
        support = np.array([self._correct_support(t, reference) for t, reference in rows])
        was_correct = np.array([t.previous.decision == reference for t, reference in rows])
        stay = 1.0 - self.corruption[agents % self.corruption.size] * (1.0 - support)
        fix = self.self_fix[agents % self.self_fix.size] + self.refine_gain[agents % self.refine_gain.size] * support
        p_correct = np.clip(np.where(was_correct, stay, fix), 0.0, 1.0)
        prompt = np.array(
            [len(t.question) // 4 + 90 + t.previous.completion_tokens + 20 * len(t.peers) for t in turns]
        )
        return self._answers(turns, references, seeds, p_correct, self.refine_tokens, prompt)

    def introspect(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Confidence]:
        """Confidences whose informativeness is set by ``calibration``."""
        seeds, _ = self._seeds_agents(turns)
        rows = zip(turns, references, strict=True)
        sign = np.array([1.0 if t.previous.decision == reference else -1.0 for t, reference in rows])
        noise = ndtri(uniforms(seeds, _CONF))
        values = expit(self.calibration * sign + self.confidence_noise * noise)
        return [
            Confidence(float(v), "simulated", prompt_tokens=t.previous.completion_tokens + 40, completion_tokens=1)
            for v, t in zip(values, turns, strict=True)
        ]

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _seeds_agents(turns: Sequence[Turn]) -> tuple[np.ndarray, np.ndarray]:
        seeds = np.fromiter((t.seed for t in turns), dtype=np.uint64, count=len(turns))
        agents = np.fromiter((t.agent for t in turns), dtype=np.int64, count=len(turns))
        return seeds, agents

    @staticmethod
    def _correct_support(turn: Turn, reference: str) -> float:
        total = sum(peer.confidence for peer in turn.peers)
        if total <= 0.0:
            return 0.0
        return sum(p.confidence for p in turn.peers if p.decision == reference) / total

    def _distractor(self, reference: str, k: int) -> str:
        try:
            return str(int(reference) + (k // 2 + 1) * (1 if k % 2 == 0 else -1))
        except ValueError:
            return f"wrong-{k}"

    def _answers(
        self,
        turns: Sequence[Turn],
        references: Sequence[str],
        seeds: np.ndarray,
        p_correct: np.ndarray,
        mean_tokens: int,
        prompt: np.ndarray,
    ) -> list[Answer]:
        correct = uniforms(seeds, _CORRECT) < p_correct
        which = (uniforms(seeds, _DISTRACTOR) * self.distractors).astype(np.int64)
        unparsed = uniforms(seeds, _PARSE) < self.parse_failure
        completion = (mean_tokens * (0.5 + uniforms(seeds, _TOKENS))).astype(np.int64)
        sign = np.where(correct, 1.0, -1.0)[:, None]
        eps = ndtri(np.stack([uniforms(seeds, _PROFILE + k) for k in range(PROFILE_SIZE)], axis=1))
        profiles = np.clip(0.5 + 0.1 * sign + 0.2 * eps, 0.0, 1.0).tolist()
        answers = []
        rows = zip(
            turns, references, unparsed.tolist(), correct.tolist(), which.tolist(), profiles, prompt.tolist(),
            completion.tolist(), strict=True,
        )
        for turn, reference, unparsed_n, correct_n, which_n, profile, prompt_n, completion_n in rows:
            if unparsed_n:
                decision = None
            elif correct_n:
                decision = reference
            else:
                decision = self._distractor(reference, which_n)
            text = f"[simulated] agent {turn.agent} round {turn.round}: the answer is {decision}."
            answers.append(Answer(text, decision, tuple(profile), prompt_n, completion_n))
        return answers
