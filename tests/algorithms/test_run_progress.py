"""``deliberate run`` shows each evaluation's progress on stderr, the compute-matched rows
included, and ``--no-progress`` silences it without changing a result."""

from __future__ import annotations

import json
import subprocess
import sys


def run(tmp_path, name: str, *flags: str) -> tuple[dict, str]:
    folder = tmp_path / name
    result = subprocess.run(
        [sys.executable, "-m", "algorithms.cli", "run", "--team", "simulated", "--n-problems", "8",
         "--run-dir", str(folder), *flags],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads((folder / "results.json").read_text()), result.stderr


def test_run_reports_every_evaluation_and_no_progress_changes_nothing(tmp_path):
    shown, err = run(tmp_path, "shown")
    for label in ("eval independent", "eval debate", "eval single agent", "eval self-consistency k="):
        assert label in err
    assert "24/24" in err  # 8 problems x (round 0 + 2 rounds), counted round by round
    quiet, err = run(tmp_path, "quiet", "--no-progress")
    assert err == ""
    assert quiet["results"] == shown["results"] and quiet["compute_matched"] == shown["compute_matched"]
