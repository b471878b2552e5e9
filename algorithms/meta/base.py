"""The meta family's learner machinery and its group policy-gradient learner.

A learner owns a parameter-shared :class:`~algorithms.meta.network.MetaPolicyNetwork`, trains
it against a vector env (``de.vector_env``) through the public API only, and saves and
resumes from checkpoints (:class:`algorithms.core.learner.Learner`). :class:`PolicyGradientLearner`
fills the steps of the skeleton both families follow
(:class:`algorithms.core.learner.GroupPolicyGradient`), reading straight down:

1. ``collect``: B problems, G rollouts each, played by :meth:`MetaLearner.play` (the rollout
   loop every learner shares, SFT included) from the same start state (equal
   ``problem_index`` and ``episode_seed`` give an identical round 0); the policy samples
   every agent's meta-action every round.
2. ``returns``: each agent's undiscounted episode return, (B, G, n_agents) (MAGRPO's: the
   team's joint return, the same for every agent of a trajectory).
3. ``compute_advantages(returns)``: returns (B, G, n_agents) -> advantages (B, G, n_agents).
   This is the method SoftRankPO, GRPO and MAGRPO override (MAGRPO also ``returns``, where
   an agent's return is the team's).
4. ``optimize``: epochs of minibatch steps on the clipped ratio loss plus the exact KL to
   the frozen reference policy (:func:`~algorithms.meta.losses.kl_regularized_policy_loss`);
   every step of an agent's trajectory gets that trajectory's advantage (outcome
   supervision, as in GRPO).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces as gym_spaces

from algorithms.core.checkpoints import check_torch_rng_state
from algorithms.core.learner import GroupPolicyGradient
from algorithms.core.learner import Learner as CoreLearner
from algorithms.core.optimizers import adam
from algorithms.meta.config import LearnerConfig, PolicyGradientConfig
from algorithms.meta.losses import kl_regularized_policy_loss
from algorithms.meta.network import (
    NUM_ACTIONS,
    MetaPolicyNetwork,
    NetworkPolicy,
    stack_observations,
)
from deliberation_env.meta.spaces import ACTION_NAMES


@dataclass
class Round:
    """One round of :meth:`MetaLearner.play`, as the sampling policy saw and acted on it.

    Rows of the tensors are agent-major, like
    :func:`~algorithms.meta.network.stack_observations`: row ``k * num_envs + e`` is agent k of
    env e.

    Attributes:
        obs: The vector env's observations before the step.
        infos: Its per-env infos before the step.
        self_features: (n_agents * num_envs, d_self) stacked observations.
        peer_features: (n_agents * num_envs, n_agents - 1, d_peer) their peer rows.
        logits: (n_agents * num_envs, NUM_ACTIONS) the network's logits.
        actions: (n_agents * num_envs,) int64 meta-actions sampled from them.
        live: (n_agents * num_envs,) bool, True where the env's episode is still running.
        rewards: Per-agent rewards of the step, set once the caller has resumed :meth:`play`.
        step_infos: Per-env infos after the step, set with ``rewards``.
    """

    obs: dict[str, Any]
    infos: list[dict[str, Any]]
    self_features: torch.Tensor
    peer_features: torch.Tensor
    logits: torch.Tensor
    actions: torch.Tensor
    live: torch.Tensor
    rewards: dict[str, np.ndarray] | None = None
    step_infos: list[dict[str, Any]] | None = None

    @property
    def logp(self) -> torch.Tensor:
        """(n_agents * num_envs,) log-probabilities of the sampled actions."""
        return torch.log_softmax(self.logits, -1).gather(1, self.actions[:, None]).squeeze(1)


class MetaLearner(CoreLearner):
    """A trainable meta-policy: network, optimizer, counters, checkpoints.

    Subclasses implement :meth:`train_step` (one collect-and-update cycle) and collect
    their batches with :meth:`play`, the one rollout loop they share.

    Args:
        config: The learner's config.
        venv: A ``de.vector_env`` to train on.
        warm_start: A network to start from (copied), e.g. the SFT policy; else a fresh one.
    """

    config_class: ClassVar[type[LearnerConfig]] = LearnerConfig
    name: ClassVar[str] = "learner"
    headline: ClassVar[str] = "rewards/team/mean"

    def __init__(
        self, config: LearnerConfig, venv: Any, warm_start: MetaPolicyNetwork | None = None
    ):
        self.check_setup(config, venv)
        self.config = config
        self.venv = venv
        self.agents = list(venv.agents)
        space = venv.observation_space(self.agents[0])
        if not (isinstance(space, gym_spaces.Dict) and {"self", "peers"} <= set(space.spaces)):
            raise ValueError(
                "the meta learners read the vector observations (self and peers): make the env with "
                f"observation='vector' or 'both' (its observation space is a {type(space).__name__} without them)"
            )
        with torch.random.fork_rng():  # seeded initialization without touching the global RNG
            torch.manual_seed(config.seed)
            self.network = MetaPolicyNetwork(
                space["self"].shape[-1],
                space["peers"].shape[-1],
                config.hidden_size,
                config.num_heads,
            )
        if warm_start is not None:
            self.network.load_state_dict(warm_start.state_dict())
        self.optimizer = adam(self.network.parameters(), config, eps=1e-5)
        self.rng = np.random.default_rng(config.seed)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.update = 0

    def policy(self, greedy: bool = True) -> NetworkPolicy:
        """The current network as a :class:`~algorithms.meta.policy.Policy` (shared, not a copy)."""
        return NetworkPolicy(
            self.network, self.agents, name=self.name, greedy=greedy, seed=self.config.seed
        )

    def sample_problems(self, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``count`` training problem indices and episode seeds, from the learner's RNG
        (within ``problem_pool`` and ``seed_pool`` when they are set)."""
        problems = self.rng.integers(
            self.config.problem_pool or len(self.venv.problems), size=count
        )
        seeds = self.rng.integers(self.config.seed_pool or 2**62, size=count)
        return problems, seeds

    @torch.no_grad()
    def play(self, problems: np.ndarray, seeds: np.ndarray) -> Iterator[Round]:
        """Play one episode per env with the sampling policy, a :class:`Round` at a time.

        Each round is yielded before the env steps with its sampled actions; when the
        caller resumes, the env steps and the round's ``rewards`` and ``step_infos`` are set.

        Args:
            problems: (num_envs,) problem index of each env.
            seeds: (num_envs,) episode seed of each env.

        Yields:
            The rounds, until every episode has ended or ``max_rounds`` is reached.
        """
        venv, n_agents = self.venv, len(self.agents)
        obs, infos = venv.reset(
            options={"problem_index": problems.tolist(), "episode_seed": seeds.tolist()}
        )
        for _ in range(venv.episode_length):
            live = torch.as_tensor(np.tile(venv.active, n_agents))
            if not live.any():
                return
            self_features, peer_features = stack_observations(obs, self.agents)
            logits = self.network(self_features, peer_features)
            actions = torch.multinomial(
                torch.softmax(logits, -1), 1, generator=self.generator
            ).squeeze(1)
            played = Round(obs, infos, self_features, peer_features, logits, actions, live)
            yield played
            per_agent = actions.numpy().reshape(n_agents, venv.num_envs)
            obs, played.rewards, _, _, infos = venv.step(
                {a: per_agent[i] for i, a in enumerate(self.agents)}
            )
            played.step_infos = infos

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs to continue exactly where this one stands."""
        return {
            "algo": self.name,
            "config": self.settings(self.config),
            "network": self.network.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "rng": self.rng.bit_generator.state,
            "generator": self.generator.get_state(),
            "update": self.update,
            "episodes": self.episodes,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Set network, optimizer, RNGs and counter to a checked ``state``."""
        check_torch_rng_state(state["generator"], "checkpoint/generator")
        self.network.load_state_dict(state["network"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.rng.bit_generator.state = state["rng"]
        self.generator.set_state(state["generator"])
        self.update = state["update"]


@dataclass
class Rollout:
    """One batch of group rollouts, flattened to the transitions of live agents.

    Attributes:
        self_features: (S, d_self) observations of the acting agent.
        peer_features: (S, n_agents - 1, d_peer) its peer rows.
        actions: (S,) int64 meta-actions taken.
        logp: (S,) their log-probabilities under the behaviour policy.
        env_index: (S,) env of each transition (env ``b * G + g`` is rollout g of group b).
        agent_index: (S,) agent of each transition.
        returns: (B, G, n_agents) undiscounted episode returns per agent.
        team_rewards: (B, G) 1 if the final consensus is correct, else 0.
        metrics: Training metrics of the batch (rewards, action shares, tokens).
    """

    self_features: torch.Tensor
    peer_features: torch.Tensor
    actions: torch.Tensor
    logp: torch.Tensor
    env_index: torch.Tensor
    agent_index: torch.Tensor
    returns: torch.Tensor
    team_rewards: torch.Tensor
    metrics: dict[str, float]


class PolicyGradientLearner(MetaLearner, GroupPolicyGradient):
    """Group rollouts, group-relative advantages, clipped ratio loss with KL to a reference.

    Subclasses override :meth:`compute_advantages` only.

    Args:
        config: A :class:`PolicyGradientConfig` (or a subclass).
        venv: A ``de.vector_env`` with ``num_envs == config.num_envs``.
        warm_start: Initial network and frozen KL reference (e.g. the SFT policy).
    """

    config_class = PolicyGradientConfig
    name = "policy_gradient"

    def __init__(
        self, config: PolicyGradientConfig, venv: Any, warm_start: MetaPolicyNetwork | None = None
    ):
        super().__init__(config, venv, warm_start)
        if venv.num_envs != config.num_envs:
            raise ValueError(
                f"the vector env has num_envs={venv.num_envs} but groups_per_update * group_size "
                f"= {config.num_envs}: build it with de.vector_env({config.num_envs}, ...)"
            )
        self.reference = copy.deepcopy(self.network).requires_grad_(False)

    def returns(self, batch: Rollout) -> torch.Tensor:
        """Each agent's undiscounted episode return, R_i = sum_t r_{i,t}, (B, G, n_agents)."""
        return batch.returns

    def sample_advantages(self, batch: Rollout, advantages: torch.Tensor) -> torch.Tensor:
        """Every transition of an agent's trajectory gets that trajectory's advantage."""
        per_env = advantages.reshape(self.venv.num_envs, len(self.agents))
        return per_env[batch.env_index, batch.agent_index]

    def update_metrics(
        self, returns: torch.Tensor, advantages: torch.Tensor, samples: torch.Tensor, seconds: float
    ) -> dict[str, float]:
        """``adv/abs_mean`` over the group advantages and ``charts/sps`` (env steps per second)."""
        return {
            "adv/abs_mean": advantages.abs().mean().item(),
            "charts/sps": self.venv.num_envs * self.venv.episode_length / seconds,
        }

    @torch.no_grad()
    def collect(self) -> Rollout:
        """Play B problems G times each with the sampling policy (see the module docstring)."""
        venv, config, n_agents = self.venv, self.config, len(self.agents)
        problems, seeds = self.sample_problems(config.groups_per_update)
        rounds = list(
            self.play(np.repeat(problems, config.group_size), np.repeat(seeds, config.group_size))
        )
        steps = [
            (
                played.self_features[played.live],
                played.peer_features[played.live],
                played.actions[played.live],
                played.logp[played.live],
                played.live.nonzero()[:, 0],
            )
            for played in rounds
        ]
        returns = np.zeros((venv.num_envs, n_agents))
        parts = {
            name: np.zeros((venv.num_envs, n_agents)) for name in ("local", "global", "token_cost")
        }
        for played in rounds:
            returns += np.stack([played.rewards[a] for a in self.agents], axis=1)
            for e, env_infos in enumerate(played.step_infos):
                for i, agent in enumerate(self.agents):
                    for name, value in env_infos[agent]["reward_components"].items():
                        parts[name][e, i] += value
        infos = rounds[-1].step_infos
        self_features, peer_features, actions, logp, rows = (
            torch.cat(column) for column in zip(*steps)
        )
        team_rewards = np.array([env_infos[self.agents[0]]["team_reward"] for env_infos in infos])
        tokens = np.array(
            [sum(env_infos[a]["episode_tokens"] for a in self.agents) for env_infos in infos]
        )
        shares = torch.bincount(actions, minlength=NUM_ACTIONS).double() / len(actions)
        metrics = {
            "rewards/total/mean": returns.mean(),
            **{f"rewards/{name}/mean": part.mean() for name, part in parts.items()},
            "rewards/team/mean": team_rewards.mean(),
            **{f"actions/{name}_share": shares[k].item() for k, name in enumerate(ACTION_NAMES)},
            "tokens/episode": tokens.mean(),
        }
        shape = (config.groups_per_update, config.group_size)
        return Rollout(
            self_features,
            peer_features,
            actions,
            logp,
            env_index=rows % venv.num_envs,
            agent_index=rows // venv.num_envs,
            returns=torch.as_tensor(returns, dtype=torch.float32).reshape(*shape, n_agents),
            team_rewards=torch.as_tensor(team_rewards, dtype=torch.float32).reshape(shape),
            metrics={name: float(value) for name, value in metrics.items()},
        )

    def optimize(self, rollout: Rollout, advantages: torch.Tensor) -> dict[str, float]:
        """Epochs of minibatch steps on :func:`~algorithms.meta.losses.kl_regularized_policy_loss`."""
        config = self.config
        with torch.no_grad():
            ref_logits = self.reference(rollout.self_features, rollout.peer_features)
        num_samples = len(rollout.actions)
        minibatch_size = -(-num_samples // config.num_minibatches)
        totals: dict[str, float] = {}  # each statistic's mean over the update's epochs (and samples)
        norms: list[float] = []  # before clipping
        for _ in range(config.update_epochs):
            order = torch.randperm(num_samples, generator=self.generator)
            for start in range(0, num_samples, minibatch_size):
                mb = order[start : start + minibatch_size]
                logits = self.network(rollout.self_features[mb], rollout.peer_features[mb])
                loss, stats = kl_regularized_policy_loss(
                    logits,
                    ref_logits[mb],
                    rollout.actions[mb],
                    rollout.logp[mb],
                    advantages[mb],
                    config.clip_eps,
                    config.kl_coef,
                    config.clip_eps_high,
                )
                self.optimizer.zero_grad()
                loss.backward()
                norms.append(float(torch.nn.utils.clip_grad_norm_(self.network.parameters(), config.max_grad_norm)))
                self.optimizer.step()
                for name, value in stats.items():
                    totals[name] = totals.get(name, 0.0) + value.item() * len(mb) / (num_samples * config.update_epochs)
        return {**{f"losses/{name}": value for name, value in totals.items()}, "losses/grad_norm": float(np.mean(norms))}

    def state_dict(self) -> dict[str, Any]:
        """The base checkpoint plus the frozen reference network."""
        return {**super().state_dict(), "reference": self.reference.state_dict()}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Restore the base checkpoint and the reference network."""
        super().restore(state)
        self.reference.load_state_dict(state["reference"])
