"""``deliberate evaluate meta``: a trained meta run's newest checkpoint played on held-out
problems, as the run's own held-out evaluation plays them, into the run's ``evaluations/``
and nothing else of the run. Tiny runs on the simulated team (the fast settings of
``tests/test_cli.py``), trained once for the module: one GRPO update from a fresh network at
a learning rate that turns its greedy policy from CONCEDE everywhere to PERSIST everywhere,
so that the evaluation must have loaded the checkpoint to give the run's last numbers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import refused, stopped_run

from algorithms import cli
from algorithms.text.config import RESOLVED_FIELDS

TINY = ["--team", "simulated", "--difficulty", "3", "--max-rounds", "2", "--groups-per-update", "2", "--group-size", "2",
        "--hidden-size", "16", "--num-heads", "2", "--eval-problems", "8", "--no-progress"]  # fmt: skip
SPLIT_SIZE = 200
"""The problems of arithmetic's test split."""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run of ``train meta grpo``: one update from a fresh network, held-out evaluations of 8 problems."""
    folder = tmp_path_factory.mktemp("evaluate-meta") / "run"
    cli.main(["train", "meta", "grpo", *TINY, "--sft-updates", "0", "--updates", "1", "--learning-rate", "0.05",
              "--run-dir", str(folder)])  # fmt: skip
    return folder


def files_of(folder):
    """Every file under ``folder`` with its bytes, by its path in the folder."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def evaluated(folder, capsys, *options):
    """``deliberate evaluate meta --run-dir FOLDER OPTIONS``: the record of the evaluation
    file it wrote, its path, and what it printed."""
    cli.main(["evaluate", "meta", "--run-dir", str(folder), "--no-progress", *options])
    printed = capsys.readouterr()
    (path,) = [Path(line.split()[1]) for line in printed.out.splitlines() if line.startswith("wrote ")]
    return json.loads(path.read_text(encoding="utf-8")), path, printed


def logged_evaluations(folder):
    """The ``eval/*`` metrics of each evaluation the run in ``folder`` logged, with its step."""
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    return [(record["step"], {key: value for key, value in record.items() if key.startswith("eval/")})
            for record in records if "eval/accuracy" in record]  # fmt: skip


def test_the_evaluation_of_the_runs_problems_is_its_last_and_leaves_the_run_as_it_was(trained, capsys):
    before = files_of(trained)
    record, path, printed = evaluated(trained, capsys, "--eval-problems", "8")

    (_, first), (step, last) = logged_evaluations(trained)
    assert first != last  # the update changed the greedy policy: an untrained network gives the first
    assert record["metrics"] == last  # greedy, the same episodes: equal
    assert (record["update"], step) == (1, 1)
    assert (record["algo"], record["split"], record["problems"], record["checkpoint"]) == ("grpo", "test", 8, "checkpoint.safetensors")
    assert record["accuracy"] == last["eval/consensus_accuracy"]
    assert (record["eval_seed"], record["env_workers"], record["eval_envs"]) == (0, 0, 8)
    assert len(record["checkpoint_sha256"]) == 64 and record["date"] and record["deliberation_env_version"]
    assert path == trained / "evaluations" / "test-8problems-update1.json"
    assert files_of(trained) == {**before, "evaluations/test-8problems-update1.json": path.read_bytes()}  # nothing else changed
    out = " ".join(printed.out.split())
    assert "grpo, update 1: 8 test problems" in out and "eval/consensus_accuracy" in out and "tokens per answer" in out


def test_more_problems_than_the_split_has_plays_the_split_says_so_and_records_the_number(trained, capsys):
    record, path, printed = evaluated(trained, capsys, "--eval-problems", "500")
    assert record["problems"] == SPLIT_SIZE and path.name == f"test-{SPLIT_SIZE}problems-update1.json"
    assert f"--eval-problems=500 is more than the {SPLIT_SIZE} problems of the test split" in printed.err
    everything, _, _ = evaluated(trained, capsys)  # no --eval-problems: the whole split
    assert everything["problems"] == SPLIT_SIZE and everything["metrics"] == record["metrics"]
    some, path, _ = evaluated(trained, capsys, "--split", "train", "--eval-problems", "5")
    assert (some["split"], some["problems"], path.name) == ("train", 5, "train-5problems-update1.json")


def test_a_runs_sft_warm_start_is_evaluated_with_the_settings_its_run_gave_it(tmp_path, capsys):
    run = tmp_path / "warm"
    cli.main(["train", "meta", "grpo", *TINY, "--sft-updates", "1", "--updates", "1", "--run-dir", str(run)])
    capsys.readouterr()
    assert not (run / "sft" / "config.json").exists()  # the warm start's settings are its run's
    record, path, _ = evaluated(run / "sft", capsys, "--eval-problems", "8")
    (_, last), *_ = reversed(logged_evaluations(run / "sft"))
    assert (record["algo"], record["update"], record["metrics"]) == ("sft", 1, last)
    assert path.parent == run / "sft" / "evaluations"


def test_a_missing_folder_no_config_and_a_run_without_checkpoint_are_one_line_errors(trained, tmp_path, capsys):
    missing = refused(capsys, "evaluate", "meta", "--run-dir", str(tmp_path / "nowhere"))
    assert missing == (
        f"deliberate evaluate meta: error: --run-dir {tmp_path / 'nowhere'}: no such folder (give the folder of a run of "
        "deliberate train meta)"
    )
    assert refused(capsys, "evaluate", "meta", "--run-dir", str(tmp_path)) == (
        f"deliberate evaluate meta: error: {tmp_path} holds no config.json: no run of deliberate train meta (give the "
        "folder that train meta --run-dir named)"
    )
    stopped = stopped_run(trained, tmp_path / "stopped")
    assert "holds no checkpoint yet" in refused(capsys, "evaluate", "meta", "--run-dir", str(stopped))
    assert refused(capsys, "evaluate", "meta", "--run-dir", str(trained), "--eval-problems", "0") == (
        "deliberate evaluate meta: error: --eval-problems must be >= 1, got 0"
    )


def test_each_family_names_the_command_that_evaluates_the_others_runs(trained, tmp_path, capsys):
    assert refused(capsys, "evaluate", "text", "--run-dir", str(trained)) == (
        f"deliberate evaluate text: error: {trained} holds a meta run, not a text run: evaluate it with deliberate "
        f"evaluate meta --run-dir {trained}"
    )
    text = tmp_path / "text"
    text.mkdir()
    (text / "config.json").write_text(json.dumps({"algo": "grpo", "model": "tiny", **dict.fromkeys(RESOLVED_FIELDS, "cpu")}))
    assert refused(capsys, "evaluate", "meta", "--run-dir", str(text)) == (
        f"deliberate evaluate meta: error: {text} holds a text run, not a meta run: evaluate it with deliberate "
        f"evaluate text --run-dir {text}"
    )


def test_a_comparisons_folder_names_its_runs(tmp_path, capsys):
    out = tmp_path / "compare"
    cli.main(["compare", "meta", "--algos", "grpo", "--seeds", "1", "--baselines", "random", *TINY, "--updates", "1",
              "--sft-updates", "1", "--eval-interval", "0", "--eval-problems", "4", "--out-dir", str(out)])  # fmt: skip
    capsys.readouterr()
    assert refused(capsys, "evaluate", "meta", "--run-dir", str(out)) == (
        f"deliberate evaluate meta: error: {out} is a comparison's folder: evaluate one of its runs "
        f"({out / 'scale1' / 'grpo' / 'seed0'}, {out / 'sft' / 'seed0'})"
    )
    assert "is a comparison's folder" in refused(capsys, "evaluate", "text", "--run-dir", str(out))


def copied_with(trained, folder, **changes):
    """A copy of the run ``trained`` in ``folder`` whose ``config.json`` has ``changes``
    (``env`` merged into its env)."""
    shutil.copytree(trained, folder)
    record = json.loads((folder / "config.json").read_text())
    record = {**record, **changes, "env": {**record["env"], **changes.get("env", {})}}
    (folder / "config.json").write_text(json.dumps(record))
    return folder


def test_a_learner_of_ones_own_and_a_team_built_in_python_are_evaluated_from_python(trained, tmp_path, capsys):
    own = copied_with(trained, tmp_path / "own", algo="mine")  # what train meta ./mine.py:Mine records
    assert refused(capsys, "evaluate", "meta", "--run-dir", str(own)) == (
        f"deliberate evaluate meta: error: the run in {own} trained 'mine', a learner of your own: evaluate meta rebuilds "
        "the shipped learners (softrankpo, grpo, magrpo, sft); evaluate yours from Python with algorithms.meta.evaluate.evaluate"
    )
    team = "<agents.llm_agent.LLMAgent object at 0x7f0>"  # what a run records of a team given as an instance
    built = copied_with(trained, tmp_path / "built", env={"team": ["simulated", team, "simulated"]})
    assert refused(capsys, "evaluate", "meta", "--run-dir", str(built)).endswith(
        f"trained with the team {team}, an instance built in Python, which its config.json names but cannot rebuild: "
        "evaluate it from Python with algorithms.meta.evaluate.evaluate"
    )


def test_a_checkpoint_of_another_learner_than_its_runs_is_refused(trained, tmp_path, capsys):
    other = tmp_path / "softrankpo"
    cli.main(["train", "meta", "softrankpo", *TINY, "--sft-updates", "0", "--updates", "1", "--run-dir", str(other)])
    capsys.readouterr()
    mixed = tmp_path / "mixed"  # the grpo run with the softrankpo run's checkpoint
    shutil.copytree(trained, mixed)
    shutil.copy(other / "checkpoint.safetensors", mixed / "checkpoint.safetensors")
    before = files_of(mixed)
    assert refused(capsys, "evaluate", "meta", "--run-dir", str(mixed)) == (
        f"deliberate evaluate meta: error: {mixed / 'checkpoint.safetensors'} is a checkpoint of 'softrankpo', not of "
        "grpo, the learner its run recorded"
    )
    assert files_of(mixed) == before  # nothing written


def test_a_run_folder_given_without_its_option_is_offered_run_dir(capsys):
    assert refused(capsys, "evaluate", "meta", "runs/train/x") == (
        "deliberate evaluate meta: error: unexpected argument runs/train/x; did you mean --run-dir runs/train/x?"
    )
