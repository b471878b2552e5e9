"""The AEC form (``de.env``) refuses a bad action at the step of the agent that gives it.

PettingZoo's plain ``parallel_to_aec`` buffers a cycle's actions and hands them to the
parallel env at the last agent's step, so a bad action of agent k raised there: late, under
another agent, and with the bad action stuck in the buffer.
"""

import numpy as np
import pytest

import deliberation_env as de

BAD_ACTIONS = [3, -1, 1.0, float("nan"), True, "REFINE", None, np.array([1])]
VALID_CYCLES = [[1, 2, 0], [2, 0, 1], [0, 0, 0]]
"""One action per agent (3 agents), per cycle: enough cycles to end a 3-round episode."""


def _aec_env():
    env = de.env(team="simulated", n_agents=3, max_rounds=3)
    env.reset(seed=4)
    return env


def _step_cycle(env, actions):
    for action in actions:
        env.step(action)


def _snapshot(env):
    """Every agent's observation, reward, termination and info (decision, round), and the state."""
    seen = {
        agent: (env.observe(agent), env.rewards[agent], env.terminations[agent], env.truncations[agent],
                env.infos[agent]["decision"], env.infos[agent]["round"])
        for agent in env.agents
    }
    return seen, env.state()


def _assert_same(a, b):
    (seen_a, state_a), (seen_b, state_b) = a, b
    np.testing.assert_array_equal(state_a, state_b)
    assert seen_a.keys() == seen_b.keys()
    for agent, (obs_a, *rest_a) in seen_a.items():
        obs_b, *rest_b = seen_b[agent]
        for key in obs_a:
            np.testing.assert_array_equal(obs_a[key], obs_b[key])
        assert rest_a == rest_b


@pytest.mark.parametrize("bad", BAD_ACTIONS, ids=repr)
@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_bad_action_is_refused_at_its_own_step_and_changes_nothing(bad, position):
    env, twin = _aec_env(), _aec_env()
    first = VALID_CYCLES[0]
    _step_cycle(env, first[:position])
    agent = env.agent_selection
    assert agent == f"agent_{position}"
    with pytest.raises(ValueError, match=rf"^{agent} stepped .*action space Discrete\(3\)") as raised:
        env.step(bad)
    assert repr(bad)[:20] in str(raised.value)
    assert env.agent_selection == agent
    # The agent steps again with a valid action: the episode plays as if the bad step never happened.
    _step_cycle(env, first[position:])
    _step_cycle(twin, first)
    _assert_same(_snapshot(env), _snapshot(twin))
    for cycle in VALID_CYCLES[1:]:
        _step_cycle(env, cycle)
        _step_cycle(twin, cycle)
    _assert_same(_snapshot(env), _snapshot(twin))


def test_a_bad_action_leaves_reset_working():
    env, twin = _aec_env(), _aec_env()
    env.step(0)
    with pytest.raises(ValueError, match="agent_1 stepped 7"):
        env.step(7)
    env.reset(seed=4)
    assert env.agent_selection == "agent_0"
    _assert_same(_snapshot(env), _snapshot(twin))


def test_terminated_agents_step_none_and_nothing_else():
    env = _aec_env()
    for cycle in VALID_CYCLES:
        _step_cycle(env, cycle)
    assert all(env.terminations.values()) and env.agent_selection == "agent_0"
    with pytest.raises(ValueError, match="agent_0 is terminated or truncated: its action must be None, got 1"):
        env.step(1)
    assert env.agents == ["agent_0", "agent_1", "agent_2"] and env.agent_selection == "agent_0"
    while env.agents:
        env.step(None)
    assert env.agents == []


def test_valid_action_types_pass_the_check():
    env = _aec_env()
    _step_cycle(env, [de.MetaAction.REFINE, np.int64(2), np.array(0)])
    assert env.agent_selection == "agent_0" and env.infos["agent_1"]["action"] == 2
