"""The result of a held-out evaluation, the same type in both families.

``algorithms.meta.evaluate(policy, venv, problem_indices, seed, progress)`` and
``algorithms.text.evaluate(learner, venv, problem_indices, seed, progress)`` play each
problem once, greedily, and return an :class:`Evaluation`: the four numbers both families
measure, and beside them ``metrics``, the family's ``eval/*`` numbers as a run logs them in
``metrics.jsonl`` and ``summary.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Evaluation:
    """What a team did on the held-out problems, either family.

    Attributes:
        accuracy: Share of the problems the team's answer gets right (meta: the plurality
            consensus after the last round, ``eval/consensus_accuracy``; text: the
            protocol's ``correct`` part, or on the coding protocol the share of problems
            whose code passes every test); None where the protocol scores no correctness
            (writing).
        answered_share: Share of the final answers the env reads as an answer (under strict
            scoring: stated in the asked form and not cut); None where the protocol asks for
            no form (text: only the math protocol does).
        cut_share: Share of the final answers (text: of the trained agents' completions)
            cut at the token budget.
        tokens_per_answer: Mean completion tokens of a final answer (text: of a trained
            agent's completion); a simulated meta team's are its modelled counts.
        metrics: The family's ``eval/*`` numbers, as a run logs them (meta:
            ``eval/accuracy``, ``eval/consensus_accuracy``, ``eval/tokens``,
            ``eval/{action}_share``; text: ``eval/{part}`` of each reward part,
            ``eval/joint``, ``eval/truncated_share``, ``eval/mean_completion_tokens``, on
            the math protocol ``eval/asked_form_share``, on the coding protocol
            ``eval/pass_rate``, the same number as ``accuracy``).
    """

    accuracy: float | None
    answered_share: float | None
    cut_share: float
    tokens_per_answer: float
    metrics: dict[str, float] = field(default_factory=dict)
