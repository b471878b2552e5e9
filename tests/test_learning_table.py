"""The README's LLM-weight learning table is ``benchmarks/results/text_learning.json``, at the
precision it prints, and names the commit that made its runs."""

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
START = "<!-- LLM-weight learning results"
END = "<!-- end of the LLM-weight learning results -->"


def readme_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text[text.index(START) : text.index(END)]


def table_rows(block: str) -> dict[str, list[str]]:
    """``{team: [cells]}`` of the markdown table in ``block`` (bold marks dropped)."""
    rows = {}
    for line in block.splitlines():
        if line.startswith("|") and not line.startswith(("|---", "| team")):
            team, *cells = [cell.strip().replace("**", "") for cell in line.strip("|").split("|")]
            rows[team] = cells
    return rows


def accuracy_cell(values: list[float]) -> str:
    """Mean, and the half-width of its 95% Student-t interval over more than one seed."""
    mean = np.mean(values)
    if len(values) == 1:
        return f"{mean:.3f}"
    half = stats.t.ppf(0.975, len(values) - 1) * stats.sem(values)
    return f"{mean:.3f} ± {half:.3f}"


LEARNERS = {"grpo": "GRPO", "magrpo": "MAGRPO", "softrankpo": "SoftRankPO"}
"""How the README names each learner's row."""


def expected_rows(results: dict) -> dict[str, list[str]]:
    """The README's rows from the results file: seeds, accuracy (mean ± interval, and each
    seed's in seed order), cut share, tokens per answer; a row for each learner or baseline
    that has runs."""

    def cells(metrics: list[dict]) -> list[str]:
        accuracies = [m["eval/correct"] for m in metrics]
        return [
            str(len(metrics)),
            accuracy_cell(accuracies),
            ", ".join(f"{a:.3f}" for a in accuracies) if len(accuracies) > 1 else "",
            f"{np.mean([m['eval/truncated_share'] for m in metrics]):.0%}",
            f"{np.mean([m['eval/mean_completion_tokens'] for m in metrics]):.1f}",
        ]

    rows = {"(a) untrained pair": cells([results["untrained"]["after"]])}
    for algo, label in LEARNERS.items():
        runs = sorted((run for run in results["runs"] if run["algo"] == algo), key=lambda run: run["seed"])
        if runs:
            rows[f"pair trained by {label}"] = cells([run["after"] for run in runs])
    singles = sorted(results["single"], key=lambda run: run["seed"])
    if singles:
        rows["(b) one agent trained alone, same tokens and updates"] = cells([run["after"] for run in singles])
    scs = results["self_consistency"]
    scs = sorted([scs] if isinstance(scs, dict) else scs, key=lambda run: run.get("seed", 0))
    if scs:
        sc_metrics = [{"eval/correct": sc["correct"], "eval/truncated_share": sc["truncated_share"],
                       "eval/mean_completion_tokens": sc["mean_completion_tokens"]} for sc in scs]  # fmt: skip
        rows[f"(c) untrained pair, self-consistency of {2 * scs[0]['samples_per_agent']} samples"] = cells(sc_metrics)
    return rows


@pytest.fixture(scope="module")
def results() -> dict:
    path = ROOT / "benchmarks" / "results" / "text_learning.json"
    return json.loads(path.read_text(encoding="utf-8"))["results"]


def test_the_readme_table_is_the_results_file(results):
    assert table_rows(readme_block()) == expected_rows(results)


def test_the_readme_names_the_commit_of_the_runs(results):
    named = re.findall(r"runs at ([0-9a-f]{7,40})", readme_block())

    assert len(named) == 1, "the README's learning table names the one commit its runs were made at"
    assert [commit[: len(named[0])] for commit in results["run_commits"]] == named
    everything = ["untrained", *(f"{r['algo']}-seed{r['seed']}" for r in results["runs"])]
    made = {run for runs in results["run_commits"].values() for run in runs}
    assert set(everything) <= made


def test_a_changed_number_is_caught(results):
    results = json.loads(json.dumps(results))
    results["runs"][0]["after"]["eval/correct"] += 0.01

    assert table_rows(readme_block()) != expected_rows(results)


@pytest.fixture(scope="module")
def text_learning():
    """``benchmarks/text_learning.py`` imported as its scripts run it (``benchmarks/`` on the path)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT / "benchmarks"))
        import text_learning

        yield text_learning


def test_each_run_result_keeps_what_made_it(text_learning, tmp_path):
    path = tmp_path / "grpo-seed0" / "summary.json"

    made = text_learning.cached(path, lambda: {"algo": "grpo", "seed": 0})

    stored = json.loads(path.read_text())
    assert stored == made and made["algo"] == "grpo"
    recorded = set(made["provenance"]) - {"commit_at_write"}  # there where a commit lands while the suite runs
    assert recorded == {"command", "date", "commit", "dirty", "machine", "threads"}
    assert set(made["provenance"]["threads"]) == {"torch", "omp_num_threads", "affinity"}
    assert text_learning.cached(path, lambda: pytest.fail("a finished run is read back, not run again")) == made


def test_a_table_of_runs_from_several_commits_says_so(text_learning):
    def at(commit, dirty=False):
        return {"provenance": {"commit": commit, "dirty": dirty}}

    base = at("aaa")
    runs = [{"algo": "grpo", "seed": 0, **at("aaa")}, {"algo": "grpo", "seed": 1, **at("bbb", dirty=True)}]
    singles = [{"seed": 0}]  # stored before runs kept their provenance

    scs = [{"seed": 1, **at("aaa")}]

    commits = text_learning.run_commits(base, runs, singles, scs, 4)

    assert commits == {
        "aaa": ["untrained", "grpo-seed0", "self-consistency-k4-seed1"],
        "bbb-dirty": ["grpo-seed1"],
        "unrecorded": ["single-seed0"],
    }
    line = text_learning.commits_line(commits)
    assert line.startswith("runs made at 3 different commits, not one code:") and "bbb-dirty: grpo-seed1" in line
    assert text_learning.commits_line({"aaa": ["untrained"]}) == "runs made at commit aaa"


def test_a_finished_run_is_committed_alone(text_learning, tmp_path, monkeypatch):
    def git(*arguments: str) -> str:
        return subprocess.run(["git", *arguments], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start")
    (tmp_path / "other.txt").write_text("staged, not a run's result\n")
    git("add", "other.txt")
    monkeypatch.setattr(text_learning, "REPO", tmp_path)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@t")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@t")
    path = tmp_path / "summaries" / "abc" / "grpo-seed3.json"

    text_learning.cached(path, lambda: {"algo": "grpo", "seed": 3}, commit=True)

    assert git("log", "-1", "--format=%s") == "text_learning: grpo-seed3 finished\n"
    assert git("show", "--name-only", "--format=", "HEAD").split() == ["summaries/abc/grpo-seed3.json"]
    assert git("diff", "--cached", "--name-only").split() == ["other.txt"]  # still staged, not committed


def test_an_argument_added_later_finds_the_runs_stored_before_it(text_learning, monkeypatch):
    """The table's command still reads its committed runs; another value of an argument
    added later (another batch, the segmented loss passes) is other settings, and the
    learner gets the pinned value, not its own default."""
    monkeypatch.chdir(ROOT)
    table = text_learning.Args(updates=16, eval_problems=48)

    assert text_learning.summary_path(table, "untrained").exists()
    config = text_learning.config_of(table, "magrpo", 0, None)
    for later, then in text_learning.ADDED_LATER.items():
        assert getattr(table, later) == then
        other = (not then) if isinstance(then, bool) else then + 1
        changed = dataclasses.replace(table, **{later: other})
        assert text_learning.settings_dir(changed) != text_learning.settings_dir(table)
        if hasattr(config, later):  # a learner setting reaches the learner (eval_envs is the script's own)
            assert getattr(config, later) == then
            assert getattr(text_learning.config_of(changed, "magrpo", 0, None), later) == other


def test_the_incidental_spread_pairs_each_seed_with_itself(text_learning):
    import incidental_spread

    assert incidental_spread.parse_change("sample_batch_size=8") == ("sample_batch_size", 8)
    assert incidental_spread.parse_change("sampler=torch") == ("sampler", "torch")
    with pytest.raises(SystemExit, match="field=value"):
        incidental_spread.parse_change("batch=8")
    base = {("a", 0): 0.30, ("a", 1): 0.20, ("b", 0): 0.5}
    changed = {("a", 0): 0.25, ("a", 1): 0.30, ("a", 2): 0.9}  # ("a", 2) has no base run: left out
    assert incidental_spread.spread(base, changed) == {"runs": 2, "mean_abs": 0.075, "max_abs": 0.1}
    other = {("a", 0): 0.30, ("b", 0): 0.2}  # pooled with the first change: four pairs
    assert incidental_spread.spread(base, changed, other) == {"runs": 4, "mean_abs": 0.1125, "max_abs": 0.3}


def test_a_run_folder_without_its_result_is_named_not_overwritten(text_learning, tmp_path):
    args = text_learning.Args(summaries=str(tmp_path / "summaries"), out_dir=str(tmp_path / "runs"), model="tiny")
    out = text_learning.settings_dir(args)
    (out / "grpo-seed0").mkdir(parents=True)
    (out / "grpo-seed0" / "metrics.jsonl").write_text("{}\n")  # a run cut short, or made for other summaries

    with pytest.raises(SystemExit, match="holds a run whose result is not in .*new --out-dir"):
        text_learning.trained_run(args, "grpo", 0, out)
    assert not text_learning.summary_path(args, "grpo-seed0").exists()


def test_the_compare_harness_states_the_measured_incidental_spread():
    """``deliberate compare text`` prints how far one seed moved under incidental changes:
    the numbers of the committed measurement, not a figure written by hand."""
    from algorithms.text.compare import INCIDENTAL_SPREAD, incidental_line

    pooled = json.loads((ROOT / "benchmarks" / "results" / "incidental_spread.json").read_text())["results"]["pooled"]
    assert INCIDENTAL_SPREAD["runs"] == pooled["runs"] >= 4
    assert f"{INCIDENTAL_SPREAD['largest']:.3f}" == f"{pooled['max_abs']:.3f}"  # as printed
    assert f"{INCIDENTAL_SPREAD['mean']:.3f}" == f"{pooled['mean_abs']:.3f}"
    assert f"up to {pooled['max_abs']:.3f}" in incidental_line()


def test_a_rerun_of_one_seed_without_the_untrained_pair_says_what_it_finished(text_learning, tmp_path):
    """The README's re-run of one seed (``--parts trained``, new ``--summaries``) ends by
    naming its held-out result, not "nothing finished"."""
    args = text_learning.Args(algos=("softrankpo",), seeds=(1,), summaries=str(tmp_path / "summaries"), out_dir=str(tmp_path / "runs"))
    path = text_learning.summary_path(args, "softrankpo-seed1")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"algo": "softrankpo", "seed": 1, "after": {"eval/correct": 0.3125}}))

    with pytest.raises(SystemExit, match=r"no untrained pair \(a\).*softrankpo seed 1: held-out 0.312"):
        text_learning.tabulate(args, text_learning.settings_dir(args))


def test_a_table_of_runs_kept_elsewhere_leaves_the_tracked_results_alone(text_learning, tmp_path, monkeypatch):
    """``--summaries`` elsewhere (a re-run of one's own) writes its table into its own
    folder; the tracked ``benchmarks/results/text_learning.json`` and figure stay."""
    args = text_learning.Args(algos=("magrpo",), seeds=(0,), summaries=str(tmp_path / "summaries"), out_dir=str(tmp_path / "runs"))
    after = {"eval/correct": 0.25, "eval/truncated_share": 0.1, "eval/mean_completion_tokens": 20.0, "eval/asked_form_share": 0.5}
    example = {"problem": "1 + 1", "answer": "2", "agent_0": {"text": "The answer is 2.", "finish": "stop"}}
    made = text_learning.provenance()
    for name, record in (("untrained", {"after": after, "examples": [example]}),
                         ("magrpo-seed0", {"algo": "magrpo", "seed": 0, "after": after, "curve": [0.1], "examples": [example]})):
        path = text_learning.summary_path(args, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**record, "provenance": made}))
    monkeypatch.setattr(text_learning, "write_results", lambda *a: pytest.fail("wrote the tracked results"))
    monkeypatch.setattr(text_learning, "plot", lambda *a: pytest.fail("drew the tracked figure"))
    out = text_learning.settings_dir(args)
    out.mkdir(parents=True)

    text_learning.tabulate(args, out)

    assert json.loads((out / "results.json").read_text())["runs"][0]["after"]["eval/correct"] == 0.25
