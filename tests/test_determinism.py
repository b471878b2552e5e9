"""Whole episodes are reproducible, and equal starts share round 0 (common random numbers)."""

import numpy as np

import deliberation_env as de


def play(seed, actions_seed, n_agents=3, max_rounds=4, **kwargs):
    env = de.parallel_env(team="simulated", n_agents=n_agents, max_rounds=max_rounds, **kwargs)
    obs, infos = env.reset(seed=seed)
    rng = np.random.default_rng(actions_seed)
    history = [(obs, infos)]
    while env.agents:
        history.append(env.step({a: int(rng.integers(3)) for a in env.agents}))
    return history


def assert_same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def test_same_seed_and_actions_give_identical_episodes():
    for seed in range(5):
        assert_same(play(seed, 100 + seed), play(seed, 100 + seed))


def test_different_seeds_differ():
    episodes = [play(seed, 0) for seed in range(6)]
    problems = {ep[0][1]["agent_0"]["problem_id"] for ep in episodes}
    assert len(problems) > 1


def test_equal_problem_and_episode_seed_share_round_zero_and_only_diverge_by_action():
    venv = de.vector_env(4, team="simulated", n_agents=3, max_rounds=2)
    obs, infos = venv.reset(seed=0, options={"problem_index": [7] * 4, "episode_seed": [11] * 4})
    for agent in venv.agents:
        assert (obs[agent]["self"] == obs[agent]["self"][0]).all()
    # Envs 0 and 1 take the same actions, env 2 differs for one agent.
    actions = {"agent_0": np.array([1, 1, 1, 0]), "agent_1": np.array([1, 1, 0, 0]), "agent_2": np.zeros(4, int)}
    obs, rewards, _, _, infos = venv.step(actions)
    for agent in venv.agents:
        np.testing.assert_array_equal(obs[agent]["self"][0], obs[agent]["self"][1])
        assert rewards[agent][0] == rewards[agent][1]
    assert infos[0]["agent_0"]["text"] == infos[2]["agent_0"]["text"]  # same refine seed for agent 0


def test_vector_env_matches_parallel_env():
    venv = de.vector_env(3, team="simulated", max_rounds=2)
    obs_v, _ = venv.reset(options={"problem_index": [1, 2, 3], "episode_seed": [5, 6, 7]})
    actions = [{"agent_0": 1, "agent_1": 2, "agent_2": 0}, {"agent_0": 0, "agent_1": 1, "agent_2": 2}]
    steps_v = [venv.step({a: np.full(3, act[a]) for a in act}) for act in actions]
    for e in range(3):
        env = de.parallel_env(team="simulated", max_rounds=2)
        obs, _ = env.reset(options={"problem_index": e + 1, "episode_seed": e + 5})
        np.testing.assert_array_equal(obs["agent_0"]["peers"], obs_v["agent_0"]["peers"][e])
        for act, (obs_v2, rewards_v, _, _, infos_v) in zip(actions, steps_v, strict=True):
            obs2, rewards, _, _, infos = env.step(act)
            for agent in env.possible_agents:
                np.testing.assert_array_equal(obs2[agent]["self"], obs_v2[agent]["self"][e])
                assert rewards[agent] == rewards_v[agent][e]
                assert infos[agent]["decision"] == infos_v[e][agent]["decision"]
