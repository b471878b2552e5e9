"""SFT: behaviour cloning of a privileged teacher's actions (the MPDF paper's stage 1).

The teacher is any :class:`~algorithms.meta.policy.Policy`, normally the oracle of
:mod:`algorithms.meta.baselines`, which reads correctness from ``infos``. Episodes are played
by the learner's own sampling policy and every visited state is labelled with the
teacher's action (DAgger, https://arxiv.org/abs/1011.0686), so the clone learns to
recover from its own mistakes. The loss is the cross-entropy to the teacher's action:

.. math::

    L = -\\operatorname{mean}_{(o, a^*)} \\log \\pi_\\theta(a^* | o).

The network only sees observations; the privileged information stays in the labels.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from algorithms.meta.base import ACTION_NAMES, MetaLearner
from algorithms.meta.config import SFTConfig
from algorithms.meta.network import NUM_ACTIONS, MetaPolicyNetwork
from algorithms.meta.policy import Policy


class SFT(MetaLearner):
    """Clone ``teacher``'s actions on the states the learner visits.

    Args:
        config: An :class:`SFTConfig`.
        venv: A ``de.vector_env`` with ``num_envs == config.episodes_per_update``.
        teacher: The policy to imitate (it may read ``infos``).
        warm_start: A network to start from, else a fresh one.
    """

    config_class = SFTConfig
    name = "sft"

    def __init__(
        self,
        config: SFTConfig,
        venv: Any,
        teacher: Policy,
        warm_start: MetaPolicyNetwork | None = None,
    ):
        super().__init__(config, venv, warm_start)
        if venv.num_envs != config.num_envs:
            raise ValueError(
                f"the vector env has num_envs={venv.num_envs} but episodes_per_update="
                f"{config.num_envs}: build it with de.vector_env({config.num_envs}, ...)"
            )
        self.teacher = teacher

    def train_step(self) -> dict[str, float]:
        """One update: collect labelled states, minimize the cross-entropy."""
        start = time.perf_counter()
        self_features, peer_features, labels, metrics = self.collect()
        metrics = {**metrics, **self.schedule_learning_rate()}
        losses = []
        num_samples = len(labels)
        minibatch_size = -(-num_samples // self.config.num_minibatches)
        for _ in range(self.config.update_epochs):
            order = torch.randperm(num_samples, generator=self.generator)
            for begin in range(0, num_samples, minibatch_size):
                mb = order[begin : begin + minibatch_size]
                loss = F.cross_entropy(
                    self.network(self_features[mb], peer_features[mb]), labels[mb]
                )
                self.optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.network.parameters(), self.config.max_grad_norm)
                self.optimizer.step()
                losses.append(loss.item())
        self.update += 1
        return {
            **metrics,
            "losses/bc": float(np.mean(losses[-self.config.num_minibatches :])),
            "charts/sps": self.venv.num_envs * self.venv.episode_length / (time.perf_counter() - start),
        }

    @torch.no_grad()
    def collect(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, float]]:
        """Play one episode per env with the sampling policy; label states with the teacher."""
        columns: list[tuple[torch.Tensor, ...]] = []
        agreement = []
        for played in self.play(*self.sample_problems(self.venv.num_envs)):
            teacher = self.teacher.act(played.obs, played.infos)
            labels = torch.as_tensor(
                np.concatenate([teacher[a] for a in self.agents]), dtype=torch.int64
            )
            live = played.live
            columns.append((played.self_features[live], played.peer_features[live], labels[live]))
            agreement.append((played.logits.argmax(-1) == labels)[live].double().mean().item())
        infos = played.step_infos  # after the last step: the episodes' outcomes
        self_features, peer_features, labels = (torch.cat(column) for column in zip(*columns))
        shares = torch.bincount(labels, minlength=NUM_ACTIONS).double() / len(labels)
        metrics = {
            "rewards/team/mean": float(
                np.mean([env_infos[self.agents[0]]["team_reward"] for env_infos in infos])
            ),
            "losses/bc_agreement": float(np.mean(agreement)),
            **{f"teacher/{name}_share": shares[k].item() for k, name in enumerate(ACTION_NAMES)},
        }
        return self_features, peer_features, labels, metrics
