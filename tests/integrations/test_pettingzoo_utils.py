"""Every PettingZoo test utility that applies to the env, called as PettingZoo documents it.

PettingZoo's ``max_cycles_test`` takes a module with ``parallel_env`` and ``env``; the
shim below only fixes the team (the default team is the real SmolLM2 one).
"""

import functools
import importlib
import itertools
import types
import warnings

import pytest
from pettingzoo.test import (
    api_test,
    parallel_api_test,
    parallel_seed_test,
    performance_benchmark,
    render_test,
    seed_test,
    state_test,
)
from pettingzoo.test.max_cycles_test import max_cycles_test

import deliberation_env as de

MODES = [{}, {"observation": "flat", "infos": "numeric"}]
"""The default (Dict observation, rich infos) and the integration mode."""


@pytest.fixture(autouse=True)
def _quiet_unknown_reset_options():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's tests pass an unknown reset option
        yield


@pytest.mark.parametrize("mode", MODES)
def test_parallel_and_aec_api(mode):
    parallel_api_test(de.parallel_env(team="simulated", **mode), num_cycles=30)
    api_test(de.env(team="simulated", **mode), num_cycles=30)


@pytest.mark.parametrize("mode", MODES)
def test_seed_tests(mode):
    parallel_seed_test(functools.partial(de.parallel_env, team="simulated", **mode), num_cycles=20)
    seed_test(functools.partial(de.env, team="simulated", **mode), num_cycles=20)


@pytest.mark.parametrize("mode", MODES)
def test_render_test_runs_every_render_mode(mode, capsys):
    render_test(functools.partial(de.env, team="simulated", **mode))
    assert "consensus correct" in capsys.readouterr().out  # "human" printed the table


@pytest.mark.parametrize("mode", MODES)
def test_max_cycles_test(mode):
    module = types.SimpleNamespace(
        parallel_env=functools.partial(de.parallel_env, team="simulated", **mode),
        env=functools.partial(de.env, team="simulated", **mode),
    )
    max_cycles_test(module)


@pytest.mark.parametrize("mode", MODES)
def test_state_test(mode):
    state_test(de.env(team="simulated", **mode), de.parallel_env(team="simulated", **mode), num_cycles=20)


def test_performance_benchmark_steps_the_aec_env(monkeypatch, capsys):
    # Its 5-second budget on a clock that advances per call, rather than waited for.
    clock = itertools.count(step=0.05)
    module = importlib.import_module("pettingzoo.test.performance_benchmark")
    monkeypatch.setattr(module, "time", types.SimpleNamespace(time=lambda: next(clock)))
    performance_benchmark(de.env(team="simulated", observation="flat", infos="numeric"))
    out = capsys.readouterr().out
    turns = float(out.split(" turns per second")[0].split()[-1])
    assert "Finished performance benchmark" in out and turns > 0
