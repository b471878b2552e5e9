"""examples/09_train_llm_team.py runs end to end on the tiny model (as CI runs it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[3] / "examples" / "09_train_llm_team.py"


def test_09_trains_a_tiny_team_and_saves_its_adapters(tmp_path):
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--updates", "2", "--groups", "1", "--group-size", "2",
         "--max-new-tokens", "8", "--run-dir", str(run_dir)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "DELIBERATION_TINY_MODEL": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [row[0] for row in rows] == ["1", "2"]
    logged = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [f"{m['rewards/joint/mean']:.3f}" for m in logged] == [row[1] for row in rows]
    for agent in ("agent_0", "agent_1"):
        assert (run_dir / "adapters" / agent / "adapter_model.safetensors").is_file()
    assert json.loads((run_dir / "summary.json").read_text())["algo"] == "magrpo"
