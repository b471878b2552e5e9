"""Where benchmark records come from, how they are read, and the fixed split of single-split sources.

A task's ``path`` is one of (the formats of each benchmark: ``docs/data.md``):

- a directory holding ``train.jsonl`` and ``test.jsonl``: the source's own splits, kept
  as they are. A directory may hold only one of them: the task then has only that split,
  and asking for the other is an error that names the missing file and what reads that
  split (so a folder with only ``test.jsonl`` is enough to evaluate);
- one JSONL file: its records are split by :func:`hash_split` of a per-task key (the
  normalized problem text, see :func:`question_key`, or a real problem id), so the
  split is fixed, disjoint, independent of the file's order, and duplicates of a
  problem land in the same split; ``test_fraction`` of them go to ``test``;
- ``"hf:<dataset>"`` or ``"hf:<dataset>:<config>"`` (e.g. ``"hf:openai/gsm8k:main"``): a
  Hugging Face dataset, read by ``datasets.load_dataset(dataset, config)`` where the
  machine can reach the hub (or has the dataset in its cache), with the optional
  ``datasets`` package (``pip install 'deliberation-env[hf]'``). ``<dataset>`` may be
  anything ``load_dataset`` takes, a local folder of JSONL files too. Its ``train`` and
  ``test`` splits are used if it has both (with no ``train``, its ``dev`` and
  ``validation`` splits form ``train``), otherwise its only split is hash-split like a
  single file. Its records are parsed exactly as a file's;
- ``"sample"``: the few records of the benchmark that ship with the package
  (:func:`sample_path`), for examples and tests. A local folder named ``sample`` is
  written ``./sample``.

A single-split source announces its split on the ``deliberation_env.tasks`` logger
(INFO: how many records went to each split, and the ``test_fraction``).

Data files are UTF-8 (a leading byte-order mark is allowed). Records come with *where*
they were read (``"path:line"``, or ``"dataset[split]:row"``), which every error about a
record names: text that is not UTF-8, a line that is not one JSON object (``NaN``,
``Infinity`` and repeated keys included), a missing, ``null``, empty or mistyped field.
A file with no record at all is an error too, naming the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.hub import cache_only
from deliberation_env.tasks.base import SPLITS, Problem, check_split

TEST_FRACTION = 0.5
"""Share of a single-split source's problems that :func:`hash_split` puts in ``test``."""

HF_PREFIX = "hf:"
"""A ``path`` that starts with it names a Hugging Face dataset (see the module docstring)."""

SAMPLE = "sample"
"""The ``path`` of a task's shipped sample (:func:`sample_path`)."""

SAMPLES = Path(__file__).with_name("samples")
"""The folder of the shipped samples, one folder per task."""

ACCEPTED = (
    "a JSONL file (split in two by a hash of each problem), a folder with train.jsonl and test.jsonl, "
    "'hf:<dataset>[:<config>]' (a Hugging Face dataset, with the hf extra), or 'sample' (the few "
    "records that ship with the package); where to get each benchmark and its format: docs/data.md"
)
"""What a task's ``path`` may be, for error messages."""

DATASET_NAME = re.compile(r"[\w.-]+/[\w.-]+(?::[\w.-]+)?")
"""What a Hugging Face dataset's name looks like (``org/name`` or ``org/name:config``)."""

READERS = {
    "train": "training reads (deliberate train and compare: the learners' updates)",
    "test": "evaluation reads (deliberate run, and the held-out scores of train and compare)",
}
"""What reads each split, for the error that a source lacks one."""

logger = logging.getLogger("deliberation_env.tasks")

Record = tuple[str, dict[str, Any]]
"""A record and where it was read (``"path:line"``)."""


def hash_split(key: str, test_fraction: float = TEST_FRACTION) -> str:
    """The split (``"train"`` or ``"test"``) of a problem in a single-split source.

    The first 8 bytes of SHA-256(``key``), read as a fraction of 2**64, below
    ``test_fraction`` mean ``"test"``.

    >>> hash_split("What is 1 + 1?"), hash_split("What is 3 + 3?")
    ('test', 'train')
    """
    check_test_fraction(test_fraction)
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return "test" if int.from_bytes(digest[:8], "big") < test_fraction * 2**64 else "train"


def question_key(text: str) -> str:
    """The normalized form of a problem text that :func:`hash_split` places: runs of
    whitespace made single spaces, case folded, so copies that differ only in spacing or
    case share a split.

    >>> question_key("  What  IS 1 + 1? ") == question_key("what is 1 + 1?")
    True
    """
    return " ".join(text.split()).casefold()


def read_text(path: Path) -> str:
    """The text of a UTF-8 data file, without a leading byte-order mark.

    Raises:
        ValueError: If the file is not UTF-8, naming ``path:line`` of the first bad byte.
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(
            f"{path}:{line}: not UTF-8 text (byte {data[error.start]:#04x}); data files must be UTF-8"
        ) from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line of a JSONL file.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: On text that is not UTF-8 or a line that is not one JSON object
            (``NaN``, ``Infinity`` and a key given twice count as invalid), naming ``path:line``.
    """
    if not path.is_file():
        raise FileNotFoundError(f"no such JSONL file: {path}")
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=_object, parse_constant=_reject_constant)
        except ValueError as error:  # json.JSONDecodeError is a ValueError, as are the hooks'
            reason = error.msg if isinstance(error, json.JSONDecodeError) else error
            raise ValueError(f"{path}:{number}: not valid JSON ({reason})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")  # noqa: TRY004 (bad data, not a bad argument)
        yield number, record


def read_records(path: Path) -> list[Record]:
    """The records of a JSONL file, each with where it was read (``"path:line"``).

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: As :func:`read_jsonl`, and if the file holds no record at all (empty,
            or only blank lines), naming ``path``.
    """
    records = [(f"{path}:{line}", record) for line, record in read_jsonl(path)]
    if not records:
        raise ValueError(
            f"{path}: no records (the file is empty or holds only blank lines); a data file "
            "holds one JSON object per line"
        )
    return records


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (JSON would silently keep the last)."""
    repeated = [key for key, count in Counter(key for key, _ in pairs).items() if count > 1]
    if repeated:
        raise ValueError(f"key {', '.join(map(repr, repeated))} given more than once")
    return dict(pairs)


def _reject_constant(name: str) -> Any:
    """Refuse ``NaN``, ``Infinity`` and ``-Infinity``, which Python's ``json`` accepts."""
    raise ValueError(f"{name} is not a JSON number")


def require(where: str, record: dict[str, Any], name: str) -> str:
    """The text field ``name`` of a record: a non-empty string.

    Raises:
        ValueError: Naming ``where`` and the field if it is missing, ``null``, not a
            string or only whitespace.
    """
    value = _present(where, record, name)
    if not isinstance(value, str):
        raise ValueError(f"{where}: field {name!r} must be a string, got {type(value).__name__} {value!r}")  # noqa: TRY004 (bad data, not a bad argument)
    if not value.strip():
        raise ValueError(f"{where}: field {name!r} is empty")
    return value


def require_answer(where: str, record: dict[str, Any], name: str) -> str:
    """The answer field ``name`` of a record as text: a non-empty string, or a finite
    JSON number (``204`` gives ``"204"``).

    Raises:
        ValueError: Naming ``where`` and the field if it is missing, ``null``, a boolean,
            a list or object, a non-finite number, or an empty string.
    """
    value = _present(where, record, name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ValueError(f"{where}: field {name!r} must be a finite number, got {value!r}")
        return str(value)
    return require(where, record, name)


def optional_text(where: str, record: dict[str, Any], name: str) -> str | None:
    """The optional text field ``name``: ``None`` if absent or ``null``, else as :func:`require`."""
    return None if record.get(name) is None else require(where, record, name)


def _present(where: str, record: dict[str, Any], name: str) -> Any:
    if name not in record:
        raise ValueError(f"{where}: missing field {name!r} (fields: {', '.join(map(str, record))})")
    if record[name] is None:
        raise ValueError(f"{where}: field {name!r} is null")
    return record[name]


def check_unique_ids(splits: Mapping[str, Sequence[tuple[str, Problem]]]) -> None:
    """Refuse a problem id used twice in a task (within or across splits).

    Args:
        splits: For each split, its problems with where each was read.

    Raises:
        ValueError: Naming both places that hold the repeated id.
    """
    first: dict[str, str] = {}
    for located in splits.values():
        for where, problem in located:
            if problem.id in first:
                raise ValueError(
                    f"{where}: problem id {problem.id!r} is already used at {first[problem.id]}; "
                    "ids must be unique within a task"
                )
            first[problem.id] = where


def load_splits(
    source: str | Path,
    key: Callable[[str, dict[str, Any]], str],
    test_fraction: float = TEST_FRACTION,
    place: Callable[[str, dict[str, Any]], str | None] | None = None,
) -> dict[str, list[Record]]:
    """The records of each split that ``source`` has (see the module docstring).

    Args:
        source: A directory, a JSONL file, or ``"hf:<dataset>[:<config>]"`` (as
            :func:`resolve_source` returns it).
        key: ``key(where, record)``: the string that places a record of a single-split
            source in a split (it raises ``ValueError`` naming ``where`` on a bad record).
        test_fraction: The share of a single-split source's records placed in ``test``
            (:func:`hash_split`).
        place: ``place(where, record)``: the split of a record of a single-split source
            (``None``: in neither), instead of the hash of its key.

    Returns:
        ``{"train": records, "test": records}``; a directory holding one split file
        gives only that split.

    Raises:
        FileNotFoundError: If a directory holds neither split file, or a dataset cannot
            be loaded (naming it and why).
        ValueError: On a malformed record (naming ``path:line``), an empty file, or a
            ``test_fraction`` outside (0, 1).
    """
    check_test_fraction(test_fraction)
    if str(source).startswith(HF_PREFIX):
        splits = _hub_splits(str(source).removeprefix(HF_PREFIX))
        if set(SPLITS) <= splits.keys():
            return {split: splits[split] for split in SPLITS}
        if len(splits) != 1:
            raise ValueError(
                f"dataset {source!r} has the splits {', '.join(sorted(splits))}: it needs train and test "
                "(or test with dev or validation), or exactly one split, which is hash-split"
            )
        records = next(iter(splits.values()))
    elif Path(source).is_dir():
        return _directory_splits(Path(source))
    else:
        records = read_records(Path(source))
    split_of = place or (lambda where, record: hash_split(key(where, record), test_fraction))
    placed = {split: [] for split in SPLITS}
    for where, record in records:
        split = split_of(where, record)
        if split is not None:
            placed[split].append((where, record))
    logger.info(
        "%s: one set of %d records, split by %s into %d train and %d test",
        source, len(records), "the task's split rule" if place else f"a hash of each problem (test_fraction={test_fraction})",
        len(placed["train"]), len(placed["test"]),
    )
    return placed


def load_split(
    source: str | Path,
    split: str,
    key: Callable[[str, dict[str, Any]], str],
    test_fraction: float = TEST_FRACTION,
    place: Callable[[str, dict[str, Any]], str | None] | None = None,
) -> list[Record]:
    """The records of one ``split`` of ``source`` (:func:`load_splits` reads every split).

    Raises:
        FileNotFoundError: As :func:`load_splits`, and if ``source`` lacks ``split``
            (naming the missing file and what reads that split).
        ValueError: As :func:`load_splits`, and on an unknown split.
    """
    return present_split(load_splits(source, key, test_fraction, place), split, source)


def check_test_fraction(test_fraction: float) -> float:
    """``test_fraction`` if it lies in (0, 1), else a ``ValueError`` naming it."""
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, int | float) or not 0 < test_fraction < 1:
        raise ValueError(
            f"test_fraction must lie in (0, 1): the share of a single file's problems placed in test, "
            f"got {test_fraction!r}"
        )
    return test_fraction


def present_split(splits: Mapping[str, Any], split: str, source: str | Path) -> Any:
    """``splits[split]``, or a ``FileNotFoundError`` saying that ``source`` lacks it,
    what reads that split, and how to add it.

    Raises:
        ValueError: On an unknown ``split``.
    """
    if check_split(split) not in splits:
        raise FileNotFoundError(
            f"{source} has no {split}.jsonl, so it has no {split} split, which {READERS[split]}. "
            f"Add {split}.jsonl beside {next(iter(splits))}.jsonl (the format: docs/data.md), or give one "
            "JSONL file, which is split in two by a hash of each problem (test_fraction)"
        )
    return splits[split]


def _directory_splits(folder: Path) -> dict[str, list[Record]]:
    """The records of each split file a directory holds (at least one)."""
    files = {split: folder / f"{split}.jsonl" for split in SPLITS}
    present = {split: read_records(file) for split, file in files.items() if file.is_file()}
    if not present:
        found = sorted(entry.name for entry in folder.iterdir())[:8]
        raise FileNotFoundError(
            f"{folder} is a directory with neither train.jsonl nor test.jsonl (it holds: "
            f"{', '.join(found) or 'nothing'}); a data folder holds train.jsonl and test.jsonl, one JSON "
            "object per line (the format of each benchmark: docs/data.md)"
        )
    return present


def resolve_source(task: str, path: str | Path) -> str | Path:
    """Where task ``task`` reads its problems, from the ``path`` it was given.

    ``"hf:<dataset>[:<config>]"`` stays as it is; ``"sample"`` is the task's shipped
    sample (:func:`sample_path`); anything else is a local file or directory.

    >>> resolve_source("gsm8k", "hf:openai/gsm8k:main")
    'hf:openai/gsm8k:main'
    >>> resolve_source("gsm8k", "sample").name
    'gsm8k'

    Raises:
        FileNotFoundError: If the local path does not exist, or there is no sample of
            ``task``; the message says what ``path`` accepts.
    """
    if isinstance(path, str) and path.startswith(HF_PREFIX):
        return path
    if isinstance(path, str) and path == SAMPLE:
        return sample_path(task)
    if not Path(path).exists():
        hint = f" (did you mean path='hf:{path}'?)" if DATASET_NAME.fullmatch(str(path)) else ""
        raise FileNotFoundError(
            f"path={str(path)!r} (--path): no such file or directory{hint}. Task {task!r} reads {ACCEPTED}"
        )
    return Path(path)


def sample_path(task: str) -> Path:
    """The folder of the few records of ``task`` that ship with the package
    (``train.jsonl``, ``test.jsonl``, and a ``LICENSE`` naming their source).

    >>> sorted(file.name for file in sample_path("gsm8k").iterdir())
    ['LICENSE', 'test.jsonl', 'train.jsonl']

    Raises:
        FileNotFoundError: If no sample of ``task`` ships, naming those that do.
    """
    folder = SAMPLES / task
    if not folder.is_dir():
        shipped = sorted(entry.name for entry in SAMPLES.iterdir() if entry.is_dir())
        raise FileNotFoundError(
            f"no sample of task {task!r} ships with the package (samples: {', '.join(shipped)}); give "
            f"path= (--path) a local file or folder, or 'hf:<dataset>' (docs/data.md)"
        )
    return folder


def data_paths(source: str | Path) -> tuple[Path, ...]:
    """Where the records of ``source`` lie on this machine: a local file or directory, or
    for ``"hf:<dataset>"`` the Hugging Face caches (and the dataset's folder if it is a
    local one). A code task hides them from the programs it judges."""
    if not str(source).startswith(HF_PREFIX):
        return (Path(source),)
    local = Path(str(source).removeprefix(HF_PREFIX).partition(":")[0])
    caches = (
        Path(importlib.import_module("datasets").config.HF_DATASETS_CACHE),
        Path(importlib.import_module("huggingface_hub").constants.HF_HUB_CACHE),
    )
    return (*caches, local) if local.exists() else caches


@contextlib.contextmanager
def _hub_offline(datasets: Any, offline: bool) -> Iterator[None]:
    """While inside, ``datasets`` and ``huggingface_hub`` read the cache only when
    ``offline`` (their offline switch is read once, at import, from ``HF_HUB_OFFLINE``):
    on a machine that cannot resolve the hub, its client retries each file for half a
    minute first."""
    if not offline:
        yield
        return
    import huggingface_hub.constants

    switches = [(module, "HF_HUB_OFFLINE") for module in (getattr(datasets, "config", None), huggingface_hub.constants)
                if hasattr(module, "HF_HUB_OFFLINE")]  # fmt: skip
    before = [getattr(module, name) for module, name in switches]
    try:
        for module, name in switches:
            setattr(module, name, True)
        yield
    finally:
        for (module, name), value in zip(switches, before, strict=True):
            setattr(module, name, value)


def _hub_splits(dataset: str) -> dict[str, list[Record]]:
    """Every split of a Hugging Face dataset ``"<name>[:<config>]"``, as records (``dev``
    and ``validation`` together as ``train`` when it has ``test`` and no ``train``)."""
    try:
        datasets = importlib.import_module("datasets")
    except ImportError:
        raise ModuleNotFoundError(
            f"path='hf:{dataset}' reads a Hugging Face dataset with the optional datasets package: "
            "pip install 'deliberation-env[hf]' (or give a local copy, see docs/data.md)"
        ) from None
    name, _, config = dataset.partition(":")
    because = None if Path(name).exists() else cache_only()
    try:
        with _hub_offline(datasets, because is not None):
            loaded = datasets.load_dataset(name, config or None)
    except Exception as error:  # the hub's errors vary by version and cause
        reach = (
            f"{because}, so only the cache was read: load the dataset once where the hub can be reached"
            if because
            else "check that this machine can reach the hub (or has the dataset in its cache)"
        )
        raise FileNotFoundError(
            f"path='hf:{dataset}': datasets could not load {name!r}"
            f"{f' (config {config!r})' if config else ''}: {error}. Check the name on huggingface.co (add "
            f"':<config>' if the dataset has several); {reach}; or give a local copy (docs/data.md); for a "
            "smoke run of gsm8k, math, mmlu or humaneval, path='sample' (--path sample: the few records that ship "
            "with the package)"
        ) from error
    splits = {
        split: [(f"{dataset}[{split}]:{row}", dict(record)) for row, record in enumerate(rows)]
        for split, rows in loaded.items()
    }
    if "train" not in splits and "test" in splits and {"dev", "validation"} & splits.keys():
        # e.g. MMLU: its few-shot (dev) and validation questions
        splits["train"] = [record for split in ("dev", "validation") for record in splits.pop(split, [])]
    return splits


class SplitsFromSource:
    """What every task read from a source shares: its splits, their sizes, and the error
    for a split the source lacks.

    Subclasses set ``path`` (the source, as :func:`resolve_source` returns it) and
    ``_problems`` (the problems of each split the source has).
    """

    path: str | Path
    _problems: dict[str, Sequence[Problem]]

    @property
    def split_counts(self) -> dict[str, int]:
        """The number of problems of each split the source has (as :meth:`problems` returns them).

        >>> from deliberation_env import tasks
        >>> tasks.get("gsm8k", path="sample").split_counts
        {'train': 8, 'test': 8}
        """
        return {split: len(self.problems(split)) for split in self._problems}

    def problems(self, split: str) -> Sequence[Problem]:
        """The problems of ``split``, in the source's order.

        Raises:
            FileNotFoundError: If the source has no ``split`` (a directory without its
                file), naming the missing file and what reads that split.
        """
        return present_split(self._problems, split, self.path)
