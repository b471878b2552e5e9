"""Vector env layout and early-ended envs."""

import numpy as np
from helpers import FixedTask, ScriptedSolver

import deliberation_env as de


def test_layout():
    venv = de.vector_env(5, team="simulated", n_agents=4, max_rounds=2)
    obs, infos = venv.reset(seed=0)
    assert obs["agent_3"]["self"].shape == (5, len(de.SELF_FEATURES))
    assert obs["agent_3"]["peers"].shape == (5, 3, len(de.PEER_FEATURES))
    assert obs["agent_0"]["self"].dtype == np.float32 and len(infos) == 5
    obs, rewards, terms, truncs, infos = venv.step({a: np.ones(5, dtype=np.int64) for a in venv.agents})
    assert rewards["agent_1"].shape == (5,) and rewards["agent_1"].dtype == np.float32
    assert terms["agent_0"].dtype == bool and not terms["agent_0"].any() and not truncs["agent_0"].any()
    assert venv.state().shape == (5, 4 * len(de.SELF_FEATURES))
    _, _, terms, _, _ = venv.step({a: np.ones(5, dtype=np.int64) for a in venv.agents})
    assert terms["agent_2"].all()


def test_ended_env_ignores_actions_and_reports_zero_reward():
    # Env 0 reaches consensus at step 1 (agent 2 refines 5 -> 7); env 1 keeps disagreeing.
    solver = ScriptedSolver(["7", "7", "5"], refine={2: "7"})
    venv = de.vector_env(2, task=FixedTask(), team=solver, max_rounds=3, stop_on_consensus=True)
    venv.reset(seed=0, options={"problem_index": [0, 0]})  # 3 + 4 = 7
    _, rewards, terms, _, infos = venv.step({"agent_0": np.zeros(2, int), "agent_1": np.zeros(2, int),
                                             "agent_2": np.array([1, 0])})
    assert terms["agent_0"].tolist() == [True, False] and venv.active.tolist() == [False, True]
    assert infos[0]["agent_0"]["team_reward"] == 1.0
    _, rewards, terms, _, infos = venv.step({a: np.full(2, 2) for a in venv.agents})
    assert [rewards[a][0] for a in venv.agents] == [0.0, 0.0, 0.0]
    assert infos[0]["agent_2"]["decision"] == "7" and infos[0]["agent_0"]["round"] == 1
    assert infos[0]["agent_0"]["team_reward"] == 0.0  # paid once, at the step that ended it
    assert infos[1]["agent_0"]["round"] == 2
