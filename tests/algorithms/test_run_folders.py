"""Each family's library ``train(config)`` owns its run folder (issue 33, item 4): a Python
caller gets the same folder and files as the command, both families write the same
layout, and a start that fails before its first update leaves the folder reusable."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
import torch

import deliberation_env as de
from algorithms.core.config import RunConfig
from algorithms.meta import GRPO, GRPOConfig
from algorithms.meta import train as meta_train
from algorithms.text import TextGRPO, TextGRPOConfig
from algorithms.text import train as text_train
from algorithms.text.config import text_run
from deliberation_env import EnvConfig, TextEnvConfig

LAYOUT = {"config.json", "metrics.jsonl", "checkpoint.safetensors", "summary.json"}
"""What every training run's folder holds, either family."""


def run_settings(run_dir: str | None, **changes) -> dict:
    """A short run, evaluated on 2 held-out problems after every update."""
    return {
        "updates": 2,
        "eval_interval": 1,
        "eval_problems": 2,
        "run_dir": run_dir,
        "progress": False,
        **changes,
    }


def meta_config(run_dir: str | None, **run) -> GRPOConfig:
    return GRPOConfig(env=EnvConfig(team="simulated", difficulty=3, max_rounds=2), run=RunConfig(**run_settings(run_dir, **run)),
                      sft_updates=0, groups_per_update=2, group_size=2, hidden_size=16, num_heads=2)  # fmt: skip


def text_config(run_dir: str | None, **run) -> TextGRPOConfig:
    return TextGRPOConfig(env=TextEnvConfig(task="arithmetic"), run=text_run(**run_settings(run_dir, **run)), model="tiny",
                          groups_per_update=1, group_size=2, max_new_tokens=4, micro_batch_size=4)  # fmt: skip


def test_both_families_train_from_python_into_the_same_layout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    meta_train(meta_config(""))  # "": a new folder, as the command names it
    text_train(text_config(""))
    folders = {
        folder.name.split("-")[0]: folder for folder in (tmp_path / "runs" / "train").iterdir()
    }
    assert set(folders) == {"meta", "text"}
    assert folders["meta"].name.startswith("meta-grpo-seed0-") and folders["text"].name.startswith(
        "text-grpo-seed0-"
    )
    for folder in folders.values():
        assert LAYOUT <= {path.name for path in folder.iterdir()}, folder
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["algo"] == "grpo" and summary["before"] and summary["after"]
        steps = [
            json.loads(line)["step"] for line in (folder / "metrics.jsonl").read_text().splitlines()
        ]
        assert steps == [0, 1, 2]  # one cadence: evaluated first, every update here, and last
        assert json.loads((folder / "config.json").read_text())["algo"] == "grpo"
    # a real client: safetensors wrote the checkpoint and the adapters 0o600 beside 0o644 logs
    umask = os.umask(0)
    os.umask(umask)
    written = [path for folder in folders.values() for path in folder.rglob("*") if path.is_file()]
    assert any(path.name == "adapter_model.safetensors" for path in written)
    assert {path.stat().st_mode & 0o777 for path in written} == {0o666 & ~umask}


def test_no_folder_is_written_for_run_dir_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = meta_train(meta_config(None))
    assert 0 <= result.after["eval/accuracy"] <= 1 and result.run_dir is None
    assert text_train(text_config(None)).run_dir is None
    assert list(tmp_path.iterdir()) == []


class FirstUpdateFails:
    """A learner whose first update fails (a bug, a device out of memory)."""

    def train_step(self):
        raise RuntimeError("out of memory")


class Crashing(FirstUpdateFails, GRPO):
    """The meta family's."""

    name = "crashing"  # a learner of one's own is recorded by a name of its own


class CrashingText(FirstUpdateFails, TextGRPO):
    """The text family's."""

    name = "crashing"


@pytest.mark.parametrize("family", ["meta", "text"])
def test_a_failed_start_leaves_its_run_folder_reusable(tmp_path, family):
    train, config, crashing = {
        "meta": (meta_train, meta_config, Crashing),
        "text": (text_train, text_config, CrashingText),
    }[family]
    run_dir = tmp_path / "run"
    with pytest.raises(RuntimeError, match="out of memory"):
        train(config(str(run_dir)), learner=crashing)
    assert (run_dir / "config.json").is_file() and not (run_dir / "checkpoint.safetensors").exists()
    with pytest.warns(UserWarning, match="a start that failed: reusing it"):
        train(
            config(str(run_dir), updates=1)
        )  # corrected, other settings, no --resume: the folder is reused
    steps = [
        json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()
    ]
    assert steps == [0, 1]  # the failed start's log is not kept
    with pytest.raises(ValueError, match="holds a run already: add --resume"):
        train(config(str(run_dir)))  # now it holds a run


def test_a_resume_without_a_checkpoint_says_that_it_starts_over(tmp_path):
    """A real client resumed a folder of logged updates whose checkpoint was gone: the run
    started from update 0 in silence."""
    run_dir = str(tmp_path / "run")
    meta_train(meta_config(run_dir))
    (tmp_path / "run" / "checkpoint.safetensors").unlink()
    with pytest.warns(UserWarning, match="holds logged updates but no checkpoint .* starts over from update 0"):
        meta_train(meta_config(run_dir, resume=True))
    steps = [json.loads(line)["step"] for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert steps == [0, 1, 2]



def test_a_learners_own_learn_refuses_a_folder_that_holds_a_run_unless_it_resumes(tmp_path):
    """A real client called ``learner.learn(RunConfig(run_dir=...))`` twice on one folder:
    the second call started over and overwrote the first run's log and checkpoint."""
    config = meta_config(str(tmp_path / "run"))

    def learner() -> GRPO:
        return GRPO(config, de.vector_env(config.num_envs, **config.env.kwargs()))

    learner().learn(config.run)
    log = (tmp_path / "run" / "metrics.jsonl").read_text()
    checkpoint = (tmp_path / "run" / "checkpoint.safetensors").read_bytes()
    with pytest.raises(ValueError, match=r"holds a run \(2 updates logged, and a checkpoint\): continue it with resume=True"):
        learner().learn(config.run)
    assert (tmp_path / "run" / "metrics.jsonl").read_text() == log
    assert (tmp_path / "run" / "checkpoint.safetensors").read_bytes() == checkpoint
    resumed = learner()
    resumed.learn(dataclasses.replace(config.run, updates=3, resume=True))
    assert resumed.update == 3

def test_a_moved_warm_start_resumes_and_another_one_is_refused(tmp_path):
    """A comparison's runs name their warm start by path inside the comparison's folder:
    moving the folder made its resume fail. The run records the warm start's digest, so the
    same checkpoint at another path resumes and another checkpoint is refused."""
    for seed, name in enumerate(("sft_a", "sft_b")):
        meta_train(dataclasses.replace(meta_config(str(tmp_path / name), updates=1), seed=seed))
    run_dir = str(tmp_path / "run")
    warm = str(tmp_path / "sft_a" / "checkpoint.safetensors")
    meta_train(dataclasses.replace(meta_config(run_dir, updates=1), warm_start=warm))
    (tmp_path / "sft_a").rename(tmp_path / "moved")
    moved = str(tmp_path / "moved" / "checkpoint.safetensors")
    meta_train(dataclasses.replace(meta_config(run_dir, updates=2, resume=True), warm_start=moved))
    other = str(tmp_path / "sft_b" / "checkpoint.safetensors")
    with pytest.raises(ValueError, match="warm_start_sha256 is '[0-9a-f]+' there and '[0-9a-f]+' here"):
        meta_train(dataclasses.replace(meta_config(run_dir, updates=3, resume=True), warm_start=other))


def test_a_warm_started_run_of_0_2_0_resumes(tmp_path):
    """0.2.0 recorded no warm-start digest, and its checkpoints hold the warm start's path
    among the learner's settings: such a run must still resume (a reviewer's find)."""
    from algorithms.core.checkpoints import load_checkpoint, save_checkpoint

    meta_train(meta_config(str(tmp_path / "sft"), updates=1))
    warm = str(tmp_path / "sft" / "checkpoint.safetensors")
    run_dir = tmp_path / "run"
    meta_train(dataclasses.replace(meta_config(str(run_dir), updates=1), warm_start=warm))
    recorded = json.loads((run_dir / "config.json").read_text())
    del recorded["warm_start_sha256"]
    (run_dir / "config.json").write_text(json.dumps(recorded))
    state = load_checkpoint(run_dir / "checkpoint.safetensors")
    state["config"]["warm_start"] = warm
    save_checkpoint(state, run_dir / "checkpoint.safetensors")
    meta_train(dataclasses.replace(meta_config(str(run_dir), updates=2, resume=True), warm_start=warm))
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps[-1] == 2


@pytest.mark.parametrize("family", ["meta", "text"])
def test_kept_checkpoints_are_each_updates_own_and_the_oldest_go(tmp_path, family):
    """TRL's save_total_limit: with keep_checkpoints the run keeps the newest N checkpoints, each
    that update's (hard links: the next write replaces the file, so a link keeps its bytes),
    with the LoRA adapters written with it; the run's own checkpoint is the newest, as before."""
    from algorithms.core.checkpoints import load_checkpoint

    config = (meta_config if family == "meta" else text_config)(str(tmp_path / "run"), updates=4, eval_interval=0,
                                                                 eval_problems=0, checkpoint_interval=1, keep_checkpoints=2)  # fmt: skip
    (meta_train if family == "meta" else text_train)(config)
    kept = tmp_path / "run" / "checkpoints"
    assert sorted(path.name for path in kept.iterdir()) == ["update-000003", "update-000004"]
    for update in (3, 4):
        assert load_checkpoint(kept / f"update-{update:06d}" / "checkpoint.safetensors")["update"] == update
    newest = (kept / "update-000004" / "checkpoint.safetensors").read_bytes()
    assert newest == (tmp_path / "run" / "checkpoint.safetensors").read_bytes()
    assert (kept / "update-000003" / "checkpoint.safetensors").read_bytes() != newest
    if family == "text":  # the kept adapters load with plain peft; update 4's are the run's own
        from peft import PeftModel

        from agents.trainable_lm import tiny_model

        def lora(folder):
            model = PeftModel.from_pretrained(tiny_model(seed=0)[0], folder / "agent_0")
            return {name: tensor for name, tensor in model.state_dict().items() if "lora_" in name}

        third, fourth, own = (lora(folder) for folder in (kept / "update-000003" / "adapters",
                                                          kept / "update-000004" / "adapters", tmp_path / "run" / "adapters"))  # fmt: skip
        assert third.keys() == own.keys() and all(torch.equal(fourth[name], own[name]) for name in own)
    with pytest.raises(ValueError, match="keep_checkpoints"):
        RunConfig(keep_checkpoints=-1)


def test_a_run_resumed_from_an_older_checkpoint_keeps_its_new_updates_not_the_abandoned_ones(tmp_path):
    """A reviewer: pruning by name kept a stale update-8 and deleted the new update-7 of a run
    rolled back to update 6; a copy a killed run left half made stayed forever."""
    from algorithms.core.checkpoints import CHECKPOINT
    from algorithms.core.run import keep_checkpoint

    run = tmp_path / "run"
    run.mkdir()
    for update in (6, 7, 8):
        (run / CHECKPOINT).write_bytes(f"update {update}".encode())
        keep_checkpoint(run, update, keep=3)
    (run / "checkpoints" / ".update-000009-writing").mkdir()  # killed while copying
    (run / CHECKPOINT).write_bytes(b"update 7, again")  # resumed from update 6, then its update 7
    kept = keep_checkpoint(run, 7, keep=1)
    assert sorted(path.name for path in (run / "checkpoints").iterdir()) == ["update-000007"]
    assert (kept / CHECKPOINT).read_bytes() == b"update 7, again"


QUIET = {"eval_interval": 0, "eval_problems": 0, "checkpoint_interval": 1}
"""A run without evaluations that writes a checkpoint after every update."""


def test_a_run_resumed_from_a_kept_checkpoint_makes_the_updates_of_a_run_that_never_went_past_it(tmp_path):
    """TRL's resume_from_checkpoint=<path>: --resume-from rolls the run back to a kept checkpoint;
    the updates after it are dropped from the log and the kept checkpoints, and made again."""
    from algorithms.core.checkpoints import load_checkpoint

    def weights(folder):
        return load_checkpoint(folder / "checkpoint.safetensors")["network"]

    straight = tmp_path / "straight"
    meta_train(meta_config(str(straight), updates=4, **QUIET))
    run = tmp_path / "run"
    meta_train(meta_config(str(run), updates=5, keep_checkpoints=5, **QUIET))
    meta_train(meta_config(str(run), updates=4, keep_checkpoints=5, resume_from="update-000002", **QUIET))
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3, 4]
    assert sorted(path.name for path in (run / "checkpoints").iterdir()) == [f"update-00000{k}" for k in (1, 2, 3, 4)]
    torch.testing.assert_close(weights(run), weights(straight), rtol=0, atol=0)


def test_a_kept_checkpoint_is_no_run_folder_and_resume_from_names_what_was_kept(tmp_path):
    run = tmp_path / "run"
    text_train(text_config(str(run), updates=3, keep_checkpoints=3, **QUIET))
    kept = run / "checkpoints" / "update-000002"
    before = sorted(path.name for path in kept.rglob("*"))
    with pytest.raises(ValueError, match=rf"^{kept} is a checkpoint that the run in {run} kept, not a run folder: .*"
                                         rf"--run-dir {run} --resume-from update-000002"):  # fmt: skip
        text_train(text_config(str(kept), updates=4, resume=True, **QUIET))
    assert sorted(path.name for path in kept.rglob("*")) == before  # the refusal wrote nothing there
    with pytest.raises(ValueError, match="kept no such checkpoint; it kept update-000001, update-000002, update-000003"):
        text_train(text_config(str(run), updates=4, resume_from="7", **QUIET))
    with pytest.raises(ValueError, match=r"from update 2 with --updates 1: give --updates 2 or more"):
        text_train(text_config(str(run), updates=1, resume_from="2", **QUIET))
    # a path names the run; the kept adapters become the run's own
    config = text_config("", updates=2, resume_from=str(kept), **QUIET)
    assert (config.run.run_dir, config.run.resume) == (str(run), True)
    text_train(config)
    assert (run / "adapters" / "agent_0" / "adapter_model.safetensors").read_bytes() == (
        kept / "adapters" / "agent_0" / "adapter_model.safetensors"
    ).read_bytes()
    assert sorted(path.name for path in (run / "checkpoints").iterdir()) == ["update-000001", "update-000002"]


def test_a_folder_with_a_checkpoint_but_no_record_of_its_settings_is_not_resumed(tmp_path):
    run = tmp_path / "run"
    text_train(text_config(str(run), updates=1, **QUIET))
    (run / "config.json").unlink()
    with pytest.raises(ValueError, match="holds a checkpoint or metrics but no config.json, so its settings cannot be checked"):
        text_train(text_config(str(run), updates=2, resume=True, **QUIET))
    assert not (run / "config.json").exists()


def test_logged_completions_are_each_updates_own_and_a_rollback_drops_the_future(tmp_path):
    """TRL's log_completions: --log-completions N writes the first N completions of each update."""
    run = tmp_path / "run"
    config = dataclasses.replace(text_config(str(run), updates=3, keep_checkpoints=3, **QUIET), log_completions=2)
    text_train(config)
    logged = sorted(path.name for path in (run / "completions").iterdir())
    assert logged == ["update-000001.jsonl", "update-000002.jsonl", "update-000003.jsonl"]
    records = [json.loads(line) for line in (run / "completions" / "update-000002.jsonl").read_text().splitlines()]
    assert [(r["update"], r["agent"], r["turn"], r["group"], r["member"]) for r in records] == [
        (2, "agent_0", 0, 0, 0), (2, "agent_1", 0, 0, 0),
    ]  # fmt: skip  # whole rollouts first: the first episode's every agent (a client saw one agent's turn 0 only)
    assert records[0]["prompt"].endswith("assistant\n") and "What is" in records[0]["prompt"]
    assert records[0]["finish_reason"] in ("stop", "length") and isinstance(records[0]["reward"], float)
    assert records[0]["tokens"] <= config.max_new_tokens and isinstance(records[0]["completion"], str)
    text_train(dataclasses.replace(config, run=dataclasses.replace(config.run, updates=1, resume_from="1", resume=True)))
    assert sorted(path.name for path in (run / "completions").iterdir()) == ["update-000001.jsonl"]
