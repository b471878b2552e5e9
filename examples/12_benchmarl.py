"""12: BenchMARL MAPPO on the env, registered as a custom BenchMARL task.

BenchMARL builds its tasks from TorchRL envs. A custom task is a ``TaskClass`` that says
how to build the env (here ``de.parallel_env`` through TorchRL's ``PettingZooWrapper``)
and a ``Task`` enum naming it; BenchMARL's own PettingZoo class reads the specs. The env
needs two of its documented options for that: ``observation="flat"`` (BenchMARL's MLPs
take 1-D inputs) and ``infos="numeric"`` (TorchRL makes every info value a tensor).

MAPPO then trains one actor shared by the agent group (a centralized critic sees all
agents) and is evaluated greedily on held-out problems with the package's own
evaluation (:func:`algorithms.meta.evaluate.evaluate`). Needs the ``integrations`` extra.

    python examples/12_benchmarl.py [--iterations 20] [--frames-per-batch 480]

Runtime on 2 CPU cores (measured once, 2026-11-25, on a shared 2-core Intel Xeon): about 9
minutes with the defaults (BenchMARL's own bar shows the iterations); the tests' settings
(``--iterations 2 --eval-problems 8 --frames-per-batch 24``) take about 15 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import torch
import tyro
from benchmarl.algorithms import MappoConfig
from benchmarl.environments.common import Task
from benchmarl.environments.pettingzoo.common import PettingZooClass
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig
from tensordict import TensorDict
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import ExplorationType, set_exploration_type

import deliberation_env as de
from algorithms.meta.evaluate import evaluate


@dataclass
class Args:
    iterations: int = 20
    """MAPPO iterations (collect a batch, then train on it)."""
    frames_per_batch: int = 480
    """Env steps collected per iteration (each step is one round of the whole team)."""
    eval_problems: int = 200
    """Held-out problems to evaluate on."""
    seed: int = 0
    """Seed of the experiment and of the evaluation."""


ENV_KWARGS = {"task": "arithmetic", "team": "simulated", "n_agents": 3, "max_rounds": 3, "observation": "flat"}


class DeliberationTaskClass(PettingZooClass):
    """The deliberation env as a BenchMARL task; ``config`` holds ``de.parallel_env``'s arguments."""

    def get_env_fun(self, num_envs, continuous_actions, seed, device):
        return lambda: PettingZooWrapper(
            de.parallel_env(**self.config), categorical_actions=True, device=device, seed=seed, return_state=True
        )

    def supports_continuous_actions(self):
        return False

    def supports_discrete_actions(self):
        return True

    def has_state(self):
        return True

    def has_render(self, env):
        return False

    def max_steps(self, env):
        return self.config["max_rounds"]

    @staticmethod
    def env_name():
        return "deliberation"


class DeliberationTask(Task):
    """BenchMARL's enum of an environment's tasks: here one."""

    DELIBERATION = None

    @staticmethod
    def associated_class():
        return DeliberationTaskClass


class BenchMARLPolicy:
    """A trained BenchMARL policy as a package :class:`~algorithms.meta.policy.Policy` (greedy).

    Args:
        module: ``experiment.policy``: reads ``("agent", "observation")``, writes
            ``("agent", "action")`` for the agent group ``agent_0 .. agent_{n-1}``.
    """

    name = "mappo (benchmarl)"

    def __init__(self, module):
        self.module = module

    def act(self, obs, infos):
        agents = sorted(obs)
        observation = torch.as_tensor(np.stack([obs[a] for a in agents], axis=1))  # (num_envs, n_agents, d)
        batch = TensorDict({("agent", "observation"): observation}, batch_size=observation.shape[:1])
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            actions = self.module(batch)["agent", "action"].numpy()
        return {agent: actions[:, k] for k, agent in enumerate(agents)}


def experiment_config(args: Args, save_folder: str) -> ExperimentConfig:
    """BenchMARL's default experiment, on CPU, with this run's budget and no loggers."""
    config = ExperimentConfig.get_from_yaml()
    config.sampling_device = config.train_device = "cpu"
    config.max_n_frames = None
    config.max_n_iters = args.iterations
    config.on_policy_collected_frames_per_batch = args.frames_per_batch
    config.on_policy_n_envs_per_worker = 2
    config.on_policy_n_minibatch_iters = 4
    config.on_policy_minibatch_size = min(args.frames_per_batch, 120)
    config.evaluation = False
    config.render = False
    config.loggers = []
    config.create_json = False
    config.checkpoint_interval = 0
    config.save_folder = save_folder
    return config


def held_out_accuracy(experiment: Experiment, args: Args) -> float:
    """Share of held-out problems whose final consensus is correct, greedy actions."""
    venv = de.vector_env(min(args.eval_problems, 256), split="test", **ENV_KWARGS)
    return evaluate(BenchMARLPolicy(experiment.policy), venv, range(args.eval_problems), args.seed, progress=False).accuracy


def main(args: Args) -> float:
    task = DeliberationTask.DELIBERATION.get_task(config={**ENV_KWARGS, "infos": "numeric"})
    with TemporaryDirectory() as folder:
        experiment = Experiment(
            task=task,
            algorithm_config=MappoConfig.get_from_yaml(),
            model_config=MlpConfig.get_from_yaml(),
            critic_model_config=MlpConfig.get_from_yaml(),
            seed=args.seed,
            config=experiment_config(args, str(Path(folder))),
        )
        untrained = held_out_accuracy(experiment, args)
        experiment.run()
    accuracy = held_out_accuracy(experiment, args)
    print(f"MAPPO: {experiment.n_iters_performed} iterations, {experiment.total_frames} env steps")
    print(f"held-out consensus accuracy: untrained {untrained:.3f}, after MAPPO {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    main(tyro.cli(Args))
