"""Without vLLM installed, the vllm backend says how to install it."""

from __future__ import annotations

import importlib.util

import pytest

from agents import make_backend


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed")
def test_missing_vllm_says_how_to_install_it():
    with pytest.raises(ImportError, match=r"pip install 'deliberation-env\[vllm\]'"):
        make_backend("vllm", model="any")
