"""Deliberation: a team of LLM agents answers a problem, round by round.

============================  ==============================================================
Import                        ``import deliberation_env as de; de.parallel_env(...)``
Registry id                   ``de.make("deliberation-v1", ...)``
Actions                       Discrete(3): PERSIST, REFINE, CONCEDE (:class:`MetaAction`)
Parallel API                  Yes (``de.env(...)`` gives the AEC form)
Agents                        ``agent_0 ... agent_{n-1}``, n >= 2, no upper limit
Observation space             Dict(self: Box(0, 1, (12,)), peers: Box(0, 1, (n-1, 11)));
                              ``observation="flat"``: Box(0, 1, (12 + 11 (n-1),))
State space                   Box(0, 1, (n * 12,)): every agent's ``self`` row
============================  ==============================================================

**Episode.** One episode is one problem of the task. ``reset`` picks the problem (from
``options`` ``{"problem_index": k}`` or ``{"problem_id": "..."}``, else from the env's
seeded RNG) and plays round 0: every agent solves it independently (one batched call per
solver); the task parses each answer into a canonical *decision* (``None`` if unparseable);
each agent then judges its own answer (introspective confidence, another batched call).
Each ``step`` takes one action per agent, then recomputes confidence for changed answers.
The episode terminates after ``max_rounds`` steps, or earlier once all agents agree when
``stop_on_consensus=True``. There is no truncation.

**Actions.**

- ``PERSIST`` (0): keep the current answer.
- ``REFINE`` (1): the agent's LLM re-solves given its own previous solution and the peers'
  answers with their confidences (one batched call for all refining agents).
- ``CONCEDE`` (2): adopt the answer of the most confident peer whose valid decision differs
  from one's own (ties: lowest index); with ``concede_rule="plurality"``, adopt the peers'
  most voted differing decision instead. If no peer holds a differing valid decision the
  action acts as PERSIST. All agents act on the state before the step: a conceding agent
  adopts its peer's answer as it was before the peer's own action. With ties (equal
  confidence, or equal votes and summed confidence) the lowest agent index wins, under
  both rules. ``infos[agent]["concede_target"]`` says whose answer CONCEDE would adopt
  in the next step (``None``: it would act as PERSIST); it comes from the env's one
  implementation of the rule, which the oracle baseline reads instead of its own copy.

**Consensus.** Plurality vote over valid decisions; ties are broken by the summed
confidence of the voters, then by a fair draw (seeded by episode, problem and round, so no
seat is favoured and a replay draws alike). Decisions agree when the task's checker says
they are one answer (:func:`~deliberation_env.tasks.answer_groups`: equal
``decision_key``, or on MATH math-verify's equivalence, so ``x = 7`` and ``7`` agree):
that is what the observations, unanimity (``stop_on_consensus``) and CONCEDE see. The vote
that is paid (``consensus_correct``, ``r_global``, ``team_reward``) also splits each such
group into its right and wrong answers, so a program that passes only the prompt's
examples does not share a right program's vote (that split stays out of the
observations, which hold no ground truth). Unparseable answers do not vote; with no valid
decision there is no consensus and it counts as wrong.

**Observations** (ground truth never enters them). ``obs[agent]["self"]`` (float32, in
[0, 1]):

=====  ====================  ===================================================
index  feature               meaning
=====  ====================  ===================================================
0      confidence            introspective confidence z_conf of the own answer
1      peer_agree_share      share of peers holding the same decision
2      is_plurality          the own decision is the plurality decision, as the team sees it
3      parse_ok              the own answer has a parseable decision
4      changed_last_round    the own decision changed in the last step
5      round_frac            round / max_rounds
6-11   profile_*             reasoning profile z_prof (see :mod:`agents.profile`)
=====  ====================  ===================================================

``obs[agent]["peers"]`` has one row per peer in relative order i+1, i+2, ... (mod n):

=====  ====================  ===================================================
index  feature               meaning
=====  ====================  ===================================================
0      confidence            the peer's confidence
1      agrees_with_me        the peer holds my decision
2      decision_share        share of all agents holding the peer's decision
3      parse_ok              the peer's answer has a parseable decision
4      changed_last_round    the peer's decision changed in the last step
5-10   profile_*             the peer's reasoning profile
=====  ====================  ===================================================

With ``observation="flat"`` each observation is one float32 vector instead of the dict,
in the space ``Box(0, 1, (12 + 11 (n-1),))``, which every tool that takes 1-D Box
observations consumes as it is (RLlib's default encoders, TorchRL, BenchMARL, SuperSuit's
observation wrappers): the same numbers, laid out as

=======================  ============================================================
index                    feature
=======================  ============================================================
0-11                     the ``self`` row, index by index as above
12 + 11 (k-1) + j        feature j of peer k's row (k = 1 .. n-1, j = 0 .. 10, as above)
=======================  ============================================================

``de.spaces.flat_features(n)`` names every index (``self/confidence``, ...,
``peer_1/confidence``, ...). The Dict stays the default; TorchRL's wrapper takes it too
(with ``infos="numeric"``: it turns every info value into a tensor, and the rich infos hold
text), but TorchRL's ``SerialEnv`` and ``ParallelEnv`` over it fail on the key ``self`` (a TorchRL
bug: ``Composite.__init__() got multiple values for argument 'self'``), which the flat
vector, having no keys, avoids.

With ``observation="text"`` the dict holds only ``text`` (a ``Text`` space: the question,
the answers and confidences, rendered for LLM-based meta-policies; printable ASCII only,
:data:`~deliberation_env.meta.spaces.TEXT_CHARSET`, any other character shown as ``?``,
at most :data:`~deliberation_env.meta.spaces.TEXT_MAX_LENGTH` characters); ``"both"`` holds
all three keys.

**Rewards.** For agent i after a step, with correctness judged by the task:

- r_local = 1[i correct after] - 1[i correct before]
- r_global = 1[consensus of all correct] - 1[consensus of all but i correct] (leave-one-out,
  no new LLM calls)
- r = reward_scale (w_local r_local + w_global r_global - lambda_tok tokens_i / 1000)

where tokens_i counts the prompt and completion tokens agent i spent in this step (refine
and introspection). Hence -reward_scale (w_local + w_global) - reward_scale lambda_tok
tokens_i / 1000 <= r <= reward_scale (w_local + w_global). ``infos[agent]`` holds
``reward_components`` (``local``: r_local, ``global``: r_global, ``token_cost``: lambda_tok
tokens_i / 1000, each before the weights and ``reward_scale``, so that r = reward_scale
(w_local local + w_global global - token_cost)), ``correct``,
``consensus_correct``, ``decision``, ``confidence``, ``confidence_method``, ``text``,
``tokens`` (``prompt``, ``completion``, ``total`` of this step), ``episode_tokens``,
``cut`` (the current answer was cut at the token budget: under strict scoring no answer),
``answer_tokens`` (the tokens the current answer's text was generated in),
``team_reward`` (once the episode has ended, 1.0 if the consensus is correct at the final
step, else 0.0; 0.0 while it runs; an ended env of a vector env keeps it), ``round``,
``action``, ``problem_id`` and ``concede_target`` (the index of the agent whose answer
CONCEDE would adopt in the next step, ``None`` if it would act as PERSIST; it holds no
correctness: only a privileged policy such as the oracle pairs it with ``correct``).

**Numeric infos.** With ``infos="numeric"`` every agent's info holds numbers only, each a
Python float, under the same keys at every reset and step (TorchRL and BenchMARL turn
every info value into a tensor): nested parts are flattened to ``reward_components/local``,
``reward_components/global``, ``reward_components/token_cost``, ``tokens/prompt``,
``tokens/completion``, ``tokens/total``; booleans are 0.0 / 1.0; ``round``, ``action``
(-1.0 before the first step), ``confidence``, ``episode_tokens``, ``answer_tokens``,
``team_reward`` are as
above; ``concede_target`` is the agent index, or -1.0 where the rich infos hold None
(not NaN, which is unequal to itself and breaks PettingZoo's seed tests; not dropped,
which would change the keys between steps). ``decision``, ``confidence_method``,
``text`` and ``problem_id`` are left out: they are text, or a decision of any type.
Rich infos (``infos="rich"``) stay the default.

**Bad input and faults.** ``reset`` and ``step`` are atomic: they check their arguments,
make every solver call, check every result, and only then change the env. A call that
raises (bad actions, a bad ``seed`` or ``options``, a solver or backend error in any
phase, an invalid solver result) leaves the observations, ``state()``, the round, the
agents and the env's RNG exactly as they were, so a retry plays as if the failed call
never happened. ``step`` before the first successful ``reset`` says to call ``reset``.
The AEC form (``de.env``) checks each action at the ``step`` of the agent that gives it
(a ``ValueError`` naming the agent, the action and the action space; the env unchanged),
not when the cycle's last agent steps.

**Confidence from solvers.** Every confidence a solver returns must be a number in
[0, 1]; a NaN, an infinity or a value outside [0, 1] raises ``ValueError`` naming the
solver (``model_id``), the agent and the value, rather than being clamped or replaced:
such a value is a solver bug, and silently mapping it to some default would train on a
signal the solver never gave. The same holds for reasoning profiles (six numbers in
[0, 1]) and token counts (>= 0). Hence observations always lie in the observation space.
The built-in solvers never trip this: :class:`agents.LLMAgent` maps a critic that gives
both Yes and No probability 0 to 0.5 (no information) and clips verbalized numbers, and
the simulated team's confidences are logistic.

**Arguments** (one home: :class:`deliberation_env.meta.config.EnvConfig`, which the vector
env, the training harness and the ``deliberate`` command line share).

- ``task``: a task name (``de.tasks.names()``) or a :class:`Task` instance. Default
  ``"arithmetic"``. ``path`` (file-based tasks), ``difficulty`` (arithmetic only) and
  ``task_kwargs`` (any other keyword of the task) go to a task given by name.
- ``team``: one spec for all agents or a list with one per agent (heterogeneous team).
  A spec is ``"simulated"`` (the synthetic team of :mod:`agents.simulated`, tuned by
  ``simulated``), ``"smollm2"`` (SmolLM2-135M-Instruct, int8 CTranslate2), a backend spec
  (``"llamacpp:<gguf>"``, ``"transformers:<model dir>"``, ``"openai:<base_url>#<model>"``,
  ``"vllm:<model>"``: :mod:`agents.specs`), a backend or a solver. Default ``"smollm2"``.
  Members given by spec share one solver per distinct spec and are served through the
  SQLite response cache (``cache``, ``offline``) with ``temperature``, ``max_tokens`` and ``top_k``.
- ``n_agents`` (>= 2), ``max_rounds`` (>= 1, default 3), ``split`` (``"train"`` / ``"test"``).
- ``scoring``: ``"strict"`` (default: an answer counts only when it states its final
  answer in the form the task's prompt asks for, e.g. "The answer is N.", and an answer
  cut at the token budget is no answer) or ``"lenient"`` (the task's forgiving reader,
  e.g. the last number anywhere): :mod:`deliberation_env.tasks.base`. Answer tasks only.
- ``max_cycles``: PettingZoo's name for ``max_rounds`` (its ``max_cycles_test`` passes it);
  give one of the two.
- ``reward_scale`` (> 0), ``w_local``, ``w_global``, ``lambda_tok`` (>= 0).
- ``concede_rule``: ``"most_confident"`` or ``"plurality"``.
- ``stop_on_consensus``: end once all agents hold the same valid decision.
- ``observation``: ``"vector"`` (the Dict, default), ``"flat"``, ``"text"`` or ``"both"``.
- ``infos``: ``"rich"`` (default) or ``"numeric"``.
- ``workers``: vector envs only (``de.vector_env``, ``de.vector_env_from``): Ray workers that
  run the episodes (0, the default: in this process; :mod:`deliberation_env.distributed`).
- ``render_mode``: ``None``, ``"ansi"`` (``render()`` returns a table of the round) or
  ``"human"`` (``render()`` prints it).

Numbers may be Python or NumPy scalars (``np.int64(3)``, ``np.float32(0.5)``,
``np.bool_(True)``); they are stored as Python ``int`` / ``float`` / ``bool``. A bool is
not accepted where a number is meant, nor NaN or an infinity where a finite number is.
``reset(seed=...)`` takes None or a non-negative integer; ``options["episode_seed"]`` an
integer in [0, 2**64); ``options["problem_index"]`` an integer in [0, len(env.problems)).

**Version history.**

- v1, unreleased changes (CHANGELOG.md; the rewards of some valid actions change, those
  of split votes, so the next release names a new version): the consensus groups the
  answers the task's checker calls one (MATH: ``x = 7`` and ``7``) and pays a vote only of
  right or only of wrong answers; a full tie is a seeded fair draw, not the lowest agent
  index; ``changed_last_round`` reads decisions as the vote does.
- v1 (release 0.2.0): answers of LLM teams are read strictly by default: a decision
  counts only in the form the prompt asks for, and an answer cut at the token budget is
  none (v0 read the last number anywhere and counted a cut answer), so the same actions
  can earn other rewards; ``scoring="lenient"`` restores v0's reading.
  ``de.make("deliberation-v0")`` is refused with an error naming v1.
- v0 (release 0.1.0): initial release. Added during v0, without a new version because
  no dynamics changed for valid input: ``infos[agent]["concede_target"]``; atomic
  ``reset`` and ``step``; invalid solver results rejected (they used to be clipped, or
  pass NaN through); ``observation="flat"``, ``infos="numeric"``,
  ``render_mode="human"``, ``max_cycles``; team spec strings, ``path``, ``difficulty``,
  ``temperature``, ``max_tokens``, ``top_k``, ``cache``, ``offline``, ``simulated``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from deliberation_env.arguments import build_task
from deliberation_env.meta import spaces as de_spaces
from deliberation_env.meta.config import EnvConfig
from deliberation_env.meta.core import DeliberationCore
from deliberation_env.meta.spaces import MetaAction
from deliberation_env.meta.team import build_team
from deliberation_env.parallel_episode import (
    RENDER_MODES,
    check_render_mode,
    end_step,
    render_table,
)
from deliberation_env.tasks import Task
from deliberation_env.values import check_action_keys, check_agent, is_integer

INFOS = ("rich", "numeric")
TEXT_INFOS = frozenset({"decision", "confidence_method", "text", "problem_id"})
"""Rich info keys that ``infos="numeric"`` leaves out (text, or a decision of any type)."""
NO_CONCEDE_TARGET = -1.0
"""``concede_target`` in numeric infos when CONCEDE would act as PERSIST (rich infos: None)."""


def build_core(num_envs: int, **kwargs: Any) -> DeliberationCore:
    """Build the engine of both front-ends from the env's arguments (:class:`EnvConfig`).

    Raises:
        TypeError, ValueError: Naming the bad argument, before any task or team is built.
    """
    if not is_integer(num_envs):
        raise TypeError(f"num_envs must be an integer, got {num_envs!r}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    config = EnvConfig(**kwargs)
    if config.workers:
        raise ValueError(
            f"workers={config.workers} is an argument of de.vector_env and de.vector_env_from (Ray workers); "
            "the parallel env and DeliberationVectorEnv run in this process"
        )
    return DeliberationCore(
        build_task(config), build_team(config), int(num_envs), config.max_rounds, config.split,
        config.reward_config(), config.concede_rule, config.stop_on_consensus, config.observation,
    )


def check_infos(infos: Any) -> str:
    """``infos`` (the env argument) if it is one of :data:`INFOS`, else a ``ValueError``."""
    if infos not in INFOS:
        raise ValueError(f"infos must be one of {INFOS}, got {infos!r}")
    return infos


def check_action(agent: str, action: Any) -> int:
    """The action as an int, or a ``TypeError``/``ValueError`` naming the agent."""
    if isinstance(action, bool) or not isinstance(action, int | np.integer):
        if isinstance(action, np.ndarray) and action.shape == () and np.issubdtype(action.dtype, np.integer):
            action = action.item()
        else:
            raise TypeError(f"action of {agent} must be an integer MetaAction (0, 1, 2), got {action!r}")
    if not 0 <= action < len(MetaAction):
        raise ValueError(f"action of {agent} must be 0 (PERSIST), 1 (REFINE) or 2 (CONCEDE), got {action}")
    return int(action)


def all_infos(core: DeliberationCore, agents: Sequence[str]) -> list[dict[str, dict[str, Any]]]:
    """The per-agent info dicts of every env after a reset or step (one list entry per env)."""
    ep = core.episode
    rounds, actions = ep.round.tolist(), ep.last_action.tolist()
    correct, conf, methods = ep.correct.tolist(), ep.conf.tolist(), ep.conf_method.tolist()
    consensus, ended = ep.consensus_correct.tolist(), (~ep.active).tolist()  # kept past the end (vector env)
    prompt, completion = ep.step_tokens.tolist()
    episode_tokens = ep.episode_tokens.tolist()
    targets = ep.concede_target.tolist()
    parts = {name: part.tolist() for name, part in ep.reward_parts.items()}
    local, global_, cost = parts["local"], parts["global"], parts["token_cost"]
    infos = []
    for e in range(core.num_envs):
        team_reward = float(consensus[e]) if ended[e] else 0.0
        problem_id = ep.problem[e].id
        env_infos = {}
        for i, agent in enumerate(agents):
            answer = ep.answers[e][i]
            env_infos[agent] = {
                "round": rounds[e],
                "action": actions[e][i],
                "decision": answer.decision,
                "correct": correct[e][i],
                "confidence": conf[e][i],
                "confidence_method": methods[e][i],
                "consensus_correct": consensus[e],
                "reward_components": {"local": local[e][i], "global": global_[e][i], "token_cost": cost[e][i]},
                "tokens": {
                    "prompt": prompt[e][i],
                    "completion": completion[e][i],
                    "total": prompt[e][i] + completion[e][i],
                },
                "episode_tokens": episode_tokens[e][i],
                "cut": answer.finish_reason == "length",
                "answer_tokens": answer.completion_tokens,
                "concede_target": None if targets[e][i] < 0 else targets[e][i],
                "team_reward": team_reward,
                "text": answer.text,
                "problem_id": problem_id,
            }
        infos.append(env_infos)
    return infos


def numeric_info(info: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """One agent's rich info as numbers only (``infos="numeric"``, see the module docstring).

    Nested parts become ``"<part>/<name>"`` keys, every value a Python float; the
    :data:`TEXT_INFOS` keys are left out and a ``concede_target`` of None becomes
    :data:`NO_CONCEDE_TARGET`. The keys are the same at every reset and step.

    Example:
        >>> numeric_info({"round": 1, "reward_components": {"local": 1.0}, "text": "42", "concede_target": None})
        {'round': 1.0, 'reward_components/local': 1.0, 'concede_target': -1.0}
    """
    numbers: dict[str, float] = {}
    for key, value in info.items():
        if key in TEXT_INFOS:
            continue
        if isinstance(value, Mapping):
            numbers.update(numeric_info(value, f"{prefix}{key}/"))
        elif key == "concede_target" and value is None:
            numbers[prefix + key] = NO_CONCEDE_TARGET
        else:
            numbers[prefix + key] = float(value)
    return numbers


def encode_infos(infos: list[dict[str, dict[str, Any]]], mode: str) -> list[dict[str, dict[str, Any]]]:
    """The per-env infos of :func:`all_infos` in the ``infos`` mode ``"rich"`` or ``"numeric"``."""
    if mode == "rich":
        return infos
    return [{agent: numeric_info(info) for agent, info in env_infos.items()} for env_infos in infos]


def flat_observations(core: DeliberationCore) -> np.ndarray:
    """(E, n, d) float32: each agent's ``self`` row, then its peer rows flattened (``observation="flat"``)."""
    self_obs, peer_obs = core.observations()
    return np.concatenate([self_obs, peer_obs.reshape(*peer_obs.shape[:2], -1)], axis=-1)


class DeliberationEnv(ParallelEnv):
    """A team of LLM agents deliberating on one problem per episode (see the module doc).

    Example:
        >>> import deliberation_env as de
        >>> env = de.parallel_env(task="arithmetic", team="simulated", n_agents=3, max_rounds=2)
        >>> obs, infos = env.reset(seed=0)
        >>> obs["agent_0"]["peers"].shape
        (2, 11)
        >>> obs, rewards, terms, truncs, infos = env.step({a: de.MetaAction.PERSIST for a in env.agents})
        >>> sorted(infos["agent_0"]["reward_components"])
        ['global', 'local', 'token_cost']
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "deliberation_v1",
        "render_modes": list(RENDER_MODES),
        "is_parallelizable": True,
    }

    def __init__(self, render_mode: str | None = None, infos: str = "rich", **kwargs: Any) -> None:
        self.render_mode = check_render_mode(render_mode)
        self.info_mode = check_infos(infos)
        self._core = build_core(1, **kwargs)
        n = self._core.n_agents
        self.possible_agents = [f"agent_{i}" for i in range(n)]
        self.agents: list[str] = []
        self.max_rounds = self._core.max_rounds
        self._observation_space = de_spaces.observation_space(n, self._core.observation)
        self._action_space = de_spaces.action_space()
        self.state_space = spaces.Box(0.0, 1.0, shape=(n * len(de_spaces.SELF_FEATURES),), dtype=np.float32)
        self._rng = np.random.default_rng()

    @property
    def task(self) -> Task:
        """The task the env deliberates on."""
        return self._core.task

    @property
    def problems(self):
        """The problems of the env's split (what ``problem_index`` indexes)."""
        return self._core.problems

    def observation_space(self, agent: str) -> spaces.Dict | spaces.Box:
        """The (cached) observation space; identical for all agents."""
        check_agent(agent, self.possible_agents)
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """The (cached) action space: Discrete(3)."""
        check_agent(agent, self.possible_agents)
        return self._action_space

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode: choose the problem and play round 0.

        Args:
            seed: Seeds the env's RNG (problem choice and episode seed).
            options: ``problem_index`` or ``problem_id`` picks the problem;
                ``episode_seed`` fixes the seed of every LLM request (default: drawn).

        Returns:
            ``(observations, infos)`` keyed by agent.

        Raises:
            TypeError, ValueError: On a bad ``seed`` or ``options`` (the message names the
                argument and its valid range), or invalid solver results. The env is then
                exactly as before the call.
        """
        indices, seeds, rng = self._core.starts.draw(seed, options, self._rng, per_env=False)
        self._core.reset(indices, seeds)
        self._rng = rng  # only now: a reset that raised consumed nothing
        self.agents = list(self.possible_agents)
        return self._observations(), self._infos()

    def step(self, actions: dict[str, Any]):
        """Play one round (see the module docstring).

        Raises:
            TypeError, ValueError: On bad actions, a step before ``reset`` or after the
                episode ended, or invalid solver results; any error of a solver call
                propagates. In every case the env is exactly as before the call, and a
                retry plays the round as if the failed call never happened.
        """
        if not self.agents:
            raise ValueError("the episode has ended (or never started): call reset() first")
        check_action_keys(actions, self.agents)
        row = np.array([[check_action(a, actions[a]) for a in self.possible_agents]])
        rewards = self._core.step(row)[0]
        rewards_out = {a: float(rewards[i]) for i, a in enumerate(self.agents)}
        ended = bool(self._core.episode.just_ended[0])
        return end_step(self, self._observations(), rewards_out, ended, self._infos())

    def _infos(self) -> dict[str, dict[str, Any]]:
        return encode_infos(all_infos(self._core, self.agents), self.info_mode)[0]

    def _observations(self) -> dict[str, Any]:
        core = self._core
        if core.observation == "flat":
            return dict(zip(self.possible_agents, flat_observations(core)[0], strict=True))
        obs: dict[str, dict[str, Any]] = {a: {} for a in self.possible_agents}
        if core.observation in ("vector", "both"):
            self_obs, peer_obs = core.observations()
            for i, agent in enumerate(self.possible_agents):
                obs[agent]["self"] = self_obs[0, i]
                obs[agent]["peers"] = peer_obs[0, i]
        if core.observation in ("text", "both"):
            for i, agent in enumerate(self.possible_agents):
                obs[agent]["text"] = core.text_observation(0, i)
        return obs

    def state(self) -> np.ndarray:
        """Global state for centralized critics: every agent's ``self`` row, concatenated."""
        if not self._core.started:
            raise ValueError("state() needs an episode: call reset() first")
        return self._core.observations()[0][0].reshape(-1)

    def render(self) -> str | None:
        """A table of the round (answer, confidence, last action): returned with
        ``render_mode="ansi"``, printed with ``"human"`` (which returns None)."""
        return render_table(self.render_mode, self._core.started, self._table)

    def _table(self) -> str:
        ep = self._core.episode
        lines = [(f"problem {ep.problem[0].id}  round {int(ep.round[0])}/{self.max_rounds}  "
                 f"consensus correct: {bool(ep.consensus_correct[0])}")]
        lines.append(f"{'agent':<10}{'decision':>14}{'conf':>7}{'correct':>9}  last action")
        for i, agent in enumerate(self.possible_agents):
            action = ep.last_action[0, i]
            lines.append(
                f"{agent:<10}{ep.answers[0][i].decision!s:>14}{ep.conf[0, i]:>7.2f}"
                f"{bool(ep.correct[0, i])!s:>9}  {MetaAction(action).name if action >= 0 else '-'}"
            )
        return "\n".join(lines)

    def close(self) -> None:
        """Nothing to release (backends are shared and closed by their owners)."""
