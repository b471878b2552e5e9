"""The env through SuperSuit's vector wrappers into stable-baselines3 PPO (parameter sharing)."""

import warnings

import numpy as np
from stable_baselines3 import PPO
from stable_baselines3.common.utils import set_random_seed

# Import the functions, not the module: supersuit.__getattr__ raises ImportError for unknown
# names, which breaks the doctest collector that inspects every module-level object.
from supersuit import concat_vec_envs_v1, pettingzoo_env_to_vec_env_v1

import deliberation_env as de


def test_ppo_multi_input_policy_trains_a_few_hundred_steps():
    env = de.parallel_env(team="simulated", n_agents=3, max_rounds=3)
    venv = pettingzoo_env_to_vec_env_v1(env)
    venv = concat_vec_envs_v1(venv, 2, num_cpus=0, base_class="stable_baselines3")
    set_random_seed(0)  # not PPO(seed=...): SuperSuit's ConcatVecEnv has no seed() for SB3 to call
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PPO("MultiInputPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, verbose=0)
        model.learn(total_timesteps=384)
    assert model.num_timesteps >= 384
    obs = venv.reset()
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (6,) and set(np.unique(actions)) <= {0, 1, 2}
    venv.close()
