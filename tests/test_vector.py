"""Vector env layout, early-ended envs, and the vector-env protocol both families implement."""

import pickle

import numpy as np
import pytest
from helpers import FixedTask, ScriptedSolver

import deliberation_env as de
from deliberation_env.meta.vector import DeliberationVectorEnv
from deliberation_env.text.vector import TextDeliberationVectorEnv
from deliberation_env.vector_protocol import VectorEnv

META = {"task": "arithmetic", "team": "simulated", "max_rounds": 4, "stop_on_consensus": True}
TEXT = {"task": "arithmetic", "n_agents": 2, "max_turns": 2}
BUILDERS = {
    "meta": (DeliberationVectorEnv, META, 6),
    "text": (TextDeliberationVectorEnv, TEXT, 3),
}


def same(a, b) -> bool:
    """Deep equality of env results: dicts, lists, tuples, arrays (dtype and shape too)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    return a == b


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
    # the infos keep the final state: a learner reads team_reward from the last step's infos
    # (MAGRPO's "team" return), where it read 0.0 for every env that had ended earlier
    assert infos[0]["agent_0"]["team_reward"] == 1.0 and infos[1]["agent_0"]["team_reward"] == 0.0
    assert infos[1]["agent_0"]["round"] == 2


# ------------------------------------------------------------------ the protocol
def sampled_actions(venv: VectorEnv) -> dict[str, list]:
    """One action per env and agent, drawn from the action spaces (any family)."""
    return {agent: [venv.action_space(agent).sample() for _ in range(venv.num_envs)] for agent in venv.agents}


def play_by_protocol(venv: VectorEnv, seed: int = 0) -> int:
    """Play one batch of episodes knowing only the protocol, checking its contract on the
    way; the number of steps the batch took."""
    assert isinstance(venv, VectorEnv)
    for agent in venv.agents:
        venv.action_space(agent).seed(seed)
    size = venv.num_envs
    obs, infos = venv.reset(seed=seed)
    assert list(obs) == venv.agents and len(infos) == size and venv.active.tolist() == [True] * size
    assert [p.id for p in venv.problems] == [p.id for p in venv.starts.problems]
    steps, ended = 0, np.zeros(size, dtype=bool)
    while venv.active.any():
        _, rewards, terms, truncs, infos = venv.step(sampled_actions(venv))
        steps += 1
        for agent in venv.agents:
            assert rewards[agent].shape == (size,) and rewards[agent].dtype == np.float32
            assert not rewards[agent][ended].any()  # an ended env reports zero reward
            assert terms[agent].tolist() == (~venv.active).tolist() and not truncs[agent].any()
        assert len(infos) == size and (ended <= ~venv.active).all()  # an ended env stays ended
        ended = ~venv.active
    assert 1 <= steps <= venv.episode_length
    with pytest.raises(ValueError, match="every episode has ended"):
        venv.step(sampled_actions(venv))
    obs, rewards, terms, _, infos = venv.step_running(sampled_actions(venv))  # what a Ray worker does
    assert all(not rewards[a].any() and terms[a].all() for a in venv.agents)
    assert list(obs) == venv.agents and len(infos) == size and not venv.active.any()
    return steps


@pytest.mark.parametrize("family", sorted(BUILDERS))
def test_both_families_play_the_same_generic_loop(family):
    cls, kwargs, size = BUILDERS[family]
    venv = cls(size, **kwargs)
    assert isinstance(venv, VectorEnv) and not venv.active.any()
    with pytest.raises(ValueError, match="call reset"):
        venv.step_running(sampled_actions(venv))
    first = play_by_protocol(venv, seed=1)
    assert play_by_protocol(venv, seed=1) == first  # and again, from the same seed
    assert venv.episode_length == kwargs.get("max_rounds", kwargs.get("max_turns"))


def test_the_meta_env_ends_episodes_at_different_steps_under_the_generic_loop():
    venv = de.vector_env(8, **META)
    steps = play_by_protocol(venv, seed=2)
    venv.reset(seed=2)  # the same batch again, stepped by hand: not every env lasts as long
    lengths = np.zeros(8, dtype=int)
    for agent in venv.agents:
        venv.action_space(agent).seed(2)
    while venv.active.any():
        lengths += venv.active
        venv.step(sampled_actions(venv))
    assert lengths.max() == steps and lengths.min() < lengths.max()


@pytest.mark.parametrize("family", sorted(BUILDERS))
def test_a_factory_is_picklable_checks_its_arguments_and_builds_the_env(family):
    cls, kwargs, size = BUILDERS[family]
    factory = pickle.loads(pickle.dumps(cls.factory(**kwargs)))
    built, direct = factory(size), cls(size, **kwargs)
    assert isinstance(built, cls)
    assert same(built.reset(seed=4), direct.reset(seed=4))
    with pytest.raises(ValueError, match="n_agents must be >= 2"):
        cls.factory(**{**kwargs, "n_agents": 1})
