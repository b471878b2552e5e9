"""The text-action env through the tools that can take text actions.

- PettingZoo's test utilities: every one that applies (the AEC form is PettingZoo's own
  ``parallel_to_aec``; the text env has no ``env()`` of its own).
- RLlib's ``ParallelPettingZooEnv``: the wrapper passes text observations and actions
  through unchanged. RLlib's algorithms cannot train on it (no default RLModule encodes a
  Text observation or emits a Text action): a text policy is the user's LLM.

Cannot take text: TorchRL 0.11's ``PettingZooWrapper`` fails while it is built (it turns
every info value into a tensor, and the text env's infos hold strings: ``TypeError: new():
invalid data type 'str'``; README's table says so, and the test below tells when it no
longer holds), hence neither can BenchMARL; SuperSuit's observation wrappers take Box
observations only.
"""

import functools
import types
import warnings

import pytest
from pettingzoo.test import parallel_api_test, parallel_seed_test, render_test, seed_test
from pettingzoo.test.max_cycles_test import max_cycles_test
from pettingzoo.utils import parallel_to_aec

import deliberation_env as de


def text_aec_env(**kwargs):
    return parallel_to_aec(de.text_env(**kwargs))


@pytest.fixture(autouse=True)
def _quiet_unknown_reset_options():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's tests pass an unknown reset option
        yield


def test_pettingzoo_utilities():
    parallel_api_test(de.text_env(n_agents=3, max_turns=2), num_cycles=10)
    parallel_seed_test(functools.partial(de.text_env, max_turns=2), num_cycles=10)
    seed_test(functools.partial(text_aec_env, max_turns=2), num_cycles=10)


def test_render_test_and_max_cycles_test(capsys):
    render_test(functools.partial(text_aec_env, max_turns=2))
    assert "protocol math" in capsys.readouterr().out  # "human" printed the table
    max_cycles_test(types.SimpleNamespace(parallel_env=de.text_env, env=text_aec_env))
    with pytest.raises(ValueError, match="give max_turns or max_cycles"):
        de.text_env(max_turns=2, max_cycles=2)


def test_rllib_parallel_pettingzoo_env_passes_text_through():
    pytest.importorskip("ray.rllib", reason="Ray RLlib is in the 'integrations' extra")
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    wrapped = ParallelPettingZooEnv(de.text_env(max_turns=2))
    raw = de.text_env(max_turns=2)
    options = {"problem_index": 0, "episode_seed": 5}
    obs, _ = wrapped.reset(options=options)
    raw_obs, _ = raw.reset(options=options)
    assert obs == raw_obs and "What is" in obs["agent_0"]
    actions = {"agent_0": "The answer is 18.", "agent_1": "no idea"}
    obs, rewards, terminations, truncations, infos = wrapped.step(actions)
    raw_obs, raw_rewards, _, _, raw_infos = raw.step(actions)
    assert obs == raw_obs and rewards == raw_rewards and rewards["agent_0"] > 0
    assert infos["agent_1"]["reward_components"] == raw_infos["agent_1"]["reward_components"]
    assert terminations["__all__"] is False and truncations["__all__"] is False
    _, _, terminations, _, _ = wrapped.step(actions)
    assert terminations["__all__"] is True


def test_torchrl_cannot_wrap_the_text_env_as_readme_says():
    pytest.importorskip("torchrl", reason="TorchRL is in the 'integrations' extra")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    with pytest.raises(TypeError, match="invalid data type 'str'"):
        PettingZooWrapper(de.text_env(max_turns=2))
