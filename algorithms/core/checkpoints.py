"""Checkpoint files of the learners: tensors and JSON, never a pickle, so loading runs no code.

A checkpoint is one safetensors file (:data:`CHECKPOINT`, ``checkpoint.safetensors``): the
state's tensors under their paths in the state (``network/query.weight``,
``optimizer/state/0/exp_avg``), and, in the header's metadata, the rest of the state as
JSON, with each tensor replaced by ``{"__tensor__": path}``. Tuples and dicts whose keys are
not plain strings (an optimizer's parameter indices) are tagged (``{"__tuple__": [...]}``,
``{"__dict__": [[key, value], ...]}``), so a state reads back exactly as it was written.
Saving is atomic: a run killed meanwhile keeps the previous file.

Loading reads nothing but tensors, numbers, strings, lists and dicts, and checks the file
whole before a learner uses it (:func:`check_structure`): a tampered or foreign file is a
:class:`CheckpointError`, never code that runs and never a half-restored learner.

Checkpoints of release 0.1 (``checkpoint.pt``, written by ``torch.save``) are pickles;
unpickling one can run any code it holds, so they are refused unread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import safetensors
import torch
from safetensors.torch import save_file

from agents.file_modes import with_umask_mode

CHECKPOINT = "checkpoint.safetensors"
"""The checkpoint's file name in a run directory."""
LEGACY_CHECKPOINT = "checkpoint.pt"
"""The file name of the pickled checkpoints of release 0.1 (refused unread)."""
FORMAT = "deliberation-env checkpoint"
"""The ``format`` entry of a checkpoint's safetensors metadata."""
VERSION = "1"
"""The ``version`` entry of a checkpoint's safetensors metadata."""
_TAGS = ("__tensor__", "__tuple__", "__dict__")


class CheckpointError(ValueError):
    """A file that is not a checkpoint this code wrote, or one that does not fit the learner."""


def save_checkpoint(state: Mapping[str, Any], path: str | Path) -> None:
    """Write ``state`` to ``path`` atomically: a run killed meanwhile keeps the previous file.

    Args:
        state: Nested dicts, lists and tuples of tensors, numbers, strings, bools and None.
        path: The file to write (conventionally ``<run_dir>/checkpoint.safetensors``).

    Raises:
        TypeError: Naming the path in the state of a value of another type.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors: dict[str, torch.Tensor] = {}
    encoded = _encode(dict(state), "", tensors)
    metadata = {"format": FORMAT, "version": VERSION, "state": json.dumps(encoded)}
    partial = path.with_name(path.name + ".tmp")
    save_file(tensors, partial, metadata=metadata)
    with_umask_mode(partial)
    partial.replace(path)


def _encode(value: Any, where: str, tensors: dict[str, torch.Tensor]) -> Any:
    """``value`` as JSON, its tensors moved to ``tensors`` (CPU, contiguous) under their path."""
    if isinstance(value, torch.Tensor):
        tensors[where] = value.detach().cpu().contiguous()
        return {"__tensor__": where}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(item, f"{where}/{k}", tensors) for k, item in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(item, f"{where}/{k}", tensors) for k, item in enumerate(value)]
    if isinstance(value, dict):
        if all(isinstance(key, str) and not key.startswith("__") for key in value):
            return {key: _encode(item, _join(where, key), tensors) for key, item in value.items()}
        return {"__dict__": [[_encode(key, where, tensors), _encode(item, _join(where, key), tensors)] for key, item in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(
        f"checkpoint value {where or '/'} is a {type(value).__name__}: a checkpoint holds tensors, "
        "numbers, strings, bools, None, and lists, tuples and dicts of them"
    )


def _join(where: str, key: Any) -> str:
    """The path of ``key`` under ``where``."""
    return f"{where}/{key}" if where else str(key)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """The state written by :func:`save_checkpoint`. Reads tensors and JSON only: no code runs.

    Raises:
        CheckpointError: When ``path`` is no safetensors file (e.g. a pickled checkpoint of
            release 0.1), not a checkpoint of this format, or inconsistent (a tensor it names
            is missing, a tag is unknown).
        FileNotFoundError: When there is no file at ``path``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        with safetensors.safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
            tensors = {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118 (safe_open is no dict)
    except safetensors.SafetensorError as error:
        raise CheckpointError(_not_safetensors(path, error)) from error
    if metadata.get("format") != FORMAT:
        raise CheckpointError(f"{path} is a safetensors file but not a learner checkpoint (its metadata has no format {FORMAT!r})")
    if metadata.get("version") != VERSION:
        raise CheckpointError(f"{path} is a checkpoint of format version {metadata.get('version')!r}; this code reads {VERSION!r}")
    try:
        state = _decode(json.loads(metadata.get("state", "")), tensors, set())
    except (ValueError, TypeError, RecursionError) as error:  # bad JSON, unhashable or deep values
        raise CheckpointError(f"{path} is a damaged checkpoint: {error}") from error
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} is a damaged checkpoint: its state is a {type(state).__name__}, not a dict")
    return state


def checkpoint_settings(path: str | Path) -> dict[str, Any]:
    """The settings (``config``) a checkpoint at ``path`` records, read from its header alone
    (no tensor is loaded); ``{}`` where it has none readable.

    Raises:
        CheckpointError: As :func:`load_checkpoint`, when ``path`` is no checkpoint.
    """
    try:
        with safetensors.safe_open(str(path), framework="pt") as file:
            metadata = file.metadata() or {}
    except safetensors.SafetensorError as error:
        raise CheckpointError(_not_safetensors(Path(path), error)) from error
    try:
        settings = json.loads(metadata.get("state", "")).get("config")
    except (ValueError, AttributeError):
        return {}
    return settings if isinstance(settings, dict) else {}


def _decode(value: Any, tensors: dict[str, torch.Tensor], used: set[str]) -> Any:
    """The value :func:`_encode` encoded; every tensor named once, every tensor used.

    Raises:
        ValueError: On a missing tensor, an unknown tag or a tensor no value names.
    """
    state = _decode_value(value, tensors, used)
    unused = sorted(set(tensors) - used)
    if unused:
        raise ValueError(f"tensors {unused[:5]} are in the file but not in the state")
    return state


def _decode_value(value: Any, tensors: dict[str, torch.Tensor], used: set[str]) -> Any:
    """:func:`_decode` of one value."""
    if isinstance(value, list):
        return [_decode_value(item, tensors, used) for item in value]
    if not isinstance(value, dict):
        return value
    tags = [key for key in value if key.startswith("__")]
    if not tags:
        return {key: _decode_value(item, tensors, used) for key, item in value.items()}
    if len(value) != 1 or tags[0] not in _TAGS:
        raise ValueError(f"unknown tags {sorted(tags)}: a checkpoint tags values with {list(_TAGS)} only")
    tag, content = tags[0], value[tags[0]]
    if tag == "__tensor__":
        if not isinstance(content, str) or content not in tensors or content in used:
            raise ValueError(f"the state names tensor {content!r}, which the file does not hold (or names twice)")
        used.add(content)
        return tensors[content]
    if not isinstance(content, list):
        raise TypeError(f"{tag} holds a {type(content).__name__}, not a list")
    items = [_decode_value(item, tensors, used) for item in content]
    if tag == "__tuple__":
        return tuple(items)
    if not all(isinstance(pair, list) and len(pair) == 2 for pair in items):
        raise TypeError("__dict__ holds something other than [key, value] pairs")
    return {key: item for key, item in items}


def _not_safetensors(path: Path, error: Exception | None = None) -> str:
    """Why a file that is no safetensors file (a pickled checkpoint of release 0.1) is refused,
    and what to do instead."""
    why = f" ({error})" if error is not None else ""
    return (
        f"{path} is not a safetensors checkpoint{why}. Checkpoints of release 0.1 were pickles "
        "(torch.save, checkpoint.pt), and unpickling a file can run any code it holds, so they are "
        "refused unread: delete it and start the run again (or in a new run directory)."
    )


def resume_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint a run in ``run_dir`` resumes from, or None when it has none.

    Raises:
        CheckpointError: When ``run_dir`` holds only a pickled checkpoint of release 0.1
            (never loaded).
    """
    run_dir = Path(run_dir)
    if (run_dir / CHECKPOINT).exists():
        return run_dir / CHECKPOINT
    if (run_dir / LEGACY_CHECKPOINT).exists():
        raise CheckpointError(_not_safetensors(run_dir / LEGACY_CHECKPOINT))
    return None


def check_structure(saved: Any, template: Any, where: str = "checkpoint") -> None:
    """Raise a :class:`CheckpointError` unless ``saved`` is shaped like ``template``: dicts
    with the same keys, lists and tuples of the same length, tensors of the same shape and
    dtype, scalars of the same type (a dict subclass counts as a dict). A class in
    ``template`` (``dict``) accepts any instance of it; its contents are the caller's to check.
    """
    if isinstance(template, type):
        if not isinstance(saved, template):
            raise CheckpointError(f"{where} is a {type(saved).__name__}, not a {template.__name__}")
    elif isinstance(template, torch.Tensor):
        if not isinstance(saved, torch.Tensor) or saved.shape != template.shape or saved.dtype != template.dtype:
            got = f"{saved.dtype} {tuple(saved.shape)}" if isinstance(saved, torch.Tensor) else type(saved).__name__
            raise CheckpointError(f"{where} is a {got}, not a {template.dtype} tensor {tuple(template.shape)}")
    elif isinstance(template, dict):
        if not isinstance(saved, dict):
            raise CheckpointError(f"{where} is a {type(saved).__name__}, not a dict")
        if set(saved) != set(template):
            raise CheckpointError(f"{where} has entries {sorted(map(str, saved))}, not {sorted(map(str, template))}")
        for key, value in template.items():
            check_structure(saved[key], value, f"{where}/{key}")
    elif type(saved) is not type(template):
        raise CheckpointError(f"{where} is a {type(saved).__name__}, not a {type(template).__name__}")
    elif isinstance(template, (list, tuple)):
        if len(saved) != len(template):
            raise CheckpointError(f"{where} has {len(saved)} entries, not {len(template)}")
        for k, (item, value) in enumerate(zip(saved, template)):
            check_structure(item, value, f"{where}/{k}")


def check_optimizer_state(saved: Mapping[str, Any], optimizer: torch.optim.Optimizer, where: str) -> None:
    """Raise a :class:`CheckpointError` unless ``saved`` fits ``optimizer``: its parameter
    groups shaped like the optimizer's, its per-parameter state keyed by their indices and
    holding tensors of the parameter's shape, scalars or numbers."""
    template = optimizer.state_dict()
    check_structure(saved, {"state": dict, "param_groups": template["param_groups"]}, where)
    shapes = {
        index: param.shape
        for group, params in zip(template["param_groups"], optimizer.param_groups)
        for index, param in zip(group["params"], params["params"])
    }
    for index, entries in saved["state"].items():
        if index not in shapes or not isinstance(entries, dict):
            raise CheckpointError(f"{where}/state has an entry {index!r} for no parameter of the optimizer")
        for name, value in entries.items():
            fits = value.shape in (shapes[index], ()) if isinstance(value, torch.Tensor) else type(value) in (int, float)
            if not fits:
                raise CheckpointError(f"{where}/state/{index}/{name} does not fit parameter {index} {tuple(shapes[index])}")


def check_numpy_rng_state(saved: Any, where: str) -> None:
    """Raise a :class:`CheckpointError` unless ``saved`` is a state of NumPy's default bit
    generator (tried on a throwaway generator)."""
    try:
        np.random.default_rng().bit_generator.state = saved
    except (TypeError, ValueError, KeyError, OverflowError) as error:
        raise CheckpointError(f"{where} is not a NumPy PCG64 state: {error}") from error


def check_torch_rng_state(saved: torch.Tensor, where: str) -> None:
    """Raise a :class:`CheckpointError` unless ``saved`` is a CPU ``torch.Generator`` state
    (tried on a throwaway generator)."""
    try:
        torch.Generator().set_state(saved)
    except (TypeError, RuntimeError) as error:
        raise CheckpointError(f"{where} is not a torch generator state: {error}") from error


def check_learner_state(
    state: Mapping[str, Any],
    name: str,
    settings: Mapping[str, Any],
    defaults: Mapping[str, Any],
    template: Mapping[str, Any],
    optimizer: torch.optim.Optimizer,
) -> None:
    """Raise unless ``state`` is a checkpoint of this learner, checked whole before anything
    changes: the same algorithm, the same settings, every entry shaped like ``template``.

    Args:
        state: The checkpoint's state.
        name: The learner's algorithm name.
        settings: The learner's config entries a resumed run must share.
        defaults: The same entries of a default config (a setting added after the
            checkpoint was written takes its default; one it holds that is no setting now
            is passed over).
        template: The learner's own ``state_dict()``.
        optimizer: The learner's optimizer (its state is checked against it).

    Raises:
        ValueError: On a checkpoint of another algorithm or config, naming the difference.
        CheckpointError: On a state that does not fit (a damaged or tampered checkpoint),
            naming the entry.
    """
    algo = state.get("algo")
    if algo != name:
        raise ValueError(f"checkpoint is from {algo!r}, not {name!r}: load it with the {algo} learner")
    if not isinstance(state.get("config"), dict):
        raise CheckpointError("the checkpoint has no config mapping: it is damaged or not a learner's")
    saved = {**defaults, **{k: v for k, v in state["config"].items() if k in defaults}}  # a setting since removed is none
    if saved != settings:
        changed = sorted(set(saved) ^ set(settings) | {k for k in settings if saved.get(k) != settings[k]})
        raise ValueError(
            f"the checkpoint's config differs from this learner's in {changed}: resume with the "
            "checkpoint's values or start a new run directory"
        )
    check_structure(state, {**template, "config": dict, "optimizer": dict})
    check_optimizer_state(state["optimizer"], optimizer, "checkpoint/optimizer")
    check_numpy_rng_state(state["rng"], "checkpoint/rng")
