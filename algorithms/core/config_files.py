"""Config files for ``deliberate run|train|compare --config FILE`` (YAML or JSON).

A file holds any fields of the config of the subcommand it is given to, nested as the
dataclasses nest (``env_args`` of ``run``, ``env`` of ``train``, ``train.env`` of
``compare``, ``env`` and ``run`` of ``train text``, ``learner.env`` of ``compare text``),
and optionally ``command``, the subcommand it is for (a file for another is refused,
:func:`algorithms.cli.read_config_file`). Its values become the defaults; flags on the command line still
override them. Every value is checked against its field's annotation (an ``int`` where a
float is asked for is a float; ``true`` is not an int; a list is a tuple where a tuple is
asked for) and then goes through the dataclasses' own checks, so a loaded config is a
validated one. An unknown key that names a field of a nested part is refused with
the nested spelling (``task:`` in a text learner's file: write it under ``env:``). A file
is data only and is read with bounded work: it is at most :data:`MAX_BYTES` long, nests at most
:data:`MAX_DEPTH` levels and has no YAML anchors or aliases (a few hundred bytes of nested
aliases expand to billions of values), no merge keys and no key twice. Reading a file
runs no code: a field marked :class:`~deliberation_env.text.config.ImportsCode` (the text
env's ``protocol``) may name a registered protocol (``math``, ``coding``) but not an import
path (``module:attribute``), which would import a module, perhaps one placed beside the
file: an import path is given on the command line (the error names the flag) or from
Python. Every refusal is a ``ValueError`` naming the file and, where there is one, the
field (a file that holds no mapping is a ``TypeError``). A field marked :class:`FileForms`
also takes the forms it names (TRL's ``chat_template_kwargs``: a mapping, JSON text or null):

>>> from deliberation_env.meta.config import EnvConfig
>>> build(EnvConfig, {"task": "arithmetic", "team": ["simulated", "simulated"], "n_agents": 2}, "f").team
('simulated', 'simulated')
>>> build(EnvConfig, {"n_agents": "three"}, "f.yaml")
Traceback (most recent call last):
...
ValueError: config file f.yaml: field 'n_agents': expected int, got str 'three'
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import pathlib
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from deliberation_env.text.config import ImportsCode, is_import_path

MAX_BYTES = 1_000_000
"""The longest config file read, in bytes (the paper configs are under 2 kB)."""
MAX_DEPTH = 16
"""The deepest nesting of mappings and lists in a config file (the configs nest 4 deep)."""


@dataclasses.dataclass(frozen=True)
class FileForms:
    """A mark on a field's annotation: the forms a config file may give it besides the
    annotation's own, as another tool's files do (TRL's ``chat_template_kwargs`` is a
    mapping, JSON text or null, ``dict | str | None``).

    Attributes:
        from_text: Reads a string of the file into the field's value (raising
            ``ValueError`` in one line, which the error prefixes with the file and field).
        null: The field's value for a null in the file (None: null is refused, as before).
    """

    from_text: Callable[[str], Any] | None = None
    null: Callable[[], Any] | None = None


class _ConfigLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing anchors and aliases, deep nesting, merge and repeated keys."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        """Compose one node; refuse an anchor (``&name``), an alias (``*name``) or a node
        nested deeper than :data:`MAX_DEPTH`."""
        event = self.peek_event()
        if event.anchor is not None:
            raise yaml.composer.ComposerError(
                None, None, "YAML anchors and aliases (&name, *name) are not allowed in config files: "
                "write each value out", event.start_mark,
            )  # fmt: skip
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"values nest deeper than {MAX_DEPTH} levels", event.start_mark
            )
        node = super().compose_node(parent, index)
        self.depth -= 1
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping; refuse one that gives a key twice (which value would count is unclear)
        or a merge key (``<<``: values that the file does not write where they count)."""
        if any(key.tag == "tag:yaml.org,2002:merge" for key, _ in node.value):
            raise yaml.constructor.ConstructorError(
                None, None, "merge keys (<<) are not allowed in config files: write each field out", node.start_mark
            )
        keys = [key.value for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
        repeated = sorted(key for key, count in collections.Counter(keys).items() if count > 1)
        if repeated:
            raise yaml.constructor.ConstructorError(
                None, None, f"keys given twice: {repeated}", node.start_mark
            )
        return super().construct_mapping(node, deep)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's mapping; refuse one that gives a key twice."""
    repeated = sorted(key for key, count in collections.Counter(key for key, _ in pairs).items() if count > 1)
    if repeated:
        raise ValueError(f"keys given twice: {repeated}")
    return dict(pairs)


def read(path: str | Path) -> dict[str, Any]:
    """The mapping in a ``.yaml``/``.yml``/``.json`` file.

    Raises:
        ValueError: Naming the file, when it is not YAML/JSON, is over :data:`MAX_BYTES`,
            or has anchors, aliases, repeated keys or deep nesting.
        TypeError: Naming the file, when it holds no mapping.
    """
    path = Path(path)
    if path.suffix not in (".yaml", ".yml", ".json"):
        raise ValueError(f"config file {path}: use a .yaml, .yml or .json file")
    with path.open("rb") as file:
        raw = file.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise ValueError(f"config file {path} is over {MAX_BYTES} bytes: a config is a few fields, not data")
    try:
        text = raw.decode("utf-8")
        data = json.loads(text, object_pairs_hook=_unique_keys) if path.suffix == ".json" else _load_yaml(text, path)
    except (yaml.YAMLError, ValueError) as error:  # ValueError: bad UTF-8, bad JSON, an int of 4300+ digits
        raise ValueError(f"config file {path}: {error}") from error
    except RecursionError as error:  # JSON nested thousands deep
        raise ValueError(f"config file {path}: values nest too deep") from error
    if not isinstance(data, dict):
        raise TypeError(f"config file {path}: expected a mapping of config fields, got {type(data).__name__}")
    return data


def _load_yaml(text: str, path: Path) -> Any:
    """The one YAML document in ``text``, read by :class:`_ConfigLoader` (errors name ``path``)."""
    loader = _ConfigLoader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def build(cls: type, data: dict[str, Any], where: str, base: Any = None) -> Any:
    """``base`` (default: ``cls()``) with the fields in ``data``, each checked against its
    annotation: nested dataclasses from nested mappings (over ``base``'s own nested values),
    lists as tuples; ``where`` names the file in errors.

    Raises:
        ValueError: Naming the file and the field, on an unknown field, a value of the wrong
            type or one the dataclass's own checks refuse.
    """
    return _build(cls, data, where, "", base)


def _build(cls: type, data: Mapping[Any, Any], where: str, prefix: str, base: Any) -> Any:
    """:func:`build` of the fields under ``prefix`` (``"train.env."``)."""
    base = cls() if base is None else base
    fields = {field.name for field in dataclasses.fields(cls)}
    unknown = sorted(str(key) for key in data if key not in fields)
    if unknown:
        context = f"{prefix.rstrip('.')}: " if prefix else ""
        raise ValueError(
            f"config file {where}: {context}unknown {cls.__name__} fields {unknown}{_nested_homes(cls, unknown, prefix)}"
            f"{_flag_names(cls, unknown)}; known: {sorted(fields)}"
        )
    hints = typing.get_type_hints(cls, include_extras=True)
    values = {name: _checked(hints[name], value, where, prefix + name, getattr(base, name)) for name, value in data.items()}
    try:
        return dataclasses.replace(base, **values)
    except (TypeError, ValueError) as error:
        context = f"{prefix.rstrip('.')}: " if prefix else ""
        raise ValueError(f"config file {where}: {context}{error}") from error


def nested(cls: type, data: Mapping[str, Any], left_out: Collection[str] = ()) -> dict[str, Any]:
    """A flat record of a ``cls`` config (a run folder's ``config.json``, where the text
    family records the fields of its ``env`` and ``run`` parts beside its own) as the nested
    data :func:`build` reads: each key that is no field of ``cls`` but of exactly one of its
    parts goes under that part; the keys ``left_out`` (what the folder records of the
    machine) are left out; anything else stays, for :func:`build` to refuse by name
    (``{"seed": 3, "updates": 5, "resolved_device": "cpu"}`` is ``{"seed": 3, "run":
    {"updates": 5}}`` for a learner config with a ``run`` part, ``resolved_device`` left out).
    """
    hints = typing.get_type_hints(cls)
    fields = {field.name for field in dataclasses.fields(cls)}
    parts = {
        name: {inner.name for inner in dataclasses.fields(hints[name])}
        for name in fields
        if dataclasses.is_dataclass(hints[name])
    }
    out: dict[str, Any] = {}
    for key, value in data.items():
        homes = [part for part, names in parts.items() if key in names]
        if key in left_out:
            continue
        if key not in fields and len(homes) == 1:
            out.setdefault(homes[0], {})[key] = value
        else:
            out[key] = value
    return out


def _flag_names(cls: type, names: list[str]) -> str:
    """A hint for the unknown keys ``names`` of ``cls`` that are a field's command-line name
    (``rollout_workers`` is the field ``workers``, ``--rollout-workers``): ``"; a file names
    them by field: workers (not rollout_workers)"``, or ``""`` when none is."""
    hints = typing.get_type_hints(cls, include_extras=True)
    renamed = {
        mark.name.replace("-", "_"): field.name
        for field in dataclasses.fields(cls)
        for mark in getattr(hints[field.name], "__metadata__", ())
        if getattr(mark, "name", None)
    }
    found = [f"{renamed[name]} (not {name})" for name in names if name in renamed]
    return f"; a file names them by field: {', '.join(found)}" if found else ""


def _nested_homes(cls: type, names: list[str], prefix: str) -> str:
    """A hint for the unknown keys ``names`` of ``cls`` that are fields of one of its nested
    parts: ``"; write them nested: env.task, run.updates"``, or ``""`` when none is."""
    hints = typing.get_type_hints(cls)
    parts = {field.name: hints[field.name] for field in dataclasses.fields(cls) if dataclasses.is_dataclass(hints[field.name])}
    homes = [
        f"{prefix}{part}.{name}"
        for part, kind in parts.items()
        for name in names
        if name in {inner.name for inner in dataclasses.fields(kind)}
    ]
    return f"; write them nested: {', '.join(sorted(homes))}" if homes else ""


class _Mismatch(Exception):
    """``(field, annotation, value)``: a value that is not of its annotation (internal: a
    union tries its next member)."""


def _checked(kind: Any, value: Any, where: str, field: str, current: Any = None) -> Any:
    """``value`` as a value of the annotation ``kind``, or a ``ValueError`` naming ``field``.

    ``current`` is the field's value before the file, the base of a nested dataclass.
    """
    try:
        return _as(kind, value, where, field, current)
    except _Mismatch as mismatch:
        field, kind, value = mismatch.args
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        got = f"{_name(type(value))} {shown}" if value is not None else "null"
        if isinstance(value, float) and not math.isfinite(value):
            got += " (not finite)"
        raise ValueError(f"config file {where}: field {field!r}: expected {_expected(kind)}, got {got}") from None


def _as(kind: Any, value: Any, where: str, field: str, current: Any) -> Any:
    """:func:`_checked`'s work: raise :class:`_Mismatch` (with the failing field) on a wrong type."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if origin is typing.Annotated:
        _refuse_code(args[1:], value, where, field)
        forms = [mark for mark in args[1:] if isinstance(mark, FileForms)]
        if forms:
            return _other_form(forms[0], args[0], value, where, field, current)
        return _as(args[0], value, where, field, current)
    if origin in (typing.Union, types.UnionType):
        return _first_member(kind, value, where, field, current)
    if origin is typing.Literal:
        if any(type(value) is type(choice) and value == choice for choice in args):
            return value
        raise _Mismatch(field, kind, value)
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, dict):
            raise _Mismatch(field, kind, value)
        return _build(kind, value, where, field + ".", current if isinstance(current, kind) else None)
    if origin in (tuple, list, set, frozenset, Sequence):
        return _collection(kind, origin, args, value, where, field)
    if origin in (dict, Mapping):
        if not isinstance(value, dict):
            raise _Mismatch(field, kind, value)
        key_kind, value_kind = args or (Any, Any)
        return {
            _as(key_kind, key, where, f"{field}[{key!r}]", None): _as(value_kind, item, where, f"{field}[{key!r}]", None)
            for key, item in value.items()
        }
    return _plain(kind, value, field)


def _other_form(
    forms: FileForms, kind: Any, value: Any, where: str, field: str, current: Any
) -> Any:
    """``value`` of a field marked ``forms``: text read by ``forms.from_text``, null by
    ``forms.null``, any other value as the annotation ``kind``.

    Raises:
        ValueError: Naming the file and the field, on text ``forms.from_text`` refuses.
    """
    if isinstance(value, str) and forms.from_text is not None:
        try:
            return forms.from_text(value)
        except ValueError as error:
            raise ValueError(f"config file {where}: field {field!r}: {error}") from None
    if value is None and forms.null is not None:
        return forms.null()
    return _as(kind, value, where, field, current)


def _refuse_code(marks: tuple[Any, ...], value: Any, where: str, field: str) -> None:
    """Refuse an import path in a field marked :class:`ImportsCode`: importing it would run
    code while the file is only read.

    Raises:
        ValueError: Naming the file, the field and the command-line flag to use instead.
    """
    for mark in marks:
        if isinstance(mark, ImportsCode) and is_import_path(value):
            raise ValueError(
                f"config file {where}: field {field!r}: {value!r} is an import path, which would import and "
                f"run code, and a config file is data: give it on the command line ({mark.flag} {value}) or "
                f"from Python; a file may name one of {', '.join(mark.names)}"
            )


def _first_member(kind: Any, value: Any, where: str, field: str, current: Any) -> Any:
    """``value`` as the first member of the union ``kind`` it fits."""
    for member in typing.get_args(kind):
        try:
            return _as(member, value, where, field, current)
        except _Mismatch:
            continue
    raise _Mismatch(field, kind, value)


def _collection(kind: Any, origin: Any, args: tuple[Any, ...], value: Any, where: str, field: str) -> Any:
    """A tuple, list, set or sequence (a tuple) from a list in the file."""
    if not isinstance(value, list):
        raise _Mismatch(field, kind, value)
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(value) != len(args):
            raise _Mismatch(field, kind, value)
        return tuple(_as(a, item, where, f"{field}[{k}]", None) for k, (a, item) in enumerate(zip(args, value)))
    item_kind = args[0] if args else Any
    items = [_as(item_kind, item, where, f"{field}[{k}]", None) for k, item in enumerate(value)]
    return {list: list, set: set, frozenset: frozenset}.get(origin, tuple)(items)


def _plain(kind: Any, value: Any, field: str) -> Any:
    """A scalar: ``None``, a bool, an int (not a bool), a finite float (ints too), a string,
    a path (from a string). Any other class (a Task, a Backend) is never in a file."""
    if kind is type(None) and value is None:
        return None
    if kind is bool and isinstance(value, bool):
        return value
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if kind is str and isinstance(value, str):
        return value
    if isinstance(kind, type) and issubclass(kind, pathlib.PurePath) and isinstance(value, str):
        return kind(value)
    raise _Mismatch(field, kind, value)


def _expected(kind: Any) -> str:
    """A reader's name of the annotation ``kind``: ``int or null``, ``a list of str``."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return "any value"
    if origin is typing.Annotated:
        return _expected(args[0])
    if origin in (typing.Union, types.UnionType):
        readable = [_expected(member) for member in args if _expected(member)]
        return " or ".join(dict.fromkeys(readable))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(choice) for choice in args)
    if dataclasses.is_dataclass(kind):
        return f"a mapping of {kind.__name__} fields"
    if origin in (tuple, list, set, frozenset, Sequence):
        fixed = origin is tuple and args and args[-1] is not Ellipsis
        return f"a list of {len(args)} values" if fixed else f"a list of {_expected(args[0]) if args else 'values'}"
    if origin in (dict, Mapping):
        return "a mapping"
    if kind is type(None):
        return "null"
    if kind in (bool, int, float, str):
        return kind.__name__
    if isinstance(kind, type) and issubclass(kind, pathlib.PurePath):
        return "a path (str)"
    return ""  # a class no file holds (a Task, a Backend): not worth naming


def _name(kind: type) -> str:
    """The YAML-ish name of a parsed value's type."""
    return {dict: "mapping", list: "list"}.get(kind, kind.__name__)


def to_data(config: Any) -> dict[str, Any]:
    """``config`` (a dataclass) as the mapping a config file holds, nested as it nests
    (tuples as lists): what :func:`build` reads back into an equal config.

    >>> from deliberation_env.meta.config import EnvConfig
    >>> data = to_data(EnvConfig(team=("simulated", "simulated"), n_agents=2))
    >>> data["team"], build(EnvConfig, data, "f") == EnvConfig(team=("simulated", "simulated"), n_agents=2)
    (['simulated', 'simulated'], True)
    """
    return {field.name: _data(getattr(config, field.name)) for field in dataclasses.fields(config)}


def _data(value: Any) -> Any:
    """A field's value as file data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_data(value)
    if isinstance(value, (tuple, list)):
        return [_data(item) for item in value]
    if isinstance(value, dict):
        return {key: _data(item) for key, item in value.items()}
    if isinstance(value, pathlib.PurePath):
        return str(value)
    return value


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
