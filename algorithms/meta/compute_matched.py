"""Compute-matched baselines of every meta ``deliberate run`` table.

A team of n agents deliberating for R rounds spends more tokens than one agent answering
once, so its accuracy is only news if it beats what one agent buys with the same tokens:

- **single agent**: the team's first member answers once (its round-0 accuracy, its
  tokens per problem, including the introspective confidence call).
- **self-consistency k**: the same agent samples k answers (k seeds) and the plurality
  vote decides (ties: summed confidence), with k = max(2, round(T / t)), where T is the
  most tokens per problem any evaluated team policy spent and t the single agent's, so
  that its budget matches the costliest row of the table.

Both run in the env itself (a team of k copies of one agent that all PERSIST), so the
answers, parsing, votes and token counts are the env's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from agents.base import Answer, Confidence, PrivilegedSolver, Solver, Turn, call_solver
from algorithms.meta import baselines
from algorithms.meta.evaluate import EvalResult, evaluate_rounds
from deliberation_env.factory import vector_env_from
from deliberation_env.meta.config import EnvConfig


@dataclass(frozen=True)
class OneAgent(PrivilegedSolver):
    """``solver`` answering every agent's turn as its agent 0: k agents are k samples of one
    agent (their seeds still differ by agent index). The reference decisions it is handed
    reach ``solver`` only if that is privileged too (:func:`agents.base.call_solver`)."""

    solver: Solver | PrivilegedSolver

    @property
    def model_id(self) -> str:
        """The wrapped solver's model id."""
        return self.solver.model_id

    def solve(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        """Round-0 answers of agent 0."""
        return call_solver(self.solver, "solve", as_agent_zero(turns), references)

    def refine(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Answer]:
        """Refined answers of agent 0 (unused: the baselines only PERSIST)."""
        return call_solver(self.solver, "refine", as_agent_zero(turns), references)

    def introspect(self, turns: Sequence[Turn], references: Sequence[str]) -> list[Confidence]:
        """Confidences of agent 0."""
        return call_solver(self.solver, "introspect", as_agent_zero(turns), references)


def as_agent_zero(turns: Sequence[Turn]) -> list[Turn]:
    """The turns, each as agent 0's."""
    return [dataclasses.replace(turn, agent=0) for turn in turns]


def samples_of_one_agent(
    member: Solver,
    config: EnvConfig,
    k: int,
    problems: Sequence[int],
    seed: int,
    num_envs: int,
    label: str,
    progress: bool = True,
) -> EvalResult:
    """k answers of ``member`` per problem, never revised, on ``config``'s task and split
    (``progress``: :func:`~algorithms.meta.evaluate.evaluate_rounds`' bars, under ``label``)."""
    venv = vector_env_from(  # ``member`` is built: it holds the sampling settings of its spec already
        config, num_envs, team=OneAgent(member), n_agents=k, max_rounds=1, stop_on_consensus=False,
        temperature=None, max_tokens=None, top_k=None,
    )
    return evaluate_rounds(baselines.get("independent"), venv, problems, seed=seed, progress=progress, label=label)


def compute_matched(
    member: Solver, config: EnvConfig, team_results: Sequence[EvalResult], problems: Sequence[int], seed: int,
    num_envs: int,
    progress: bool = True,
) -> list[EvalResult]:
    """The single-agent and self-consistency rows for a table of ``team_results``.

    Args:
        member: The agent of both baselines (the team's first member).
        config: The team's env (task, split, reward settings).
        team_results: The team policies' results; the costliest sets the budget.
        problems: The evaluated problem indices.
        seed: The evaluation seed of the team's results.
        num_envs: Episodes stepped together.
        progress: Show the evaluations' progress on stderr (requests done of each LLM call).
    """
    pair = samples_of_one_agent(member, config, 2, problems, seed, num_envs, "eval single agent", progress)
    single_accuracy = pair.accuracy[0]  # mean over two samples: one sample's expected accuracy
    single = dataclasses.replace(
        pair,
        policy="single agent",
        accuracy=[single_accuracy, single_accuracy],
        consensus_accuracy=[single_accuracy, single_accuracy],
        tokens_per_problem=pair.tokens_per_problem / 2,
    )
    budget = max(result.tokens_per_problem for result in team_results)
    k = max(2, round(budget / single.tokens_per_problem))
    votes = samples_of_one_agent(
        member, config, k, problems, seed, num_envs, f"eval self-consistency k={k}", progress
    )
    return [single, dataclasses.replace(votes, policy=f"self-consistency k={k}")]
