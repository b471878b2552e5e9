"""TorchRL's PettingZoo wrapper, its spec check, a rollout, and SerialEnv over it."""

import numpy as np
import pytest

pytest.importorskip("torchrl", reason="TorchRL is in the 'integrations' extra")
from torchrl.envs import SerialEnv
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import check_env_specs

import deliberation_env as de

MAX_ROUNDS = 3


def wrapped_env(**kwargs):
    env = de.parallel_env(team="simulated", max_rounds=MAX_ROUNDS, observation="flat", infos="numeric", **kwargs)
    return PettingZooWrapper(env, return_state=True)


def test_check_env_specs_and_a_rollout_match_the_env():
    env = wrapped_env()
    check_env_specs(env, seed=0)
    rollout = env.rollout(10)
    assert rollout.batch_size == (MAX_ROUNDS,)  # stops when the episode terminates
    agents = rollout["agent"]  # TorchRL groups agent_0 .. agent_2 as "agent"
    assert agents["observation"].shape == (MAX_ROUNDS, 3, len(de.spaces.flat_features(3)))
    assert rollout["next", "agent", "terminated"][-1].all()
    # The round counter the env reports, tensorized per agent: 1, 2, 3 after the steps.
    np.testing.assert_array_equal(rollout["next", "agent", "info", "round"][:, 0].numpy(), [1.0, 2.0, 3.0])


def test_rollout_rewards_are_the_envs_rewards_for_the_same_actions():
    env = wrapped_env()
    rollout = env.rollout(MAX_ROUNDS, auto_reset=False, tensordict=env.reset(seed=7))
    actions = rollout["agent", "action"].numpy()  # categorical: one int per agent
    raw = de.parallel_env(team="simulated", max_rounds=MAX_ROUNDS, observation="flat", infos="numeric")
    obs, _ = raw.reset(seed=7)
    np.testing.assert_array_equal(rollout["agent", "observation"][0].numpy(), np.stack(list(obs.values())))
    for t in range(MAX_ROUNDS):
        _, rewards, _, _, _ = raw.step({a: int(actions[t, i]) for i, a in enumerate(raw.possible_agents)})
        np.testing.assert_allclose(rollout["next", "agent", "reward"][t, :, 0].numpy(), list(rewards.values()))


def test_serial_env_over_the_wrapper():
    env = SerialEnv(2, wrapped_env)
    check_env_specs(env, seed=0)
    rollout = env.rollout(MAX_ROUNDS)
    assert rollout.batch_size == (2, MAX_ROUNDS)
    assert rollout["next", "agent", "done"][:, -1].all()
    env.close()
