"""Config files for ``deliberate run|train|compare --config FILE`` (YAML or JSON).

A file holds ``command`` (the subcommand it is for) and any fields of that subcommand's
config, nested as the dataclasses nest (``env_args`` of ``run``, ``env`` of ``train``,
``train.env`` of ``compare``). Its values become the defaults; flags on the command line
still override them. Every value goes through the dataclasses' own checks, so a loaded
config is a validated one; an unknown key or a wrong command is an error naming the file.

>>> from deliberation_env.config import EnvConfig
>>> build(EnvConfig, {"task": "arithmetic", "team": ["simulated", "simulated"], "n_agents": 2}, "f").team
('simulated', 'simulated')
"""

from __future__ import annotations

import dataclasses
import json
import typing
from pathlib import Path
from typing import Any

import yaml


def read(path: str | Path) -> dict[str, Any]:
    """The mapping in a ``.yaml``/``.yml``/``.json`` file.

    Raises:
        ValueError: Naming the file, when it is not a mapping or not YAML/JSON.
    """
    path = Path(path)
    if path.suffix not in (".yaml", ".yml", ".json"):
        raise ValueError(f"config file {path}: use a .yaml, .yml or .json file")
    text = path.read_text()
    data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise TypeError(f"config file {path}: expected a mapping of config fields, got {type(data).__name__}")
    return data


def build(cls: type, data: dict[str, Any], where: str, base: Any = None) -> Any:
    """``base`` (default: ``cls()``) with the fields in ``data``: nested dataclasses from
    nested mappings (over ``base``'s own nested values), lists as tuples; ``where`` names the
    file in errors."""
    base = cls() if base is None else base
    fields = {field.name: field for field in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"config file {where}: unknown {cls.__name__} fields {unknown}; known: {sorted(fields)}")
    hints = typing.get_type_hints(cls, include_extras=False)
    values = {}
    for name, value in data.items():
        kind = hints[name]
        if dataclasses.is_dataclass(kind) and isinstance(value, dict):
            value = build(kind, value, f"{where}: {name}", getattr(base, name))
        elif isinstance(value, list):
            value = tuple(value)
        elif kind is Path or Path in typing.get_args(kind):
            value = Path(value) if value is not None else None
        values[name] = value
    try:
        return dataclasses.replace(base, **values)
    except (TypeError, ValueError) as error:
        raise ValueError(f"config file {where}: {error}") from error


def load(path: str | Path, command: str, cls: type) -> Any:
    """The config of ``command`` (an instance of ``cls``) in the file ``path``.

    Raises:
        ValueError: Naming the file, when it is for another command or fails a check.
    """
    data = read(path)
    written_for = data.pop("command", None)
    if written_for != command:
        raise ValueError(f"config file {path} is for 'deliberate {written_for}', not 'deliberate {command}'")
    return build(cls, data, str(path))
