"""RLlib PPO (new API stack, one shared policy) on the env through RLlib's own PettingZoo wrapper."""

import pytest

pytest.importorskip("ray.rllib", reason="Ray RLlib is in the 'integrations' extra")
import ray
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
from ray.tune.registry import register_env

import deliberation_env as de


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ppo_new_api_stack_trains_two_iterations(local_ray):
    register_env("deliberation", lambda config: ParallelPettingZooEnv(de.parallel_env(**config)))
    config = (
        PPOConfig()
        .environment("deliberation", env_config={"team": "simulated", "observation": "flat", "infos": "numeric"})
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent_id, episode, **kwargs: "shared")
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=64, minibatch_size=32, num_epochs=1)
        .debugging(seed=0)
    )
    assert config.enable_rl_module_and_learner and config.enable_env_runner_and_connector_v2  # new API stack
    algo = config.build_algo()
    try:
        results = [algo.train() for _ in range(2)]
        module = algo.get_module("shared")
    finally:
        algo.stop()
    assert [r["env_runners"]["num_env_steps_sampled_lifetime"] for r in results] == [64, 128]
    assert module.observation_space.shape == (len(de.spaces.flat_features(3)),)
    assert "shared" in results[-1]["learners"]  # the one policy all agents share was updated
