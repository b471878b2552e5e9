"""The numbered examples run end to end with tiny budgets (the learner examples are
exercised in tests/algorithms/test_examples_learning.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[1] / "examples"


def run_example(name: str, *args: str, timeout: int = 300, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_01_random_team():
    out = run_example("01_random_team.py", "--episodes", "1", "--max-rounds", "2")
    assert "round 2/2" in out and "team reward" in out


def test_02_baselines():
    out = run_example("02_baselines.py", "--n-problems", "16", "--num-envs", "8", "--max-rounds", "2")
    assert "oracle" in out and "best heuristic" in out


@pytest.mark.parametrize("command", [["tasks", "list"], ["tasks", "show", "arithmetic"]])
def test_cli_tasks(command):
    result = subprocess.run([sys.executable, "-m", "algorithms.cli", *command], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "arithmetic" in result.stdout
    assert "``" not in result.stdout  # Sphinx literals read as one pair of backquotes


def test_cli_run_simulated(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "algorithms.cli", "run", "--team", "simulated", "--n-problems", "16",
         "--run-dir", str(tmp_path / "t")],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "SIMULATED" in result.stdout
    folder = tmp_path / "t"
    assert (folder / "accuracy_per_round.png").stat().st_size > 0
    assert (folder / "reliability.png").stat().st_size > 0
    record = json.loads((folder / "results.json").read_text())
    assert record["model_id"].startswith("simulated:")
    assert [r["policy"] for r in record["results"]] == ["independent", "debate", "minority-concedes", "confidence-threshold"]
    independent = record["results"][0]
    assert independent["accuracy"][0] == independent["accuracy"][-1]  # always PERSIST changes nothing
    assert independent["action_shares"]["persist"] == 1.0


def test_07_real_llm_team(tmp_path):
    cache = str(tmp_path / "cache.sqlite")
    args = ("--n-problems", "2", "--max-tokens", "24", "--cache", cache)
    out = run_example("07_real_llm_team.py", *args)
    assert "ctranslate2:SmolLM2-135M-Instruct" in out and "by logprob" in out
    assert run_example("07_real_llm_team.py", *args) == out  # replayed from the cache, identically


@pytest.mark.parametrize(
    ("name", "module", "args"),
    [
        ("10_rllib.py", "ray.rllib", ["--batch-size", "64"]),
        ("11_torchrl.py", "torchrl", ["--frames-per-batch", "24", "--minibatch-size", "12", "--epochs", "1"]),
        ("12_benchmarl.py", "benchmarl", ["--frames-per-batch", "24"]),
    ],
)
def test_ecosystem_tool_examples(name, module, args):
    pytest.importorskip(module, reason=f"examples/{name} needs {module}: pip install 'deliberation-env[integrations]'")
    out = run_example(name, "--iterations", "2", "--eval-problems", "8", *args, timeout=600)  # Ray starts slowly
    assert "iteration 2: " in out or "2 iterations" in out
    assert "held-out consensus accuracy: untrained" in out


def test_13_function_protocol_trains_on_a_users_jsonl(tmp_path):
    data = tmp_path / "mine.jsonl"
    data.write_text("".join(json.dumps({"question": f"Say {w}.", "answer": w}) + "\n" for w in ("yes", "no", "up", "down", "red", "blue")))
    out = run_example("13_function_protocol.py", str(data), "--updates", "1", cwd=tmp_path)
    assert "update 1: joint reward" in out
    (folder,) = (tmp_path / "runs" / "train").iterdir()  # a Python caller's run gets its folder, as the command's does
    assert {"config.json", "metrics.jsonl", "checkpoint.safetensors", "summary.json"} <= {p.name for p in folder.iterdir()}


def test_14_tiny_learns_runs_and_its_protocol_reaches_the_command_line(tmp_path):
    out = run_example("14_tiny_learns.py", "--updates", "1", cwd=tmp_path)
    assert "update 1: share of lowercase letters" in out and "in 1 updates" in out
    from algorithms import cli

    cli.main(["train", "text", "grpo", "--protocol", f"{EXAMPLES / '14_tiny_learns.py'}:protocol", "--model", "tiny",
              "--finetune", "full", "--max-new-tokens", "4", "--updates", "1", "--no-progress", "--run-dir", str(tmp_path / "cli")])  # fmt: skip
    (record,) = [json.loads(line) for line in (tmp_path / "cli" / "metrics.jsonl").read_text().splitlines()]
    assert 0 < record["rewards/joint/mean"] < 1  # the letters' share of random bytes: neither none nor all


def test_15_custom_text_learner_joins_a_comparison_with_its_own_metrics(tmp_path):
    out = run_example("15_custom_text_learner.py", "--updates", "1", "--out-dir", str(tmp_path / "cmp"), cwd=tmp_path)
    assert "rloo" in out and "grpo" in out
    record = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert "adv/loo_baseline" in record["summary"]["rloo"] and "adv/loo_baseline" not in record["summary"]["grpo"]
    assert json.loads((tmp_path / "cmp" / "rloo" / "seed0" / "config.json").read_text())["loo_scale"] == 1.0
