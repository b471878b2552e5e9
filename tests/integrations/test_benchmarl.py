"""BenchMARL MAPPO on the env registered as a custom task, the way BenchMARL documents it:
a ``TaskClass`` that builds the env through TorchRL's PettingZoo wrapper, and a ``Task`` enum.

The ``TaskClass`` reuses BenchMARL's PettingZoo class for the specs (observation, info,
state, action), so only what is ours is written here.
"""

import pytest

pytest.importorskip("benchmarl", reason="BenchMARL is in the 'integrations' extra")
from benchmarl.algorithms import MappoConfig
from benchmarl.environments.common import Task
from benchmarl.environments.pettingzoo.common import PettingZooClass
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig
from torchrl.envs.libs.pettingzoo import PettingZooWrapper

import deliberation_env as de


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
    """BenchMARL's enum of the tasks of an environment: here one."""

    DELIBERATION = None

    @staticmethod
    def associated_class():
        return DeliberationTaskClass


def tiny_experiment_config(save_folder) -> ExperimentConfig:
    config = ExperimentConfig.get_from_yaml()
    config.sampling_device = config.train_device = "cpu"
    config.max_n_iters = 2
    config.on_policy_collected_frames_per_batch = 24
    config.on_policy_n_envs_per_worker = 2
    config.on_policy_n_minibatch_iters = 1
    config.on_policy_minibatch_size = 12
    config.evaluation = False
    config.render = False
    config.loggers = []
    config.create_json = False
    config.checkpoint_interval = 0
    config.save_folder = str(save_folder)
    return config


def test_mappo_on_the_custom_task(tmp_path):
    task = DeliberationTask.DELIBERATION.get_task(
        config={"team": "simulated", "observation": "flat", "infos": "numeric", "max_rounds": 3}
    )
    experiment = Experiment(
        task=task,
        algorithm_config=MappoConfig.get_from_yaml(),
        model_config=MlpConfig.get_from_yaml(),
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=0,
        config=tiny_experiment_config(tmp_path),
    )
    experiment.run()
    assert experiment.n_iters_performed == 2 and experiment.total_frames == 48
    assert experiment.group_map == {"agent": ["agent_0", "agent_1", "agent_2"]}
