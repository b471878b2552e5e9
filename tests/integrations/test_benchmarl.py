"""BenchMARL MAPPO on the env registered as a custom task, the way BenchMARL documents it:
a ``TaskClass`` that builds the env through TorchRL's PettingZoo wrapper, and a ``Task`` enum.

The ``TaskClass`` and ``Task`` are ``examples/12_benchmarl.py``'s (the tutorial's code is
what is tested); the ``TaskClass`` reuses BenchMARL's PettingZoo class for the specs.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("benchmarl", reason="BenchMARL is in the 'integrations' extra")
from benchmarl.algorithms import MappoConfig
from benchmarl.experiment import Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig


def load_example():
    """``examples/12_benchmarl.py`` as a module: its task classes are the ones under test."""
    path = Path(__file__).parents[2] / "examples" / "12_benchmarl.py"
    spec = importlib.util.spec_from_file_location("example_12_benchmarl", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


DeliberationTask = load_example().DeliberationTask


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
