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
   rollouts). With ``rollout="tree"`` (CoMLRL's) each joint sample of turn t branches into
   G at turn t + 1 (B * G^T envs, a node's completions sampled once for the envs under it),
   a node's return is its reward + gamma times the mean of its children's, and its group is
   its G siblings (:meth:`~TextPolicyGradientLearner.group_advantages`). A rollout that
   ended early (the team reached ``stop_threshold``) is an absorbing state: its last reward
   counts again at every turn left, in its G_t and in later groups (with those turns'
   rewards 0, a team that stayed just below the threshold out-earned one that reached it).
3. :meth:`~TextPolicyGradientLearner.compute_advantages`: (B, G, n) returns of one turn
   -> (B, G, n) advantages. **The one method a learner overrides.**
4. :meth:`~TextPolicyGradientLearner.optimize`: ``update_epochs`` passes of
   ``num_minibatches`` Adam steps on :func:`~algorithms.text.losses.text_policy_loss`
   (every token of a completion gets its completion's advantage), gradients accumulated
   over forward passes of ``micro_batch_size`` sequences and clipped per agent. With one pass
   and one minibatch, pi_old is the current policy detached (ratio 1: REINFORCE's
   gradient); otherwise pi_old is scored once, before the first step.

**Past one GPU** (:mod:`algorithms.core.data_parallel`): under ``torchrun`` each process
plays its share of the groups (group b on rank ``b % world_size``, its env sized to that
share: :func:`rank_num_envs`), the ranks exchange what they played so each holds the whole
batch in one process's order, each runs the forward and backward passes of its share of a
minibatch's rows, and the adapters' gradients are summed over the ranks before clipping and
the step: the same seed gives the same update on 1 or N processes (within floating-point
noise).

**Metrics** (one dict per update, a line of ``metrics.jsonl`` with ``step``, ``episodes``
and ``time`` as :mod:`algorithms.core.metrics` writes them): ``rewards/joint/mean``
and ``rewards/{part}/mean`` for each part of the protocol (e.g. ``correct``,
``format``), ``rewards/contribution/{agent}`` and ``rewards/shapley/{agent}`` (where the
env reports Shapley values: ``credit="shapley"``), ``returns/mean``, ``adv/abs_mean``,
``losses/{policy,kl,clip_frac,clip_frac_low,clip_frac_high}`` (each the mean over the
update's optimizer steps; ``policy`` aggregated as the loss, the others means over tokens
whatever the aggregation, as TRL logs them: :func:`~algorithms.text.losses.text_policy_loss`),
``losses/grad_norm`` (each agent's gradient norm
before clipping, one per set of weights, mean over those with a gradient and the
optimizer steps; with float16 weights also ``losses/loss_scale``, the loss scale after the
update, and ``losses/skipped_steps``, its steps skipped for an overflowed gradient:
:func:`~algorithms.core.optimizers.loss_scaler`), ``losses/entropy`` (the policy's mean entropy in nats at the completion
tokens of the loss's passes: every pass of the update, every trainable agent; a collapse
towards 0 is the usual sign of a policy that stopped exploring), ``tokens/{agent}`` (mean completion length),
``truncated/{agent}`` (the share of its completions cut at the token budget),
``charts/{update,seconds}`` and, measured in this process:

- ``perf/generated_tokens_per_s``: tokens the policy decoded per second of decoding,
  over the decoding since the last update's metrics (a held-out evaluation's included;
  absent when rollout workers or CTranslate2 sample, which this process does not time;
  ``--decoding compiled`` builds each shape in its first calls, timed apart as
  ``perf/compile_s``, logged by the updates that built one);
- ``perf/trained_tokens_per_s``: tokens (prompts and completions) through the loss's
  forward and backward passes per second of them;
- ``perf/mfu``: model FLOPs utilization of those passes, an estimate: k N tokens / seconds
  / the device's peak FLOPS (:attr:`agents.TrainableLM.train_flops_per_token`: k = 4 with
  LoRA, 6 for full fine-tuning; peak from :data:`agents.devices.PEAK_FLOPS`); absent on
  the CPU, on GPUs not in the table and in float32;
- ``perf/peak_memory_gb``: on CUDA the most memory tensors held during the update
  (``torch.cuda.max_memory_allocated``); on the CPU the process's peak resident set size
  so far (``getrusage``), which includes everything the process ever held.

**In a tree** (``rollout="tree"``) a node of turn t is played in the G^(T-1-t) envs under
it: ``rewards/*`` read its reward in each, which weighs every turn alike (the mean over
the turns of each turn's mean over its nodes: CoMLRL's per-turn ``batch_mean_reward``,
averaged); ``tokens/*``, ``truncated/*``, ``adv/abs_mean`` and the ``perf/*`` token rates
count each completion once (B (G + ... + G^T) per agent, so the last turn's weigh most);
``returns/mean`` is the mean return of the nodes of turn 0; ``episodes`` counts leaves
(B G^T an update, where the parallel rollouts play B G).

**Cut completions.** A completion cut at ``max_new_tokens`` is played as the env's
``text_if_cut`` info says (:func:`agents.text_policy.played_text`, as
:class:`agents.TextPolicy` plays it in evaluation): the math protocol under strict
scoring makes it its neutral text, so a cut completion is no answer and earns nothing,
in training as in evaluation; its tokens are still trained on, with that reward, unless
``mask_truncated_completions`` leaves them out of the loss (they still count in their
group's baseline, as in TRL).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm.auto import tqdm

from agents.devices import (
    dtype_name,
    peak_flops,
    peak_memory_gb,
    reset_peak_memory,
    resolve,
    synchronize,
)
from agents.file_modes import with_umask_modes_below
from agents.progress import reporting
from agents.seeding import derive_seed
from agents.text_policy import TextPolicy, played_text
from agents.trainable_lm import Completion, Meter, TrainableLM
from algorithms.core import data_parallel
from algorithms.core.learner import GroupPolicyGradient
from algorithms.core.optimizers import MasterWeights, adam, loss_scaler, without_masters
from algorithms.core.run import padded_batches
from algorithms.text.config import TextLearnerConfig
from algorithms.text.losses import (
    cross_returns,
    discounted_returns,
    text_policy_loss,
    token_weights,
)
from deliberation_env.text.config import SHAPLEY_MAX_AGENTS, config_record


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


def sampling_extras(config: TextLearnerConfig) -> dict[str, Any]:
    """The sampling settings a sampler is given only where they are not their defaults
    (``top_k``, ``min_p``, ``repetition_penalty``): a sampler of one's own without them
    samples every run that leaves them out."""
    defaults = {field.name: field.default for field in dataclasses.fields(TextLearnerConfig)}
    extras = ("top_k", "min_p", "repetition_penalty")
    return {name: getattr(config, name) for name in extras if getattr(config, name) != defaults[name]}


def write_adapters(lm: TrainableLM | Any, folder: Path) -> None:
    """``lm.save_adapters`` into ``folder``, whole or not at all: written beside it, then
    put in its place (a run killed while writing keeps the adapters of the checkpoint
    before: in ``folder``, or, killed between the two renames, beside it, where the next
    write puts them back first)."""
    staged, old = folder.with_name(f".{folder.name}-writing"), folder.with_name(f".{folder.name}-old")
    if old.exists() and not folder.exists():  # killed between the two renames: the last whole copy is back
        old.rename(folder)
    for leftover in (staged, old):
        shutil.rmtree(leftover, ignore_errors=True)
    lm.save_adapters(staged)
    with_umask_modes_below(staged)
    if folder.exists():
        folder.rename(old)
    staged.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


PER_AGENT = frozenset({"contribution", "shapley"})
"""The env's reward components that are each agent's own (logged per agent, not averaged)."""

HALF_FULL = (
    "finetune='full' in float16 has no float32 weights to step (loss scaling unscales float32 gradients only, as "
    "torch.amp and transformers' fp16=True do): use dtype bfloat16 or float32, or LoRA (its adapters stay float32)"
)


def rank_num_envs(config: TextLearnerConfig, ranks: data_parallel.Ranks) -> int:
    """The envs one process plays: ``config.num_envs``, or under ``torchrun`` those of its
    share of the update's groups (:mod:`algorithms.core.data_parallel`).

    Raises:
        ValueError: If some rank would have no group to play.
    """
    if config.groups_per_update < ranks.world_size:
        raise ValueError(
            f"groups_per_update={config.groups_per_update} leaves some of the {ranks.world_size} processes "
            "no group to play: raise it to at least the number of processes, or start fewer"
        )
    return config.num_envs // config.groups_per_update * len(ranks.share(config.groups_per_update))


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
        values: The values whose means are the metrics: the reward parts
            (``rewards/...``), completion lengths (``tokens/...``) and cuts (``truncated/...``).
        finals: Per reward part (not ``contribution``), its value at each env's last turn.
        completions: (3, E) per env, the trainable agents' completions: how many, how many
            of them were cut at the token budget, and their tokens.
    """

    rewards: np.ndarray
    samples: list[Sample]
    values: dict[str, list[float]]
    finals: dict[str, list[float]]
    completions: np.ndarray

    @property
    def metrics(self) -> dict[str, float]:
        """The mean of each of :attr:`values`."""
        return {name: float(np.mean(values)) for name, values in self.values.items()}


@dataclass
class Rollouts:
    """One batch of group rollouts.

    Attributes:
        samples: The trainable agents' completions.
        rewards: (T, B, G, n) each agent's reward per turn (after an early stop, its last
            again: the module docstring).
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
    _loss_seconds: float = 0.0  # (per instance once set) in the loss's passes since the last update's metrics

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
        self.ranks = data_parallel.current()
        needed = rank_num_envs(config, self.ranks)
        if venv.num_envs != needed:
            share = f", rank {self.ranks.rank}'s share of {self.ranks.world_size}" if self.ranks.world_size > 1 else ""
            raise ValueError(
                f"the text vector env has num_envs={venv.num_envs}, the config needs {needed} "
                f"({config.pairing} pairing{share}): build it with de.text_vector_env({needed}, ...)"
            )
        if venv.n_agents != config.env.n_agents or venv.episode_length != config.env.max_turns:
            raise ValueError(
                f"the env has n_agents={venv.n_agents}, max_turns={venv.episode_length}; the config says "
                f"{config.env.n_agents}, {config.env.max_turns}"
            )
        policies = getattr(lm, "members", {None: lm}).values()  # a TrainableTeam's, or the one
        if config.kl_coef > 0 and any(getattr(p, "finetune", "lora") == "full" and not getattr(p, "keep_reference", True) for p in policies):
            raise ValueError(
                f"kl_coef={config.kl_coef} scores the reference policy, which this TrainableLM keeps on the CPU "
                "(finetune='full', keep_reference=False): build it with keep_reference=True, or set kl_coef=0"
            )
        self.config, self.lm, self.venv, self.frozen = config, lm, venv, frozen
        self.trainable = [a for a in self.agents if a in lm.agents]
        parameters = self._parameters(self.trainable)
        if any(p.dtype == torch.float16 for p in parameters):
            raise ValueError(HALF_FULL)
        half = any(p.dtype == torch.bfloat16 for p in parameters)  # full fine-tuning in bfloat16
        if half and config.master_weights:
            self.optimizer = MasterWeights(parameters, lambda masters: adam(masters, config))
        else:
            self.optimizer = adam(parameters, config)
        if half and not config.master_weights:
            warnings.warn(
                "finetune='full' in bfloat16 without master weights: Adam steps the bfloat16 weights themselves, so a "
                "step smaller than half the weight's rounding step is lost (at a learning rate of 1e-5, most of them); "
                "leave master_weights on (--master-weights, the default), or train LoRA adapters",
                stacklevel=2,
            )
        self.scaler = loss_scaler(lm)
        self.rng = np.random.default_rng(config.seed)
        self.update = 0
        self.sampler = lm if sampler is None else sampler
        self._weights_version = 0  # bumped whenever lm's weights change: what sampler syncs to

    @property
    def episodes(self) -> int:
        """Training episodes played so far, by every process together."""
        return self.update * self.config.num_envs

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
        """:meth:`compute_advantages` of every turn's returns, (T, B, G, n).

        In a tree (``config.rollout``) the returns are the leaves' (T, B, G^T, n): a node of
        turn t has the mean return of the G^(T-1-t) leaves under it, which is CoMLRL's
        recursion R_node = r_t + gamma * mean over its children of R_child, and its group is
        its G siblings; every leaf under a node gets the node's advantage."""
        if self.config.rollout != "tree":
            return torch.stack([self.compute_advantages(turn_returns) for turn_returns in returns])
        group, turns = self.config.group_size, returns.shape[0]
        advantages = []
        for turn, leaves in enumerate(returns):
            problems, width, n = leaves.shape
            under = group ** (turns - 1 - turn)
            nodes = leaves.reshape(problems, width // under, under, n).mean(dim=2)
            siblings = self.compute_advantages(nodes.reshape(-1, group, n))
            advantages.append(siblings.reshape(problems, -1, n).repeat_interleave(under, dim=1))
        return torch.stack(advantages)

    def sample_advantages(self, batch: Rollouts, advantages: torch.Tensor) -> torch.Tensor:
        """Every completion gets the advantage of its turn, group, member and agent."""
        return torch.tensor([advantages[s.turn, s.group, s.member, s.agent_index].item() for s in batch.samples])

    def update_metrics(
        self, returns: torch.Tensor, advantages: torch.Tensor, samples: torch.Tensor, seconds: float
    ) -> dict[str, float]:
        """``returns/mean`` (first turn), ``adv/abs_mean`` over the completions,
        ``charts/{update,seconds}``, ``losses/entropy`` and the ``perf/*`` metrics (the
        module docstring)."""
        meter = self.lm.read_meter()
        total, tokens = meter.entropy_total()
        entropy = data_parallel.sum_over_ranks({"sum": total, "tokens": float(tokens)})
        return {
            "returns/mean": returns[0].mean().item(),
            "adv/abs_mean": samples.abs().mean().item(),
            "charts/update": float(self.update),
            "charts/seconds": seconds,
            **({"losses/entropy": entropy["sum"] / entropy["tokens"]} if entropy["tokens"] else {}),
            **self._perf_metrics(meter),
        }

    def _perf_metrics(self, meter: Meter) -> dict[str, float]:
        """The ``perf/*`` metrics of ``meter`` (read since the last update's; the module
        docstring); starts the next window."""
        seconds = self._loss_seconds
        device = self.lm.device
        metrics = {"perf/peak_memory_gb": peak_memory_gb(device)}
        reset_peak_memory(device)
        self._loss_seconds = 0.0
        if meter.generation_seconds > 0:
            metrics["perf/generated_tokens_per_s"] = meter.generated_tokens / meter.generation_seconds
        if meter.compile_seconds > 0:
            metrics["perf/compile_s"] = meter.compile_seconds
        if seconds > 0:
            metrics["perf/trained_tokens_per_s"] = meter.trained_tokens / seconds
            peak = peak_flops(device, self.lm.dtype)
            if peak is not None:
                metrics["perf/mfu"] = meter.trained_flops / seconds / peak
        return metrics

    @torch.no_grad()
    def collect(self) -> Rollouts:
        """Play B problems as groups (see the module docstring)."""
        config, venv = self.config, self.venv
        if self.sampler is not self.lm:
            self.sampler.sync(self.lm.state_dict(), self._weights_version)
        per_group = config.num_envs // config.groups_per_update
        problems = self.rng.integers(config.problem_pool or len(venv.problems), size=config.groups_per_update)
        episode_seeds = self.rng.integers(2**62, size=config.num_envs)
        groups = self.ranks.share(config.groups_per_update)  # all of them in one process
        envs = [b * per_group + k for b in groups for k in range(per_group)]
        play = self._play(
            venv, np.repeat(problems[groups], per_group), episode_seeds[envs], config.temperature, config.pairing, config.rollout
        )
        if self.ranks.world_size > 1:
            play = self._gathered(play, groups, envs)
        rollouts = Rollouts(play.samples, self._group_rewards(play.rewards), play.metrics)
        if self.completions_dir is not None and config.log_completions:
            self._log_completions(rollouts)
        return rollouts

    completions_dir: Path | None = None
    """Where each update writes ``config.log_completions`` of its completions
    (``update-NNNNNN.jsonl``; :func:`algorithms.text.train` sets it to the run folder's
    ``completions/`` on the process that writes); None: nowhere."""

    def _log_completions(self, rollouts: Rollouts) -> None:
        """The first ``config.log_completions`` completions of this update, whole rollouts
        first (group, member, then turn and agent: the first 2 x turns of a pair are one
        episode, read as it was played; a tree's read depth first, each node before the
        nodes under it), one JSON line each (:attr:`completions_dir`). A tree's records
        also carry ``branch``: the sample taken at each turn down to this one
        (:meth:`branch_of`; siblings share all but its last entry)."""
        lines = []
        episodes = sorted(rollouts.samples, key=lambda s: (s.group, s.member, s.turn, s.agent_index))
        for sample in episodes[: self.config.log_completions]:
            completion = sample.completion
            reward = rollouts.rewards[sample.turn, sample.group, sample.member, sample.agent_index]
            record = {
                "update": self.update + 1, "agent": sample.agent, "turn": sample.turn, "group": sample.group,
                "member": sample.member, "prompt": self.lm.tokenizer_of(sample.agent).decode(list(completion.prompt_ids)),
                "completion": completion.text, "finish_reason": completion.finish_reason,
                "tokens": len(completion.token_ids), "reward": float(reward),
            }  # fmt: skip
            if self.config.rollout == "tree":
                record["branch"] = self.branch_of(sample.member, sample.turn)
            lines.append(json.dumps(record, ensure_ascii=False))
        path = Path(self.completions_dir) / f"update-{self.update + 1:06d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    def branch_of(self, member: int, turn: int) -> list[int]:
        """The path from a tree's root to the node of ``turn`` read at leaf column ``member``
        (:meth:`_nodes`): the index, among its G siblings, of the joint sample taken at each
        turn 0, ..., ``turn``. Siblings share all but the last entry, a node's parent is its
        path without the last, and the G^(T-1-t) leaves under a node of turn t all read it."""
        group, turns = self.config.group_size, self.config.env.max_turns
        return [member // group ** (turns - 1 - t) % group for t in range(turn + 1)]

    def _gathered(self, play: Play, groups: list[int], envs: list[int]) -> Play:
        """Every rank's play of its ``groups`` (its ``envs`` of the update) as one play of
        them all, in the order one process plays them (so every rank holds the same batch)."""
        rewards = np.zeros((play.rewards.shape[0], self.config.num_envs, play.rewards.shape[2]))
        samples: list[Sample] = []
        values: dict[str, list[float]] = {}
        for own_groups, own_envs, part in data_parallel.all_gather_objects((groups, envs, play)):
            rewards[:, own_envs] = part.rewards
            samples.extend(dataclasses.replace(s, group=own_groups[s.group]) for s in part.samples)
            for name, own_values in part.values.items():
                values.setdefault(name, []).extend(own_values)
        samples.sort(key=lambda s: (s.turn, s.agent_index, s.group, s.member))  # _play's order
        return Play(rewards, samples, values, {}, np.zeros((3, self.config.num_envs)))

    def _group_rewards(self, rewards: np.ndarray) -> torch.Tensor:
        """(T, E, n) per-env rewards -> (T, B, W, n) per-sample rewards (W = G, or G^T for
        a tree: one column per leaf)."""
        config = self.config
        turns, n = rewards.shape[0], len(self.agents)
        table = torch.as_tensor(rewards, dtype=torch.float32)
        if config.pairing == "cross":
            credited = table.reshape(turns * config.groups_per_update, -1, n)  # each agent's own column
            return cross_returns(credited, n).reshape(turns, config.groups_per_update, config.group_size, n)
        return table.reshape(turns, config.groups_per_update, -1, n)

    def _nodes(self, num_envs: int, pairing: str, rollout: str, turn: int) -> list[tuple[int, int]]:
        """The distinct samples of a turn, as (member m, env e): m = b * W + w names the
        sample's group b and its column w (:meth:`_group_rewards`), e is the env whose
        prompt and seed its completions use: every env (aligned), the group's env where
        every agent plays sample g (cross), or the first env under each node of the turn
        (tree: the G^(T-1-t) envs under a node of turn t share its history)."""
        if pairing == "aligned":
            if rollout == "tree":
                under = self.config.group_size ** (self.config.env.max_turns - 1 - turn)
                return [(e, e) for e in range(0, num_envs, under)]
            return [(e, e) for e in range(num_envs)]
        group, n = self.config.group_size, len(self.agents)
        diagonal = sum(group**k for k in range(n))  # combination (g, ..., g) in base G is g * diagonal
        per_group = group**n
        return [
            (b * group + g, b * per_group + g * diagonal) for b in range(num_envs // per_group) for g in range(group)
        ]

    def _text_of(
        self, by_member: Mapping[int, str], env: int, agent_index: int, pairing: str, rollout: str, turn: int
    ) -> str:
        """The text agent ``agent_index`` plays in ``env`` ("" where the env has ended)."""
        if pairing == "aligned":
            if rollout == "tree":
                under = self.config.group_size ** (self.config.env.max_turns - 1 - turn)
                return by_member.get(env - env % under, "")
            return by_member.get(env, "")
        group, n = self.config.group_size, len(self.agents)
        per_group = group**n
        digit = (env % per_group // group ** (n - 1 - agent_index)) % group  # agent 0 most significant
        return by_member.get(env // per_group * group + digit, "")

    def _play(
        self,
        venv: Any,
        problems: np.ndarray,
        episode_seeds: np.ndarray,
        temperature: float,
        pairing: str,
        rollout: str = "parallel",
    ) -> Play:
        """Play one episode per env of ``venv`` to its end, every agent's turn batched
        (each distinct sample once: :meth:`_nodes`)."""
        config, n = self.config, len(self.agents)
        obs, infos = venv.reset(options={"problem_index": problems.tolist(), "episode_seed": episode_seeds.tolist()})
        rewards = np.zeros((venv.episode_length, venv.num_envs, n))
        samples: list[Sample] = []
        parts: dict[str, list[float]] = {}
        lengths: dict[str, list[int]] = {agent: [] for agent in self.trainable}
        cut: dict[str, list[bool]] = {agent: [] for agent in self.trainable}
        counts = np.zeros((3, venv.num_envs))
        group = self.config.group_size
        width = group ** self.config.env.max_turns if rollout == "tree" else group  # a group's columns
        last_turn = np.zeros(venv.num_envs, dtype=int)  # each env's last turn played
        for turn in range(venv.episode_length):
            active = venv.active
            if not active.any():
                break
            last_turn[active] = turn
            live = [(m, e) for m, e in self._nodes(venv.num_envs, pairing, rollout, turn) if active[e]]
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
                **sampling_extras(config),
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
                        Sample(agent, i, turn, m // width, m % width, c) for (m, _), c in zip(live, completions, strict=True)
                    )
                    lengths[agent].extend(len(c.token_ids) for c in completions)
                    cut[agent].extend(c.finish_reason == "length" for c in completions)
                    for (_, e), c in zip(live, completions, strict=True):
                        counts[:, e] += (1, c.finish_reason == "length", len(c.token_ids))
                by_member = dict(zip((m for m, _ in live), written, strict=True))
                texts[agent] = [self._text_of(by_member, e, i, pairing, rollout, turn) for e in range(venv.num_envs)]
            obs, step_rewards, _, _, infos = venv.step(texts)
            for e in np.flatnonzero(active):
                for i, agent in enumerate(self.agents):
                    components = infos[e][agent]["reward_components"]
                    rewards[turn, e, i] = self._credit(step_rewards[agent][e], components)
                    for name, value in components.items():
                        parts.setdefault(f"{name}/{agent}" if name in PER_AGENT else f"{name}/mean", []).append(value)
        for e in np.flatnonzero(last_turn < venv.episode_length - 1):
            rewards[last_turn[e] + 1 :, e] = rewards[last_turn[e], e]  # an early stop is absorbing (module docstring)
        finals = {
            name: [infos[e][self.agents[0]]["reward_components"][name] for e in range(venv.num_envs)]
            for name in infos[0][self.agents[0]]["reward_components"]
            if name not in PER_AGENT
        }
        values = {
            **{f"rewards/{key}": values for key, values in parts.items()},
            **{f"tokens/{agent}": values for agent, values in lengths.items() if values},
            **{f"truncated/{agent}": values for agent, values in cut.items() if values},
        }
        return Play(rewards, samples, values, finals, counts)

    def _credit(self, reward: float, components: Mapping[str, float]) -> float:
        """An agent's reward of a turn: the env's (joint) reward, or its scaled contribution
        (leave-one-out or Shapley, ``config.credit``).

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
        if self.config.credit == "joint":
            return float(reward)
        if self.config.credit not in components:
            raise ValueError(
                f"credit={self.config.credit!r}: the env reports no {self.config.credit!r} reward component: build it "
                f"with shapley=True (de.text_vector_env(..., shapley=True), teams of at most {SHAPLEY_MAX_AGENTS} agents)"
            )
        return scale * components[self.config.credit]

    # ------------------------------------------------------------------ optimization
    def optimize(self, batch: Rollouts, advantages: torch.Tensor) -> dict[str, float]:
        """``update_epochs`` x ``num_minibatches`` Adam steps (see the module docstring)."""
        config, samples = self.config, batch.samples
        if not samples:
            return {}
        reuse = config.update_epochs * config.num_minibatches > 1
        old = self._score_shared(samples, reference=False) if reuse else None
        reference = self._score_shared(samples, reference=True) if config.kl_coef > 0 else None
        lengths = torch.tensor([len(s.completion.token_ids) for s in samples])
        kept = (
            torch.tensor([s.completion.finish_reason != "length" for s in samples])
            if config.mask_truncated_completions
            else None
        )
        totals: dict[str, float] = {}  # each statistic's mean over the update's optimizer steps
        minibatches = min(config.num_minibatches, len(samples))  # none empty: fewer samples than minibatches
        steps = config.update_epochs * minibatches
        norms: list[float] = []
        skipped = 0  # optimizer steps float16's loss scaling skipped (a gradient overflowed)
        for _ in range(config.update_epochs):
            order = self.rng.permutation(len(samples))
            for minibatch in np.array_split(order, minibatches):
                weights = torch.stack(  # the loss's, and the token mean's for the statistics
                    [token_weights(lengths[minibatch], config.aggregation, config.max_new_tokens,
                                   kept[minibatch] if kept is not None else None),
                     token_weights(lengths[minibatch], "token")], dim=1,
                )  # fmt: skip
                self.optimizer.zero_grad()
                mine = self.ranks.share(len(minibatch))  # the whole minibatch in one process
                for rows, chunk_weights in self._chunks(samples, minibatch[mine], weights[mine]):
                    stats = self._backward(samples, rows, chunk_weights, advantages, old, reference)
                    for name, value in stats.items():
                        totals[name] = totals.get(name, 0.0) + value / steps
                data_parallel.all_reduce_gradients(self._parameters(self.trainable))
                self.scaler.unscale_(self.optimizer)  # float16's loss scale off before the clip (else nothing)
                clipped: set[int] = set()  # full fine-tuning of a shared model: every agent's weights are one set
                for agent in self.trainable:
                    parameters = [p for p in self.lm.parameters(agent) if id(p) not in clipped]
                    clipped.update(map(id, parameters))
                    norm = torch.nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
                    if any(p.grad is not None for p in parameters) and torch.isfinite(norm):  # no rows, no gradient
                        norms.append(float(norm))  # before clipping; the same on every rank
                scale = self.scaler.get_scale()
                self.scaler.step(self.optimizer)  # no step where float16 overflowed (an inf or nan gradient)
                self.scaler.update()
                skipped += self.scaler.get_scale() < scale  # overflowed: the scale halved
                self._weights_version += 1
        losses = {f"losses/{name}": value for name, value in data_parallel.sum_over_ranks(totals).items()}
        if self.scaler.is_enabled():
            losses.update({"losses/loss_scale": self.scaler.get_scale(), "losses/skipped_steps": float(skipped)})
        return {**losses, **({"losses/grad_norm": float(np.mean(norms))} if norms else {})}

    def _chunks(self, samples: Sequence[Sample], minibatch: np.ndarray, weights: torch.Tensor):
        """The minibatch's rows per agent, ``micro_batch_size`` at a time, with their weights
        (the minibatch's, (rows, 2): the loss's and the statistics'; the micro-batches'
        gradients add up to the minibatch's)."""
        for agent in self.trainable:
            picked = [k for k, row in enumerate(minibatch) if samples[row].agent == agent]
            for start in range(0, len(picked), self.config.micro_batch_size):
                block = picked[start : start + self.config.micro_batch_size]
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
        """Accumulate the gradient of one forward pass of one agent's rows (timed for ``perf/*``)."""
        started = time.perf_counter()
        agent = samples[rows[0]].agent
        logp, mask = self.lm.logprobs(
            agent,
            [samples[r].completion.prompt_ids for r in rows],
            [samples[r].completion.token_ids for r in rows],
            temperature=self.config.temperature,
        )
        loss, stats = self.policy_loss(
            logp,
            _padded([old[r] for r in rows], logp) if old is not None else logp.detach(),
            _padded([reference[r] for r in rows], logp) if reference is not None else None,
            advantages[rows].to(logp.device),  # the batch's tensors live on the CPU, the policy's on its device
            mask,
            weights[:, 0].to(logp.device),
            weights[:, 1].to(logp.device),
        )
        self.scaler.scale(loss).backward()
        synchronize(self.lm.device)
        self._loss_seconds += time.perf_counter() - started
        return {name: value.item() for name, value in stats.items()}

    def policy_loss(
        self,
        logp: torch.Tensor,
        old_logp: torch.Tensor,
        ref_logp: torch.Tensor | None,
        advantages: torch.Tensor,
        mask: torch.Tensor,
        weights: torch.Tensor,
        stat_weights: torch.Tensor,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The loss of one forward pass of one agent's rows, and its statistics: the method a
        learner overrides to change the loss itself (the clip, the KL, the ratio), as
        :meth:`compute_advantages` changes the advantage. The default is
        :func:`~algorithms.text.losses.text_policy_loss` with the config's ``clip_eps``,
        ``kl_coef``, ``clip_eps_high`` and ``importance_sampling``.

        Args:
            logp: (N, T) the completion tokens' log-probabilities under the policy (with grad).
            old_logp: (N, T) under the policy that sampled them (``logp`` detached in one pass).
            ref_logp: (N, T) under the reference (the base), or None without a KL (``kl_coef`` 0).
            advantages: (N,) each completion's advantage.
            mask: (N, T) 1 at a completion's tokens, 0 at padding.
            weights: (N,) the weight of each completion's tokens in the minibatch's loss
                (:func:`~algorithms.text.losses.token_weights` of ``aggregation``; 0 for a
                completion ``mask_truncated_completions`` leaves out): the loss is
                sum_i w_i sum_t m_it l_it, which adds up over the micro-batches.
            stat_weights: (N,) the token mean's weights, for the statistics.

        Returns:
            The loss to back-propagate (its gradients add up over the micro-batches), and
            statistics (0-d tensors, token means by ``stat_weights``), each logged as
            ``losses/<name>``, the mean over the update's optimizer steps.
        """
        config = self.config
        return text_policy_loss(
            logp, old_logp, ref_logp, advantages, mask, weights, config.clip_eps, config.kl_coef,
            config.clip_eps_high, config.importance_sampling, stat_weights=stat_weights,
        )  # fmt: skip

    def _score_shared(self, samples: Sequence[Sample], reference: bool) -> list[torch.Tensor]:
        """:meth:`_score_all` of ``samples``, each rank scoring its share of them (on the CPU
        when several ranks exchange them)."""
        if self.ranks.world_size == 1:
            return self._score_all(samples, reference)
        mine = self.ranks.share(len(samples))
        scored = [logp.cpu() for logp in self._score_all([samples[r] for r in mine], reference)]
        everyone: list[torch.Tensor] = [torch.empty(0)] * len(samples)
        for rank, part in enumerate(data_parallel.all_gather_objects(scored)):
            for r, logp in zip(range(rank, len(samples), self.ranks.world_size), part, strict=True):
                everyone[r] = logp
        return everyone

    @torch.no_grad()
    def _score_all(self, samples: Sequence[Sample], reference: bool) -> list[torch.Tensor]:
        """Per sample, its tokens' log-probabilities under the current (or reference) policy."""
        scored: list[torch.Tensor | None] = [None] * len(samples)
        for agent in self.trainable:
            rows = [k for k, s in enumerate(samples) if s.agent == agent]
            for start in range(0, len(rows), self.config.micro_batch_size):
                block = rows[start : start + self.config.micro_batch_size]
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
    adapters_dir: Path | None = None
    """Where :meth:`save` also writes the LoRA adapters (peft format) beside each checkpoint,
    so a run's latest adapters load with plain peft while it runs or after it stopped
    (:func:`algorithms.text.train` sets it to the run folder's ``adapters/``); None: not."""

    def save(self, path: str | Path) -> None:
        """Write the checkpoint (:meth:`Learner.save <algorithms.core.learner.Learner.save>`),
        then, with LoRA and :attr:`adapters_dir`, the adapters (:func:`write_adapters`)."""
        super().save(path)
        if self.adapters_dir is not None and self.config.finetune == "lora":
            write_adapters(self.lm, self.adapters_dir)

    def state_dict(self) -> dict[str, Any]:
        """Everything a resumed run needs to continue exactly: weights, Adam state, RNG, counter."""
        return {
            "algo": self.name,
            "config": self.settings(self.config),
            "weights": self.lm.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "loss_scaler": self.scaler.state_dict(),  # {} but in float16
            "rng": self.rng.bit_generator.state,
            "update": self.update,
        }

    def settings(self, config: TextLearnerConfig) -> dict[str, Any]:
        """The config's fields that a resumed run must share, recorded flat
        (:func:`~deliberation_env.text.config.config_record`; a protocol instance by its
        name); its run fields (``RUN_FIELDS``: the run part, where the rollouts are sampled
        and the loss computed) may change, but for the dtype the weights train in: ``dtype``
        records the one ``config.dtype`` gives on ``config.device`` here (``auto`` resolved),
        so a run moves from a CPU to a GPU only in the dtype it was trained in."""
        settings = {k: v for k, v in config_record(config).items() if k not in config.RUN_FIELDS}
        return {**settings, "dtype": dtype_name(resolve(config.device, config.dtype)[1])}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """:meth:`Learner.load_state_dict <algorithms.core.learner.Learner.load_state_dict>`;
        a checkpoint written before float16's loss scaling (no ``loss_scaler``) resumes with
        a new scaler's state."""
        super().load_state_dict({"loss_scaler": self.scaler.state_dict(), **state})

    def restore(self, state: Mapping[str, Any]) -> None:
        """Set weights, Adam state, RNG and counter to a checked ``state``."""
        self.lm.load_state_dict(state["weights"])
        self._weights_version += 1
        optimizer = state["optimizer"]
        if not isinstance(self.optimizer, MasterWeights):  # a run that kept master weights, now without
            optimizer = {**optimizer, "state": without_masters(optimizer["state"])}
        self.optimizer.load_state_dict(optimizer)
        if state.get("loss_scaler"):  # a float16 run's; older checkpoints have none
            self.scaler.load_state_dict(state["loss_scaler"])
        self.rng.bit_generator.state = state["rng"]
        self.update = state["update"]
        if self.completions_dir is not None:  # a resumed run's logged future, made again from here
            for path in Path(self.completions_dir).glob("update-*.jsonl"):
                if int(path.stem.removeprefix("update-")) > self.update:
                    path.unlink()

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def play_held_out(
        self, venv: Any, problem_indices: Sequence[int], seed: int = 0, progress: bool = True
    ) -> tuple[dict[str, list[float]], np.ndarray]:
        """Greedy play (temperature 0 for the trainable agents) of ``problem_indices``, once
        each: what :func:`algorithms.text.evaluate` (the family's evaluation) aggregates.

        Args:
            venv: A text vector env with this learner's agents (e.g. the test split);
                problems are played ``venv.num_envs`` at a time (under ``torchrun``, the
                ranks share these batches; every rank returns the same play).
            problem_indices: The problems to play, once each.
            seed: Seeds the episode seeds (they matter to sampling frozen agents only).
            progress: Show, on stderr, a bar of the problems played and, below it, the
                completions done of each batched sampling call (:mod:`agents.progress`);
                under ``torchrun``, on rank 0 only.

        Returns:
            Each reward part of the last turn (and ``joint``), one value per problem in the
            order of ``problem_indices``; and ``[completions, cut, tokens]`` of the trainable
            agents' completions (how many, how many cut at the token budget, their tokens).
        """
        if getattr(venv, "stop_threshold", None) is not None:
            raise ValueError(
                f"held-out episodes play every turn, but this env stops at a joint reward of {venv.stop_threshold}: "
                "an early stop tells the team its answer was right (a team naming a new candidate each turn scores "
                "1.0); build the held-out env with stop_threshold=None"
            )
        rng = np.random.default_rng(seed)
        batches = list(padded_batches(problem_indices, venv.num_envs))
        seeds = [rng.integers(2**62, size=venv.num_envs) for _ in batches]
        mine = self.ranks.share(len(batches))  # every batch in one process
        progress = progress and self.ranks.writes
        played = []  # (batch, finals, counts) of the batches this rank plays
        bar = tqdm(total=sum(batches[k][1] for k in mine), desc="held-out eval", unit="problem", leave=False, disable=not progress)
        with bar, reporting(progress):
            for k in mine:
                _, n_real, padded = batches[k]
                play = self._play(venv, np.array(padded), seeds[k], 0.0, "aligned")
                own = {name: values[:n_real] for name, values in play.finals.items()}
                played.append((k, own, play.completions[:, :n_real].sum(axis=1)))
                bar.update(n_real)
        finals: dict[str, list[float]] = {}
        counts = np.zeros(3)  # the trainable agents' completions, those cut, their tokens
        for _, own, own_counts in sorted(itertools.chain(*data_parallel.all_gather_objects(played)), key=lambda item: item[0]):
            for name, values in own.items():
                finals.setdefault(name, []).extend(values)
            counts += own_counts
        return finals, counts


def _padded(rows: Sequence[torch.Tensor], like: torch.Tensor) -> torch.Tensor:
    """Per-sequence token values padded with 0 to ``like``'s (N, T) shape."""
    out = torch.zeros_like(like)
    for k, row in enumerate(rows):
        out[k, : len(row)] = row
    return out
