"""Metrics of the text env on hand-computed values, and the coding baselines of
``deliberate run --env text`` with a scripted backend (no LLM)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import deliberation_env as de
from agents.base import Generation
from algorithms.commands.run import RunText, run_text
from algorithms.text import eval as text_eval
from algorithms.text.eval import Episode, accuracy_at_k, pass_at_k, summarize_baseline


# ---------------------------------------------------------------------- metrics by hand
@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (1, 1, 1, 1.0),
        (5, 0, 1, 0.0),
        (5, 2, 1, 2 / 5),
        (5, 2, 2, 1 - 3 / 10),  # C(3, 2) / C(5, 2) = 3 / 10
        (10, 3, 5, 1 - 21 / 252),  # C(7, 5) = 21, C(10, 5) = 252
        (4, 2, 3, 1.0),  # n - c < k: every 3 of 4 contain a correct one
    ],
)
def test_pass_at_k_on_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (3, -1, 1)])
def test_pass_at_k_refuses_impossible_counts(n, c, k):
    with pytest.raises(ValueError, match=f"n={n}, c={c}, k={k}"):
        pass_at_k(n, c, k)


def test_accuracy_at_k_is_the_expected_best_of_k():
    scores = [0.2, 1.0, 0.0, 0.6]
    # k = 2: the 6 pairs' maxima: .2 1 .6 1 1 .6 -> 4.4 / 6
    assert accuracy_at_k(scores, 1) == pytest.approx(0.45)
    assert accuracy_at_k(scores, 2) == pytest.approx(4.4 / 6)
    assert accuracy_at_k(scores, 4) == pytest.approx(1.0)
    binary = [1.0, 0.0, 0.0, 1.0, 0.0]
    assert accuracy_at_k(binary, 2) == pytest.approx(pass_at_k(5, 2, 2))
    with pytest.raises(ValueError, match="k=5"):
        accuracy_at_k(scores, 5)
    with pytest.raises(ValueError, match="finite"):
        accuracy_at_k([float("nan")], 1)


def episode(problem, tests, reward, tokens=10, contributions=(1.0, 2.0), cut=0):
    return Episode(problem, reward, {"tests": tests, "syntax": 1.0}, contributions, tokens, 2, cut)


def test_summarize_by_hand():
    episodes = [episode("a", 1.0, 4.0, cut=1), episode("a", 0.5, 2.0), episode("b", 0.0, 1.0), episode("b", 0.0, 1.0, 20, cut=2)]
    summary = summarize_baseline("x", episodes, ks=(1, 2, 3))
    assert summary["problems"] == summary["samples_per_problem"] == 2
    assert summary["reward"] == pytest.approx(2.0)
    assert summary["parts"] == {"tests": pytest.approx(0.375), "syntax": 1.0}
    assert summary["pass@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert summary["pass@2"] == pytest.approx((1.0 + 0.0) / 2)
    assert summary["accuracy@1"] == pytest.approx((0.75 + 0.0) / 2)
    assert "pass@3" not in summary  # more than the samples of a problem
    assert summary["tokens_per_problem"] == 25
    assert summary["truncated_share"] == pytest.approx(3 / 8)  # 3 of the 8 completions were cut
    assert summary["mean_completion_tokens"] == pytest.approx(50 / 8)
    assert "asked_form_share" not in summary  # code has no stated answer
    assert summary["contributions"] == [1.0, 2.0]
    with pytest.raises(ValueError, match="'x': no episode"):
        summarize_baseline("x", [])


def test_summarize_math_reports_accuracy_without_pass_at_k():
    episodes = [
        Episode("a", 1.1, {"correct": 1.0, "format": 1.0}, (0.5, 0.5), 3, 2, 0),
        Episode("b", 0.0, {"correct": 0.0, "format": 0.0}, (0.0, 0.0), 3, 2, 2),
    ]
    summary = summarize_baseline("vote", episodes)
    assert summary["parts"]["correct"] == 0.5 and "pass@1" not in summary
    assert summary["asked_form_share"] == 0.5 and summary["truncated_share"] == 0.5


class PlayedHeldOut:
    """A learner whose held-out play is given: the last turn's reward parts per problem, and
    (completions, cut, tokens)."""

    def __init__(self, finals, counts=(8, 2, 40)):
        self.finals, self.counts = finals, counts

    def play_held_out(self, venv, problem_indices, seed, progress):
        return self.finals, self.counts


def test_a_coding_evaluation_logs_its_pass_rate():
    """A HumanEval user looks for the MAGRPO paper's measure, the share of problems whose
    program passes every test, among the logged ``eval/*`` numbers: it was only the
    ``Evaluation``'s accuracy, and a run logged the mean share of tests passed alone."""
    played = PlayedHeldOut({"tests": [1.0, 0.5, 0.0, 1.0], "joint": [4.0, 2.0, 1.5, 2.5]})
    result = text_eval.evaluate(played, venv=None, problem_indices=range(4), progress=False)
    assert result.metrics["eval/pass_rate"] == result.accuracy == 0.5
    assert result.metrics["eval/tests"] == pytest.approx(0.625)


def test_a_math_evaluation_logs_no_pass_rate():
    played = PlayedHeldOut({"correct": [1.0, 0.0], "format": [1.0, 1.0], "joint": [2.0, 1.0]})
    result = text_eval.evaluate(played, venv=None, problem_indices=range(2), progress=False)
    assert "eval/pass_rate" not in result.metrics and result.accuracy == 0.5


# ---------------------------------------------------------------------- baselines, scripted
class ScriptedCoder:
    """Helper prompts get a helper; main prompts a main function calling it; a single
    agent a function of its own. Each completion costs 7 tokens; prompts are recorded."""

    model_id = "scripted:coder"
    supports_logprobs = False

    def __init__(self):
        self.prompts: list[str] = []

    def generate(self, requests):
        out = []
        for request in requests:
            prompt = request.messages[-1]["content"]
            self.prompts.append(prompt)
            if "Write a helper function" in prompt:
                text = "```python\ndef aux(args):\n    return list(args)[::-1]\n```"
            elif main := re.search(r"Write the function (\w+)", prompt):
                text = f"```python\ndef {main[1]}(*args):\n    values = aux(args)\n    return values[0] if values else None\n```"
            else:
                entry = re.findall(r"def (\w+)", prompt)[-1]
                text = f"```python\ndef {entry}(*args):\n    return None\n```"
            out.append(Generation(text, 10, 7, "stop"))
        return out

    def next_token_logprobs(self, requests):
        raise NotImplementedError


def test_run_text_writes_table_results_and_plot(tmp_path, capsys):
    backend = ScriptedCoder()
    folder = tmp_path / "t"
    record = run_text(RunText(n_problems=2, samples=2, run_dir=str(folder)), backend=backend)
    saved = json.loads((folder / "results.json").read_text())
    assert saved["results"] == record["results"]
    assert (folder / "reward_parts.png").stat().st_size > 0
    by_name = {s["baseline"]: s for s in record["results"]}
    assert list(by_name) == list(text_eval.BASELINES)
    for summary in by_name.values():
        assert summary["problems"] == 2 and summary["samples_per_problem"] == 2
        assert 0.0 <= summary["pass@1"] <= summary["pass@2"] <= 1.0
    # Tokens: 1 completion per problem-sample (single), 2 (concatenation, pipeline), 4 (discussion).
    assert [by_name[b]["tokens_per_problem"] for b in text_eval.BASELINES] == [14, 28, 28, 56]
    assert by_name["single"]["parts"]["helper_defined"] == 0.0  # the helper's text is neutral
    for name in ("concatenation", "pipeline", "discussion"):
        assert by_name[name]["parts"]["helper_defined"] == by_name[name]["parts"]["main_defined"] == 1.0
    assert any("Your partner's helper:\n```python\ndef aux(args):" in p for p in backend.prompts)
    assert any("Your partner's code:" in p for p in backend.prompts)
    out = capsys.readouterr().out
    assert "pipeline" in out and "discussion" in out
    assert f"wrote {folder / 'results.json'}, {folder / 'reward_parts.png'}" in " ".join(out.split())


def test_run_text_plays_the_split_and_token_budget_it_is_given(tmp_path, capsys):
    """examples/configs/magrpo_coding.yaml evaluated the hash split's 90 test problems (its
    164 cut to them, with a warning), not the paper's HumanEval/0-31 that a trained pair's
    held-out evaluation under ``split_rule: comlrl`` plays, and no option set the budget."""
    budgets: list[tuple[int, float]] = []

    class Recording(ScriptedCoder):
        def generate(self, requests):
            budgets.extend((request.max_tokens, request.top_p) for request in requests)
            return super().generate(requests)

    backend = Recording()
    config = RunText(task_kwargs={"split_rule": "comlrl"}, n_problems=1, max_tokens=64, top_p=0.9, run_dir=str(tmp_path / "t"))
    run_text(config, backend=backend)
    assert set(budgets) == {(64, 0.9)}
    assert backend.prompts and all("def has_close_elements(" in prompt for prompt in backend.prompts)  # HumanEval/0


def test_the_coding_config_file_plays_the_papers_held_out_problems():
    from algorithms.core import config_files

    data = config_files.read(Path(__file__).parents[2] / "examples" / "configs" / "magrpo_coding.yaml")
    data.pop("command")
    config = config_files.build(RunText, data, "magrpo_coding.yaml")
    task = de.tasks.get(config.task, **config.task_kwargs)
    held_out = [problem.id for problem in task.problems(config.split)]
    assert config.n_problems == len(held_out) and held_out == [f"HumanEval/{k}" for k in range(32)]


def test_run_text_refuses_bad_settings_before_any_work():
    with pytest.raises(ValueError, match="--n-problems must be >= 1, got 0"):
        RunText(n_problems=0)
    with pytest.raises(ValueError, match="bad team spec 'smolm2'"):
        RunText(team="smolm2")
    with pytest.raises(ValueError, match=r"--top-p must lie in \(0, 1\], got 0"):
        RunText(top_p=0)


def test_unknown_baseline_is_named():
    from deliberation_env import tasks
    from deliberation_env.text import CodingProtocol

    protocol = CodingProtocol(tasks.get("humaneval"))
    with pytest.raises(ValueError, match="unknown baselines \\['debate'\\]"):
        text_eval.evaluate_baselines(protocol, ScriptedCoder(), 1, baselines=("debate",))


def test_baselines_progress_shows_on_stderr_and_changes_no_summary(capsys):
    from deliberation_env import tasks
    from deliberation_env.text import CodingProtocol

    protocol = CodingProtocol(tasks.get("humaneval"))
    quiet = text_eval.evaluate_baselines(protocol, ScriptedCoder(), 2, progress=False)
    assert capsys.readouterr().err == ""
    shown = text_eval.evaluate_baselines(protocol, ScriptedCoder(), 2, progress=True)
    assert shown == quiet
    assert "coding baselines" in capsys.readouterr().err
