"""The deliberation engine: ``num_envs`` episodes stepped in lockstep.

Both front-ends use it: :class:`deliberation_env.env.DeliberationEnv` is one episode,
:class:`deliberation_env.vector.DeliberationVectorEnv` is many. Every backend request of
a phase (solve, refine, introspect) of every env goes to each solver in one call.
Consensus, leave-one-out consensus and observations are computed on arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.base import Answer, Confidence, PeerAnswer, Solver, Turn
from agents.profile import PROFILE_SIZE
from agents.seeding import derive_seed, turn_seeds
from deliberation_env.spaces import TEXT_CHARSET, TEXT_MAX_LENGTH, MetaAction
from deliberation_env.tasks import Problem, Task

CONCEDE_RULES = ("most_confident", "plurality")


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the decomposed reward.

    r = reward_scale * (w_local r_local + w_global r_global - lambda_tok tokens / 1000).
    """

    reward_scale: float = 1.0
    w_local: float = 1.0
    w_global: float = 1.0
    lambda_tok: float = 0.0

    def __post_init__(self) -> None:
        for name in ("reward_scale", "w_local", "w_global", "lambda_tok"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
                raise TypeError(f"{name} must be a finite number, got {value!r}")
        if self.reward_scale <= 0:
            raise ValueError(f"reward_scale must be > 0, got {self.reward_scale!r}")
        for name in ("w_local", "w_global", "lambda_tok"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")


def plurality_winner(codes: np.ndarray, conf: np.ndarray, same: np.ndarray) -> np.ndarray:
    """The agent whose decision is the consensus, per env; -1 if no valid decision.

    Plurality vote over valid decisions (code >= 0); ties between decisions are broken
    by the summed confidence of their voters, then by the lowest agent index.

    Args:
        codes: (E, n) decision codes, -1 for unparseable.
        conf: (E, n) confidences.
        same: (E, n, n) bool, ``same[e, i, j]``: i and j hold the same valid decision.

    Returns:
        (E,) agent index of a holder of the winning decision.
    """
    n = codes.shape[1]
    key = same.sum(-1) * (n + 1.0) + (same * conf[:, None, :]).sum(-1)
    key = np.where(codes >= 0, key, -1.0)
    winner = key.argmax(-1)
    return np.where(key.max(-1) >= 0, winner, -1)


def leave_one_out_winners(codes: np.ndarray, conf: np.ndarray, same: np.ndarray) -> np.ndarray:
    """``plurality_winner`` of the team without agent i, for every i: shape (E, n)."""
    n = codes.shape[1]
    count = same.sum(-1)  # (E, n_j)
    sumconf = (same * conf[:, None, :]).sum(-1)
    # Without agent i, voter j's group loses i's vote when i is in it: same[e, j, i].
    same_ji = np.swapaxes(same, 1, 2)  # [e, i, j] = same[e, j, i]
    key = (count[:, None, :] - same_ji) * (n + 1.0) + sumconf[:, None, :] - same_ji * conf[:, :, None]
    key = np.where(codes[:, None, :] >= 0, key, -1.0)
    key[:, np.arange(n), np.arange(n)] = -1.0
    winner = key.argmax(-1)
    return np.where(key.max(-1) >= 0, winner, -1)


def correct_at(correct: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """Whether the winner's decision is correct; False where there is no winner (-1).

    Args:
        correct: (E, n) correctness of each agent.
        winner: (E,) or (E, m) agent indices, -1 for none.
    """
    index = np.maximum(winner, 0).reshape(winner.shape[0], -1)
    return np.take_along_axis(correct, index, axis=1).reshape(winner.shape) & (winner >= 0)


def _sanitize(text: str) -> str:
    return "".join(ch if ch in TEXT_CHARSET else "?" for ch in text[:TEXT_MAX_LENGTH])


class DeliberationCore:
    """State and dynamics of ``num_envs`` deliberation episodes.

    Args:
        task: The benchmark.
        team: One solver per agent (the same object may serve several agents).
        num_envs: Number of episodes stepped together.
        max_rounds: Steps per episode.
        split: Problem split, ``"train"`` or ``"test"``.
        rewards: Reward weights.
        concede_rule: ``"most_confident"`` or ``"plurality"``.
        stop_on_consensus: End an episode early once all agents agree.
        observation: ``"vector"``, ``"text"`` or ``"both"``.
    """

    def __init__(
        self,
        task: Task,
        team: Sequence[Solver],
        num_envs: int,
        max_rounds: int,
        split: str,
        rewards: RewardConfig,
        concede_rule: str,
        stop_on_consensus: bool,
        observation: str,
    ) -> None:
        self.task, self.team, self.num_envs = task, list(team), num_envs
        self.n_agents, self.max_rounds, self.split = len(self.team), max_rounds, split
        self.rewards, self.concede_rule = rewards, concede_rule
        self.stop_on_consensus, self.observation = stop_on_consensus, observation
        self.problems = task.problems(split)
        if not self.problems:
            raise ValueError(f"task {task.name!r} has no problems in split {split!r}")
        self._problem_ids = {p.id: i for i, p in enumerate(self.problems)}
        # Agents that share a solver object are served by one batched call.
        self._solver_groups: dict[int, tuple[Solver, list[int]]] = {}
        for agent, solver in enumerate(self.team):
            self._solver_groups.setdefault(id(solver), (solver, []))[1].append(agent)
        n = self.n_agents
        self._peer_order = (np.arange(n)[:, None] + np.arange(1, n)[None, :]) % n  # (n, n-1)
        self.started = False

    # ------------------------------------------------------------------ problem lookup
    def problem_index(self, options: dict[str, Any], rng: np.random.Generator, env: int | None = None) -> int:
        """The problem chosen by ``options`` (``problem_index`` or ``problem_id``, a value or
        one per env when ``env`` is given), else drawn from ``rng``."""
        if "problem_index" in options and "problem_id" in options:
            raise ValueError("give options 'problem_index' or 'problem_id', not both")
        if "problem_index" in options:
            index = self._pick(options, "problem_index", env)
            if isinstance(index, bool) or not isinstance(index, int | np.integer):
                raise TypeError(f"problem_index must be an integer, got {index!r}")
            if not 0 <= index < len(self.problems):
                raise ValueError(f"problem_index {index} out of range [0, {len(self.problems)}) for split {self.split!r}")
            return int(index)
        if "problem_id" in options:
            problem_id = self._pick(options, "problem_id", env)
            if problem_id not in self._problem_ids:
                raise ValueError(f"unknown problem_id {problem_id!r} in split {self.split!r} of task {self.task.name!r}")
            return self._problem_ids[problem_id]
        return int(rng.integers(len(self.problems)))

    def _pick(self, options: dict[str, Any], key: str, env: int | None) -> Any:
        value = options[key]
        if env is None:
            return value
        if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray) or len(value) != self.num_envs:
            raise ValueError(f"options[{key!r}] must be a sequence of {self.num_envs} values (one per env), got {value!r}")
        return value[env]

    # ------------------------------------------------------------------ reset
    def reset(self, problem_indices: Sequence[int], episode_seeds: Sequence[int]) -> None:
        """Start every env on its problem: round 0 solve and introspection."""
        E, n = self.num_envs, self.n_agents
        self.problem = [self.problems[i] for i in problem_indices]
        self.episode_seed = np.array(episode_seeds, dtype=np.uint64)
        self._base_seed = np.array(
            [derive_seed(int(s), p.id) for s, p in zip(self.episode_seed, self.problem, strict=True)], dtype=np.uint64
        )
        self._parse = [functools.partial(self.task.parse, p) for p in self.problem]
        self.round = np.zeros(E, dtype=np.int64)
        self.active = np.ones(E, dtype=bool)
        self.last_action = np.full((E, n), -1, dtype=np.int64)
        self.changed = np.zeros((E, n), dtype=bool)
        self.episode_tokens = np.zeros((E, n), dtype=np.int64)
        self.answers: list[list[Answer]] = [[None] * n for _ in range(E)]  # type: ignore[list-item]
        self.conf = np.zeros((E, n))
        self.conf_method = np.full((E, n), "", dtype=object)
        self.keys: list[list[Hashable | None]] = [[None] * n for _ in range(E)]
        self.correct = np.zeros((E, n), dtype=bool)
        self.profile = np.zeros((E, n, PROFILE_SIZE))

        cells = [(e, i) for e in range(E) for i in range(n)]
        tokens = self._apply_answers(self._call("solve", self._turns(cells)))
        tokens += self._introspect(cells)
        self.step_tokens = tokens
        self.episode_tokens += tokens.sum(0)
        self.reward_parts = {name: np.zeros((E, n)) for name in ("local", "global", "token_cost")}
        self.just_ended = np.zeros(E, dtype=bool)
        self._refresh_consensus()
        self.started = True

    # ------------------------------------------------------------------ step
    def step(self, actions: np.ndarray) -> np.ndarray:
        """Apply validated actions (E, n) to the active envs; return rewards (E, n)."""
        live = self.active
        correct_before = self.correct.copy()
        keys_before = [row[:] for row in self.keys]
        targets = self._concede_targets()

        refine_cells = [(int(e), int(i)) for e, i in zip(*np.nonzero(live[:, None] & (actions == MetaAction.REFINE)))]
        refined = self._call("refine", self._turns(refine_cells, with_peers=True))

        new_answers: dict[tuple[int, int], Answer] = dict(refined)
        conceding = live[:, None] & (actions == MetaAction.CONCEDE) & (targets >= 0)
        for e, i in zip(*np.nonzero(conceding)):
            peer = self.answers[e][targets[e, i]]
            new_answers[int(e), int(i)] = Answer(peer.text, peer.decision, peer.profile)  # no tokens spent
        tokens = self._apply_answers(new_answers)
        self.round = self.round + live
        tokens += self._introspect(list(new_answers))

        self.changed = np.where(live[:, None], False, self.changed)
        for e, i in new_answers:
            self.changed[e, i] = self.keys[e][i] != keys_before[e][i]
        self._refresh_consensus()
        self.last_action = np.where(live[:, None], actions, self.last_action)
        self.step_tokens = tokens
        self.episode_tokens += tokens.sum(0)

        r_local = self.correct.astype(np.float64) - correct_before
        r_global = self.consensus_correct[:, None].astype(np.float64) - self.loo_correct
        cfg = self.rewards
        self.reward_parts = {
            "local": np.where(live[:, None], r_local, 0.0),
            "global": np.where(live[:, None], r_global, 0.0),
            "token_cost": np.where(live[:, None], cfg.lambda_tok * tokens.sum(0) / 1000.0, 0.0),
        }
        rewards = cfg.reward_scale * (
            cfg.w_local * self.reward_parts["local"]
            + cfg.w_global * self.reward_parts["global"]
            - self.reward_parts["token_cost"]
        )
        done = self.round >= self.max_rounds
        if self.stop_on_consensus:
            done |= self.unanimous
        self.just_ended = live & done
        self.active = live & ~done
        return rewards

    # ------------------------------------------------------------------ helpers
    def _turns(self, cells: list[tuple[int, int]], with_peers: bool = False) -> dict[tuple[int, int], Turn]:
        """Turns of the given (env, agent) cells. A refine turn belongs to the round being
        played (``round + 1``); solve and introspect turns to the current round."""
        if not cells:
            return {}
        envs, agents = np.array(cells).T
        rounds = self.round[envs] + int(with_peers)
        seeds = turn_seeds(self._base_seed[envs], agents, rounds).tolist()
        instructions, answers, conf = self.task.instructions, self.answers, self.conf.tolist()
        peer_order = self._peer_order.tolist()
        turns = {}
        for (e, i), r, seed in zip(cells, rounds.tolist(), seeds, strict=True):
            problem: Problem = self.problem[e]
            peers: tuple[PeerAnswer, ...] = ()
            if with_peers:
                peers = tuple(
                    PeerAnswer(answers[e][j].text, answers[e][j].decision, conf[e][j]) for j in peer_order[i]
                )
            turns[e, i] = Turn(problem.question, instructions, self._parse[e], problem.answer, i, r, seed,
                               answers[e][i], peers)
        return turns

    def _call(self, phase: str, turns: dict[tuple[int, int], Turn]) -> dict[tuple[int, int], Any]:
        """One call per solver with all of its turns; results keyed like ``turns``."""
        results: dict[tuple[int, int], Any] = {}
        for solver, agents in self._solver_groups.values():
            cells = list(turns) if len(agents) == self.n_agents else [c for c in turns if c[1] in agents]
            if not cells:
                continue
            outputs = getattr(solver, phase)([turns[c] for c in cells])
            if len(outputs) != len(cells):
                raise RuntimeError(
                    f"solver {solver.model_id!r} returned {len(outputs)} results for {len(cells)} {phase} turns"
                )
            results.update(zip(cells, outputs, strict=True))
        return results

    def _introspect(self, cells: list[tuple[int, int]]) -> np.ndarray:
        """Introspect the current answers of ``cells``; return (prompt, completion) tokens (2, E, n)."""
        tokens = np.zeros((2, self.num_envs, self.n_agents), dtype=np.int64)
        confidences: dict[tuple[int, int], Confidence] = self._call("introspect", self._turns(cells))
        if not confidences:
            return tokens
        index = tuple(np.array(list(confidences)).T)
        values = list(confidences.values())
        self.conf[index] = np.clip([c.value for c in values], 0.0, 1.0)
        self.conf_method[index] = [c.method for c in values]
        tokens[(0, *index)] = [c.prompt_tokens for c in values]
        tokens[(1, *index)] = [c.completion_tokens for c in values]
        return tokens

    def _apply_answers(self, answers: dict[tuple[int, int], Answer]) -> np.ndarray:
        """Make ``answers`` current (decision keys, correctness, profiles); return their
        (prompt, completion) tokens as a (2, E, n) array."""
        tokens = np.zeros((2, self.num_envs, self.n_agents), dtype=np.int64)
        if not answers:
            return tokens
        task, correct = self.task, []
        for (e, i), answer in answers.items():
            problem, decision = self.problem[e], answer.decision
            self.answers[e][i] = answer
            self.keys[e][i] = None if decision is None else task.decision_key(problem, decision)
            correct.append(task.is_correct(problem, decision))
        index = tuple(np.array(list(answers)).T)
        values = list(answers.values())
        self.correct[index] = correct
        self.profile[index] = [a.profile for a in values]
        tokens[(0, *index)] = [a.prompt_tokens for a in values]
        tokens[(1, *index)] = [a.completion_tokens for a in values]
        return tokens

    def _refresh_consensus(self) -> None:
        E, n = self.num_envs, self.n_agents
        codes = np.full((E, n), -1, dtype=np.int64)
        for e in range(E):
            table: dict[Hashable, int] = {}
            for i, key in enumerate(self.keys[e]):
                if key is not None:
                    codes[e, i] = table.setdefault(key, len(table))
        self.codes = codes
        self.same = (codes[:, :, None] == codes[:, None, :]) & (codes[:, :, None] >= 0)
        self.winner = plurality_winner(codes, self.conf, self.same)
        self.loo_winner = leave_one_out_winners(codes, self.conf, self.same)
        self.consensus_correct = correct_at(self.correct, self.winner)
        self.loo_correct = correct_at(self.correct, self.loo_winner)
        self.unanimous = (codes >= 0).all(1) & (codes == codes[:, :1]).all(1)

    def _concede_targets(self) -> np.ndarray:
        """(E, n): the peer each agent would concede to, -1 if none (acts as PERSIST)."""
        differs = ~self.same & (self.codes[:, None, :] >= 0)  # [e, i, j]: j holds a valid decision != i's
        n = self.n_agents
        differs[:, np.arange(n), np.arange(n)] = False
        if self.concede_rule == "most_confident":
            score = self.conf
        else:  # "plurality": the peers' most voted differing decision, ties by summed confidence
            score = self.same.sum(-1) * (n + 1.0) + (self.same * self.conf[:, None, :]).sum(-1)
        key = np.where(differs, score[:, None, :], -1.0)
        target = key.argmax(-1)
        return np.where(key.max(-1) >= 0, target, -1)

    # ------------------------------------------------------------------ observations
    def observations(self) -> tuple[np.ndarray, np.ndarray]:
        """Self and peer feature arrays: (E, n, d_self) and (E, n, n-1, d_peer), float32."""
        E, n = self.num_envs, self.n_agents
        count = self.same.sum(-1)
        valid = self.codes >= 0
        round_frac = np.broadcast_to((self.round / self.max_rounds)[:, None], (E, n))
        is_plurality = self.same[np.arange(E)[:, None], np.arange(n)[None, :], np.maximum(self.winner, 0)[:, None]]
        self_obs = np.concatenate(
            [
                np.stack(
                    [
                        self.conf,
                        np.where(valid, (count - 1) / (n - 1), 0.0),
                        is_plurality,
                        valid,
                        self.changed,
                        round_frac,
                    ],
                    axis=-1,
                ),
                self.profile,
            ],
            axis=-1,
        ).astype(np.float32)
        order = self._peer_order  # (n, n-1)
        agrees = np.take_along_axis(self.same, np.broadcast_to(order, (E, n, n - 1)), axis=2)
        peer_scalar = np.stack([self.conf, count / n, valid, self.changed], axis=-1)[:, order]  # (E, n, n-1, 4)
        peer_obs = np.concatenate(
            [peer_scalar[..., :1], agrees[..., None], peer_scalar[..., 1:], self.profile[:, order]], axis=-1
        ).astype(np.float32)
        return self_obs, peer_obs

    def text_observation(self, e: int, i: int) -> str:
        """The situation of agent i in env e as text (for LLM-based meta-policies)."""
        lines = [f"Question: {self.problem[e].question}", f"Round {int(self.round[e])} of {self.max_rounds}."]
        lines.append(f"Your answer: {self.answers[e][i].decision} (confidence {self.conf[e, i]:.2f})")
        for k, j in enumerate(self._peer_order[i], start=1):
            lines.append(f"Peer {k}: {self.answers[e][j].decision} (confidence {self.conf[e, j]:.2f})")
        lines.append("Choose PERSIST, REFINE or CONCEDE.")
        return _sanitize("\n".join(lines))
