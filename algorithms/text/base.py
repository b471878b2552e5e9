"""The LLM-weight learners' steps of the group policy-gradient skeleton: collect groups,
returns, advantages, loss.

A learner trains the agents a :class:`agents.TrainableLM` plays in a text vector env
(``de.text_vector_env``); the team's other agents are frozen :class:`agents.TextPolicy`
objects (any backend). :class:`TextPolicyGradientLearner` fills the steps of the skeleton
both families follow (:class:`algorithms.core.learner.GroupPolicyGradient`; its runs are
:func:`algorithms.core.run.run`'s), reading straight down:

1. :meth:`~TextPolicyGradientLearner.collect`: B problems, each reset in G envs (aligned
   pairing) with distinct episode seeds, so the G rollouts of a problem sample G
   different completions per agent; every turn, each agent's completions for all envs
   come from one batched call. With the cross pairing, each agent samples G completions
   per problem and the env scores all G^n combinations (B * G^n envs, one turn).
2. Returns: each agent's reward per turn (the joint reward, or its leave-one-out
   contribution, times ``reward_scale``), discounted across turns,
   G_t = r_t + gamma G_{t+1} (:func:`~algorithms.text.losses.discounted_returns`).
   **Credit in multi-turn episodes**: the completion of turn t is credited with G_t, the
   rewards of its own turn and of every later turn; the group of turn t is the G
   rollouts of the problem at turn t (their histories differ after turn 0: G parallel
   rollouts, not a tree), and a rollout that ended early (``stop_threshold``) counts with
   G_t = 0 in later groups.
3. :meth:`~TextPolicyGradientLearner.compute_advantages`: (B, G, n) returns of one turn
   -> (B, G, n) advantages. **The one method a learner overrides.**
4. :meth:`~TextPolicyGradientLearner.optimize`: ``update_epochs`` passes of
   ``num_minibatches`` Adam steps on :func:`~algorithms.text.losses.text_policy_loss`
   (every token of a completion gets its completion's advantage), gradients accumulated
   over forward passes of ``batch_size`` sequences and clipped per agent. With one pass
   and one minibatch, pi_old is the current policy detached (ratio 1: REINFORCE's
   gradient); otherwise pi_old is scored once, before the first step.

**Metrics** (one dict per update, a line of ``metrics.jsonl`` with ``step``, ``episodes``
and ``time`` as :mod:`algorithms.core.metrics` writes them): ``rewards/joint/mean``
and ``rewards/{part}/mean`` for each part of the protocol (e.g. ``correct``,
``format``), ``rewards/contribution/{agent}``, ``returns/mean``, ``adv/abs_mean``,
``losses/{policy,kl,clip_frac}``, ``tokens/{agent}`` (mean completion length),
``truncated/{agent}`` (the share of its completions cut at the token budget) and
``charts/{update,seconds}``.

**Cut completions.** A completion cut at ``max_new_tokens`` is played as the env's
``text_if_cut`` info says (:func:`agents.text_policy.played_text`, as
:class:`agents.TextPolicy` plays it in evaluation): the math protocol under strict
scoring makes it its neutral text, so a cut completion is no answer and earns nothing,
in training as in evaluation; its tokens are still trained on, with that reward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm.auto import tqdm

from agents.progress import reporting
from agents.seeding import derive_seed
from agents.text_policy import TextPolicy, played_text
from agents.trainable_lm import Completion, TrainableLM
from algorithms.core.learner import GroupPolicyGradient
from algorithms.core.run import padded_batches
from algorithms.text.config import TextLearnerConfig
from algorithms.text.losses import (
    cross_returns,
    discounted_returns,
    text_policy_loss,
    token_weights,
)
from deliberation_env.text.config import config_record


def sample_turn(
    sampler: Any, requests: Mapping[str, tuple[list[Any], list[int]]], **settings: Any
) -> dict[str, list[Completion]]:
    """Every trainable agent's completions of one turn, ``{agent: (chats, seeds)}``: in one
    call where the sampler decodes agents together (:meth:`agents.TrainableLM.sample_joint`:
    adapters of one base share each batch), else agent by agent (``sampler.sample``).
    Either way a request's completion is that of its seed (the samplers' contract)."""
    if hasattr(sampler, "sample_joint"):
        return sampler.sample_joint(requests, **settings)
    return {agent: sampler.sample(agent, chats, seeds, **settings) for agent, (chats, seeds) in requests.items()}


@dataclass(frozen=True)
class Sample:
    """One completion of a trainable agent, with where its advantage comes from.

    Attributes:
        agent: The agent that wrote it.
        agent_index: Its index in the env's agents.
        turn: The turn it was played at.
        group: b, the problem's group.
        member: g, its sample index within the group.
        completion: The completion (prompt and completion token ids).
    """

    agent: str
    agent_index: int
    turn: int
    group: int
    member: int
    completion: Completion


@dataclass
class Play:
    """What playing one episode per env gives.

    Attributes:
        rewards: (T, E, n) each agent's credited reward per turn.
        samples: The trainable agents' completions.
        metrics: Means of the reward parts (``rewards/...``) and completion lengths.
        finals: Per reward part (not ``contribution``), its value at each env's last turn.
        completions: (3, E) per env, the trainable agents' completions: how many, how many
            of them were cut at the token budget, and their tokens.
    """

    rewards: np.ndarray
    samples: list[Sample]
    metrics: dict[str, float]
    finals: dict[str, list[float]]
    completions: np.ndarray


@dataclass
class Rollouts:
    """One batch of group rollouts.

    Attributes:
        samples: The trainable agents' completions.
        rewards: (T, B, G, n) each agent's reward per turn (0 after its episode ended).
        metrics: Reward, part and length metrics of the batch.
    """

    samples: list[Sample]
    rewards: torch.Tensor
    metrics: dict[str, float]


class TextPolicyGradientLearner(GroupPolicyGradient):
    """Group rollouts, group-relative advantages, a clipped token loss (module docstring).

    Args:
        config: The learner's config.
        lm: The trainable policy; it plays the agents it was built for.
        venv: A ``de.text_vector_env`` with ``num_envs == config.num_envs``.
        frozen: The other agents' policies, ``{agent: TextPolicy}``.
        sampler: What samples the trainable agents' completions: ``lm`` itself (default), or
            :class:`~algorithms.text.rollout_workers.RolloutWorkers` holding copies of it on
            Ray actors; the learner ships it ``lm``'s trainable weights before each
            collection (only when they changed), so sampling stays on-policy.

    Raises:
        TypeError: On a config of another learner, or a frozen policy that is no TextPolicy.
        ValueError: If the agents of ``lm`` and ``frozen`` do not cover the env's agents
            exactly once, or the env does not fit the config.
    """

    config_class: ClassVar[type[TextLearnerConfig]] = TextLearnerConfig
    name: ClassVar[str] = "text_policy_gradient"
    headline: ClassVar[str] = "rewards/joint/mean"

    def __init__(
        self,
        config: TextLearnerConfig,
        lm: TrainableLM,
        venv: Any,
        frozen: Mapping[str, TextPolicy] | None = None,
        sampler: Any = None,
    ) -> None:
        self.check_setup(config, venv)
        frozen = dict(frozen or {})
        for agent, policy in frozen.items():
            if not isinstance(policy, TextPolicy):
                raise TypeError(f"frozen[{agent!r}] must be an agents.TextPolicy, got {type(policy).__name__}")
        self.agents = list(venv.possible_agents)
        both = sorted(set(lm.agents) & set(frozen))
        unknown = sorted((set(lm.agents) | set(frozen)) - set(self.agents))
        missing = [a for a in self.agents if a not in lm.agents and a not in frozen]
        if both or unknown or missing:
            raise ValueError(
                f"every agent of the env {self.agents} must be played by the TrainableLM or a frozen policy, "
                f"exactly once: in both {both}, unknown {unknown}, missing {missing}"
            )
        if venv.num_envs != config.num_envs:
            raise ValueError(
                f"the text vector env has num_envs={venv.num_envs}, the config needs {config.num_envs} "
                f"({config.pairing} pairing): build it with de.text_vector_env({config.num_envs}, ...)"
            )
        if venv.n_agents != config.env.n_agents or venv.episode_length != config.env.max_turns:
            raise ValueError(
                f"the env has n_agents={venv.n_agents}, max_turns={venv.episode_length}; the config says "
                f"{config.env.n_agents}, {config.env.max_turns}"
            )
        self.config, self.lm, self.venv, self.frozen = config, lm, venv, frozen
        self.trainable = [a for a in self.agents if a in lm.agents]
        self.optimizer = torch.optim.Adam(self._parameters(self.trainable), lr=config.learning_rate)
        self.rng = np.random.default_rng(config.seed)
        self.update = 0
        self.sampler = lm if sampler is None else sampler
        self._weights_version = 0  # bumped whenever lm's weights change: what sampler syncs to

    def _parameters(self, agents: Sequence[str]) -> list[torch.nn.Parameter]:
        """The distinct trainable weights of ``agents``, in a fixed order."""
        unique: dict[int, torch.nn.Parameter] = {}
        for agent in agents:
            for parameter in self.lm.parameters(agent):
                unique.setdefault(id(parameter), parameter)
        return list(unique.values())

    # ------------------------------------------------------------------ the loop
    def returns(self, batch: Rollouts) -> torch.Tensor:
        """Each agent's discounted return per turn, (T, B, G, n) (the module docstring)."""
        return discounted_returns(batch.rewards, self.config.gamma)

    def group_advantages(self, batch: Rollouts, returns: torch.Tensor) -> torch.Tensor:
        """:meth:`compute_advantages` of every turn's returns, (T, B, G, n)."""
        return torch.stack([self.compute_advantages(turn_returns) for turn_returns in returns])

    def sample_advantages(self, batch: Rollouts, advantages: torch.Tensor) -> torch.Tensor:
        """Every completion gets the advantage of its turn, group, member and agent."""
        return torch.tensor([advantages[s.turn, s.group, s.member, s.agent_index].item() for s in batch.samples])

    def update_metrics(
        self, returns: torch.Tensor, advantages: torch.Tensor, samples: torch.Tensor, seconds: float
    ) -> dict[str, float]:
        """``returns/mean`` (first turn), ``adv/abs_mean`` over the completions, ``charts/{update,seconds}``."""
        return {
            "returns/mean": returns[0].mean().item(),
            "adv/abs_mean": samples.abs().mean().item(),
            "charts/update": float(self.update),
            "charts/seconds": seconds,
        }

    @torch.no_grad()
    def collect(self) -> Rollouts:
        """Play B problems as groups (see the module docstring)."""
        config, venv = self.config, self.venv
        if self.sampler is not self.lm:
            self.sampler.sync(self.lm.state_dict(), self._weights_version)
        per_group = venv.num_envs // config.groups_per_update
        problems = self.rng.integers(config.problem_pool or len(venv.problems), size=config.groups_per_update)
        episode_seeds = self.rng.integers(2**62, size=venv.num_envs)
        play = self._play(venv, np.repeat(problems, per_group), episode_seeds, config.temperature, config.pairing)
        return Rollouts(play.samples, self._group_rewards(play.rewards), play.metrics)

    def _group_rewards(self, rewards: np.ndarray) -> torch.Tensor:
        """(T, E, n) per-env rewards -> (T, B, G, n) per-sample rewards."""
        config = self.config
        turns, n = rewards.shape[0], len(self.agents)
        table = torch.as_tensor(rewards, dtype=torch.float32)
        if config.pairing == "cross":
            joint = table[:, :, 0].reshape(turns * config.groups_per_update, -1)
            return cross_returns(joint, n).reshape(turns, config.groups_per_update, config.group_size, n)
        return table.reshape(turns, config.groups_per_update, config.group_size, n)

    def _members(self, num_envs: int, pairing: str) -> list[int]:
        """Per group member m = b * G + g, the env whose prompt and seed its completions
        use: env m itself (aligned), or the group's env where every agent plays sample g (cross)."""
        if pairing == "aligned":
            return list(range(num_envs))
        group, n = self.config.group_size, len(self.agents)
        diagonal = sum(group**k for k in range(n))  # combination (g, ..., g) in base G is g * diagonal
        per_group = group**n
        return [b * per_group + g * diagonal for b in range(num_envs // per_group) for g in range(group)]

    def _text_of(self, by_member: Mapping[int, str], env: int, agent_index: int, pairing: str) -> str:
        """The text agent ``agent_index`` plays in ``env`` ("" where the env has ended)."""
        if pairing == "aligned":
            return by_member.get(env, "")
        group, n = self.config.group_size, len(self.agents)
        per_group = group**n
        digit = (env % per_group // group ** (n - 1 - agent_index)) % group  # agent 0 most significant
        return by_member.get(env // per_group * group + digit, "")

    def _play(
        self, venv: Any, problems: np.ndarray, episode_seeds: np.ndarray, temperature: float, pairing: str
    ) -> Play:
        """Play one episode per env of ``venv`` to its end, every agent's turn batched."""
        config, n = self.config, len(self.agents)
        obs, infos = venv.reset(options={"problem_index": problems.tolist(), "episode_seed": episode_seeds.tolist()})
        rewards = np.zeros((venv.episode_length, venv.num_envs, n))
        samples: list[Sample] = []
        parts: dict[str, list[float]] = {}
        lengths: dict[str, list[int]] = {agent: [] for agent in self.trainable}
        cut: dict[str, list[bool]] = {agent: [] for agent in self.trainable}
        counts = np.zeros((3, venv.num_envs))
        members = self._members(venv.num_envs, pairing)
        group = self.config.group_size
        for turn in range(venv.episode_length):
            active = venv.active
            if not active.any():
                break
            live = [(m, e) for m, e in enumerate(members) if active[e]]
            requests = {}
            for agent in self.trainable:
                own = [infos[e][agent] for _, e in live]
                requests[agent] = (
                    [info["messages"] for info in own],
                    [derive_seed(info["seed"], tuple(info["messages"])) for info in own],
                )
            turn_completions = sample_turn(
                self.sampler if temperature else self.lm,
                requests,
                max_new_tokens=config.max_new_tokens,
                temperature=temperature,
                top_p=config.top_p,
                min_new_tokens=config.min_new_tokens if temperature else 0,
            )
            texts = {}
            for i, agent in enumerate(self.agents):
                if agent in self.frozen:
                    observed = {agent: [obs[agent][e] for _, e in live]}
                    written = self.frozen[agent].act_vector(observed, [infos[e] for _, e in live])[agent]
                else:
                    completions = turn_completions[agent]
                    own = [infos[e][agent] for _, e in live]
                    written = [played_text(c.text, c.finish_reason, info) for c, info in zip(completions, own, strict=True)]
                    samples.extend(
                        Sample(agent, i, turn, m // group, m % group, c) for (m, _), c in zip(live, completions, strict=True)
                    )
                    lengths[agent].extend(len(c.token_ids) for c in completions)
                    cut[agent].extend(c.finish_reason == "length" for c in completions)
                    for (_, e), c in zip(live, completions, strict=True):
                        counts[:, e] += (1, c.finish_reason == "length", len(c.token_ids))
                by_member = dict(zip((m for m, _ in live), written, strict=True))
                texts[agent] = [self._text_of(by_member, e, i, pairing) for e in range(venv.num_envs)]
            obs, step_rewards, _, _, infos = venv.step(texts)
            for e in np.flatnonzero(active):
                for i, agent in enumerate(self.agents):
                    components = infos[e][agent]["reward_components"]
                    rewards[turn, e, i] = self._credit(step_rewards[agent][e], components)
                    for name, value in components.items():
                        parts.setdefault(f"contribution/{agent}" if name == "contribution" else f"{name}/mean", []).append(value)
        finals = {
            name: [infos[e][self.agents[0]]["reward_components"][name] for e in range(venv.num_envs)]
            for name in infos[0][self.agents[0]]["reward_components"]
            if name != "contribution"
        }
        metrics = {
            **{f"rewards/{key}": float(np.mean(values)) for key, values in parts.items()},
            **{f"tokens/{agent}": float(np.mean(values)) for agent, values in lengths.items() if values},
            **{f"truncated/{agent}": float(np.mean(values)) for agent, values in cut.items() if values},
        }
        return Play(rewards, samples, metrics, finals, counts)

    def _credit(self, reward: float, components: Mapping[str, float]) -> float:
        """An agent's reward of a turn: the env's (joint) reward, or its scaled contribution.

        Raises:
            ValueError: If the env's reward is not ``config.env.reward_scale`` times the joint
                reward (the env was built with another ``reward_scale``).
        """
        scale = self.config.env.reward_scale
        if not np.isclose(reward, scale * components["joint"], rtol=1e-5, atol=1e-6):
            raise ValueError(
                f"the env's reward {reward} is not reward_scale={scale} times the joint reward "
                f"{components['joint']}: build the env with the config's reward_scale"
            )
        return float(reward) if self.config.credit == "joint" else scale * components["contribution"]

    # ------------------------------------------------------------------ optimization
    def optimize(self, batch: Rollouts, advantages: torch.Tensor) -> dict[str, float]:
        """``update_epochs`` x ``num_minibatches`` Adam steps (see the module docstring)."""
        config, samples = self.config, batch.samples
        if not samples:
            return {}
        reuse = config.update_epochs * config.num_minibatches > 1
        old = self._score_all(samples, reference=False) if reuse else None
        reference = self._score_all(samples, reference=True) if config.kl_coef > 0 else None
        lengths = torch.tensor([len(s.completion.token_ids) for s in samples])
        totals: dict[str, float] = {}
        for _ in range(config.update_epochs):
            order = self.rng.permutation(len(samples))
            totals = {}
            for minibatch in np.array_split(order, config.num_minibatches):
                weights = token_weights(lengths[minibatch], config.aggregation)
                self.optimizer.zero_grad()
                for rows, chunk_weights in self._chunks(samples, minibatch, weights):
                    stats = self._backward(samples, rows, chunk_weights, advantages, old, reference)
                    for name, value in stats.items():
                        totals[name] = totals.get(name, 0.0) + value / config.num_minibatches
                for agent in self.trainable:
                    torch.nn.utils.clip_grad_norm_(self.lm.parameters(agent), config.max_grad_norm)
                self.optimizer.step()
                self._weights_version += 1
        return {f"losses/{name}": value for name, value in totals.items()}

    def _chunks(self, samples: Sequence[Sample], minibatch: np.ndarray, weights: torch.Tensor):
        """The minibatch's rows per agent, ``batch_size`` at a time, with their weights."""
        for agent in self.trainable:
            picked = [k for k, row in enumerate(minibatch) if samples[row].agent == agent]
            for start in range(0, len(picked), self.config.batch_size):
                block = picked[start : start + self.config.batch_size]
                yield [int(minibatch[k]) for k in block], weights[block]

    def _backward(
        self,
        samples: Sequence[Sample],
        rows: list[int],
        weights: torch.Tensor,
        advantages: torch.Tensor,
        old: list[torch.Tensor] | None,
        reference: list[torch.Tensor] | None,
    ) -> dict[str, float]:
        """Accumulate the gradient of one forward pass of one agent's rows."""
        agent = samples[rows[0]].agent
        logp, mask = self.lm.logprobs(
            agent,
            [samples[r].completion.prompt_ids for r in rows],
            [samples[r].completion.token_ids for r in rows],
            temperature=self.config.temperature,
        )
        loss, stats = text_policy_loss(
            logp,
            _padded([old[r] for r in rows], logp) if old is not None else logp.detach(),
            _padded([reference[r] for r in rows], logp) if reference is not None else None,
            advantages[rows],
            mask,
            weights,
            self.config.clip_eps,
            self.config.kl_coef,
        )
        loss.backward()
        return {name: value.item() for name, value in stats.items()}

    @torch.no_grad()
    def _score_all(self, samples: Sequence[Sample], reference: bool) -> list[torch.Tensor]:
        """Per sample, its tokens' log-probabilities under the current (or reference) policy."""
        scored: list[torch.Tensor | None] = [None] * len(samples)
        for agent in self.trainable:
            rows = [k for k, s in enumerate(samples) if s.agent == agent]
            for start in range(0, len(rows), self.config.batch_size):
                block = rows[start : start + self.config.batch_size]
                logp, _ = self.lm.logprobs(
                    agent,
                    [samples[r].completion.prompt_ids for r in block],
                    [samples[r].completion.token_ids for r in block],
                    temperature=self.config.temperature,
                    reference=reference,
                )
                for offset, r in enumerate(block):
                    scored[r] = logp[offset, : len(samples[r].completion.token_ids)]
        return scored

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs to continue exactly: weights, Adam state, RNG, counter."""
        return {
            "algo": self.name,
            "config": self.settings(self.config),
            "weights": self.lm.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "rng": self.rng.bit_generator.state,
            "update": self.update,
        }

    def settings(self, config: TextLearnerConfig) -> dict[str, Any]:
        """The config's fields that a resumed run must share, recorded flat
        (:func:`~deliberation_env.text.config.config_record`; a protocol instance by its
        name); its run fields (``RUN_FIELDS``: the run part, ``workers`` and ``sampler``) may change."""
        return {k: v for k, v in config_record(config).items() if k not in config.RUN_FIELDS}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Set weights, Adam state, RNG and counter to a checked ``state``."""
        self.lm.load_state_dict(state["weights"])
        self._weights_version += 1
        self.optimizer.load_state_dict(state["optimizer"])
        self.rng.bit_generator.state = state["rng"]
        self.update = state["update"]

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(
        self, venv: Any, problem_indices: Sequence[int], seed: int = 0, progress: bool = False
    ) -> dict[str, float]:
        """Greedy play (temperature 0 for the trainable agents) of ``problem_indices``.

        Args:
            venv: A text vector env with this learner's agents (e.g. the test split);
                problems are played ``venv.num_envs`` at a time.
            problem_indices: The problems to play, once each.
            seed: Seeds the episode seeds (they matter to sampling frozen agents only).
            progress: Show, on stderr, a bar of the problems played and, below it, the
                completions done of each batched sampling call (:mod:`agents.progress`).

        Returns:
            ``eval/{part}``: the mean over problems of each reward part of the last turn
            (``eval/correct`` is the team's accuracy on the math protocol), ``eval/joint``;
            beside them, over the trainable agents' completions, ``eval/truncated_share``
            (the share cut at the token budget) and ``eval/mean_completion_tokens``, and on
            the math protocol ``eval/asked_form_share`` (its ``format`` part: the share of
            the last turn's answers stated in the form the prompt asks for; a cut one is
            not, under strict scoring).
        """
        rng = np.random.default_rng(seed)
        finals: dict[str, list[float]] = {}
        counts = np.zeros(3)  # the trainable agents' completions, those cut, their tokens
        bar = tqdm(total=len(problem_indices), desc="held-out eval", unit="problem", leave=False, disable=not progress)
        with bar, reporting(progress):
            for _, n_real, padded in padded_batches(problem_indices, venv.num_envs):
                play = self._play(venv, np.array(padded), rng.integers(2**62, size=venv.num_envs), 0.0, "aligned")
                for name, values in play.finals.items():
                    finals.setdefault(name, []).extend(values[:n_real])
                counts += play.completions[:, :n_real].sum(axis=1)
                bar.update(n_real)
        made, cut, tokens = counts
        results = {f"eval/{name}": float(np.mean(values)) for name, values in finals.items()}
        results["eval/truncated_share"] = float(cut / made)
        results["eval/mean_completion_tokens"] = float(tokens / made)
        if "format" in finals:
            results["eval/asked_form_share"] = results["eval/format"]
        return results


def _padded(rows: Sequence[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    """Per-sequence token values padded with 0 to ``like``'s (N, T) shape."""
    out = torch.zeros_like(like)
    for k, row in enumerate(rows):
        out[k, : len(row)] = row
    return out
