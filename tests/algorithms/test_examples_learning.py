"""The learning tutorials (examples 03-06) run end to end with tiny budgets."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_03_train_softrankpo():
    out = run_example(
        "03_train_softrankpo.py", "--updates", "2", "--sft-updates", "1", "--eval-problems", "20"
    )
    assert "softrankpo: held-out consensus accuracy" in out and "sft: held-out" in out


def test_04_compare_optimizers(tmp_path):
    out = run_example(
        "04_compare_optimizers.py",
        "--updates",
        "1",
        "--sft-updates",
        "1",
        "--seeds",
        "1",
        "--reward-scales",
        "1",
        "--out-dir",
        str(tmp_path),
    )
    assert "magrpo@1" in out and "oracle" in out
    assert (tmp_path / "learning_curves.png").is_file() and (tmp_path / "compare.json").is_file()


def test_05_custom_learner_is_short_and_joins_a_comparison(tmp_path):
    assert len((EXAMPLES / "05_custom_learner.py").read_text().splitlines()) < 120
    out = run_example("05_custom_learner.py", "--updates", "2", "--seeds", "1", "--out-dir", str(tmp_path))
    assert "reinforce@1" in out and "softrankpo@1" in out and "(1 seed)" in out
    assert "reinforce@1" in json.loads((tmp_path / "compare.json").read_text())["summary"]["learners"]


@pytest.mark.filterwarnings("ignore")
def test_06_sb3_ppo():
    out = run_example(
        "06_sb3_ppo.py", "--total-timesteps", "256", "--num-copies", "2", "--eval-problems", "10"
    )
    assert "after PPO" in out
