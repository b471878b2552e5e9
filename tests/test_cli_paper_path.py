"""The paper-scale path from one command, run for real on a tiny GSM8K-format fixture:
``deliberate run --task gsm8k --path DIR --team llamacpp:<gguf>``, the same against an
OpenAI-compatible server (llama.cpp's own, started on a free local port), and the paper
configs of ``examples/configs/`` with their team pointed at that server.

Every run is 2 problems, 1 round, 8 tokens per answer, with a response cache of its own.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import llama_server

from agents.cache import cache_stats
from agents.llamacpp_backend import default_model_path

CONFIGS = Path(__file__).parents[1] / "examples" / "configs"
MAX_TOKENS = 8
SERVED_MODEL = "smollm2"
PROBLEMS = [
    {"question": "Tom has 3 apples and buys 4 more. How many apples does he have?", "answer": "3 + 4 = 7\n#### 7"},
    {"question": "A box holds 5 pens. How many pens are in 2 boxes?", "answer": "2 * 5 = 10\n#### 10"},
]


@pytest.fixture(scope="module")
def gsm8k_dir(tmp_path_factory) -> Path:
    """A GSM8K release layout (train.jsonl, test.jsonl) with two problems per split."""
    folder = tmp_path_factory.mktemp("gsm8k")
    for split in ("train", "test"):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    return folder


@pytest.fixture(scope="module")
def server_url(tmp_path_factory) -> str:
    """``python -m llama_cpp.server`` with the cached SmolLM2 GGUF (the ``server`` extra);
    yields its OpenAI-compatible base URL."""
    pytest.importorskip("llama_cpp.server.app", reason="the llama.cpp server is in the 'server' extra")
    with llama_server(tmp_path_factory.mktemp("server"), SERVED_MODEL, n_ctx=2048) as (base_url, _):
        yield base_url


def deliberate(*args: str) -> str:
    """Run ``deliberate ARGS`` as a user would; return its output."""
    result = subprocess.run(
        [sys.executable, "-m", "algorithms.cli", *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def tiny_run(tmp_path: Path, *args: str) -> dict:
    """``deliberate run ARGS`` on 2 problems, 1 round, 8 tokens; its results.json."""
    deliberate(
        "run", *args, "--n-problems", "2", "--max-rounds", "1", "--max-tokens", str(MAX_TOKENS),
        "--temperature", "0.7", "--policies", "independent", "debate", "--num-envs", "2",
        "--cache", str(tmp_path / "cache.sqlite"), "--run-dir", str(tmp_path / "t"),
    )
    return json.loads((tmp_path / "t" / "results.json").read_text())


def check_record(record: dict, cache: Path, model_id: str) -> None:
    """The table's rows are there, and every generation honoured the token limit."""
    assert record["model_id"] == model_id
    assert [r["policy"] for r in record["results"]] == ["independent", "debate"]
    assert [r["policy"].split(" k=")[0] for r in record["compute_matched"]] == ["single agent", "self-consistency"]
    assert record["config"]["env"]["task"] == "gsm8k" and record["config"]["n_problems"] == 2
    stats = cache_stats(cache)
    assert list(stats["models"]) == [model_id]
    assert 0 < stats["completion_tokens"] <= MAX_TOKENS * stats["generations"]


def test_run_gsm8k_with_a_llamacpp_gguf_team(gsm8k_dir, tmp_path):
    gguf = default_model_path()
    record = tiny_run(tmp_path, "--task", "gsm8k", "--path", str(gsm8k_dir), "--team", f"llamacpp:{gguf}")
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    check_record(record, tmp_path / "cache.sqlite", f"llamacpp:SmolLM2-135M-Instruct-Q4_1@sha256:{digest[:32]}")
    assert record["config"]["env"]["temperature"] == 0.7


def test_run_gsm8k_against_an_openai_compatible_llamacpp_server(gsm8k_dir, server_url, tmp_path):
    team = f"openai:{server_url}#{SERVED_MODEL}"
    record = tiny_run(tmp_path, "--task", "gsm8k", "--path", str(gsm8k_dir), "--team", team)
    check_record(record, tmp_path / "cache.sqlite", f"openai:{SERVED_MODEL}@{server_url}")


def test_the_mpdf_main_table_config_runs_against_a_local_server(gsm8k_dir, server_url, tmp_path):
    team = f"openai:{server_url}#{SERVED_MODEL}"
    record = tiny_run(tmp_path, "--config", str(CONFIGS / "mpdf_main_table.yaml"), "--path", str(gsm8k_dir),
                      "--team", team)
    check_record(record, tmp_path / "cache.sqlite", f"openai:{SERVED_MODEL}@{server_url}")
    assert record["config"]["env"]["n_agents"] == 3  # the file's team size, not overridden


def test_the_mpdf_softrankpo_config_trains_against_a_local_server(gsm8k_dir, server_url, tmp_path):
    team = f"openai:{server_url}#{SERVED_MODEL}"
    run_dir = tmp_path / "run"
    deliberate(
        "train", "meta", "softrankpo", "--config", str(CONFIGS / "mpdf_softrankpo_gsm8k.yaml"), "--path", str(gsm8k_dir),
        "--team", team, "--max-rounds", "1", "--max-tokens", str(MAX_TOKENS),
        "--cache", str(tmp_path / "cache.sqlite"), "--updates", "1", "--sft-updates", "0",
        "--eval-problems", "2", "--problem-pool", "2", "--seed-pool", "1", "--groups-per-update", "1", "--group-size", "2",
        "--run-dir", str(run_dir), "--no-progress",
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert 0 <= summary["after"]["eval/consensus_accuracy"] <= 1
    config = json.loads((run_dir / "config.json").read_text())
    assert (config["algo"], config["env"]["task"], config["env"]["team"]) == ("softrankpo", "gsm8k", team)
    stats = cache_stats(tmp_path / "cache.sqlite")
    assert 0 < stats["completion_tokens"] <= MAX_TOKENS * stats["generations"]


@pytest.mark.parametrize("path", sorted(CONFIGS.iterdir()), ids=lambda path: path.name)
def test_every_paper_config_loads_and_validates(path):
    from algorithms import cli
    from algorithms.core import config_files

    command = config_files.read(path)["command"]
    cfg = cli.parse([*command.split(), "--config", str(path)]).command.command
    assert cli.COMMANDS[type(cfg)][0] == command
