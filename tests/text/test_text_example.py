"""Example 08 runs end to end with a tiny budget (scripted backend: no model, no network)."""

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "08_text_env.py"


def test_08_text_env():
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--episodes", "1", "--max-turns", "2"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "turn 2/2  protocol math" in result.stdout
    assert "leave-one-out contributions" in result.stdout
