"""The episode steps both parallel envs share: render mode, table rendering, end of a step."""

from types import SimpleNamespace

import pytest

import deliberation_env as de
from deliberation_env.parallel_episode import check_render_mode, end_step, render_table


def test_a_bad_render_mode_is_named():
    assert check_render_mode(None) is None and check_render_mode("ansi") == "ansi"
    with pytest.raises(ValueError, match="render_mode must be None, 'ansi' or 'human', got 'rgb_array'"):
        check_render_mode("rgb_array")


def test_the_table_is_returned_printed_or_absent(capsys):
    assert render_table("ansi", True, lambda: "table") == "table"
    assert render_table("human", True, lambda: "table") is None and capsys.readouterr().out == "table\n"
    assert render_table(None, True, lambda: "table") is None
    assert render_table("ansi", False, lambda: "table") is None  # before the first reset


@pytest.mark.parametrize("ended", [False, True])
def test_a_step_ends_every_live_agent_together(ended):
    env = SimpleNamespace(agents=["agent_0", "agent_1"])
    rewards = {"agent_0": 1.0, "agent_1": 0.0}
    _, returned, terminations, truncations, _ = end_step(env, {}, rewards, ended, {})
    assert returned == rewards
    assert terminations == {"agent_0": ended, "agent_1": ended}
    assert truncations == {"agent_0": False, "agent_1": False}
    assert env.agents == ([] if ended else ["agent_0", "agent_1"])


@pytest.mark.parametrize(
    "make, action",
    [
        (lambda: de.parallel_env(team="simulated", max_rounds=1), lambda agent: de.MetaAction.PERSIST),
        (lambda: de.text_env(task="arithmetic", n_agents=2, max_turns=1), lambda agent: "The answer is 1."),
    ],
)
def test_both_envs_end_their_episode_alike(make, action):
    env = make()
    env.reset(seed=0)
    live = list(env.agents)
    while env.agents:
        _, rewards, terminations, truncations, infos = env.step({a: action(a) for a in env.agents})
    assert set(rewards) == set(terminations) == set(truncations) == set(infos) == set(live)
    assert all(terminations.values()) and not any(truncations.values()) and env.agents == []
