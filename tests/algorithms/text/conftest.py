"""Fixtures of the LLM-weight learner tests: a tiny random Llama, a protocol whose reward
always varies, and a frozen scripted backend. One torch thread: tiny matrices on 2
shared cores run ~50x faster without thread synchronisation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
torch.set_num_threads(1)


@pytest.fixture
def make_lm():
    """A factory of tiny TrainableLMs (same seed: bit-identical weights)."""
    from agents.trainable_lm import TrainableLM, default_lora, tiny_model

    def build(agents=("agent_0", "agent_1"), seed=0, **kwargs):
        model, tokenizer = tiny_model(seed=seed)
        kwargs.setdefault("lora", default_lora(rank=4, alpha=8.0))
        return TrainableLM(model, tokenizer, list(agents), seed=seed, **kwargs)

    return build
