"""The LLM-weight learners' checkpoints never run code (issue 23, section 5): a pickle where a
run resumes from is refused unread, a tampered checkpoint is refused whole."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from text_learner_fakes import HashProtocol

from algorithms.core.checkpoints import CHECKPOINT, LEGACY_CHECKPOINT, CheckpointError
from algorithms.text import TextMAGRPO
from algorithms.text.config import text_run
from deliberation_env.text import text_vector_env

SMALL = {"groups_per_update": 2, "group_size": 2, "max_new_tokens": 6, "micro_batch_size": 4, "run": text_run(progress=False)}


class WritesMarker:
    """Unpickling this object runs code: it writes the file ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('code ran')",)


def make_learner(make_lm):
    config = TextMAGRPO.config_class(**SMALL)
    venv = text_vector_env(config.num_envs, protocol=HashProtocol(), n_agents=2, max_turns=config.env.max_turns)
    return TextMAGRPO(config, make_lm(), venv, {})


def weights(learner):
    return {agent: {name: t.clone() for name, t in w.items()} for agent, w in learner.lm.state_dict().items()}


def assert_weights_equal(first, second):
    assert first.keys() == second.keys()
    assert all(torch.equal(first[a][n], second[a][n]) for a in first for n in first[a])


@pytest.mark.parametrize("name", [LEGACY_CHECKPOINT, CHECKPOINT])
def test_resuming_a_run_refuses_a_pickle_without_unpickling_it(make_lm, tmp_path, name):
    marker = tmp_path / "marker"
    (tmp_path / "run").mkdir()
    torch.save({"algo": "magrpo", "weights": WritesMarker(marker)}, tmp_path / "run" / name)
    subject = make_learner(make_lm)
    before = weights(subject)
    with pytest.raises(CheckpointError, match="can run any code"):
        subject.learn(text_run(updates=1, run_dir=str(tmp_path / "run"), progress=False, resume=True))
    assert not marker.exists()
    assert subject.update == 0
    assert_weights_equal(before, weights(subject))


def test_a_tampered_checkpoint_is_refused_whole(make_lm, tmp_path):
    written = make_learner(make_lm)
    written.learn(text_run(updates=1, run_dir=str(tmp_path / "run"), progress=False))
    path = tmp_path / "run" / CHECKPOINT
    tensors = load_file(path)
    with safe_open(path, framework="pt") as file:
        metadata = file.metadata()
    lora = next(name for name in tensors if name.startswith("weights/agent_0/") and "lora_A" in name)
    subject = make_learner(make_lm)
    before = weights(subject)
    save_file({**tensors, lora: torch.zeros(1, 1)}, path, metadata=metadata)
    with pytest.raises(CheckpointError, match=f"checkpoint/{lora} is a torch.float32 \\(1, 1\\)"):
        subject.load(path)
    state = json.loads(metadata["state"])
    state["rng"]["state"]["inc"] = "not a number"
    save_file(tensors, path, metadata={**metadata, "state": json.dumps(state)})
    with pytest.raises(CheckpointError, match="checkpoint/rng/state/inc is a str"):
        subject.load(path)
    assert subject.update == 0
    assert_weights_equal(before, weights(subject))
    save_file(tensors, path, metadata=metadata)  # untouched: it loads
    subject.load(path)
    assert subject.update == 1
    assert_weights_equal(weights(written), weights(subject))
