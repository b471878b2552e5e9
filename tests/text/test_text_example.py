"""Example 08 runs end to end with a tiny budget (scripted backend: no model, no network)."""

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "08_text_env.py"


def run_example(*args):
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--episodes", "1", "--max-turns", "2", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_08_text_env_coding_episode():
    out = run_example()
    assert "turn 2/2  protocol coding" in out
    assert "sum_product([10]) -> (11, 10)" in out  # the feedback of turn 1: the program's own result
    assert "reward 2.300" in out and "reward 4.000" in out  # 4 of 5 tests (no structure bonus), then all of them
    assert "leave-one-out contributions" in out


def test_08_text_env_math_episode():
    out = run_example("--task", "arithmetic")
    assert "turn 2/2  protocol math" in out
    assert "leave-one-out contributions" in out
