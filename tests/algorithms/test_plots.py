"""What the figures are drawn from (not their pixels): every row present, lines told apart,
readable titles, axis ranges fitted to the data, bands of a share kept in [0, 1], and no
backend chosen at import."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from algorithms import baselines
from algorithms.core.figures import band, fitted_range
from algorithms.meta import plots
from algorithms.meta.compute_matched import compute_matched
from algorithms.meta.evaluate import evaluate_rounds
from deliberation_env.factory import vector_env_from
from deliberation_env.meta.config import EnvConfig
from deliberation_env.meta.team import build_team

CONFIG = EnvConfig(team="simulated", split="test", max_rounds=2)
PROBLEMS = range(16)


@pytest.fixture(scope="module")
def team_and_matched():
    venv = vector_env_from(CONFIG, 8)
    team = [evaluate_rounds(baselines.get(name), venv, PROBLEMS, progress=False) for name in ("independent", "debate")]
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
        {"algo": "debate", plots.METRIC: 0.5},
        {"algo": "independent", plots.METRIC: 0.4},
        {"algo": "oracle", plots.METRIC: 0.9},
    ]
    assert plots.reference_levels(rows) == {"debate": 0.5, "oracle": 0.9}


# ---------------------------------------------------------------- the comparison's figures
def comparison_rows(scales=(1.0,), seeds=(0.0, 1.0, 1.0)):
    """A comparison's rows: three seeds whose accuracy at update 0 is 0, 1 and 1 (a band
    that, unclipped, spans below 0 and above 1), two learners and two baselines."""
    curves, finals = [], []
    for scale in scales:
        for algo, final in (("softrankpo", 0.963), ("grpo", 0.945)):
            for seed, first in enumerate(seeds):
                for episodes, value in ((0, first), (100, final)):
                    shares = {f"actions/{a}_share": s for a, s in zip(("persist", "refine", "concede"), (first, 1 - first, 0.0))}
                    curves.append({"algo": algo, "reward_scale": scale, "seed": seed, "episodes": episodes,
                                   plots.METRIC: value, **shares})  # fmt: skip
                finals.append({"algo": algo, "reward_scale": scale, "seed": seed, plots.METRIC: final + 0.004 * seed})
    baseline_rows = [{"algo": name, "seed": seed, plots.METRIC: value}
                     for name, value in (("debate", 0.93), ("oracle", 0.99)) for seed in range(3)]  # fmt: skip
    return curves, finals, baseline_rows


def test_a_band_of_a_share_is_clipped_to_zero_and_one():
    seeds = band(np.array([[0.0, 0.5], [1.0, 0.6], [1.0, 0.7]]))
    assert seeds.low[0] == 0.0 and seeds.high[0] == 1.0  # unclipped: about -0.77 and 2.10
    assert np.allclose(seeds.mean, [2 / 3, 0.6]) and 0.0 < seeds.low[1] < 0.6 < seeds.high[1] < 1.0
    assert band(np.array([[0.0], [1.0], [1.0]]), limits=None).high[0] > 2.0
    single = band(np.array([[0.4, 0.5]]))
    assert np.array_equal(single.low, single.high)  # one seed: no band


def test_the_drawn_bands_of_accuracies_and_shares_stay_in_zero_one():
    curves, finals, baseline_rows = comparison_rows()
    figures = [plots.comparison_curves(curves, baseline_rows), plots.action_shares(curves, finals)]
    bands = [collection for figure in figures for ax in figure.axes for collection in ax.collections]
    assert bands
    for collection in bands:
        ys = np.concatenate([path.vertices[:, 1] for path in collection.get_paths()])
        assert ys.min() >= 0.0 and ys.max() <= 1.0
        assert ys.min() == 0.0 or ys.max() == 1.0  # the update-0 band reaches an edge


def test_final_accuracy_has_value_labels_clipped_intervals_and_an_axis_around_the_data():
    _, finals, baseline_rows = comparison_rows()
    (ax,) = plots.final_accuracy(finals, baseline_rows).axes
    labels = [text.get_text() for text in ax.texts]
    assert labels == ["0.967", "0.949", "0.930", "0.990"]  # softrankpo, grpo, debate, oracle
    low, high = ax.get_ylim()
    assert 0.85 < low < 0.93 and 0.99 < high < 1.1  # not from 0: 0.949 and 0.967 stay apart
    segments = np.concatenate([c.get_segments() for c in ax.collections])  # the error bars
    assert segments[..., 1].max() <= 1.0


@pytest.mark.parametrize("scales", [(1.0,), (0.1, 1.0)])
def test_a_reward_scale_is_named_only_where_the_comparison_ran_several(scales):
    curves, finals, baseline_rows = comparison_rows(scales)
    figures = [plots.comparison_curves(curves, baseline_rows), plots.final_accuracy(finals, baseline_rows),
               plots.action_shares(curves, finals)]  # fmt: skip
    titles = [ax.get_title() for figure in figures for ax in figure.axes]
    titles += [figure._suptitle.get_text() for figure in figures if figure._suptitle]
    assert any("reward scale" in title for title in titles) == (len(scales) > 1)



def test_the_action_shares_name_a_learner_that_logged_none():
    """A learner of one's own that logs no ``actions/*_share`` has no panel: the title says
    so, rather than leaving its absence to be read as a learner that took no action."""
    curves, finals, _ = comparison_rows()
    title = plots.action_shares(curves, finals)._suptitle.get_text()
    assert "not shown" not in title
    mine = [{"algo": "mine", "reward_scale": 1.0, "seed": seed, "episodes": 100, plots.METRIC: 0.9} for seed in range(3)]
    figure = plots.action_shares(curves + mine, finals + mine)
    assert [ax.get_title() for ax in figure.axes] == ["grpo", "softrankpo"]
    assert "not shown: mine (logs no actions/*_share)" in figure._suptitle.get_text()

def test_the_comparison_writes_its_four_figures(tmp_path):
    curves, finals, baseline_rows = comparison_rows()
    paths = plots.write_comparison(tmp_path, curves, finals, baseline_rows)
    assert [path.name for path in paths] == ["learning_curves.png", "final_accuracy.png", "action_shares.png", "reward_scale.png"]
    assert all(path.stat().st_size > 0 for path in paths)


def test_importing_the_plotting_modules_leaves_the_backend_and_pyplot_alone():
    program = (
        "import sys, matplotlib\n"
        "import algorithms.core.figures, algorithms.meta.plots, algorithms.text.plots, algorithms.text.eval\n"
        "print(matplotlib.get_backend(), 'matplotlib.pyplot' in sys.modules)\n"
    )
    env = {**os.environ, "MPLBACKEND": "svg"}
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["svg", "False"]
