"""Checkpoint files never run code (issue 23, section 5): pickles are refused unread at every
entry point that loads one (resume, warm start, evaluation, a learner's ``load``), tampered
safetensors checkpoints are refused whole, and a state reads back exactly."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from algorithms import cli
from algorithms.core.checkpoints import (
    CHECKPOINT,
    LEGACY_CHECKPOINT,
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
)
from algorithms.core.config import RunConfig
from algorithms.meta import GRPO, SoftRankPO, SoftRankPOConfig
from algorithms.meta.train import load_network, train
from deliberation_env import EnvConfig, vector_env_from

ENV = EnvConfig(team="simulated", difficulty=3, max_rounds=2)
SMALL = {"groups_per_update": 2, "group_size": 4, "hidden_size": 16, "num_heads": 2}


class WritesMarker:
    """Unpickling this object runs code: it writes the file ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('code ran')",)


def evil(path, marker, kind="torch.save"):
    """A checkpoint-looking pickle at ``path`` that writes ``marker`` when unpickled."""
    state = {"algo": "softrankpo", "config": {}, "network": WritesMarker(marker), "update": 0}
    if kind == "torch.save":
        torch.save(state, path)
    else:
        path.write_bytes(pickle.dumps(state, protocol=0 if kind == "pickle0" else 2))
    return path


KINDS = ["torch.save", "pickle0", "pickle2"]


def learner(cls=SoftRankPO, **overrides):
    config = SoftRankPOConfig(**{**SMALL, **overrides}) if cls is SoftRankPO else cls.config_class(**SMALL)
    return cls(config, vector_env_from(ENV, config.num_envs))


def tiny(tmp_path, updates=1, resume=False, **overrides):
    run = RunConfig(updates=updates, eval_interval=1, eval_problems=4, run_dir=str(tmp_path / "run"), progress=False, resume=resume)
    return SoftRankPOConfig(**{"env": ENV, "run": run, "sft_updates": 0, **SMALL, **overrides})


def fingerprint(subject):
    """Everything a load could change: weights, Adam state, RNGs, counters."""
    return (
        torch.cat([p.detach().flatten() for p in subject.network.parameters()]).clone(),
        {k: {n: v.clone() for n, v in s.items()} for k, s in subject.optimizer.state_dict()["state"].items()},
        json.dumps(subject.rng.bit_generator.state),
        subject.generator.get_state().clone(),
        subject.update,
        subject.episodes,
    )


def assert_same(before, after):
    assert torch.equal(before[0], after[0])
    assert before[1].keys() == after[1].keys()
    assert all(torch.equal(before[1][k][n], after[1][k][n]) for k in before[1] for n in before[1][k])
    assert before[2] == after[2] and torch.equal(before[3], after[3])
    assert before[4:] == after[4:]


# ---------------------------------------------------------------- the payload is live
def test_the_attack_payload_runs_code_when_unpickled(tmp_path):
    """The control: the files below really run code when unpickled (so refusing them matters)."""
    for kind in KINDS:
        marker = tmp_path / f"marker-{kind}"
        path = evil(tmp_path / f"{kind}.pt", marker, kind)
        if kind == "torch.save":
            torch.load(path, weights_only=False)
        else:
            pickle.loads(path.read_bytes())  # the point: this runs the payload
        assert marker.read_text() == "code ran"


# ---------------------------------------------------------------- pickles are refused unread
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", [LEGACY_CHECKPOINT, CHECKPOINT])
def test_load_checkpoint_refuses_a_pickle_without_unpickling_it(tmp_path, kind, name):
    marker = tmp_path / "marker"
    path = evil(tmp_path / name, marker, kind)
    with pytest.raises(CheckpointError, match="can run any code.*refused unread: delete it"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="not a safetensors checkpoint"):
        learner().load(path)
    assert not marker.exists()


@pytest.mark.parametrize("name", [LEGACY_CHECKPOINT, CHECKPOINT])
def test_the_automatic_resume_of_a_training_run_refuses_a_pickle(tmp_path, name):
    marker = tmp_path / "marker"
    (tmp_path / "run").mkdir()
    evil(tmp_path / "run" / name, marker)
    # checkpoint.pt: never a run's; checkpoint.safetensors without the config.json a run records: refused unread
    refusal = "no config.json, so its settings cannot be checked" if name == CHECKPOINT else "holds no run to continue"
    with pytest.raises((CheckpointError, ValueError), match=refusal):
        train(tiny(tmp_path, resume=True))
    assert not marker.exists()
    assert not (tmp_path / "run" / "summary.json").exists()


def test_the_resume_of_an_sft_warm_start_refuses_a_pickle(tmp_path):
    marker = tmp_path / "marker"
    (tmp_path / "run" / "sft").mkdir(parents=True)
    evil(tmp_path / "run" / "sft" / LEGACY_CHECKPOINT, marker)
    with pytest.raises(ValueError, match="holds no run to continue"):  # refused before anything is read
        train(tiny(tmp_path, sft_updates=1, resume=True))
    assert not marker.exists()


@pytest.mark.parametrize("kind", KINDS)
def test_a_warm_start_from_the_command_line_refuses_a_pickle(tmp_path, kind, capsys):
    marker = tmp_path / "marker"
    path = evil(tmp_path / "sft.pt", marker, kind)
    with pytest.raises(SystemExit):
        cli.main(["train", "meta", "softrankpo", "--warm-start", str(path), "--team", "simulated", "--updates", "1",
                  "--eval-problems", "2", "--run-dir", str(tmp_path / "run"), "--no-progress"])  # fmt: skip
    assert "can run any code" in capsys.readouterr().err
    assert not marker.exists()


def test_evaluation_refuses_a_pickle(tmp_path):
    marker = tmp_path / "marker"
    with pytest.raises(CheckpointError, match="can run any code"):
        load_network(evil(tmp_path / "policy.pt", marker), ENV)
    assert not marker.exists()


def test_a_checkpoint_of_release_0_1_is_refused_and_no_converter_is_offered(tmp_path):
    written = learner()
    torch.save(written.state_dict(), tmp_path / LEGACY_CHECKPOINT)  # how release 0.1 wrote it
    with pytest.raises(CheckpointError, match="release 0.1 were pickles") as refused:
        learner().load(tmp_path / LEGACY_CHECKPOINT)
    assert "convert" not in str(refused.value)


# ---------------------------------------------------------------- the format
def test_a_state_reads_back_exactly_and_the_file_is_plain_safetensors_and_json(tmp_path):
    state = {
        "tensor": torch.arange(6, dtype=torch.float64).reshape(2, 3),
        "scalar": torch.tensor(3.5),
        "ints": {0: {"step": torch.tensor(2.0)}, 7: "seven"},
        "tuple": (1, 2.5, None, True, "x", (3,)),
        "list": [[1, 2], {"a": torch.ones(2, dtype=torch.uint8)}],
        "odd": {"__tensor__": "not a tag"},
        "big": 2**100,
    }
    save_checkpoint(state, tmp_path / "c.safetensors")
    back = load_checkpoint(tmp_path / "c.safetensors")
    assert back.keys() == state.keys()
    assert torch.equal(back["tensor"], state["tensor"]) and back["tensor"].dtype == torch.float64
    assert torch.equal(back["scalar"], state["scalar"])
    assert list(back["ints"]) == [0, 7] and torch.equal(back["ints"][0]["step"], torch.tensor(2.0))
    assert back["tuple"] == state["tuple"] and isinstance(back["tuple"][-1], tuple)
    assert back["list"][0] == [1, 2] and torch.equal(back["list"][1]["a"], state["list"][1]["a"])
    assert back["odd"] == {"__tensor__": "not a tag"} and back["big"] == 2**100
    assert set(load_file(tmp_path / "c.safetensors")) == {"tensor", "scalar", "ints/0/step", "list/1/a"}
    with safe_open(tmp_path / "c.safetensors", framework="pt") as file:
        assert json.loads(file.metadata()["state"])["tensor"] == {"__tensor__": "tensor"}


def test_saving_refuses_an_object_that_is_not_data(tmp_path):
    with pytest.raises(TypeError, match="config/task is a WritesMarker"):
        save_checkpoint({"config": {"task": WritesMarker(tmp_path / "m")}}, tmp_path / "c.safetensors")
    assert not (tmp_path / "c.safetensors").exists()


def test_a_learner_checkpoint_holds_no_pickle(tmp_path):
    subject = learner()
    subject.train_step()
    subject.save(tmp_path / CHECKPOINT)
    assert not (tmp_path / (CHECKPOINT + ".tmp")).exists()  # written aside, then moved in place
    raw = (tmp_path / CHECKPOINT).read_bytes()
    header = raw[8 : 8 + int.from_bytes(raw[:8], "little")]
    assert json.loads(header)["__metadata__"]["format"] == "deliberation-env checkpoint"
    assert b"\x80\x02" not in raw[:2] and not raw.startswith(b"PK")


# ---------------------------------------------------------------- tampered checkpoints
def tamper(path, edit_state=None, edit_tensors=None, metadata=None):
    """Rewrite the checkpoint at ``path`` with its JSON state and tensors edited."""
    with safe_open(path, framework="pt") as file:
        meta = dict(file.metadata())
    tensors = load_file(path)
    state = json.loads(meta["state"])
    if edit_state:
        edit_state(state)
    if edit_tensors:
        edit_tensors(tensors)
    meta["state"] = json.dumps(state)
    save_file(tensors, path, metadata=metadata if metadata is not None else meta)


def set_in(keys, value):
    def edit(state):
        for key in keys[:-1]:
            state = state[key]
        state[keys[-1]] = value

    return edit


TAMPERED = {
    "an unknown tag": ({"edit_state": set_in(["update"], {"__pickle__": "gASVKAAAAAAAAACMCGJ1aWx0aW5zlIwEZXhlY5STlC4="})}, "unknown tags"),
    "a counter that is no int": ({"edit_state": set_in(["update"], "many")}, "checkpoint/update is a str"),
    "a missing tensor": ({"edit_tensors": lambda t: t.pop("network/query.weight")}, "does not hold"),
    "an extra tensor": ({"edit_tensors": lambda t: t.update(extra=torch.zeros(1))}, "not in the state"),
    "a reshaped weight": ({"edit_tensors": lambda t: t.update({"network/query.weight": torch.zeros(4, 4)})},
                          "checkpoint/network/query.weight is a torch.float32 \\(4, 4\\), not a torch.float32 tensor \\(16, 16\\)"),
    "a weight of another dtype": ({"edit_tensors": lambda t: t.update({"network/query.bias": torch.zeros(16, dtype=torch.float64)})},
                                  "query.bias is a torch.float64"),
    "a missing network entry": ({"edit_state": lambda s: s["network"].pop("query.bias"),
                                 "edit_tensors": lambda t: t.pop("network/query.bias")}, "checkpoint/network has entries"),
    "an Adam state of the wrong shape": (
        {"edit_tensors": lambda t: t.update({"optimizer/state/0/exp_avg": torch.zeros(3)})}, "does not fit parameter 0"),
    "an Adam state for no parameter": (
        {"edit_state": lambda s: s["optimizer"]["state"]["__dict__"].append([999, {}])}, "no parameter"),
    "a numpy RNG state out of range": ({"edit_state": set_in(["rng", "state", "state"], -1)}, "not a NumPy PCG64 state"),
    "a torch RNG state of garbage": (
        {"edit_tensors": lambda t: t.update(generator=torch.full((5056,), 255, dtype=torch.uint8))}, "not a torch generator state"),
    "a damaged JSON state": ({"metadata": {"format": "deliberation-env checkpoint", "version": "1", "state": "{"}}, "damaged"),
    "deeply nested JSON": ({"metadata": {"format": "deliberation-env checkpoint", "version": "1", "state": "[" * 100_000}}, "damaged"),
    "no format": ({"metadata": {}}, "not a learner checkpoint"),
    "another version": ({"metadata": {"format": "deliberation-env checkpoint", "version": "0", "state": "{}"}}, "format version"),
}  # fmt: skip


@pytest.mark.parametrize("how", TAMPERED, ids=list(TAMPERED))
def test_a_tampered_checkpoint_is_refused_whole_and_changes_nothing(tmp_path, how):
    edits, message = TAMPERED[how]
    written = learner()
    written.train_step()
    written.save(tmp_path / CHECKPOINT)
    tamper(tmp_path / CHECKPOINT, **edits)
    subject = learner()
    subject.train_step(), subject.train_step()  # a state of its own, which the refusal keeps
    before = fingerprint(subject)
    with pytest.raises(CheckpointError, match=message):
        subject.load(tmp_path / CHECKPOINT)
    assert_same(before, fingerprint(subject))


def test_another_algorithm_or_config_is_still_a_clear_error(tmp_path):
    learner().save(tmp_path / CHECKPOINT)
    with pytest.raises(ValueError, match="load it with the softrankpo learner"):
        learner(GRPO).load(tmp_path / CHECKPOINT)
    with pytest.raises(ValueError, match="config differs"):
        learner(tau=0.1).load(tmp_path / CHECKPOINT)


def test_evaluation_refuses_a_checkpoint_whose_sizes_do_not_fit_its_weights(tmp_path):
    written = learner()
    written.save(tmp_path / CHECKPOINT)
    assert torch.equal(load_network(tmp_path / CHECKPOINT, ENV).query.weight, written.network.query.weight)
    tamper(tmp_path / CHECKPOINT, set_in(["config", "hidden_size"], 10**9))  # would allocate 10^18 weights
    with pytest.raises(CheckpointError, match="do not fit its weights"):
        load_network(tmp_path / CHECKPOINT, ENV)
    other = EnvConfig(team="simulated", difficulty=3, max_rounds=2, n_agents=4)
    written.save(tmp_path / CHECKPOINT)
    assert load_network(tmp_path / CHECKPOINT, other) is not None  # the network is size-agnostic in n_agents
    tamper(tmp_path / CHECKPOINT, edit_tensors=lambda t: t.update({"network/self_encoder.0.weight": torch.zeros(16, 99)}))
    with pytest.raises(CheckpointError, match="self_encoder.0.weight"):
        load_network(tmp_path / CHECKPOINT, ENV)


def test_the_resumed_run_reads_the_safetensors_checkpoint_beside_a_pickle(tmp_path):
    """A pickle dropped beside a run's checkpoint is never read: the run resumes from its own."""
    train(tiny(tmp_path))
    marker = tmp_path / "marker"
    evil(tmp_path / "run" / LEGACY_CHECKPOINT, marker)
    train(tiny(tmp_path, updates=2, resume=True))
    assert not marker.exists()
    assert load_checkpoint(tmp_path / "run" / CHECKPOINT)["update"] == 2
    assert np.isfinite(json.loads((tmp_path / "run" / "summary.json").read_text())["after"]["eval/accuracy"])
