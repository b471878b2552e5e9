"""What the figures are drawn from (not their pixels): every row present, lines told apart,
readable titles, axis ranges fitted to the data."""

from __future__ import annotations

import numpy as np
import pytest

from algorithms import baselines
from algorithms.core.figures import fitted_range
from algorithms.meta import learning_plots, plots
from algorithms.meta.compute_matched import compute_matched
from algorithms.meta.evaluate import evaluate
from deliberation_env.factory import vector_env_from
from deliberation_env.meta.config import EnvConfig
from deliberation_env.meta.team import build_team

CONFIG = EnvConfig(team="simulated", split="test", max_rounds=2)
PROBLEMS = range(16)


@pytest.fixture(scope="module")
def team_and_matched():
    venv = vector_env_from(CONFIG, 8)
    team = [evaluate(baselines.get(name), venv, PROBLEMS, progress=False) for name in ("independent", "debate")]
    matched = compute_matched(build_team(CONFIG)[0], CONFIG, team, PROBLEMS, seed=0, num_envs=8, progress=False)
    return team, matched


def test_identical_policies_get_their_own_markers_dashes_and_offsets(team_and_matched):
    team, _ = team_and_matched
    twins = [team[0], team[0], team[0]]  # three lines with the same values
    lines = plots.round_lines(twins)
    assert len({line.marker for line in lines}) == len({line.dashes for line in lines}) == 3
    xs = np.array([line.rounds for line in lines])
    assert len({tuple(x) for x in xs}) == 3  # no two lines on the same points
    assert np.all(np.abs(xs - np.arange(3)) < 0.5)  # each still at its own round
    assert [line.consensus for line in lines] == [team[0].consensus_accuracy] * 3


def test_the_compute_matched_rows_are_drawn_with_their_tokens(team_and_matched):
    _, matched = team_and_matched
    lines = plots.matched_lines(matched)
    assert [line.label.split(" (")[0] for line in lines] == [r.policy for r in matched]
    assert lines[0].label.startswith("single agent") and lines[1].label.startswith("self-consistency k=")
    assert all("tok/problem" in line.label for line in lines)
    assert [line.accuracy for line in lines] == [r.consensus_accuracy[-1] for r in matched]


def test_the_figure_is_written_with_the_matched_rows(team_and_matched, tmp_path):
    team, matched = team_and_matched
    path = plots.accuracy_per_round(team, tmp_path / "a.png", "3 x simulated:skill=0.8 on arithmetic", matched)
    assert path.stat().st_size > 0


def test_titles_drop_fingerprints_and_subtitles_say_held_out_and_how_many(team_and_matched):
    team, _ = team_and_matched
    title = plots.readable_title("3 x ctranslate2:SmolLM2-135M-Instruct@sha256:0123abcd on arithmetic")
    assert title == "3 x SmolLM2-135M-Instruct (ctranslate2) on arithmetic"
    assert plots.subtitle(team, "test") == "16 held-out problems (test split), one episode each"
    assert "held-out" not in plots.subtitle(team, "train")


def test_learning_curve_axes_fit_the_data_not_zero_to_one():
    low, high = fitted_range([np.array([0.42, 0.47]), np.array([0.45, 0.5])])
    assert 0.3 < low < 0.42 and 0.5 < high < 0.6
    assert fitted_range([np.array([0.0, 1.0])]) == (-0.02, 1.02)  # never far past [0, 1]


def test_reference_lines_are_the_best_heuristic_and_the_oracle():
    rows = [
        {"algo": "debate", learning_plots.METRIC: 0.5},
        {"algo": "independent", learning_plots.METRIC: 0.4},
        {"algo": "oracle", learning_plots.METRIC: 0.9},
    ]
    assert learning_plots.reference_levels(rows) == {"debate": 0.5, "oracle": 0.9}
