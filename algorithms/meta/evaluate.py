"""Evaluate a meta-policy on a fixed set of problems through the vector env.

:func:`evaluate` is the family's evaluation entry point (the text family's is
:func:`algorithms.text.evaluate`, of the same shape): it returns an
:class:`~algorithms.core.evaluation.Evaluation`, the result type of both families, whose
``metrics`` are the ``eval/*`` numbers a run logs. :func:`evaluate_rounds` plays the same
episodes and keeps what happened round by round (:class:`EvalResult`: accuracy per round,
confidences, action shares), for the tables and figures of ``deliberate run meta``.

Every policy evaluated with the same ``seed`` sees the same problems with the same
episode seeds, hence the same round 0 (and, through the response cache, the same LLM
outputs wherever histories coincide): differences between policies come from their
actions, not from sampling noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from numbers import Integral

import numpy as np
from tqdm.auto import tqdm

import deliberation_env as de
from agents.progress import reporting
from agents.seeding import derive_seed
from algorithms.core.evaluation import Evaluation
from algorithms.core.learner import Learner
from algorithms.core.run import padded_batches
from algorithms.meta.policy import Policy, is_privileged, without_ground_truth
from deliberation_env.meta.spaces import ACTION_NAMES


@dataclass
class EvalResult:
    """What one policy did on the evaluation problems.

    Attributes:
        policy: Policy name.
        n_problems: Number of problems (episodes).
        accuracy: Mean individual accuracy after each round, ``accuracy[0]`` = round 0.
        consensus_accuracy: Accuracy of the plurality consensus after each round.
        tokens_per_problem: Mean prompt + completion tokens of the whole team per episode.
        cut_share: Share of the final answers cut at the token budget (under strict
            scoring, no answer).
        answered_share: Share of the final answers with a decision under the env's
            scoring (under strict scoring: stated in the asked form and not cut).
        answer_tokens: Mean tokens of a final answer's text.
        action_shares: Share of PERSIST / REFINE / CONCEDE over all agent-steps.
        confidence: Introspective confidence of every answer at every round (for
            reliability diagrams), aligned with ``correct``.
        correct: Correctness of those answers.
        final_consensus: Whether each problem's final consensus is correct, in the order of
            the evaluated problems (for paired comparisons of policies).
    """

    policy: str
    n_problems: int
    accuracy: list[float]
    consensus_accuracy: list[float]
    tokens_per_problem: float
    cut_share: float
    answered_share: float
    answer_tokens: float
    action_shares: dict[str, float]
    confidence: list[float] = field(repr=False)
    correct: list[bool] = field(repr=False)
    final_consensus: list[bool] = field(repr=False)

    def summary(self) -> dict[str, object]:
        """The result without the per-answer lists (for tables and JSON)."""
        data = asdict(self)
        del data["confidence"], data["correct"], data["final_consensus"]
        return data

    def metrics(self) -> dict[str, float]:
        """The ``eval/*`` numbers a run logs: ``eval/accuracy`` (mean individual accuracy
        after the last round), ``eval/consensus_accuracy``, ``eval/tokens`` (per problem)
        and ``eval/{action}_share``."""
        return {
            "eval/accuracy": self.accuracy[-1],
            "eval/consensus_accuracy": self.consensus_accuracy[-1],
            "eval/tokens": self.tokens_per_problem,
            **{f"eval/{action}_share": share for action, share in self.action_shares.items()},
        }

    def evaluation(self) -> Evaluation:
        """The result as both families report it (:func:`evaluate`)."""
        return Evaluation(
            accuracy=self.consensus_accuracy[-1],
            answered_share=self.answered_share,
            cut_share=self.cut_share,
            tokens_per_answer=self.answer_tokens,
            metrics=self.metrics(),
        )


def evaluate(
    policy: Policy | Learner,
    venv: de.DeliberationVectorEnv,
    problem_indices: Sequence[int],
    seed: int = 0,
    progress: bool = True,
) -> Evaluation:
    """Play ``policy`` greedily once on each problem: the meta family's evaluation.

    Args:
        policy: The policy to evaluate (a baseline, a learner's ``policy()``, or the learner).
        venv: The vector env (its split decides what ``problem_indices`` index).
        problem_indices: Problems to evaluate on, ``venv.num_envs`` at a time.
        seed: Evaluation seed; problem k always gets episode seed f(seed, problem id).
        progress: Show progress on stderr (:func:`evaluate_rounds`).

    Returns:
        The :class:`~algorithms.core.evaluation.Evaluation` (``accuracy``: the consensus's).
    """
    return evaluate_rounds(policy, venv, problem_indices, seed, progress).evaluation()


def policy_of(policy_or_learner: Policy | Learner) -> Policy:
    """The policy to play: ``policy_or_learner`` itself, or a learner's ``policy()``."""
    if not hasattr(policy_or_learner, "act") and callable(getattr(policy_or_learner, "policy", None)):
        return policy_or_learner.policy()
    if not callable(getattr(policy_or_learner, "act", None)):
        raise TypeError(
            f"evaluate needs a policy (a name and act(obs, infos)) or a learner with policy(), "
            f"got {type(policy_or_learner).__name__}"
        )
    return policy_or_learner


def evaluate_rounds(
    policy: Policy | Learner,
    venv: de.DeliberationVectorEnv,
    problem_indices: Sequence[int],
    seed: int = 0,
    progress: bool = True,
    label: str | None = None,
) -> EvalResult:
    """Run one episode per problem and aggregate accuracy, tokens and actions round by round.

    Args:
        policy: The policy to evaluate, or a learner (its ``policy()``).
        venv: The vector env (its split decides what ``problem_indices`` index).
        problem_indices: Problems to evaluate on, ``venv.num_envs`` at a time.
        seed: Evaluation seed; problem k always gets episode seed f(seed, problem id).
        progress: Show progress on stderr: a bar of the problems' rounds played (all
            problems of a batch step together, one round at a time) and, below it, one of the
            requests done of each batched LLM call (:mod:`agents.progress`).
        label: The progress bar's label (default: ``eval <policy name>``).

    Returns:
        The aggregated :class:`EvalResult`.
    """
    if len(problem_indices) == 0:
        raise ValueError("problem_indices is empty: nothing to evaluate")
    outside = [
        k for k in problem_indices if isinstance(k, bool) or not (isinstance(k, Integral) and 0 <= k < len(venv.problems))
    ]
    if outside:
        raise ValueError(
            f"problem_indices {outside[:5]} are not indices of the env's {len(venv.problems)} problems "
            f"(0 .. {len(venv.problems) - 1}, of the split the env was made with)"
        )
    policy = policy_of(policy)
    privileged = is_privileged(policy)
    E, agents, rounds = venv.num_envs, venv.agents, venv.episode_length
    correct = np.zeros((len(problem_indices), rounds + 1, len(agents)), dtype=bool)
    consensus = np.zeros((len(problem_indices), rounds + 1), dtype=bool)
    tokens = np.zeros(len(problem_indices))
    finals = np.zeros((len(problem_indices), len(agents), 3))  # cut, answered, answer tokens
    action_counts = np.zeros(len(de.MetaAction))
    conf_all: list[float] = []
    correct_all: list[bool] = []
    bar = tqdm(
        total=len(problem_indices) * (rounds + 1),
        desc=label or f"eval {policy.name}",
        unit="problem-round",
        disable=not progress,
    )
    with bar, reporting(progress):  # reporting: a bar per batched LLM call, below this one
        for start, n_real, chunk in padded_batches(problem_indices, E):
            episode_seeds = [derive_seed(seed, venv.problems[k].id) for k in chunk]
            obs, infos = venv.reset(options={"problem_index": chunk, "episode_seed": episode_seeds})
            r = 0
            while True:
                for e in range(n_real):
                    correct[start + e, r] = [infos[e][a]["correct"] for a in agents]
                    consensus[start + e, r] = infos[e][agents[0]]["consensus_correct"]
                    conf_all.extend(infos[e][a]["confidence"] for a in agents)
                    correct_all.extend(bool(infos[e][a]["correct"]) for a in agents)
                bar.update(n_real)
                if r == rounds or not venv.active.any():
                    break
                actions = policy.act(obs, infos if privileged else without_ground_truth(infos))
                live = venv.active[:n_real]
                obs, _, _, _, infos = venv.step(actions)  # checks the actions' shape and values first
                for a in agents:
                    action_counts += np.bincount(np.asarray(actions[a])[:n_real][live], minlength=len(de.MetaAction))
                r += 1
            # Episodes that stopped early keep their final state for the remaining rounds.
            correct[start : start + n_real, r + 1 :] = correct[start : start + n_real, r : r + 1]
            consensus[start : start + n_real, r + 1 :] = consensus[start : start + n_real, r : r + 1]
            tokens[start : start + n_real] = [sum(infos[e][a]["episode_tokens"] for a in agents) for e in range(n_real)]
            finals[start : start + n_real] = [
                [(infos[e][a]["cut"], infos[e][a]["decision"] is not None, infos[e][a]["answer_tokens"]) for a in agents]
                for e in range(n_real)
            ]
            bar.update(n_real * (rounds - r))  # the rounds an early end skipped
    shares = action_counts / max(action_counts.sum(), 1)
    return EvalResult(
        policy=policy.name,
        n_problems=len(problem_indices),
        accuracy=correct.mean(axis=(0, 2)).tolist(),
        consensus_accuracy=consensus.mean(axis=0).tolist(),
        tokens_per_problem=float(tokens.mean()),
        cut_share=float(finals[..., 0].mean()),
        answered_share=float(finals[..., 1].mean()),
        answer_tokens=float(finals[..., 2].mean()),
        action_shares={name: float(s) for name, s in zip(ACTION_NAMES, shares, strict=True)},
        confidence=conf_all,
        correct=correct_all,
        final_consensus=consensus[:, -1].tolist(),
    )
