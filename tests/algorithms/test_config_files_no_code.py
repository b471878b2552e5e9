"""Config files are data: reading one never imports a module, not even one placed beside it.

An import path (``env.protocol: "module:attribute"``) imports and runs that module; in a
config file it is refused before anything is imported, with an error naming the flag that
takes it. On the command line it works when the user's own path names the module (a
``.py`` file by its path); the working directory is never searched on its own.
"""

from __future__ import annotations

import json
import sys

import pytest

from algorithms.cli import file_defaults, main, parse
from deliberation_env.text.config import TextEnvConfig, import_protocol
from deliberation_env.text.env import build_protocol

EVIL = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nProtocol = None\n"
GOOD = (
    "import pathlib\nimport deliberation_env as de\nfrom deliberation_env.text.protocols import FunctionProtocol\n"
    "pathlib.Path({marker!r}).write_text('ran')\n"
    "protocol = FunctionProtocol(de.tasks.get('arithmetic', difficulty=1), prompt=lambda p, a, prev, fb: p.question,"
    " reward=lambda p, texts: 0.0, name='mine')\n"
)
LAYOUTS = {
    "train text": {"command": "train text", "algo": "grpo", "env": {"protocol": "evil:Protocol"}},
    "compare text": {"command": "compare text", "learner": {"env": {"protocol": "evil:Protocol"}}},
}


@pytest.fixture
def beside(tmp_path, monkeypatch):
    """A folder holding ``evil.py`` and ``good.py``, which write a marker when imported; the
    working directory. Returns the markers."""
    markers = {name: tmp_path / f"{name}.ran" for name in ("evil", "good")}
    (tmp_path / "evil.py").write_text(EVIL.format(marker=str(markers["evil"])))
    (tmp_path / "good.py").write_text(GOOD.format(marker=str(markers["good"])))
    monkeypatch.chdir(tmp_path)
    yield markers
    for name in markers:
        sys.modules.pop(name, None)


def write(folder, name: str, data: dict) -> str:
    path = folder / name
    path.write_text(json.dumps(data) if name.endswith(".json") else _yaml(data))
    return str(path)


def _yaml(data: dict, indent: str = "") -> str:
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:\n{_yaml(value, indent + '  ')}")
        else:
            lines.append(f"{indent}{key}: {json.dumps(value)}")
    return "\n".join(lines)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", ["config.yaml", "config.json"])
def test_an_import_path_in_a_config_file_is_refused_before_anything_is_imported(beside, tmp_path, layout, name):
    path = write(tmp_path, name, LAYOUTS[layout])
    with pytest.raises(ValueError, match=r"'evil:Protocol' is an import path, .* \(--protocol evil:Protocol\)"):
        file_defaults(path, LAYOUTS[layout]["command"].split())
    assert not beside["evil"].exists() and "evil" not in sys.modules


def test_deliberate_train_text_with_such_a_file_stops_at_load_and_names_the_flag(beside, tmp_path, capsys):
    path = write(tmp_path, "config.yaml", LAYOUTS["train text"])
    with pytest.raises(SystemExit) as exit:
        main(["train", "text", "grpo", "--config", path, "--model", "tiny", "--updates", "1"])
    error = capsys.readouterr().err
    assert exit.value.code == 2 and not beside["evil"].exists()
    assert error.startswith(f"deliberate train text grpo: error: config file {path}: field 'env.protocol': ")
    assert "give it on the command line (--protocol evil:Protocol)" in error and "math, coding" in error


def test_a_config_file_may_name_a_registered_protocol(tmp_path):
    path = write(tmp_path, "config.yaml", {"command": "train text", "env": {"task": "arithmetic", "protocol": "math"}})
    assert parse(["train", "text", "magrpo", "--config", path]).command.command.learner.env.protocol == "math"


def test_the_command_line_imports_a_protocol_file_named_by_its_path(beside, tmp_path):
    path = write(tmp_path, "config.yaml", {"command": "train text", "algo": "grpo", "env": {"max_turns": 2}})
    config = parse(["train", "text", "grpo", "--config", path, "--protocol", "./good.py:protocol"]).command.command
    assert config.learner.env.protocol == "./good.py:protocol" and config.learner.env.max_turns == 2
    assert beside["good"].exists() and build_protocol(config.learner.env).name == "mine"
    assert str(tmp_path) not in sys.path and "" not in sys.path  # the file was named, the folder not added


def test_the_working_directory_is_not_searched_for_a_module_name(beside):
    with pytest.raises(ValueError, match=r"the working directory is not searched: .* \(\./good\.py:protocol\)"):
        TextEnvConfig(protocol="good:protocol")
    assert not beside["good"].exists()
    with pytest.raises(ValueError, match="cannot import"):
        import_protocol("./missing.py:protocol")


def test_the_protocol_flag_says_that_it_imports_code(capsys):
    with pytest.raises(SystemExit):
        main(["train", "text", "grpo", "--help"])
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "--protocol NAME" in shown and "which imports and runs that code" in shown
