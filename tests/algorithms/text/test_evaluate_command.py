"""``deliberate evaluate text``: a trained text run's newest checkpoint played on held-out
problems, as the run's own held-out evaluation plays them, into the run's ``evaluations/``
and nothing else of the run. One tiny run of one update, trained once for the module, on a
protocol whose reward is a hash of the texts (so the trained weights' greedy answers score
otherwise than the untrained ones': the evaluation must have loaded them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import refused, stopped_run

from algorithms import cli

HERE = Path(__file__).parent
PROTOCOL = "from text_learner_fakes import HashProtocol\n\nprotocol = HashProtocol()\n"
"""A module in the tests' working directory: the protocol by its path (``./evaluated_task.py:protocol``; a name no
other test imports: the data-parallel tests import ``hash_task``)."""
OWN_PROTOCOL = ["--protocol", "./evaluated_task.py:protocol"]
TINY = ["--model", "tiny", *OWN_PROTOCOL, "--groups-per-update", "1", "--group-size", "2", "--max-new-tokens", "4",
        "--learning-rate", "0.01", "--no-progress"]  # fmt: skip
SPLIT_SIZE = 6
"""The problems of each split of the hash protocol."""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The working directory, with the protocol's module."""
    folder = tmp_path_factory.mktemp("evaluate")
    (folder / "evaluated_task.py").write_text(PROTOCOL)
    return folder


@pytest.fixture(scope="module")
def trained(work):
    """A run of ``train text grpo`` in ``work``: one update, held-out evaluations of 3 problems."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        patch.syspath_prepend(str(HERE))
        cli.main(["train", "text", "grpo", *TINY, "--updates", "1", "--eval-problems", "3", "--run-dir", "run"])
    return work / "run"


@pytest.fixture
def here(work, monkeypatch):
    """The tests run in ``work``, where ``./evaluated_task.py`` imports."""
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(HERE))
    return work


def files_of(folder):
    """Every file under ``folder`` with its bytes, by its path in the folder."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def evaluated(folder, capsys, *options):
    """``deliberate evaluate text --run-dir FOLDER OPTIONS`` (the run's protocol given): the
    record of the evaluation file it wrote, its path, and what it printed."""
    cli.main(["evaluate", "text", "--run-dir", str(folder), *OWN_PROTOCOL, "--no-progress", *options])
    printed = capsys.readouterr()
    (path,) = [Path(line.split()[1]) for line in printed.out.splitlines() if line.startswith("wrote ")]
    return json.loads(path.read_text(encoding="utf-8")), path, printed


def test_the_evaluation_of_the_runs_problems_is_its_last_and_leaves_the_run_as_it_was(trained, here, capsys):
    before = files_of(trained)
    record, path, printed = evaluated(trained, capsys, "--eval-problems", "3")

    first, last = (json.loads(line) for line in (trained / "metrics.jsonl").read_text().splitlines())
    assert first["eval/joint"] != last["eval/joint"]  # the update changed the greedy answers
    assert record["update"] == last["step"] == 1
    assert record["metrics"] == {key: value for key, value in last.items() if key.startswith("eval/")}  # greedy: equal
    assert (record["algo"], record["split"], record["problems"], record["checkpoint"]) == ("grpo", "test", 3, "checkpoint.safetensors")
    assert (record["cut_share"], record["tokens_per_answer"]) == (last["eval/truncated_share"], last["eval/mean_completion_tokens"])
    assert len(record["checkpoint_sha256"]) == 64 and record["date"] and record["deliberation_env_version"]
    assert path == trained / "evaluations" / "test-3problems-update1.json"
    assert files_of(trained) == {**before, "evaluations/test-3problems-update1.json": path.read_bytes()}  # nothing else changed
    out = " ".join(printed.out.split())
    assert "grpo, update 1: 3 test problems" in out and "eval/joint" in out and "tokens per answer" in out


def test_more_problems_than_the_split_has_plays_the_split_says_so_and_records_the_number(trained, here, capsys):
    record, path, printed = evaluated(trained, capsys, "--eval-problems", "50", "--eval-envs", "4")
    assert (record["problems"], record["eval_envs"]) == (SPLIT_SIZE, 4)
    assert f"--eval-problems=50 is more than the {SPLIT_SIZE} problems of the test split" in printed.err
    assert path.name == f"test-{SPLIT_SIZE}problems-update1.json"
    everything, _, _ = evaluated(trained, capsys, "--split", "train")  # no --eval-problems: the whole split
    assert (everything["split"], everything["problems"]) == ("train", SPLIT_SIZE)


def test_a_missing_folder_and_a_run_without_checkpoint_are_one_line_errors(trained, tmp_path, capsys):
    missing = refused(capsys, "evaluate", "text", "--run-dir", str(tmp_path / "nowhere"))
    assert missing == (
        f"deliberate evaluate text: error: --run-dir {tmp_path / 'nowhere'}: no such folder (give the folder of a run of "
        "deliberate train text)"
    )
    stopped = stopped_run(trained, tmp_path / "stopped")
    assert "holds no checkpoint yet" in refused(capsys, "evaluate", "text", "--run-dir", str(stopped))
    assert "holds no config.json" in refused(capsys, "evaluate", "text", "--run-dir", str(tmp_path))


def test_a_run_of_a_protocol_of_ones_own_needs_it_named_again(trained, capsys):
    assert refused(capsys, "evaluate", "text", "--run-dir", str(trained)).endswith(
        "a file of your own: give it again, --protocol ./evaluated_task.py:protocol (reading config.json imports no code)"
    )


def test_a_meta_runs_folder_is_one_line_naming_evaluate_meta(tmp_path, capsys):
    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "config.json").write_text(json.dumps({"algo": "grpo", "run": {"updates": 2}, "recorded_by": "deliberation-env 0.2.0"}))
    assert refused(capsys, "evaluate", "text", "--run-dir", str(meta)) == (
        f"deliberate evaluate text: error: {meta} holds a meta run, not a text run: evaluate it with deliberate evaluate "
        f"meta --run-dir {meta}"
    )
    assert refused(capsys, "evaluate", "text", "--run-dir", str(meta), "--eval-problems", "0") == (
        "deliberate evaluate text: error: --eval-problems must be >= 1, got 0"
    )


def torchrun_evaluate(folder: Path, run: Path, *options: str) -> subprocess.CompletedProcess:
    """``torchrun --nproc-per-node 2 -m algorithms.cli evaluate text --run-dir RUN OPTIONS`` in ``folder``."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(HERE), str(folder)])}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "algorithms.cli",
               "evaluate", "text", "--run-dir", str(run), *OWN_PROTOCOL, "--no-progress", *options]  # fmt: skip
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_two_gloo_processes_share_the_problems_and_rank_0_alone_writes(here, capsys):
    """``torchrun --nproc-per-node 2 -m algorithms.cli evaluate text``: each process plays
    its share of the problems; the evaluation is the one process's, written once."""
    cli.main(["train", "text", "grpo", *TINY, "--groups-per-update", "2", "--updates", "1", "--eval-problems", "0",
              "--run-dir", "two-groups"])  # fmt: skip
    capsys.readouterr()
    alone, _, _ = evaluated(here / "two-groups", capsys, "--eval-problems", "5", "--eval-envs", "2")
    done = torchrun_evaluate(here, here / "two-groups", "--eval-problems", "5", "--eval-envs", "2")
    assert done.returncode == 0, done.stderr[-5000:]
    assert done.stdout.count("wrote ") == 1 and "rank 1" not in done.stderr
    shared = json.loads((here / "two-groups" / "evaluations" / "test-5problems-update1.json").read_text())
    assert (shared["processes"], alone["processes"]) == (2, 1)
    assert shared["metrics"] == pytest.approx(alone["metrics"])


def test_more_processes_than_the_runs_groups_is_one_line_saying_how_many(trained, here):
    done = torchrun_evaluate(here, trained)
    assert done.returncode != 0
    assert "trained 1 group(s) per update, and its learner shares them among the processes: evaluate it on at most 1" in done.stderr


def test_a_run_folder_given_without_its_option_is_offered_run_dir(capsys):
    assert refused(capsys, "evaluate", "text", "runs/train/x") == (
        "deliberate evaluate text: error: unexpected argument runs/train/x; did you mean --run-dir runs/train/x?"
    )
    assert refused(capsys, "evaluate") == "deliberate evaluate: error: name one of meta, text after the command"
    assert refused(capsys, "evaluate", "metta") == "deliberate evaluate: error: unrecognized command metta; did you mean meta?"
