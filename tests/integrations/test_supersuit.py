"""SuperSuit's observation wrappers on the flat env, checked by PettingZoo's API test."""

import warnings

import numpy as np
import pytest

pytest.importorskip("supersuit", reason="SuperSuit is in the 'integrations' extra")
from pettingzoo.test import parallel_api_test

# Import the functions, not the module: __getattr__ raises ImportError for unknown
# names, which breaks the doctest collector that inspects every module-level object.
from supersuit import (
    agent_indicator_v0,
    delay_observations_v0,
    dtype_v0,
    flatten_v0,
    frame_stack_v1,
    max_observation_v0,
    normalize_obs_v0,
    reshape_v0,
)

import deliberation_env as de

N_AGENTS = 3
FLAT = 12 + 11 * (N_AGENTS - 1)

WRAPPERS = {
    "flatten_v0": (lambda env: flatten_v0(env), (FLAT,)),
    "dtype_v0": (lambda env: dtype_v0(env, np.float64), (FLAT,)),
    "normalize_obs_v0": (lambda env: normalize_obs_v0(env, env_min=-1.0, env_max=1.0), (FLAT,)),
    "frame_stack_v1": (lambda env: frame_stack_v1(env, 4), (FLAT * 4,)),
    "agent_indicator_v0": (lambda env: agent_indicator_v0(env), (FLAT + N_AGENTS,)),
    "reshape_v0": (lambda env: reshape_v0(env, (2, FLAT // 2)), (2, FLAT // 2)),
    "delay_observations_v0": (lambda env: delay_observations_v0(env, 1), (FLAT,)),
    "max_observation_v0": (lambda env: max_observation_v0(env, 2), (FLAT,)),
}


def flat_env():
    return de.parallel_env(team="simulated", n_agents=N_AGENTS, observation="flat", infos="numeric")


@pytest.mark.parametrize("name", sorted(WRAPPERS))
def test_observation_wrapper_passes_the_parallel_api_test(name):
    wrap, shape = WRAPPERS[name]
    env = wrap(flat_env())
    assert env.observation_space("agent_0").shape == shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's test passes an unknown reset option
        parallel_api_test(env, num_cycles=20)


def test_normalize_obs_maps_the_env_values_onto_the_new_range():
    raw, wrapped = flat_env(), normalize_obs_v0(flat_env(), env_min=-1.0, env_max=1.0)
    raw_obs, _ = raw.reset(seed=4)
    wrapped_obs, _ = wrapped.reset(seed=4)
    np.testing.assert_allclose(wrapped_obs["agent_1"], 2.0 * raw_obs["agent_1"] - 1.0, atol=1e-6)
