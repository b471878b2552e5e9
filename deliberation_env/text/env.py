"""Text deliberation: the LLM agents are the policies, their completions the actions.

============================  ==============================================================
Import                        ``from deliberation_env.text import text_env; text_env(...)``
Registry id                   ``de.make("text-deliberation-v1", ...)``
Actions                       any ``str`` (space: ``Text(ACTION_MAX_LENGTH, charset=BMP)``)
Parallel API                  Yes
Agents                        ``agent_0 ... agent_{n-1}``; n as the protocol seats (math:
                              n >= 2; writing, coding: n = 2)
Observation space             ``Text(max_length=derived, charset=BMP)``: the agent's prompt
============================  ==============================================================

This is the MAGRPO paper's setting (Liu et al., arXiv 2508.04652): each agent is an LLM
policy, the environment holds no model. The meta-action env (:mod:`deliberation_env.meta.env`)
is the other seat: there the LLMs are part of the dynamics.

**Episode.** One episode is one problem. ``reset`` picks it (``options``
``{"problem_index": k}`` or ``{"problem_id": "..."}``, else the env's seeded RNG; an
``"episode_seed"`` option fixes the episode seed, else it is drawn) and returns each
agent's first prompt. Each ``step`` takes one text per agent, scores the team's texts
with the protocol and returns the next prompts, which carry the protocol's external
feedback (math: the peers' answers of this turn). The episode terminates after
``max_turns`` steps, or as soon as the joint reward reaches ``stop_threshold`` (when
given). There is no truncation. Two consequences of an early stop for a learner: it is
an absorbing success (the package's learners credit its reward again for every turn
left; summing the turns' rewards as they come pays a team to stay just below the
threshold), and it tells the team its answer was right, so held-out episodes play every
turn (:func:`algorithms.text.evaluate` refuses an env with a threshold).

**Protocols** (:mod:`deliberation_env.text.protocols`): ``"math"``
(:class:`~deliberation_env.text.protocols.math.MathProtocol`: n solvers answer in
parallel, the team's answer is their plurality vote; later turns show the peers'
answers), the default of every answer task (arithmetic, gsm8k, math, aime, amc, jsonl,
mmlu); ``"coding"`` (:class:`~deliberation_env.text.protocols.coding.CodingProtocol`:
a helper function and a main function on HumanEval, CoMLRL's level reward, tests
counted by the sandbox's trusted verdict; later turns show the program's own results
on the tests' calls, never the expected values), the
default of ``humaneval``; writing
(:class:`~deliberation_env.text.protocols.writing.WritingProtocol`: summarization or
expansion on a JSONL corpus, by two writers), given as an instance; or any object
implementing :class:`~deliberation_env.text.protocols.base.TextProtocol`.

**Observations.** ``obs[agent]`` is the agent's prompt rendered as text
(:func:`~deliberation_env.text.protocols.base.render`: ``role: content`` blocks);
``infos[agent]["messages"]`` holds the same prompt as chat messages, for a chat model.
The charset is the Unicode Basic Multilingual Plane without surrogates and without
control characters other than tab and newline; any other character (NUL, a lone
surrogate, an emoji) is replaced by U+FFFD, in the messages too. Agent-written text in
a prompt is quoted: the agent's own previous text is cut to ``QUOTE_CHARS`` characters
and the feedback to ``FEEDBACK_CHARS``, each ending with ``" [...truncated]"`` when cut.
``max_length`` is derived at construction: the longest prompt the protocol builds for any
problem of the split and any agent, at turn 0 and with quotes of full length; a prompt
that still exceeds it (a protocol whose prompts do not grow with their quotes) raises a
``ValueError`` naming the protocol instead of being cut.

**Actions.** Any ``str``, including the empty string, huge text, NUL bytes, lone
surrogates and text that claims a reward: it is data that the protocol scores, and earns
only what the protocol's checks give it. A non-string is a ``TypeError`` naming the agent.
The action space is what ``sample()`` draws from; it does not bound what is accepted.

**Rewards.** Every agent receives the same reward, ``reward_scale`` * R, where R is the
protocol's joint reward of the turn's texts (MAGRPO's joint objective), at every step.
``infos[agent]["reward_components"]`` (after a step) holds the protocol's named parts,
``"joint"`` (R) and ``"contribution"``: R minus R with this agent's text replaced by the
protocol's neutral text (leave-one-out; unscaled), and with ``shapley=True`` (teams of
at most :data:`SHAPLEY_MAX_AGENTS` agents) ``"shapley"``: the agent's Shapley value in R, its
marginal contribution R(S + i) - R(S) averaged over the orders in which the agents could
join, the absent ones playing their neutral text (:func:`shapley_values`; the values sum
to R minus the empty team's R; the env scores the 2^n subsets of the agents each turn).
Bounds: reward_scale * low <= reward
<= reward_scale * high for the protocol's ``reward_range`` (low, high) (math:
[0, 1 + format_weight]; writing: [0, 1]; coding: [0, 4]); each contribution lies in [low - high, high - low].

**The leave-one-out credit pays a seat for its teammates' errors** (red team 33; measured
on 20 arithmetic problems, strict). A seat earns it only where it is pivotal: beside two
peers who agree, a wrong answer earns what a right one does (0.033, the format part), so
a seat that answers wrongly at turn 0 and rightly at turn 1, where a teammate has followed
its first answer, earns 0.57 over the episode against 0.07 for answering rightly twice,
while the team's joint reward is the same (2.2); with two agents the same play ties the
honest one (0.1) and costs the team 1.0. No change to the leave-one-out difference closes
this (each turn's counterfactual cannot replay the teammates' later turns), so it is kept
as documented (``test_leave_one_out_credit_pays_a_seat_that_misleads_a_follower_known_limitation``);
the Shapley value pays the same seats 0.48 against 0.73 (two agents: 0.6 against 1.1) and
a right answer more than a wrong or empty one beside any peers
(``credit="shapley"`` in :mod:`algorithms.text`). The meta seat's ``r_global`` is the same
leave-one-out difference, paid each round.

**Infos** (per agent): ``role``, ``turn`` (turns played), ``messages`` (the next prompt),
``seed`` (the seed of the agent's next completion: derived from the episode seed, the
problem, the agent and the turn, as in the meta env; :class:`agents.TextPolicy` uses it),
``active`` (the agent acts next), ``problem_id``, ``text_if_cut`` (what the agent plays in
place of a completion cut at the token budget, or ``None``: the cut completion is played;
the math protocol under strict scoring gives its neutral text, so a cut completion is no
answer; the env sees only text, so whoever knows the finish reason applies it:
:class:`agents.TextPolicy` and the LLM-weight learners do); after a step also ``text``
(the text it played), ``team_output`` (the protocol's combination: math, the voted
answer) and ``reward_components``.

**Bad input.** ``reset`` and ``step`` are atomic: a bad ``seed``, ``options`` or action
dict, or a protocol fault, raises an error naming what is wrong and leaves the env (its
episode, its RNG) exactly as it was.

**Arguments** (one home: :class:`deliberation_env.text.config.TextEnvConfig`, which the
vector env, ``de.make`` and the LLM-weight learners' configs and command line share; a bad
argument is an error naming it before any task is loaded).

- ``task``: a task name (``de.tasks.names()``) or a :class:`~deliberation_env.tasks.Task`;
  default ``"arithmetic"`` when the protocol comes from the task. Not with a protocol
  instance, which brings its own problems.
- ``path``, ``difficulty``, ``task_kwargs``: the arguments of a task given by name (a data
  file or folder; arithmetic's level; any other keyword of ``de.tasks.get``).
- ``protocol``: ``None`` (the task's default), ``"math"``, ``"coding"`` or a protocol
  instance.
- ``scoring``: ``"strict"`` (default: a final answer counts only stated in the form the
  task's prompt asks for, and a completion cut at the token budget is no answer) or
  ``"lenient"`` (the task's forgiving reader, e.g. the last number anywhere; cut
  completions are played as they are): the math protocol's option
  (:mod:`deliberation_env.text.protocols.math`); HumanEval has only ``"strict"``.
- ``n_agents`` (default 2), ``max_turns`` (>= 1, default 1; ``max_cycles``, PettingZoo's
  name for it, may be given instead), ``split`` (``"train"`` /
  ``"test"``), ``reward_scale`` (> 0), ``stop_threshold`` (``None`` or a finite number),
  and the front-end's own ``render_mode`` (``None``, ``"ansi"``:
  ``render()`` returns the turn's table, or ``"human"``: it prints it).

**Version history.**

- v1, unreleased changes: rewards that could be farmed, closed (the id stays v1: each
  change takes away reward that no correct team earned). Coding: the structure bonuses
  are paid only to a program that passes every test (``CodingProtocol(...,
  bonus_gate="one_test")``: CoMLRL's gate, as in 0.2.0). Writing: a team is paid in proportion
  to the share of its parts' content words that the document holds and of the
  document's that it mentions (``WritingTargets(..., grounding=0, coverage=0)``: as in
  0.2.0). Numbers: an enormous or
  exponent-written number is no answer instead of an error, and decimals compare exactly.
  Later changes alter the rewards of some valid actions too, those of split votes, so the
  next release names a new version (CHANGELOG.md): the math protocol's tied vote is a fair
  coin (``correct`` = r/k) and right answers vote together however written; writing
  parts must be written text (:func:`~deliberation_env.text.protocols.writing.is_written`);
  MATH reads more non-answers as none and numbers too large to compute as text.
- v1 (release 0.2.0): what an episode rewards changed in two protocols. Math: answers
  are read strictly by default, ``format`` pays the asked form, and the ``text_if_cut``
  info makes a completion cut at the token budget no answer; ``scoring="lenient"`` reads
  answers as v0 did (the last number anywhere) and plays cut completions as they are.
  Coding: both agents' code passes a syntax allow-list before anything runs (no other
  binding of the entry point, no code of one agent that runs at load or reaches the
  other's), the rewards judge the program the tests run, and the feedback between turns
  shows the program's own results on the tests' calls, never expected values or how the
  judged run ended. ``de.make("text-deliberation-v0")`` is refused with an error naming v1.
- v0 (release 0.1.0): initial release (math, writing and coding protocols).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from agents.base import Message
from agents.seeding import derive_seed, turn_seeds
from deliberation_env.arguments import build_task
from deliberation_env.parallel_episode import (
    RENDER_MODES,
    check_render_mode,
    end_step,
    render_table,
)
from deliberation_env.starts import Starts
from deliberation_env.tasks import Problem
from deliberation_env.text.config import (
    CODE_TASKS,
    SHAPLEY_MAX_AGENTS,
    TextEnvConfig,
    import_protocol,
)
from deliberation_env.text.protocols.base import (
    QUOTE_CHARS,
    Outcome,
    TextProtocol,
    check_outcome,
    left_out_text,
    prompt_charset,
    quote,
    render,
    sanitize,
    score_many,
    text_if_cut,
)
from deliberation_env.text.protocols.coding import CodingProtocol
from deliberation_env.text.protocols.math import MathProtocol
from deliberation_env.values import check_action_keys, check_agent, is_integer

ACTION_MAX_LENGTH = 4_096
"""Longest text the action space's ``sample()`` draws (any longer ``str`` is accepted)."""
FEEDBACK_CHARS = 4 * QUOTE_CHARS
"""Most characters of one agent's feedback in a prompt."""


def build_protocol(config: TextEnvConfig) -> TextProtocol:
    """The env's protocol: the instance given, the one at an import path, or the named (or
    the task's default) protocol on the task (loads the task's data)."""
    if isinstance(config.protocol, TextProtocol):
        return config.protocol
    if isinstance(config.protocol, str) and ":" in config.protocol:
        return import_protocol(config.protocol)
    task = build_task(config)
    coding = config.protocol == "coding" or (config.protocol is None and task.name in CODE_TASKS)
    return CodingProtocol(task) if coding else MathProtocol(task, scoring=config.scoring)


def coalitions(n_agents: int, shapley: bool = True) -> tuple[tuple[bool, ...], ...]:
    """The subsets of the agents whose texts an engine scores each turn, as who is present:
    the whole team, then the team without each agent (leave-one-out, in agent order), then,
    with ``shapley`` (the env's ``shapley``), for teams of at most :data:`SHAPLEY_MAX_AGENTS`,
    every other subset (the Shapley credit), the empty one last.

    >>> coalitions(2)
    ((True, True), (False, True), (True, False), (False, False))
    >>> coalitions(2, shapley=False)
    ((True, True), (False, True), (True, False))
    """
    full = (True,) * n_agents
    left_out = [tuple(agent != i for agent in range(n_agents)) for i in range(n_agents)]
    if not shapley or n_agents > SHAPLEY_MAX_AGENTS:
        return (full, *left_out)
    others = sorted(
        (subset for subset in itertools.product((True, False), repeat=n_agents) if sum(subset) < n_agents - 1),
        key=lambda subset: -sum(subset),
    )
    return (full, *left_out, *others)


def shapley_values(rewards: dict[tuple[bool, ...], float], n_agents: int) -> tuple[float, ...] | None:
    """Each agent's Shapley value in R: its marginal contribution R(S + i) - R(S), averaged
    over every order in which the agents could join (the subsets S of the others, each
    weighted |S|! (n - |S| - 1)! / n!), an absent agent playing its neutral text. The values
    sum to R(team) - R(no agent). ``None`` when the rewards of some subsets are missing
    (teams above :data:`SHAPLEY_MAX_AGENTS`).

    A wrong answer (agent 0) beside a right one, on the math protocol: R = 0.6, 1.05 for the
    right one alone, 0.05 for the wrong one alone:

    >>> shapley_values({(True, True): 0.6, (False, True): 1.05, (True, False): 0.05, (False, False): 0.0}, 2)
    (-0.2, 0.8)
    """
    if len(rewards) < 2**n_agents:
        return None
    values = []
    for i in range(n_agents):
        value = 0.0
        for subset, reward in rewards.items():
            if subset[i]:
                continue
            size = sum(subset)
            joined = (*subset[:i], True, *subset[i + 1 :])
            weight = math.factorial(size) * math.factorial(n_agents - size - 1) / math.factorial(n_agents)
            value += weight * (rewards[joined] - reward)
        values.append(round(value, 12))
    return tuple(values)


def _check_num_envs(num_envs: Any) -> int:
    if not is_integer(num_envs):
        raise TypeError(f"num_envs must be an integer, got {num_envs!r}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    return int(num_envs)


@dataclass(frozen=True)
class EnvState:
    """One env's episode: its problem, its turn and the agents' next prompts.

    Attributes:
        problem: The episode's problem.
        base_seed: ``derive_seed(episode seed, problem id)``.
        turn: Turns played.
        active: The episode is running.
        messages: Per agent, the prompt of its next turn (sanitized).
        texts: Per agent, the text it played last turn (``None`` before the first step).
        outcome: The protocol's outcome of the last turn.
        contributions: Per agent, its leave-one-out contribution to the last turn's R.
        shapley: Per agent, its Shapley value in the last turn's R (``None`` for teams
            above :data:`SHAPLEY_MAX_AGENTS`).
        reward: ``reward_scale`` * R of the last step this env played.
    """

    problem: Problem
    base_seed: int
    turn: int
    active: bool
    messages: tuple[tuple[Message, ...], ...]
    texts: tuple[str, ...] | None = None
    outcome: Outcome | None = None
    contributions: tuple[float, ...] | None = None
    shapley: tuple[float, ...] | None = None
    reward: float = 0.0


class TextEngine:
    """The dynamics of ``num_envs`` text episodes in lockstep (both front-ends use it).

    Every method that changes the engine computes the new states first and assigns them
    last, so a call that raises changes nothing.

    Args:
        num_envs: Episodes stepped together.
        config: The env's arguments (checked when it was built); the protocol and its
            problems are built here.
    """

    def __init__(self, num_envs: int, config: TextEnvConfig) -> None:
        self.num_envs = _check_num_envs(num_envs)
        self.n_agents, self.max_turns, self.split = config.n_agents, config.max_turns, config.split
        self.reward_scale, self.stop_threshold = float(config.reward_scale), config.stop_threshold
        self.protocol = build_protocol(config)
        self.roles = tuple(self.protocol.roles(self.n_agents))
        self.coalitions = coalitions(self.n_agents, config.shapley)
        self.problems = self.protocol.problems(self.split)
        if not self.problems:
            raise ValueError(f"protocol {self.protocol.name!r} has no problems in split {self.split!r}")
        self.starts = Starts(self.problems, self.split, self.protocol.name, self.num_envs)
        self.max_prompt_length = self._longest_prompt()
        self.states: list[EnvState] | None = None

    # ------------------------------------------------------------------ prompts
    def _longest_prompt(self) -> int:
        """The longest rendered prompt over problems and agents, at turn 0 and with full quotes."""
        previous, feedback = "x" * QUOTE_CHARS, "x" * FEEDBACK_CHARS
        return max(
            len(render(self.protocol.prompt(problem, self.roles, agent, quoted, fed)))
            for problem in self.problems
            for agent in range(self.n_agents)
            for quoted, fed in ((None, None), (previous, feedback))
        )

    def _prompt(self, problem: Problem, agent: int, outcome: Outcome | None, texts: Sequence[str] | None):
        """The sanitized next prompt of ``agent`` (turn 0 when ``outcome`` is ``None``)."""
        if outcome is None:
            chat = self.protocol.prompt(problem, self.roles, agent, None, None)
        else:
            chat = self.protocol.prompt(
                problem, self.roles, agent, quote(texts[agent]), quote(outcome.feedback[agent], FEEDBACK_CHARS)
            )
        messages = tuple({"role": m["role"], "content": sanitize(m["content"])} for m in chat)
        length = len(render(messages))
        if length > self.max_prompt_length:
            raise ValueError(
                f"protocol {self.protocol.name!r} built a prompt of {length} characters for agent_{agent} on "
                f"problem {problem.id!r}, longer than the observation space's max_length "
                f"{self.max_prompt_length} (derived at construction): its prompts must grow with their quotes"
            )
        return messages

    # ------------------------------------------------------------------ problems and seeds
    # ------------------------------------------------------------------ dynamics
    def reset(self, problem_indices: Sequence[int], episode_seeds: Sequence[int]) -> None:
        """Start every env on its problem, with its episode seed."""
        states = []
        for index, seed in zip(problem_indices, episode_seeds, strict=True):
            problem = self.problems[index]
            messages = tuple(self._prompt(problem, i, None, None) for i in range(self.n_agents))
            states.append(EnvState(problem, derive_seed(int(seed), problem.id), 0, True, messages))
        self.states = states

    def step(self, actions: Sequence[Sequence[str] | None]) -> None:
        """Play one turn in every active env; ``actions[e]`` is ignored for ended envs.

        Every team of the turn, and every team with one agent's text left out, is scored
        in one :func:`~deliberation_env.text.protocols.base.score_many` call (the coding
        protocol judges all their programs in one batch of sandbox checks).
        """
        played = {e: tuple(actions[e]) for e, state in enumerate(self.states) if state.active}
        teams = [team for e, texts in played.items() for team in self._teams(self.states[e].problem, texts)]
        outcomes = iter(self._score(teams))
        per_env = len(self.coalitions)
        self.states = [
            self._next(state, played[e], [next(outcomes) for _ in range(per_env)])
            if e in played
            else dataclasses.replace(state, reward=0.0)
            for e, state in enumerate(self.states)
        ]

    def _teams(self, problem: Problem, texts: tuple[str, ...]) -> list[tuple[Problem, tuple[str, ...]]]:
        """The texts of each coalition of :attr:`coalitions`: the team's, then with each
        agent's replaced by what the protocol puts in its place (its neutral text, or
        :meth:`~deliberation_env.text.protocols.base.LeftOutText.left_out_text`), then (for
        the Shapley credit) every other subset of the agents with the rest replaced."""
        neutral = [left_out_text(self.protocol, problem, i, text) for i, text in enumerate(texts)]
        return [
            (problem, tuple(text if present else blank for text, blank, present in zip(texts, neutral, coalition)))
            for coalition in self.coalitions
        ]

    def _score(self, teams: Sequence[tuple[Problem, tuple[str, ...]]]) -> list[Outcome]:
        """The checked outcomes of ``teams``, scored in one batch."""
        outcomes = score_many(self.protocol, teams)
        if len(outcomes) != len(teams):
            raise ValueError(
                f"protocol {self.protocol.name!r}: score_many returned {len(outcomes)} outcomes for {len(teams)} teams"
            )
        return [check_outcome(self.protocol, outcome, self.n_agents) for outcome in outcomes]

    def _next(self, state: EnvState, texts: tuple[str, ...], outcomes: Sequence[Outcome]) -> EnvState:
        """The state after ``texts``: ``outcomes`` are the team's, then each leave-one-out's."""
        outcome, left_out = outcomes[0], outcomes[1 : self.n_agents + 1]
        problem, n = state.problem, self.n_agents
        turn = state.turn + 1
        done = turn >= self.max_turns or (self.stop_threshold is not None and outcome.reward >= self.stop_threshold)
        return EnvState(
            problem=problem,
            base_seed=state.base_seed,
            turn=turn,
            active=not done,
            messages=tuple(self._prompt(problem, i, outcome, texts) for i in range(n)),
            texts=texts,
            outcome=outcome,
            contributions=tuple(outcome.reward - other.reward for other in left_out),
            shapley=shapley_values(dict(zip(self.coalitions, (o.reward for o in outcomes), strict=True)), n),
            reward=self.reward_scale * outcome.reward,
        )

    # ------------------------------------------------------------------ views
    def observations(self, e: int) -> list[str]:
        """Per agent, env ``e``'s next prompt as text."""
        return [render(messages) for messages in self.states[e].messages]

    def infos(self, e: int, agents: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Env ``e``'s per-agent infos (see the module docstring)."""
        state = self.states[e]
        n = self.n_agents
        seeds = turn_seeds(
            np.full(n, state.base_seed, dtype=np.uint64), np.arange(n), np.full(n, state.turn)
        ).tolist()
        infos = {}
        for i, agent in enumerate(agents):
            info: dict[str, Any] = {
                "role": self.roles[i],
                "turn": state.turn,
                "messages": state.messages[i],
                "seed": seeds[i],
                "active": state.active,
                "problem_id": state.problem.id,
                "text_if_cut": text_if_cut(self.protocol, state.problem, i),
            }
            if state.outcome is not None:
                info["text"] = state.texts[i]
                info["team_output"] = state.outcome.output
                info["reward_components"] = {
                    **state.outcome.parts,
                    "joint": float(state.outcome.reward),
                    "contribution": state.contributions[i],
                }
                if state.shapley is not None:
                    info["reward_components"]["shapley"] = state.shapley[i]
            infos[agent] = info
        return infos


def check_text(agent: str, action: Any) -> str:
    """``action`` if it is a ``str``, else a ``TypeError`` naming the agent."""
    if not isinstance(action, str):
        raise TypeError(f"action of {agent} must be a str (the agent's text), got {type(action).__name__} {action!r:.80}")
    return action


class PromptText(spaces.Text):
    """Gymnasium's ``Text`` space over :func:`prompt_charset`, whose ``repr`` names the
    charset instead of listing its 63,425 characters.

    >>> PromptText(max_length=8, min_length=0, charset=prompt_charset())
    PromptText(0, 8, charset=<Unicode BMP without surrogates and controls but tab and newline: 63425 characters>)
    """

    def __repr__(self) -> str:
        return (
            f"PromptText({self.min_length}, {self.max_length}, charset=<Unicode BMP without surrogates and "
            f"controls but tab and newline: {len(self.character_set)} characters>)"
        )


@dataclass(frozen=True)
class Spaces:
    """The observation and action spaces of an engine (built once per env)."""

    observation: spaces.Text
    action: spaces.Text

    @classmethod
    def of(cls, engine: TextEngine) -> Spaces:
        """Spaces fitting every prompt of ``engine``: copies of one space per length, as
        gymnasium indexes the 63,425 characters anew for each ``Text`` it builds."""
        return cls(_prompt_text(engine.max_prompt_length), _prompt_text(ACTION_MAX_LENGTH))


@lru_cache(maxsize=64)
def _prompt_space(max_length: int) -> PromptText:
    """The one :class:`PromptText` of ``max_length`` whose copies the envs hold (never handed out)."""
    return PromptText(max_length=max_length, min_length=0, charset=prompt_charset())


def _prompt_text(max_length: int) -> PromptText:
    """A :class:`PromptText` of ``max_length`` of its own (its seed and random generator),
    sharing the character tables of :func:`_prompt_space`'s."""
    return copy.copy(_prompt_space(max_length))


class TextDeliberationEnv(ParallelEnv):
    """A team of LLM policies collaborating on one problem per episode (module docstring).

    Example:
        >>> env = TextDeliberationEnv(task="arithmetic", n_agents=2, max_turns=2)
        >>> obs, infos = env.reset(seed=0, options={"problem_index": 0})
        >>> print(obs["agent_0"])
        system: You are one of 2 agents solving a problem together. Each agent answers; the team's answer is the majority vote.
        <BLANKLINE>
        user: What is 9 + 4 + 5?
        <BLANKLINE>
        Solve the problem step by step. End with a line of the form 'The answer is N.' where N is a number.
        >>> obs, rewards, terms, truncs, infos = env.step({"agent_0": "The answer is 18.", "agent_1": "The answer is 17."})
        >>> rewards["agent_0"], infos["agent_0"]["reward_components"]["correct"]  # a tie: a fair coin's chance
        (0.6, 0.5)
        >>> [round(infos[a]["reward_components"]["contribution"], 6) for a in env.agents]
        [0.55, -0.45]
        >>> "Agent 1: 17" in obs["agent_0"]
        True
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "text_deliberation_v1",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": True,
    }

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        self.render_mode = check_render_mode(render_mode)
        self._engine = TextEngine(1, TextEnvConfig(**kwargs))
        self.possible_agents = [f"agent_{i}" for i in range(self._engine.n_agents)]
        self.agents: list[str] = []
        self.max_turns = self._engine.max_turns
        self._spaces = Spaces.of(self._engine)
        self._rng = np.random.default_rng()

    @property
    def protocol(self) -> TextProtocol:
        """The collaboration protocol."""
        return self._engine.protocol

    @property
    def problems(self) -> Sequence[Problem]:
        """The problems of the env's split (what ``problem_index`` indexes)."""
        return self._engine.problems

    def observation_space(self, agent: str) -> spaces.Text:
        """The (cached) observation space: every prompt fits it."""
        check_agent(agent, self.possible_agents)
        return self._spaces.observation

    def action_space(self, agent: str) -> spaces.Text:
        """The (cached) action space (any ``str`` is accepted)."""
        check_agent(agent, self.possible_agents)
        return self._spaces.action

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: pick the problem, return the first prompts.

        Args:
            seed: Seeds the env's RNG (problem choice and episode seed).
            options: ``problem_index`` or ``problem_id``; ``episode_seed``.

        Returns:
            ``(observations, infos)`` keyed by agent.

        Raises:
            TypeError, ValueError: On a bad ``seed`` or ``options``, naming it; the env is
                then exactly as before.
        """
        indices, seeds, rng = self._engine.starts.draw(seed, options, self._rng, per_env=False)
        self._engine.reset(indices, seeds)
        self._rng = rng  # only now: a reset that raised consumed nothing
        self.agents = list(self.possible_agents)
        return self._observations(), self._engine.infos(0, self.agents)

    def step(self, actions: dict[str, Any]):
        """Score the team's texts and return the next prompts (see the module docstring).

        Raises:
            TypeError, ValueError: On a step outside an episode, an action dict without
                exactly the live agents, a non-string action or a protocol fault; the env
                is then exactly as before.
        """
        if not self.agents:
            raise ValueError("the episode has ended (or never started): call reset() first")
        check_action_keys(actions, self.agents)
        self._engine.step([[check_text(a, actions[a]) for a in self.possible_agents]])
        state = self._engine.states[0]
        rewards = {a: state.reward for a in self.agents}
        return end_step(self, self._observations(), rewards, not state.active, self._engine.infos(0, self.agents))

    def _observations(self) -> dict[str, str]:
        return dict(zip(self.possible_agents, self._engine.observations(0), strict=True))

    def render(self) -> str | None:
        """The turn, each agent's last text (cut) and the reward parts: returned with
        ``render_mode="ansi"``, printed with ``"human"`` (which returns None)."""
        return render_table(self.render_mode, self._engine.states is not None, self._table)

    def _table(self) -> str:
        state = self._engine.states[0]
        lines = [f"problem {state.problem.id}  turn {state.turn}/{self.max_turns}  protocol {self.protocol.name}"]
        if state.outcome is not None:
            parts = ", ".join(f"{name} {value:.3g}" for name, value in state.outcome.parts.items())
            lines.append(f"R = {state.outcome.reward:.3g} ({parts}); team output: {quote(str(state.outcome.output), 60)}")
            for agent, role, text in zip(self.possible_agents, self._engine.roles, state.texts, strict=True):
                lines.append(f"{agent} ({role}): {quote(text, 60)!r}")
        return "\n".join(lines)

    def close(self) -> None:
        """Nothing to release: the env holds no model."""
