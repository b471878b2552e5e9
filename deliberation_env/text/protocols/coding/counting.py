"""The coding protocol's tests, counted by the trusted judge, and its verdict read back.

**Tests passed come only from the sandbox's verdict** (:func:`deliberation_env.sandbox.
judge_many`). The trusted test code of a problem is rewritten once, in this process, with
:mod:`ast` (the candidate's code is never rewritten or run here): each top-level statement
of ``check``'s body that uses the candidate (its parameter) is one *test*, run in its own
``try``/``except Exception``; a loop with asserts inside is one test (it passes when the
whole loop runs without an exception), so the number of tests never depends on what the
candidate does. Other statements (``import math``, setup, ``assert True``) run as they are.
The rewritten ``check`` returns ``(passed, total, failed)``, ``failed`` being the indices
of the failed tests; the judge process runs it on a proxy of the candidate, and
:attr:`~deliberation_env.sandbox.Verdict.returned` carries that value back. A verdict
whose reason is not ``"passed"`` (``load_error``, ``bad_answer``, ``timeout``, ...)
counts 0 tests passed: a program that exits, prints "passed", forges records or returns
objects claiming equality earns no test.

**The tests' calls.** Each call of the candidate with constant arguments (literals and
operators) in the tests, at most :data:`FEEDBACK_CALLS` in the tests' order, written with
the entry point's name, is a probe of the judge: the program's results on them are what
the feedback shows (:mod:`deliberation_env.text.protocols.coding.protocol`, "Feedback").
A run that ends without them runs them again alone
(:func:`deliberation_env.text.protocols.coding.judge.calls_request`).

**Verdict cache.** What the reward and the feedback read of a verdict (tests passed,
failed indices, the reason and its detail, the calls' results, each cut to
:data:`SHOWN_CHARS` characters) is kept per (problem, program digest), at most
``cache_size`` entries (default :data:`VERDICT_CACHE_SIZE`), the least recently used
dropped first; never the candidate's output. Only verdicts that say something lasting
about the program are kept (:data:`CACHED_REASONS`): a timeout, a judge that ended
without a verdict and any other outcome are judged again.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from deliberation_env.sandbox import Verdict
from deliberation_env.text.protocols.base import quote
from deliberation_env.text.protocols.coding.admission import calls_name

FEEDBACK_CALLS = 8
"""Most calls of the tests whose results one agent's feedback shows."""
SHOWN_CHARS = 200
"""Most characters of one call, or of its result, kept and shown."""
VERDICT_CACHE_SIZE = 4096
"""Verdicts a :class:`~deliberation_env.text.protocols.coding.protocol.CodingProtocol`
keeps by default (each about 2 KiB at most)."""
CACHED_REASONS = frozenset({"passed", "failed", "load_error", "bad_answer"})
"""Verdict reasons that say something lasting about the program, the only ones cached."""

CONSTANT_NODES = (
    ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load,
)  # fmt: skip
"""What the arguments of a call the feedback shows may be built of (literals and operators)."""


@dataclass(frozen=True)
class CountedTests:
    """A problem's trusted tests, rewritten so that ``check`` counts the tests it passes.

    Attributes:
        source: The rewritten test code: ``check(candidate)`` returns ``(passed, total,
            failed)`` (module docstring).
        tests: The source of each counted test, in order.
        calls: The calls of the candidate with constant arguments, in the tests' order and
            written with the entry point's name (module docstring, "The tests' calls").
    """

    source: str
    tests: tuple[str, ...]
    calls: tuple[str, ...] = ()


@functools.lru_cache(maxsize=4096)  # each CodingProtocol counts every problem's tests
def count_tests(test_code: str, where: str, entry_point: str = "candidate") -> CountedTests:
    """The test code with each top-level statement of ``check`` that uses the candidate run
    as one counted test (see the module docstring).

    Args:
        test_code: Trusted source defining ``check(candidate)`` (HumanEval's ``test``).
        where: What the tests belong to, named in errors (e.g. the problem id).
        entry_point: The name the feedback's calls are written with.

    Raises:
        ValueError: If the code defines no ``check(candidate)`` or it has no test.

    >>> counted = count_tests("def check(c):\\n    import math\\n    assert c(1) == 2\\n    assert True\\n", "p", "f")
    >>> counted.tests, counted.calls
    (('assert c(1) == 2',), ('f(1)',))
    """
    module = ast.parse(test_code)
    checks = [node for node in module.body if isinstance(node, ast.FunctionDef) and node.name == "check"]
    if len(checks) != 1 or not checks[0].args.args:
        raise ValueError(f"{where}: the tests must define one function check(candidate)")
    check = checks[0]
    candidate = check.args.args[0].arg
    calls = _constant_calls(check, candidate, entry_point)
    tests: list[str] = []
    body: list[ast.stmt] = _parse("_passed, _failed = 0, []")
    for statement in check.body:
        if not any(isinstance(node, ast.Name) and node.id == candidate for node in ast.walk(statement)):
            body.append(statement)
            continue
        counted = _parse(f"try:\n    pass\nexcept Exception:\n    _failed.append({len(tests)})\nelse:\n    _passed += 1\n")[0]
        counted.body = [statement]
        body.append(counted)
        tests.append(ast.get_source_segment(test_code, statement) or ast.unparse(statement))
    if not tests:
        raise ValueError(f"{where}: check({candidate}) has no statement that uses {candidate}: nothing to count")
    body += _parse(f"return (_passed, {len(tests)}, tuple(_failed))")
    check.body = body
    return CountedTests(ast.unparse(ast.fix_missing_locations(module)), tuple(tests), calls)


def _parse(source: str) -> list[ast.stmt]:
    return ast.parse(source).body


def _constant_calls(check: ast.FunctionDef, candidate: str, entry_point: str) -> tuple[str, ...]:
    """The distinct calls of ``candidate`` with constant arguments in ``check``, in source
    order, at most :data:`FEEDBACK_CALLS`, written as calls of ``entry_point``."""
    found = sorted(
        (node for node in ast.walk(check) if calls_name(node, candidate) and _constant_arguments(node)),
        key=lambda node: (node.lineno, node.col_offset),
    )
    calls = dict.fromkeys(
        ast.unparse(ast.Call(ast.Name(entry_point, ast.Load()), node.args, node.keywords)) for node in found
    )
    return tuple(call for call in calls if len(call) <= SHOWN_CHARS)[:FEEDBACK_CALLS]


def _constant_arguments(call: ast.Call) -> bool:
    """Every argument is built of literals and operators (``3 * 19``, ``[1, -2]``): it
    names no variable, so the call is the same whatever ran before it."""
    arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
    return all(keyword.arg is not None for keyword in call.keywords) and all(
        isinstance(node, CONSTANT_NODES) for argument in arguments for node in ast.walk(argument)
    )


@dataclass(frozen=True)
class TestResult:
    """What the trusted verdict says of a program (all a reward or feedback reads of it).

    Attributes:
        passed: Tests passed (0 unless the verdict's reason is ``"passed"``).
        total: Tests of the problem.
        failed: The indices of the failed tests, in order (into ``CountedTests.tests``).
        reason: The verdict's reason; ``detail``: its explanation.
        results: ``(call, result)`` for each of the tests' constant calls
            (``CountedTests.calls``): the program's result as the judge shows it (``repr``,
            or ``"raised <type>"``), cut to :data:`SHOWN_CHARS`; ``None`` if they could not
            all run.
        no_results: Why ``results`` is ``None``: the reason and detail of the run of the
            calls alone (:func:`with_call_results`); ``""`` otherwise.
    """

    passed: int
    total: int
    failed: tuple[int, ...]
    reason: str
    detail: str
    results: tuple[tuple[str, str], ...] | None = None
    no_results: str = ""


def read_verdict(verdict: Verdict, counted: CountedTests, where: str) -> TestResult:
    """The tests passed according to ``verdict`` on the counting ``check``.

    Raises:
        RuntimeError: If the judge could not load the tests (``judge_error``) or the
            judged ``check`` returned something it cannot return: the sandbox or the
            rewrite is broken, and no reward may be served from it.
    """
    total = len(counted.tests)
    if verdict.reason == "judge_error":
        raise RuntimeError(f"{where}: the sandbox could not load the counting tests: {verdict.detail}")
    results = None
    if verdict.behaviour is not None:
        results = tuple(zip(counted.calls, (quote(shown, SHOWN_CHARS) for shown in verdict.behaviour), strict=True))
    if verdict.reason != "passed":
        return TestResult(0, total, tuple(range(total)), verdict.reason, verdict.detail, results)
    returned = verdict.returned
    if not _well_formed(returned, total):
        raise RuntimeError(f"{where}: the judged check returned {returned!r:.200}, not (passed, {total}, failed)")
    passed, _, failed = returned
    return TestResult(passed, total, tuple(failed), verdict.reason, verdict.detail, results)


def _well_formed(returned: object, total: int) -> bool:
    if not (isinstance(returned, tuple | list) and len(returned) == 3):
        return False
    passed, count, failed = returned
    return (
        type(passed) is int
        and count == total
        and isinstance(failed, tuple | list)
        and len(failed) == total - passed
        and all(type(index) is int and 0 <= index < total for index in failed)
        and list(failed) == sorted(set(failed))
    )


def with_call_results(result: TestResult, verdict: Verdict, counted: CountedTests) -> TestResult:
    """``result`` with the calls' results of ``verdict``, a run of the calls alone."""
    if verdict.behaviour is None:
        return dataclasses.replace(result, no_results=f"{verdict.reason}: {verdict.detail}")
    shown = (quote(text, SHOWN_CHARS) for text in verdict.behaviour)
    return dataclasses.replace(result, results=tuple(zip(counted.calls, shown, strict=True)))


class VerdictCache(Mapping[tuple[str, str], TestResult]):
    """The verdict cache: a bounded map from (problem id, program digest) to
    :class:`TestResult`, the least recently used dropped first (module docstring)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._kept: OrderedDict[tuple[str, str], TestResult] = OrderedDict()

    def __getitem__(self, key: tuple[str, str]) -> TestResult:
        return self._kept[key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._kept)

    def __len__(self) -> int:
        return len(self._kept)

    def recall(self, key: tuple[str, str]) -> TestResult | None:
        """The kept result of ``key``, now the most recently used, or ``None``."""
        if key in self._kept:
            self._kept.move_to_end(key)
        return self._kept.get(key)

    def keep(self, key: tuple[str, str], result: TestResult) -> None:
        """Keep ``result`` if its reason is one of :data:`CACHED_REASONS`."""
        if result.reason not in CACHED_REASONS:
            return
        self._kept[key] = result
        self._kept.move_to_end(key)
        while len(self._kept) > self.maxsize:
            self._kept.popitem(last=False)
