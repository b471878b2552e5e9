"""The simulated team follows its documented generative model."""

import numpy as np
import pytest

import deliberation_env as de
from agents import SimulatedTeam, make_backend


def round0_accuracy(team, n=400):
    venv = de.vector_env(n, team=team, n_agents=3, max_rounds=1)
    _, infos = venv.reset(seed=0)
    return np.array([[info[a]["correct"] for a in venv.agents] for info in infos]).mean(0), infos


def test_skill_sets_first_answer_accuracy_and_names_itself():
    accuracy, infos = round0_accuracy(make_backend("simulated", skill=(0.9, 0.5, 0.1), parse_failure=0.0))
    assert np.allclose(accuracy, [0.9, 0.5, 0.1], atol=0.06)
    assert infos[0]["agent_0"]["text"].startswith("[simulated]")
    assert make_backend("simulated").model_id.startswith("simulated:")


def test_calibration_makes_confidence_informative():
    def gap(calibration):
        venv = de.vector_env(400, team=SimulatedTeam(calibration=calibration), max_rounds=1)
        _, infos = venv.reset(seed=1)
        rows = [(info[a]["confidence"], info[a]["correct"]) for info in infos for a in venv.agents]
        conf, correct = np.array(rows).T
        return conf[correct == 1].mean() - conf[correct == 0].mean()

    assert abs(gap(0.0)) < 0.05
    assert gap(3.0) > 0.6


def test_refine_pulls_towards_correct_confident_peers():
    team = SimulatedTeam(skill=(0.0, 1.0, 1.0), refine_gain=0.9, self_fix=0.0, calibration=3.0, parse_failure=0.0)
    venv = de.vector_env(300, team=team, max_rounds=1)
    venv.reset(seed=2)
    _, _rewards, _, _, infos = venv.step({"agent_0": np.ones(300, int), "agent_1": np.zeros(300, int),
                                         "agent_2": np.zeros(300, int)})
    fixed = np.mean([info["agent_0"]["correct"] for info in infos])
    assert 0.7 < fixed <= 0.95


@pytest.mark.parametrize("kwargs", [{"skill": 1.5}, {"skill": []}, {"distractors": 0}, {"calibration": -1}])
def test_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        SimulatedTeam(**kwargs)
