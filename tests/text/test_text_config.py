"""One home for the text env's arguments (``TextEnvConfig``): every entry point (text_env,
text_vector_env, make, vector_env_from, the learners' configs' ``env`` and their command line) takes
the same arguments and refuses the same bad ones, by name, before anything is built."""

from __future__ import annotations

import dataclasses

import pytest
import tyro

import deliberation_env as de
from algorithms.text import TextGRPOConfig, TextMAGRPOConfig
from algorithms.text.train import build_env
from deliberation_env import arguments
from deliberation_env.text import text_env, text_vector_env
from deliberation_env.text.config import TextEnvConfig

ARGUMENTS = {"task": "arithmetic", "difficulty": 2, "n_agents": 3, "max_turns": 2, "reward_scale": 0.5,
             "stop_threshold": 1.1, "split": "test"}  # fmt: skip

ENTRY_POINTS = {
    "TextEnvConfig": lambda **kwargs: TextEnvConfig(**kwargs),
    "text_env": lambda **kwargs: text_env(**kwargs),
    "text_vector_env": lambda **kwargs: text_vector_env(2, **kwargs),
    "make": lambda **kwargs: de.make("text-deliberation-v1", **kwargs),
    "TextMAGRPOConfig": lambda **kwargs: TextMAGRPOConfig(env=TextEnvConfig(**kwargs)),
}


def first_step(env):
    """Every env's first prompt, reward and reward parts when each agent says 'The answer is 3.'"""
    obs, _ = env.reset(seed=0, options={"problem_index": [5] * env.num_envs, "episode_seed": [9] * env.num_envs})
    _, rewards, terms, _, infos = env.step({a: ["The answer is 3."] * env.num_envs for a in env.possible_agents})
    return obs["agent_0"][0], float(rewards["agent_0"][0]), bool(terms["agent_0"][0]), infos[0]["agent_0"]


def test_every_entry_point_builds_the_same_env_from_the_same_arguments():
    config = TextEnvConfig(**ARGUMENTS)
    learner = TextGRPOConfig(env=TextEnvConfig(**ARGUMENTS))
    envs = [de.vector_env_from(config, 2), text_vector_env(2, **ARGUMENTS), build_env(learner, 2), build_env(learner, 2, split="test")]
    results = [first_step(env) for env in envs]
    assert all(result == results[0] for result in results)
    single = text_env(**ARGUMENTS)
    assert [p.id for p in single.problems] == [p.id for p in envs[0].problems]
    assert (single.max_turns, len(single.possible_agents), single.protocol.name) == (2, 3, "math")
    assert results[0][1] == pytest.approx(0.5 * results[0][3]["reward_components"]["joint"])


def test_the_learner_config_holds_the_env_config_beside_the_learners_fields():
    env_fields = {f.name for f in dataclasses.fields(TextEnvConfig)}
    learner_fields = {f.name for f in dataclasses.fields(TextMAGRPOConfig)}
    assert not env_fields & learner_fields and "env" in learner_fields
    learner = TextMAGRPOConfig(env=TextEnvConfig(**ARGUMENTS), group_size=3)
    assert learner.env.env_kwargs() == TextEnvConfig(**ARGUMENTS).env_kwargs()
    assert build_env(learner, 6).num_envs == 6 and build_env(learner, 6).problems[0].id.startswith("arithmetic")


def test_max_cycles_is_pettingzoos_name_for_max_turns_and_replace_keeps_working():
    config = TextEnvConfig(max_cycles=3)
    assert (config.max_turns, config.max_cycles) == (3, None)
    assert dataclasses.replace(config, n_agents=4).max_turns == 3
    with pytest.raises(ValueError, match="give max_turns or max_cycles"):
        TextEnvConfig(max_turns=2, max_cycles=3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_agents": 1}, ValueError, "n_agents must be >= 2"),
        ({"n_agents": 2.5}, TypeError, "n_agents must be an integer"),
        ({"max_turns": 0}, ValueError, "max_turns must be >= 1"),
        ({"split": "dev"}, ValueError, "split must be"),
        ({"reward_scale": -1.0}, ValueError, "reward_scale"),
        ({"stop_threshold": float("nan")}, ValueError, "stop_threshold"),
        ({"protocol": "debate"}, ValueError, "protocol must be"),
        ({"task": "nope"}, ValueError, "unknown task 'nope'"),
        ({"task": "gsm8k", "path": "sample", "difficulty": 2}, ValueError, "difficulty is an argument of task 'arithmetic' only"),
        ({"task": "gsm8k", "difficulty": 2}, ValueError, "task 'gsm8k' reads its problems from data: give path"),
        ({"difficulty": 2, "task_kwargs": {"difficulty": 3}}, ValueError, "difficulty is given twice"),
        ({"task_kwargs": "difficulty=2"}, TypeError, "task_kwargs must be a dict"),
        ({"protocol": "coding"}, ValueError, "coding protocol needs the 'humaneval' task, got 'arithmetic'"),
        ({"task": "humaneval", "protocol": "math"}, ValueError, "task 'humaneval' needs protocol 'coding'"),
    ],
)
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_a_bad_argument_is_named_by_every_entry_point_before_anything_is_built(monkeypatch, entry, kwargs, error, match):
    def no_loading(*args, **kwargs):
        raise AssertionError("a task was loaded before the arguments were checked")

    monkeypatch.setattr(arguments, "get", no_loading)
    with pytest.raises(error, match=match):
        ENTRY_POINTS[entry](**kwargs)


def test_the_command_line_reads_the_same_fields():
    config = tyro.cli(
        TextEnvConfig,
        args=["--task", "gsm8k", "--path", "data/gsm8k", "--protocol", "math", "--max-turns", "2", "--stop-threshold", "1"],
    )
    assert (config.task, config.path, config.protocol, config.max_turns, config.stop_threshold) == (
        "gsm8k", "data/gsm8k", "math", 2, 1.0,
    )  # fmt: skip
    assert config.task_arguments() == {"path": "data/gsm8k"}
    with pytest.raises(SystemExit):
        tyro.cli(TextEnvConfig, args=["--protocol", "debate"])


@pytest.mark.parametrize("scale", [1e39, 1e-46, 0.0, -1.0, float("inf")])
def test_a_reward_scale_float32_cannot_hold_is_refused(scale):
    """Red team: the vector env's float32 rewards turned a scale of 1e39 into inf and one
    of 1e-46 into 0."""
    with pytest.raises(ValueError, match=r"reward_scale must be a number in \[1e-30, 1e\+30\]"):
        TextEnvConfig(reward_scale=scale)
