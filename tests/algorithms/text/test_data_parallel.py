"""Data-parallel training under ``torchrun`` (issue 32): two ``gloo`` processes give the
one-process update, a run of two processes resumes in one, and a run whose rank 1 dies is
restarted by ``torchrun --max-restarts`` and ends where an uninterrupted run ends.

The runs are ``deliberate train text grpo`` as a user types it, on the tiny random Llama
and a protocol whose reward always varies; GRPO with two passes of two minibatches and a
KL term exercises every shared step (rollouts, scoring, minibatch rows), three groups on
two processes an uneven share, two turns the env's feedback between turns, and held-out evaluations run with them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import free_port

from algorithms import cli
from algorithms.core.checkpoints import load_checkpoint

HERE = Path(__file__).parent
PROTOCOL = "from text_learner_fakes import HashProtocol\n\nprotocol = HashProtocol()\n"
"""A module in the run's working directory: the protocol by its path (``./hash_task.py:protocol``)."""
SETTINGS = ["--model", "tiny", "--protocol", "./hash_task.py:protocol", "--groups-per-update", "3", "--group-size", "2",
            "--max-new-tokens", "6", "--max-turns", "2", "--update-epochs", "2", "--num-minibatches", "2",
            "--kl-coef", "0.1", "--learning-rate", "0.003", "--checkpoint-interval", "1", "--eval-problems", "4",
            "--no-progress"]  # fmt: skip
DIES = """\
import os

from algorithms.cli import main
from algorithms.text.base import TextPolicyGradientLearner

train_step = TextPolicyGradientLearner.train_step


def train_step_or_die(self):
    # Rank 1 of the first attempt dies before update 3: torchrun restarts both ranks.
    if self.update == 2 and os.environ["RANK"] == "1" and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
        open("rank-1-died", "w").close()
        os._exit(1)
    return train_step(self)


TextPolicyGradientLearner.train_step = train_step_or_die
main()
"""
"""A ``deliberate`` whose rank 1 dies once, mid-run (the test's hook, outside the package)."""


def train_args(updates: int, run_dir: Path, *extra: str) -> list[str]:
    """``deliberate``'s arguments for the test's run of ``updates`` updates in ``run_dir``."""
    return ["train", "text", "grpo", *SETTINGS, "--updates", str(updates), "--run-dir", str(run_dir), *extra]


def torchrun(folder: Path, program: list[str], *options: str) -> subprocess.CompletedProcess:
    """``torchrun --nproc-per-node 2 OPTIONS PROGRAM`` in ``folder``, one thread per process."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(HERE), str(folder)])}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *options, *program]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-20000:]
    return done


def train_here(folder: Path, args: list[str]) -> None:
    """``deliberate ARGS`` in this process, in ``folder``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.syspath_prepend(str(HERE))
        cli.main(args)


def weights(run_dir: Path) -> dict[str, torch.Tensor]:
    """The trainable weights of ``run_dir``'s checkpoint, flat."""
    state = load_checkpoint(run_dir / "checkpoint.safetensors")
    return {f"{agent}/{name}": tensor for agent, part in state["weights"].items() for name, tensor in part.items()}


def metrics(run_dir: Path) -> list[dict[str, float]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def assert_same_run(ours: Path, reference: Path) -> None:
    """The same updates (within float noise of other batch shapes): weights and logged metrics."""
    expected, got = weights(reference), weights(ours)
    assert expected.keys() == got.keys()
    for name, tensor in expected.items():
        torch.testing.assert_close(got[name], tensor, rtol=1e-4, atol=1e-5, msg=name)
    assert [line["step"] for line in metrics(ours)] == [line["step"] for line in metrics(reference)]
    for line, want in zip(metrics(ours), metrics(reference), strict=True):
        keys = ("rewards/joint/mean", "rewards/hash/mean", "tokens/agent_0", "losses/policy", "losses/kl", "adv/abs_mean")
        if line["step"] == 0:  # the evaluation before the first update
            keys = tuple(key for key in want if key.startswith("eval/"))
        for key in keys:
            assert line[key] == pytest.approx(want[key], rel=1e-4, abs=1e-6), key
        assert line["episodes"] == want["episodes"]
    summary, expected_summary = (json.loads((folder / "summary.json").read_text()) for folder in (ours, reference))
    assert summary["after"] == pytest.approx(expected_summary["after"])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The working directory of every run, with the protocol module."""
    folder = tmp_path_factory.mktemp("data-parallel")
    (folder / "hash_task.py").write_text(PROTOCOL)
    return folder


@pytest.fixture(scope="module")
def one_process(folder) -> Path:
    """The reference: one process, 2 updates (``two``), then continued to 3 (``three``)."""
    train_here(folder, train_args(2, folder / "one"))
    shutil.copytree(folder / "one", folder / "one-at-2")
    train_here(folder, train_args(3, folder / "one", "--resume"))
    return folder


@pytest.fixture(scope="module")
def two_processes(folder) -> Path:
    """Two gloo processes, 2 updates, through ``python -m algorithms.cli``."""
    done = torchrun(folder, ["-m", "algorithms.cli", *train_args(2, folder / "two")])
    (folder / "two.stdout").write_text(done.stdout)
    return folder / "two"


def test_two_gloo_processes_make_the_one_process_updates(one_process, two_processes):
    assert_same_run(two_processes, one_process / "one-at-2")
    summary = json.loads((two_processes / "summary.json").read_text())
    assert summary["algo"] == "grpo"
    assert summary["before"] == pytest.approx(json.loads((one_process / "one-at-2" / "summary.json").read_text())["before"])
    assert {p.name for p in (two_processes / "adapters").iterdir()} >= {"agent_0", "agent_1"}
    printed = (two_processes.parent / "two.stdout").read_text()
    assert printed.count("wrote ") == 1 and "summary.json" in printed  # rank 0 alone prints, once it has written


def test_two_nodes_joined_by_a_rendezvous_make_the_one_process_updates(folder, one_process):
    """README's several-node command (``--nnodes 2 --rdzv-backend c10d``), its two machines
    played by two ``torchrun`` launchers on this one, sharing the run folder as nodes share
    a file system: the node of rank 1 has ``LOCAL_RANK`` 0 too, and must neither write nor
    print."""
    port = free_port()  # the rendezvous's
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(HERE), str(folder)])}
    rendezvous = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
                  "--rdzv-id", "two-nodes"]  # fmt: skip
    command = [sys.executable, "-m", "torch.distributed.run", *rendezvous, "-m", "algorithms.cli", *train_args(2, folder / "nodes")]
    nodes = [subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    printed = [node.communicate(timeout=600) for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], [err[-5000:] for _, err in printed]
    assert_same_run(folder / "nodes", one_process / "one-at-2")
    assert json.loads((folder / "nodes" / "config.json").read_text())["world_size"] == 2
    assert sorted(out.count("wrote ") for out, _ in printed) == [0, 1]  # rank 0's node alone writes and prints


def test_a_run_of_two_processes_resumes_in_one(folder, one_process, two_processes):
    shutil.copytree(two_processes, folder / "two-then-one")
    train_here(folder, train_args(3, folder / "two-then-one", "--resume"))
    assert_same_run(folder / "two-then-one", one_process / "one")


def test_a_rank_that_dies_is_restarted_from_the_checkpoint_and_the_run_ends_as_one_uninterrupted(folder, one_process):
    (folder / "dies.py").write_text(DIES)
    done = torchrun(folder, ["dies.py", *train_args(3, folder / "restarted")], "--max-restarts", "1")
    assert (folder / "rank-1-died").exists()  # the first attempt did die
    assert done.stderr.count("torchrun restarted the workers (restart 1): continuing the run in") == 1  # rank 0 says so
    assert_same_run(folder / "restarted", one_process / "one")


def test_restarts_need_a_run_folder_to_continue(folder, capsys):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHELASTIC_MAX_RESTARTS", "1")
        with pytest.raises(SystemExit):
            train_here(folder, ["train", "text", "grpo", *SETTINGS, "--updates", "1"])
    assert "torchrun --max-restarts continues a failed run from its folder: give --run-dir" in capsys.readouterr().err


def test_a_restarted_comparison_continues_in_its_folder(folder, capsys):
    """A client: under torchrun --max-restarts, compare text refused every restarted attempt
    ("holds a run already: add --resume") where train text continued; and without --out-dir
    a restarted attempt would start over in a new folder."""
    compare = ["compare", "text", "--algos", "grpo", "--seeds", "1", *SETTINGS[:-3], "--eval-problems", "0",
               "--no-progress", "--updates", "1"]  # fmt: skip
    out = folder / "compare-restarted"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TORCHELASTIC_MAX_RESTARTS", "1")
        with pytest.raises(SystemExit):
            train_here(folder, compare)
        assert "give --out-dir" in capsys.readouterr().err
        train_here(folder, [*compare, "--out-dir", str(out)])  # the first attempt
        patch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
        train_here(folder, [*compare, "--out-dir", str(out), "--updates", "2"])  # restarted: continues, no refusal
    lines = (out / "grpo" / "seed0" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2]


def test_compare_text_under_torchrun_writes_one_folder_from_rank_0(folder):
    """Each rank named its own folder (by the second it started), rank 1 wrote the
    comparison's files too, and both printed the table. Now the ranks share rank 0's
    folder, train each run data-parallel, and rank 0 alone writes and prints."""
    work = folder / "compare-work"
    work.mkdir()
    (work / "hash_task.py").write_text(PROTOCOL)
    compare = ["compare", "text", "--algos", "grpo", "--seeds", "1", *SETTINGS[:-3], "--eval-problems", "2",
               "--checkpoint-interval", "1", "--no-progress", "--updates", "1"]  # fmt: skip
    done = torchrun(work, ["-m", "algorithms.cli", *compare])
    (made,) = (work / "runs" / "compare").iterdir()
    assert (made / "compare.json").is_file() and (made / "grpo" / "seed0" / "checkpoint.safetensors").is_file()
    assert json.loads((made / "grpo" / "seed0" / "config.json").read_text())["world_size"] == 2
    assert done.stdout.count("wrote") == 1 and "rank 1" not in done.stderr


@pytest.mark.parametrize("command", [["train", "meta", "grpo", "--updates", "1"], ["run", "--team", "simulated"]])
def test_a_command_that_runs_in_one_process_refuses_torchrun(command, capsys, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(SystemExit):
        cli.main(command)
    assert "runs in one process, not under torchrun (2 processes here" in capsys.readouterr().err


def test_torchruns_failure_report_gets_the_one_line_error(capsys, monkeypatch, tmp_path):
    """torchrun's report of a failed process pointed to how to enable tracebacks; the process
    now writes its one-line error where torchrun reads a root cause (its error file)."""
    error_file = tmp_path / "error.json"
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(error_file))
    with pytest.raises(SystemExit):
        cli.main(["train", "meta", "grpo", "--updates", "1"])
    printed = capsys.readouterr().err.strip().splitlines()[-1]
    assert "not under torchrun" in printed
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    failure = ProcessFailure(local_rank=0, pid=1, exitcode=2, error_file=str(error_file))  # as torchrun reads it
    report = ChildFailedError("deliberate", {0: failure}).format_msg()
    assert f"traceback : {printed}" in report and "To enable traceback" not in report


def test_a_tree_of_rollouts_on_two_processes_makes_the_one_process_update(folder):
    """``--rollout tree`` (B * G^T envs, a group of siblings per node) shares its groups
    among the processes as the parallel rollouts do: each process plays whole trees."""
    tree = ["--rollout", "tree", "--eval-problems", "0", "--checkpoint-interval", "0"]
    train_here(folder, train_args(1, folder / "tree-one", *tree))
    torchrun(folder, ["-m", "algorithms.cli", *train_args(1, folder / "tree-two", *tree)])
    assert_same_run(folder / "tree-two", folder / "tree-one")
    assert metrics(folder / "tree-one")[-1]["adv/abs_mean"] > 0
