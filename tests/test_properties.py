"""Hypothesis: any action sequence keeps observations in their spaces and rewards in bounds."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import deliberation_env as de


@settings(max_examples=60, deadline=None)
@given(
    n_agents=st.integers(2, 6),
    max_rounds=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.1, 1.0, 10.0]),
    w_local=st.floats(0.0, 2.0),
    w_global=st.floats(0.0, 2.0),
    lambda_tok=st.floats(0.0, 1.0),
    concede_rule=st.sampled_from(["most_confident", "plurality"]),
    data=st.data(),
)
def test_observations_in_space_and_rewards_in_bounds(
    n_agents, max_rounds, seed, scale, w_local, w_global, lambda_tok, concede_rule, data
):
    env = de.parallel_env(
        team="simulated", n_agents=n_agents, max_rounds=max_rounds, reward_scale=scale,
        w_local=w_local, w_global=w_global, lambda_tok=lambda_tok, concede_rule=concede_rule,
    )
    obs, _ = env.reset(seed=seed)
    space = env.observation_space("agent_0")
    while env.agents:
        for agent in env.possible_agents:
            assert space.contains(obs[agent]), obs[agent]
        actions = {a: data.draw(st.integers(0, 2), label=a) for a in env.agents}
        obs, rewards, _, _, infos = env.step(actions)
        for agent, reward in rewards.items():
            tokens = infos[agent]["tokens"]["total"]
            upper = scale * (w_local + w_global)
            lower = -upper - scale * lambda_tok * tokens / 1000
            assert lower - 1e-9 <= reward <= upper + 1e-9
            parts = infos[agent]["reward_components"]
            assert parts["local"] in (-1.0, 0.0, 1.0) and parts["global"] in (-1.0, 0.0, 1.0)
            expected = scale * (w_local * parts["local"] + w_global * parts["global"] - parts["token_cost"])
            assert np.isclose(reward, expected)
            assert 0.0 <= infos[agent]["confidence"] <= 1.0
