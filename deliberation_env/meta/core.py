"""The deliberation engine: ``num_envs`` episodes stepped in lockstep.

Both front-ends use it: :class:`deliberation_env.meta.env.DeliberationEnv` is one episode,
:class:`deliberation_env.meta.vector.DeliberationVectorEnv` is many. Every backend request of
a phase (solve, refine, introspect) of every env goes to each solver in one call.
Consensus, leave-one-out consensus and observations are computed on arrays.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from agents.base import Answer, Confidence, PeerAnswer, Solver, Turn, call_solver
from agents.profile import PROFILE_SIZE
from agents.seeding import derive_seed, turn_seeds
from deliberation_env.meta.spaces import TEXT_CHARSET, TEXT_MAX_LENGTH, MetaAction
from deliberation_env.starts import Starts
from deliberation_env.task_config import REWARD_SCALES
from deliberation_env.tasks import Problem, Task, answer_groups, same_answer
from deliberation_env.tasks.base import AnswerTask
from deliberation_env.values import is_number

CONCEDE_RULES = ("most_confident", "plurality")
REWARD_PARTS = ("local", "global", "token_cost")


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the decomposed reward.

    r = reward_scale * (w_local r_local + w_global r_global - lambda_tok tokens / 1000).
    Every weight is a finite Python or NumPy number, stored as a Python float.
    """

    reward_scale: float = 1.0
    w_local: float = 1.0
    w_global: float = 1.0
    lambda_tok: float = 0.0

    def __post_init__(self) -> None:
        for name in ("reward_scale", "w_local", "w_global", "lambda_tok"):
            value = getattr(self, name)
            if not is_number(value) or not np.isfinite(value):
                raise TypeError(f"{name} must be a finite number, got {value!r}")
            object.__setattr__(self, name, float(value))  # frozen: normalize NumPy scalars once, here
        if not REWARD_SCALES[0] <= self.reward_scale <= REWARD_SCALES[1]:
            raise ValueError(
                f"reward_scale must lie in [{REWARD_SCALES[0]:g}, {REWARD_SCALES[1]:g}] (rewards are float32), "
                f"got {self.reward_scale!r}"
            )
        for name in ("w_local", "w_global", "lambda_tok"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        largest = self.reward_scale * (self.w_local + self.w_global + self.lambda_tok)
        if largest > REWARD_SCALES[1]:  # a reward of some 1000 x this still fits float32 (3.4e38)
            raise ValueError(
                f"reward_scale x (w_local + w_global + lambda_tok) must be at most {REWARD_SCALES[1]:g} "
                f"(rewards are float32), got {largest:g}"
            )


CONFIDENCE_DIGITS = 9
"""Decimals of the summed confidences that break a plurality tie (:func:`plurality_winner`)."""


def plurality_winner(codes: np.ndarray, conf: np.ndarray, same: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """The agent whose decision is the consensus, per env; -1 if no valid decision.

    Plurality vote over valid decisions (code >= 0); ties between decisions are broken
    by the summed confidence of their voters (rounded to :data:`CONFIDENCE_DIGITS`
    decimals, so sums equal but for floating-point rounding, 0.1 + 0.2 and 0.3, tie),
    then by a fair draw: each decision draws its first holder's ``draw``, independent and
    uniform, so each of k decisions tied in votes and confidence wins with chance 1/k (the
    lowest index, or any fixed order, would make one seat's answer the team's whenever it
    ties: a pair's second agent then earns the same, right or wrong).

    Args:
        codes: (E, n) decision codes, -1 for unparseable.
        conf: (E, n) confidences.
        same: (E, n, n) bool, ``same[e, i, j]``: i and j hold the same valid decision.
        draw: (E, n) non-negative integers, each agent's independent uniform draw
            (:func:`tie_draws`).

    Returns:
        (E,) agent index of a holder of the winning decision.
    """
    n = codes.shape[1]
    key = same.sum(-1) * (n + 1.0) + np.round((same * conf[:, None, :]).sum(-1), CONFIDENCE_DIGITS)
    key = np.where(codes >= 0, key, -1.0)
    best = key.max(-1, keepdims=True)
    first_holder = same.argmax(-1)  # of each agent's decision: the lowest index holding it
    by_decision = np.take_along_axis(draw.astype(np.int64), first_holder, axis=1)
    winner = np.where((key == best) & (codes >= 0), by_decision, -1).argmax(-1)
    return np.where(best[:, 0] >= 0, winner, -1)


def leave_one_out_winners(codes: np.ndarray, conf: np.ndarray, same: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """``plurality_winner`` of the team without agent i, for every i: shape (E, n). Each is
    that vote itself, with agent i's decision taken out (not the full vote's sums less
    i's share, whose rounding could break a tie another way), and the same draws."""
    n = codes.shape[1]
    winners = np.empty(codes.shape, dtype=np.int64)
    for i in range(n):
        without = codes.copy()
        without[:, i] = -1
        alone = same.copy()
        alone[:, i, :] = alone[:, :, i] = False
        winners[:, i] = plurality_winner(without, conf, alone, draw)
    return winners


TIE_SALT = np.uint64(0x5EED_7135_D4A3_0001)
"""Salts the tie draws' seeds, apart from the turns' (:func:`tie_draws`)."""


def tie_draws(base_seed: np.ndarray, n_agents: int, rounds: np.ndarray) -> np.ndarray:
    """(E, n) each agent's draw for the vote's ties at ``rounds``: a function of (episode
    seed, problem, agent, round) alone, so a replayed episode and the G rollouts of one
    start state draw alike, and no agent index is favoured."""
    agents = np.arange(n_agents)[None, :]
    return turn_seeds((base_seed ^ TIE_SALT)[:, None], agents, rounds[:, None]).astype(np.int64)


def same_decision(codes: np.ndarray) -> np.ndarray:
    """(E, n, n) bool: agents i and j hold the same valid decision (equal codes >= 0)."""
    return (codes[:, :, None] == codes[:, None, :]) & (codes[:, :, None] >= 0)


def correct_at(correct: np.ndarray, winner: np.ndarray) -> np.ndarray:
    """Whether the winner's decision is correct; False where there is no winner (-1).

    Args:
        correct: (E, n) correctness of each agent.
        winner: (E,) or (E, m) agent indices, -1 for none.
    """
    index = np.maximum(winner, 0).reshape(winner.shape[0], -1)
    return np.take_along_axis(correct, index, axis=1).reshape(winner.shape) & (winner >= 0)


def _parser(task: Task, problem: Problem) -> Callable[[str], str | None]:
    """``task.parse`` of ``problem`` as a function of the text alone, for :attr:`Turn.parse`.

    A closure, not a ``functools.partial``: a partial's repr shows the problem, reference
    answer included, so a solver that logs its turns would leak the ground truth.
    """

    def parse(text: str) -> str | None:
        return task.parse(problem, text)

    return parse


def _sanitize(text: str) -> str:
    return "".join(ch if ch in TEXT_CHARSET else "?" for ch in text[:TEXT_MAX_LENGTH])


@dataclass(eq=False)
class Episode:
    """The state of ``num_envs`` running episodes: E envs, n agents, every array led by E.

    :class:`DeliberationCore` never changes the episode it holds: a step works on a
    :meth:`copy` and keeps it only once every solver call has succeeded.
    """

    problem: list[Problem]
    parse: list[Callable[[str], str | None]]
    episode_seed: np.ndarray  # (E,) uint64
    base_seed: np.ndarray  # (E,) uint64: derive_seed(episode seed, problem id)
    round: np.ndarray  # (E,) int
    active: np.ndarray  # (E,) bool: the episode is still running
    just_ended: np.ndarray  # (E,) bool: the last step ended it
    last_action: np.ndarray  # (E, n) int, -1 before the first step
    changed: np.ndarray  # (E, n) bool: the decision changed in the last step
    answers: list[list[Answer]]  # [e][i]
    keys: list[list[Hashable | None]]  # [e][i]: the task's decision key, None if unparseable
    correct: np.ndarray  # (E, n) bool
    conf: np.ndarray  # (E, n) float in [0, 1]
    conf_method: np.ndarray  # (E, n) object: str
    profile: np.ndarray  # (E, n, PROFILE_SIZE) float in [0, 1]
    step_tokens: np.ndarray  # (2, E, n): prompt and completion tokens of the last reset or step
    episode_tokens: np.ndarray  # (E, n)
    reward_parts: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (E, n), of the last step
    # Derived from the decisions and confidences by DeliberationCore._refresh_consensus:
    codes: np.ndarray = field(init=False)  # (E, n) decision codes as the team sees them, -1 unparseable
    same: np.ndarray = field(init=False)  # (E, n, n) bool: i and j hold the same valid decision
    winner: np.ndarray = field(init=False)  # (E,) a holder of the plurality decision as seen, -1 none
    loo_winner: np.ndarray = field(init=False)  # (E, n) the judged winner without agent i
    consensus_correct: np.ndarray = field(init=False)  # (E,) bool
    loo_correct: np.ndarray = field(init=False)  # (E, n) bool
    unanimous: np.ndarray = field(init=False)  # (E,) bool
    concede_target: np.ndarray = field(init=False)  # (E, n) the agent CONCEDE adopts, -1: acts as PERSIST

    def copy(self) -> Episode:
        """A copy whose arrays and answer rows can be changed without touching this episode."""
        new = copy.copy(self)
        for name, value in vars(self).items():
            if isinstance(value, np.ndarray):
                setattr(new, name, value.copy())
        new.answers = [row[:] for row in self.answers]
        new.keys = [row[:] for row in self.keys]
        return new


class DeliberationCore:
    """Dynamics of ``num_envs`` deliberation episodes; the state is :attr:`episode`.

    ``reset`` and ``step`` are atomic: they compute a new :class:`Episode` and make it
    current only when every solver call has succeeded and returned valid results, so a
    call that raises leaves the env exactly as it was.

    Args:
        task: The benchmark; an answer task reading under strict scoring also makes an
            answer cut at the token budget (``Answer.finish_reason == "length"``) no answer.
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
        # Strict scoring: an answer cut at the token budget is no answer (its text may hold a number).
        self._cut_is_no_answer = isinstance(task, AnswerTask) and task.scoring == "strict"
        self.starts = Starts(self.problems, split, task.name, num_envs)
        # Agents that share a solver object are served by one batched call.
        self._solver_groups: dict[int, tuple[Solver, list[int]]] = {}
        for agent, solver in enumerate(self.team):
            self._solver_groups.setdefault(id(solver), (solver, []))[1].append(agent)
        n = self.n_agents
        self._peer_order = (np.arange(n)[:, None] + np.arange(1, n)[None, :]) % n  # (n, n-1)
        self.episode: Episode | None = None

    @property
    def started(self) -> bool:
        """Whether a reset has succeeded (there is an episode to step or observe)."""
        return self.episode is not None

    # ------------------------------------------------------------------ reset
    def reset(self, problem_indices: Sequence[int], episode_seeds: Sequence[int]) -> None:
        """Start every env on its problem: round 0 solve and introspection.

        Args:
            problem_indices: One valid index into :attr:`problems` per env.
            episode_seeds: One episode seed in [0, 2**64) per env.
        """
        E, n = self.num_envs, self.n_agents
        problem = [self.problems[i] for i in problem_indices]
        episode_seed = np.array(episode_seeds, dtype=np.uint64)
        ep = Episode(
            problem=problem,
            parse=[_parser(self.task, p) for p in problem],
            episode_seed=episode_seed,
            base_seed=np.array(
                [derive_seed(int(s), p.id) for s, p in zip(episode_seed, problem, strict=True)], dtype=np.uint64
            ),
            round=np.zeros(E, dtype=np.int64),
            active=np.ones(E, dtype=bool),
            just_ended=np.zeros(E, dtype=bool),
            last_action=np.full((E, n), -1, dtype=np.int64),
            changed=np.zeros((E, n), dtype=bool),
            answers=[[None] * n for _ in range(E)],  # type: ignore[list-item]  # filled by the solve below
            keys=[[None] * n for _ in range(E)],
            correct=np.zeros((E, n), dtype=bool),
            conf=np.zeros((E, n)),
            conf_method=np.full((E, n), "", dtype=object),
            profile=np.zeros((E, n, PROFILE_SIZE)),
            step_tokens=np.zeros((2, E, n), dtype=np.int64),
            episode_tokens=np.zeros((E, n), dtype=np.int64),
            reward_parts={name: np.zeros((E, n)) for name in REWARD_PARTS},
        )
        cells = [(e, i) for e in range(E) for i in range(n)]
        tokens = self._apply_answers(ep, self._call(ep, "solve", self._turns(ep, cells)))
        tokens += self._introspect(ep, cells)
        ep.step_tokens = tokens
        ep.episode_tokens += tokens.sum(0)
        self._refresh_consensus(ep)
        self.episode = ep

    # ------------------------------------------------------------------ step
    def step(self, actions: np.ndarray) -> np.ndarray:
        """Apply validated actions (E, n) to the active envs; return rewards (E, n)."""
        before = self.episode
        ep = before.copy()
        live = before.active

        refine_cells = [(int(e), int(i)) for e, i in zip(*np.nonzero(live[:, None] & (actions == MetaAction.REFINE)))]
        refined = self._call(ep, "refine", self._turns(ep, refine_cells, with_peers=True))

        new_answers: dict[tuple[int, int], Answer] = dict(refined)
        conceding = live[:, None] & (actions == MetaAction.CONCEDE) & (before.concede_target >= 0)
        for e, i in zip(*np.nonzero(conceding)):
            peer = before.answers[e][before.concede_target[e, i]]
            new_answers[int(e), int(i)] = Answer(peer.text, peer.decision, peer.profile)  # no tokens spent
        tokens = self._apply_answers(ep, new_answers)
        ep.round = before.round + live
        tokens += self._introspect(ep, list(new_answers))

        ep.changed = np.where(live[:, None], False, before.changed)
        for e, i in new_answers:
            ep.changed[e, i] = not self._same_decision(ep.problem[e], before, ep, e, i)
        self._refresh_consensus(ep)
        ep.last_action = np.where(live[:, None], actions, before.last_action)
        ep.step_tokens = tokens
        ep.episode_tokens += tokens.sum(0)

        r_local = ep.correct.astype(np.float64) - before.correct
        r_global = ep.consensus_correct[:, None].astype(np.float64) - ep.loo_correct
        cfg = self.rewards
        ep.reward_parts = {
            "local": np.where(live[:, None], r_local, 0.0),
            "global": np.where(live[:, None], r_global, 0.0),
            "token_cost": np.where(live[:, None], cfg.lambda_tok * tokens.sum(0) / 1000.0, 0.0),
        }
        rewards = cfg.reward_scale * (
            cfg.w_local * ep.reward_parts["local"]
            + cfg.w_global * ep.reward_parts["global"]
            - ep.reward_parts["token_cost"]
        )
        done = ep.round >= self.max_rounds
        if self.stop_on_consensus:
            done |= ep.unanimous
        ep.just_ended = live & done
        ep.active = live & ~done
        self.episode = ep
        return rewards

    # ------------------------------------------------------------------ helpers
    def _turns(self, ep: Episode, cells: list[tuple[int, int]], with_peers: bool = False) -> dict[tuple[int, int], Turn]:
        """Turns of the given (env, agent) cells. A refine turn belongs to the round being
        played (``round + 1``); solve and introspect turns to the current round."""
        if not cells:
            return {}
        envs, agents = np.array(cells).T
        rounds = ep.round[envs] + int(with_peers)
        seeds = turn_seeds(ep.base_seed[envs], agents, rounds).tolist()
        instructions, answers, conf = self.task.instructions, ep.answers, ep.conf.tolist()
        peer_order = self._peer_order.tolist()
        turns = {}
        for (e, i), r, seed in zip(cells, rounds.tolist(), seeds, strict=True):
            peers: tuple[PeerAnswer, ...] = ()
            if with_peers:
                peers = tuple(PeerAnswer(answers[e][j].text, answers[e][j].decision, conf[e][j]) for j in peer_order[i])
            turns[e, i] = Turn(ep.problem[e].question, instructions, ep.parse[e], i, r, seed, answers[e][i], peers)
        return turns

    def _call(self, ep: Episode, phase: str, turns: dict[tuple[int, int], Turn]) -> dict[tuple[int, int], Any]:
        """One call per solver with all of its turns; results keyed like ``turns``.

        Only a :class:`~agents.base.PrivilegedSolver` is also given the reference decisions
        of its turns' problems (:func:`~agents.base.call_solver`); every other solver sees
        the turns alone.
        """
        results: dict[tuple[int, int], Any] = {}
        for solver, agents in self._solver_groups.values():
            cells = list(turns) if len(agents) == self.n_agents else [c for c in turns if c[1] in agents]
            if not cells:
                continue
            references = [ep.problem[e].answer for e, _ in cells]
            outputs = call_solver(solver, phase, [turns[c] for c in cells], references)
            if len(outputs) != len(cells):
                raise RuntimeError(
                    f"solver {solver.model_id!r} returned {len(outputs)} results for {len(cells)} {phase} turns"
                )
            results.update(zip(cells, outputs, strict=True))
        return results

    def _reject_invalid(self, cells: list[tuple[int, int]], valid: np.ndarray, what: str, got: Sequence[Any]) -> None:
        """Raise a ``ValueError`` naming the solver of the first cell whose result is not ``valid``."""
        if valid.all():
            return
        k = int(np.argmin(valid))
        e, i = cells[k]
        raise ValueError(
            f"solver {self.team[i].model_id!r} returned {what} for agent_{i} (env {e}), got {got[k]!r}; "
            "the env is unchanged"
        )

    def _check_tokens(self, cells: list[tuple[int, int]], results: Sequence[Answer | Confidence]) -> np.ndarray:
        """(prompt, completion) tokens of ``results`` as a (2, len) array; negative counts are rejected."""
        tokens = np.array([[r.prompt_tokens for r in results], [r.completion_tokens for r in results]])
        self._reject_invalid(cells, (tokens >= 0).all(0), "a negative token count", [
            (r.prompt_tokens, r.completion_tokens) for r in results
        ])
        return tokens

    def _introspect(self, ep: Episode, cells: list[tuple[int, int]]) -> np.ndarray:
        """Introspect the current answers of ``cells``; return (prompt, completion) tokens (2, E, n)."""
        tokens = np.zeros((2, self.num_envs, self.n_agents), dtype=np.int64)
        confidences: dict[tuple[int, int], Confidence] = self._call(ep, "introspect", self._turns(ep, cells))
        if not confidences:
            return tokens
        cells = list(confidences)
        results = list(confidences.values())
        given = [c.value for c in results]
        values = np.array(given, dtype=np.float64)
        self._reject_invalid(cells, (values >= 0.0) & (values <= 1.0), "a confidence outside [0, 1]", given)
        index = tuple(np.array(cells).T)
        tokens[(slice(None), *index)] = self._check_tokens(cells, results)
        ep.conf[index] = values
        ep.conf_method[index] = [c.method for c in results]
        return tokens

    def _apply_answers(self, ep: Episode, answers: dict[tuple[int, int], Answer]) -> np.ndarray:
        """Make ``answers`` current in ``ep`` (decision keys, correctness, profiles); return
        their (prompt, completion) tokens as a (2, E, n) array."""
        tokens = np.zeros((2, self.num_envs, self.n_agents), dtype=np.int64)
        if not answers:
            return tokens
        cells = list(answers)
        results = list(answers.values())
        profiles = [a.profile for a in results]
        what = f"a profile that is not {PROFILE_SIZE} numbers in [0, 1]"
        self._reject_invalid(cells, np.array([len(p) == PROFILE_SIZE for p in profiles]), what, profiles)
        profile = np.array(profiles, dtype=np.float64)
        self._reject_invalid(cells, ((profile >= 0.0) & (profile <= 1.0)).all(-1), what, profiles)
        index = tuple(np.array(cells).T)
        tokens[(slice(None), *index)] = self._check_tokens(cells, results)
        task = self.task
        for (e, i), answer in answers.items():
            if self._cut_is_no_answer and answer.finish_reason == "length":
                answer = replace(answer, decision=None)
            problem, decision = ep.problem[e], answer.decision
            ep.answers[e][i] = answer
            ep.keys[e][i] = None if decision is None else task.decision_key(problem, decision)
            ep.correct[e, i] = task.is_correct(problem, decision)
        ep.profile[index] = profile
        return tokens

    def _refresh_consensus(self, ep: Episode) -> None:
        """Recompute everything derived from the decisions and confidences of ``ep``."""
        # What the team sees (observations, unanimity, CONCEDE's target): the answers the
        # task's checker calls one. What is paid (the consensus and each leave-one-out
        # consensus): the text seat's vote (:func:`~deliberation_env.tasks.answer_groups`
        # with the ground truth): a right answer never one with a wrong one, every right
        # answer one, so a program that passes only the prompt's examples does not share a
        # right one's vote, nor a wrong answer join two right forms into a group it then
        # holds; that grouping would tell the team the truth, so it stays out of observations.
        codes = self._groups(ep)
        draw = tie_draws(ep.base_seed, self.n_agents, ep.round)
        ep.codes = codes
        ep.same = same_decision(codes)
        ep.winner = plurality_winner(codes, ep.conf, ep.same, draw)
        judged = self._paid_groups(ep, codes)
        judged_same, winner = same_decision(judged), ep.winner
        if not np.array_equal(judged_same, ep.same):  # the paid groups differ from the seen ones
            winner = plurality_winner(judged, ep.conf, judged_same, draw)
        ep.loo_winner = leave_one_out_winners(judged, ep.conf, judged_same, draw)
        ep.consensus_correct = correct_at(ep.correct, winner)
        ep.loo_correct = correct_at(ep.correct, ep.loo_winner)
        ep.unanimous = (codes >= 0).all(1) & (codes == codes[:, :1]).all(1)
        ep.concede_target = self._concede_targets(ep)

    def _same_decision(self, problem: Problem, before: Episode, after: Episode, e: int, i: int) -> bool:
        """Whether agent i of env e holds the same decision after the step as before, as the
        team sees decisions (equal keys, or the task's checker: ``1000`` and ``x = 1000``)."""
        old, new = before.answers[e][i].decision, after.answers[e][i].decision
        if old is None or new is None:
            return old is new
        return before.keys[e][i] == after.keys[e][i] or same_answer(self.task, problem, old, new)

    def _groups(self, ep: Episode) -> np.ndarray:
        """(E, n) each decision's group as the team sees it
        (:func:`~deliberation_env.tasks.answer_groups`, no ground truth), -1 for none; by
        key alone, inline, for a task without its own ``same_answer`` (the simulated
        team's hot path)."""
        codes = np.full((self.num_envs, self.n_agents), -1, dtype=np.int64)
        if callable(getattr(self.task, "same_answer", None)):
            for e, row in enumerate(ep.answers):
                codes[e] = answer_groups(self.task, ep.problem[e], [answer.decision for answer in row], keys=ep.keys[e])
            return codes
        for e, keys in enumerate(ep.keys):
            table: dict[Hashable, int] = {}
            for i, key in enumerate(keys):
                if key is not None:
                    codes[e, i] = table.setdefault(key, len(table))
        return codes

    def _paid_groups(self, ep: Episode, codes: np.ndarray) -> np.ndarray:
        """(E, n) each decision's group in the vote that is paid: :func:`~deliberation_env.tasks.answer_groups`
        with each decision's correctness (for a task with its own ``same_answer``), or the
        seen groups (``codes``, by key) split into right and wrong with every right one joined."""
        if callable(getattr(self.task, "same_answer", None)):
            paid = np.full_like(codes, -1)
            for e, row in enumerate(ep.answers):
                decisions = [answer.decision for answer in row]
                paid[e] = answer_groups(self.task, ep.problem[e], decisions, list(ep.correct[e]), keys=ep.keys[e])
            return paid
        judged = np.where(codes >= 0, 2 * codes + ep.correct, -1)
        right = (codes >= 0) & ep.correct
        first_right = judged[np.arange(len(codes)), right.argmax(1)]  # every right decision in its first holder's group
        return np.where(right, first_right[:, None], judged)

    def _concede_targets(self, ep: Episode) -> np.ndarray:
        """(E, n): the peer each agent would concede to, -1 if none (acts as PERSIST).

        The one implementation of the CONCEDE rule: the env applies it and reports it in
        ``infos[agent]["concede_target"]``, which the oracle reads.
        """
        differs = ~ep.same & (ep.codes[:, None, :] >= 0)  # [e, i, j]: j holds a valid decision != i's
        n = self.n_agents
        differs[:, np.arange(n), np.arange(n)] = False
        if self.concede_rule == "most_confident":
            score = ep.conf
        else:  # "plurality": the peers' most voted differing decision, ties by summed confidence
            score = ep.same.sum(-1) * (n + 1.0) + (ep.same * ep.conf[:, None, :]).sum(-1)
        key = np.where(differs, score[:, None, :], -1.0)
        target = key.argmax(-1)  # ties: the lowest agent index
        return np.where(key.max(-1) >= 0, target, -1)

    # ------------------------------------------------------------------ observations
    def observations(self) -> tuple[np.ndarray, np.ndarray]:
        """Self and peer feature arrays: (E, n, d_self) and (E, n, n-1, d_peer), float32."""
        ep = self.episode
        E, n = self.num_envs, self.n_agents
        count = ep.same.sum(-1)
        valid = ep.codes >= 0
        round_frac = np.broadcast_to((ep.round / self.max_rounds)[:, None], (E, n))
        is_plurality = ep.same[np.arange(E)[:, None], np.arange(n)[None, :], np.maximum(ep.winner, 0)[:, None]]
        self_obs = np.concatenate(
            [
                np.stack(
                    [
                        ep.conf,
                        np.where(valid, (count - 1) / (n - 1), 0.0),
                        is_plurality,
                        valid,
                        ep.changed,
                        round_frac,
                    ],
                    axis=-1,
                ),
                ep.profile,
            ],
            axis=-1,
        ).astype(np.float32)
        order = self._peer_order  # (n, n-1)
        agrees = np.take_along_axis(ep.same, np.broadcast_to(order, (E, n, n - 1)), axis=2)
        peer_scalar = np.stack([ep.conf, count / n, valid, ep.changed], axis=-1)[:, order]  # (E, n, n-1, 4)
        peer_obs = np.concatenate(
            [peer_scalar[..., :1], agrees[..., None], peer_scalar[..., 1:], ep.profile[:, order]], axis=-1
        ).astype(np.float32)
        return self_obs, peer_obs

    def text_observation(self, e: int, i: int) -> str:
        """The situation of agent i in env e as text (for LLM-based meta-policies)."""
        ep = self.episode
        lines = [f"Question: {ep.problem[e].question}", f"Round {int(ep.round[e])} of {self.max_rounds}."]
        lines.append(f"Your answer: {ep.answers[e][i].decision} (confidence {ep.conf[e, i]:.2f})")
        for k, j in enumerate(self._peer_order[i], start=1):
            lines.append(f"Peer {k}: {ep.answers[e][j].decision} (confidence {ep.conf[e, j]:.2f})")
        lines.append("Choose PERSIST, REFINE or CONCEDE.")
        return _sanitize("\n".join(lines))
