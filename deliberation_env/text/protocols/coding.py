"""The coding protocol: a helper function and a main function on HumanEval (MAGRPO, CoMLRL).

**Roles.** Two agents (n = 2), as in the MAGRPO paper's coding collaboration and its
reference code (CoMLRL's ``LLM_Collab_Code_Generation``): agent 0 is the ``"helper"``,
which writes a function ``aux(...)``; agent 1 is the ``"main"`` agent, which writes the
problem's entry point and may call ``aux``. The team's code is two programs, each run in
its own sandboxed process: the HumanEval prompt (its imports and helper functions) then
the helper's code, and the prompt then the main agent's code, whose calls of the
helper's functions cross to the helper's process (below).
Code is the last ```` ```python ```` block of a text that defines the agent's function
(else its last block, else the whole text), as for :mod:`deliberation_env.tasks.humaneval`;
code that never defines the agent's function is no code (as CoMLRL keeps only function
definitions), so prose without a function is a missing function, not a syntax error.

**Reward** (CoMLRL's level-based reward, its weights; R in [0, 4]). Each part below is
in ``infos[agent]["reward_components"]`` as the 0/1 (or fraction) it measures; R is their
weighted sum, and a level is only scored when the levels before it pass:

====================  ======  ===============================================================
part                  weight  what it measures
====================  ======  ===============================================================
``helper_defined``    0.4     the helper's code is admitted (below) and defines ``aux`` at
                              top level, with a ``return <value>`` in it
``main_defined``      0.6     the main agent's code is admitted and defines the entry point
                              likewise; if not, nothing below is scored
``syntax``            0.5     both codes and the team's two programs compile; if not, nothing
                              below is scored
``tests``             1.0     the fraction of the hidden tests the program passes, from the
                              sandbox's trusted verdict (below)
``cooperation``       0.5     at least one test passed, the helper is defined and
                              non-trivial, and the main function calls ``aux`` without
                              binding ``aux`` itself
``not_wrapper``       1.0     given cooperation: the main function is not a thin wrapper
                              (``return aux(...)``, or ``v = aux(...)`` then ``return v``)
``ignored_call``      -0.5    given cooperation: the main function calls ``aux`` as a bare
                              statement, throwing its result away
====================  ======  ===============================================================

**What each agent's code may hold.** Both codes are checked with :mod:`ast` before
anything runs, by the same rules on every path (scoring, leave-one-out, every turn). Code
that breaks a rule is *refused*: it scores as not defined and does not run (a refused
helper's code is left out: no helper process runs; a refused main function ends the
scoring at ``main_defined``), and the agents' feedback names the line and the rule.

1. *Top level*: only imports, function definitions (``def``, ``async def``) and
   docstrings. A top-level function has literal default values, annotations that are
   type expressions (names, attributes, subscripts, ``|``, literals) and no decorator but
   ``functools.cache`` and ``functools.lru_cache`` (with literal arguments; never on the
   entry point). So no code an agent wrote runs while the program loads: no trace,
   profile or audit hook, no edit of builtins or ``sys.modules``, no decorator, default
   argument, annotation or class body that calls something.
2. *Imports* anywhere: absolute and named (no ``*``), of :data:`ALLOWED_MODULES` only:
   modules of pure computation, none of which reaches the interpreter (``sys``,
   ``builtins``, ``gc``, ``inspect``, ``ctypes``, ``os`` are out) or keeps state one
   agent's call could change for the other (``random``'s seed, ``decimal``'s context).
3. *Anywhere*: no ``global`` statement, no attribute assignment or deletion, no dunder
   name (``__builtins__``, ``__import__``), no attribute whose name starts with ``_`` or
   reads a frame, code object or traceback (``gi_frame``, ``f_globals``, ``tb_frame``,
   ``co_code``; prefixes :data:`FRAME_PREFIXES`), none of :data:`DENIED_NAMES` (the
   builtins that read or write another object's namespace or run strings: ``globals``,
   ``vars``, ``getattr``, ``setattr``, ``hasattr``, ``exec``, ``compile``, ``open``; the
   library functions that reach attributes by name or evaluate strings: ``attrgetter``,
   ``Formatter``, ``get_type_hints``, ``update_wrapper``, ``singledispatch``, ...), no
   attribute under which an allowed module holds one that is not (``typing.sys``,
   ``statistics.random``: :data:`MODULE_ATTRIBUTES`). And none of the other ways found to
   reach an attribute by a string: no class pattern in ``match`` (``case C(x)`` reads the
   attributes named by ``C.__match_args__``, and a metaclass decides what ``C`` matches),
   ``type`` only as ``type(value)`` and never its result called (``type(name, bases,
   namespace)`` makes such classes and metaclasses), ``.format`` and ``.format_map`` only
   on a string literal whose fields name no attribute or item (``"{0.__globals__}"``
   reads one: :data:`FORMAT_METHODS`), no method ``__reduce__`` or ``__reduce_ex__``
   (``copy.copy`` calls what it returns and sets the names of its state with
   ``setattr``: :data:`COPY_HOOKS`).
4. *Names*: each agent binds at top level only names of its own: no builtin's name, no
   dunder name, no name the prompt binds (unless it repeats the prompt's own import or
   function unchanged). The helper never binds the entry point; the main agent binds it
   by ``def`` only. A name both agents bind differently refuses the helper's code (the
   main agent's binding would replace it).

A top-level statement that repeats one of the prompt's unchanged (its imports, its helper
functions, even without their docstrings) is the prompt's own code and is not checked:
an answer that copies the prompt before its solution is admitted, and every canonical
solution is.

``eval`` in the team's programs evaluates literals and operators only (numbers, strings,
arithmetic, comparisons): each judged program starts with a trusted definition of it,
since HumanEval/160's own solution calls ``eval``.

**Each agent's code runs in its own process** (:class:`TeamProgram`, the sandbox's
``JudgeRequest.helper``). The helper's program runs in a process of its own, confined
as the candidate is (limits, uid, Landlock, seccomp); in the main agent's process each of
the helper code's top-level functions is bound to a stub that sends the arguments to the
helper's process and receives the result. Only plain values cross, in the sandbox's codec
(numbers, strings, bytes, ``None``, booleans, and lists, tuples, dicts, sets and
frozensets of them; never pickle): a list, dict or set that the call changed in place
refills the caller's own object (nesting and identity kept), so a helper that sorts its
argument behaves as in one process; the helper's exception is raised in the main's call
as the built-in exception of that name with its arguments, else as ``HelperError`` (whose
message starts with the type's name); a value that cannot cross (a function, a
generator, an object of the helper's class, as the result or left in an argument) makes
the call raise ``TypeError``, and so does an argument that cannot. The prompts say so.
The helper's code cannot call the main agent's functions, and each code has its own
imports. A call costs about 0.1 ms (10,000 calls in one check take about a second of
the ten the task allows; BENCHMARKS.md, "Sandbox").

**What is proven, and by what.** *One agent's code cannot change what another's does*:
this rests on the process boundary, not on the rules. Neither process ever holds an
object of the other agent's code, only its own objects and plain values decoded by the
codec (exact built-in types, no code of the sender runs to build them), so no
reflection in one process reaches the other's functions, globals or builtins. The
two processes share the run's uid, scratch directory and process limit: the helper can
make the main fail (by its answers, its exceptions, its death, a full scratch), and the
main's code chooses the arguments of its calls, which is the collaboration itself; but
neither can make the other's code compute anything else. *The function analysed is the
function judged*: the main agent's last ``def`` of the entry point is the last binding of
that name when its program has loaded (no other binding exists in the main's code, and
none can be made later: no ``global``, no namespace writes, no frames), the sandbox calls
the very function that ``def`` created, and the helper's process cannot replace its
code, defaults or globals. This protocol *refuses* every other binding of the entry point;
it does not analyse whatever ends up bound to it. The rules stay as a first filter,
checked on each agent's code alone and on the names they bind together: nothing an agent
wrote runs at load, and its code reaches no frame, ``sys`` or ``builtins``. They are a
syntactic allow-list, and one can miss a reflective path (the class pattern above was
one); what such a path reaches is the agent's own process. *Not proven*: that the
helper's result matters, or that either function is correct beyond the tests.

**What the structure bonuses do not prove.** ``helper_defined``, ``main_defined``,
``cooperation``, ``not_wrapper`` and ``ignored_call`` are facts of the judged functions'
text, as in CoMLRL: that ``aux`` returns something other than a constant or one of its
parameters, that the main function's text calls ``aux`` and is not one of CoMLRL's two
wrapper forms. They do not prove that the call matters to the result (``v = aux(x)``
with ``v`` never used passes), that the main function does part of the work (one more
statement takes any wrapper out of the two forms), or that the helper is correct. Only
the ``tests`` part measures behaviour.

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

**Feedback** (multi-turn, after CoMLRL's ``level_feedback`` mode): each agent's next
prompt says which functions were found (or why a code was refused), the syntax error
(which code, line, message), whether the program loaded (its error if not), and *what the
program returns on the tests' calls*: each call of the candidate with constant arguments
(literals and operators) in the tests (at most :data:`FEEDBACK_CALLS`, in the tests'
order), written with the entry point's name, and the program's own result or exception.
The judge evaluates these calls each on its own, before the tests (so the program cannot
yet know how a test went), and if that run ends without them (the program hung or broke
the protocol, perhaps on a later test), the calls run again alone, without the tests (a
second sandbox run, for such programs only). The feedback therefore never
holds an expected value, which tests passed or how many, or anything else that depends
on the tests beyond their inputs: not even whether the judged run timed out, which a
program could otherwise use to signal what the order of its calls told it (a loop of
asserts stops at its first failure). A policy that reads it learns nothing of what the
reward checks: a lookup table built from the feedback alone scores no more tests at turn
k than at turn 1 (``tests/text/test_coding_attacks.py``). The main agent also reads
whether it calls ``aux`` and whether it is a thin wrapper. Each agent sees its partner's
code. *CoMLRL's choice*: its level feedback quotes each failed ``assert`` line, expected
value included, and the next turn is rewarded on the same tests, so a lookup table built
from its feedback alone passes most of them by turn 3.

**Verdict cache.** What the reward and the feedback read of a verdict (tests passed,
failed indices, the reason and its detail, the calls' results, each cut to
:data:`SHOWN_CHARS` characters) is kept per (problem, program digest), at most
``cache_size`` entries (default :data:`VERDICT_CACHE_SIZE`), the least recently used
dropped first; never the candidate's output. Only verdicts that say something lasting
about the program are kept (:data:`CACHED_REASONS`): a timeout, a judge that ended
without a verdict and any other outcome are judged again.

**Neutral text** (leave-one-out): the empty text, for both roles: no helper (the main
function's calls of ``aux`` then fail), or no main function (R is at most 0.4).

**Where this differs from CoMLRL, and why.**

- Tests run in the sandbox and are counted by the trusted judge; CoMLRL runs each assert
  line with ``exec`` in the trainer's own process, which the judged code can take over.
- A test is a top-level statement of ``check`` that uses the candidate, found in the
  syntax tree; CoMLRL finds ``assert ... candidate ...`` lines with regular expressions
  and runs each alone, so asserts inside loops fail for want of their loop variable.
- One wall-clock limit for the whole check (``HumanEvalTask.timeout_s``); CoMLRL gives
  each assert 10 s and stops after three timeouts. A program that hangs passes nothing.
- Each agent's code is checked against the rules above and refused if it breaks one,
  and runs in its own process; CoMLRL cuts the named function out of the text with
  regular expressions and runs both in one interpreter with whatever else the module binds.
- Calls, wrappers and ignored results are read from the syntax tree, not with regular
  expressions (which count ``aux(`` inside a string or a comment as a call).
- Cooperation also needs a *non-trivial* helper (one that returns something other than a
  constant or one of its own parameters), and a main agent that does not bind ``aux``
  itself: otherwise ``def aux(x): return x`` farms the 1.5 points of cooperation.
- The ignored-call deduction applies only with the cooperation bonus it offsets, so R is
  never negative (CoMLRL's reward function does the same; its logger applies it always).
- Feedback shows the program's results, never the expected values (above).

Example (no sandbox run: the main agent writes no function, so no level past the first
is scored):
    >>> from deliberation_env import tasks
    >>> protocol = CodingProtocol(tasks.get("humaneval"))
    >>> problem = protocol.problems("test")[0]
    >>> outcome = protocol.score(problem, ["def aux(x):\\n    return x * 2\\n", "I cannot."])
    >>> outcome.reward, outcome.parts["helper_defined"], outcome.parts["main_defined"]
    (0.4, 1.0, 0.0)
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import functools
import hashlib
import importlib
import json
import re
import string
import textwrap
import types
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from agents.base import Message
from deliberation_env.sandbox import JudgeRequest, Verdict, judge_many
from deliberation_env.tasks import Problem, Task
from deliberation_env.tasks.base import positive_int
from deliberation_env.tasks.humaneval import extract_code
from deliberation_env.text.protocols.base import Outcome, chat, quote

HELPER = "aux"
"""The name of the helper agent's function."""
WEIGHTS = {
    "helper_defined": 0.4,
    "main_defined": 0.6,
    "syntax": 0.5,
    "tests": 1.0,
    "cooperation": 0.5,
    "not_wrapper": 1.0,
    "ignored_call": -0.5,
}
"""CoMLRL's weight of each reward part (module docstring)."""
FEEDBACK_CALLS = 8
"""Most calls of the tests whose results one agent's feedback shows."""
SHOWN_CHARS = 200
"""Most characters of one call, or of its result, kept and shown."""
VERDICT_CACHE_SIZE = 4096
"""Verdicts a :class:`CodingProtocol` keeps by default (each about 2 KiB at most)."""
CACHED_REASONS = frozenset({"passed", "failed", "load_error", "bad_answer"})
"""Verdict reasons that say something lasting about the program, the only ones cached."""

ALLOWED_MODULES = frozenset({
    "bisect", "cmath", "collections", "collections.abc", "copy", "datetime", "fractions",
    "functools", "hashlib", "heapq", "itertools", "math", "operator", "re", "statistics",
    "string", "typing",
})  # fmt: skip
"""The modules the agents' code may import (rule 2 of the module docstring)."""
DENIED_NAMES = frozenset({
    # builtins that read or write another object's namespace, or run strings
    "globals", "vars", "locals", "getattr", "setattr", "delattr", "hasattr", "exec", "compile",
    "open", "breakpoint",
    # library functions that reach attributes by name, set them, or evaluate strings
    "attrgetter", "methodcaller", "Formatter", "get_type_hints", "ForwardRef",
    "singledispatch", "singledispatchmethod", "update_wrapper", "wraps", "total_ordering",
    "register",
})  # fmt: skip
"""Names the agents' code may not use, as a name, an attribute or an import (rule 3)."""
CONSTANT_NODES = (
    ast.Constant, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load,
)  # fmt: skip
"""What the arguments of a call the feedback shows may be built of (literals and operators)."""
FRAME_PREFIXES = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")
"""Attribute prefixes of frames, generators, coroutines, tracebacks and code objects."""
COPY_HOOKS = frozenset({"__reduce__", "__reduce_ex__"})
"""Methods no class may define: ``copy.copy`` and ``copy.deepcopy`` call what they return
and ``setattr`` the names in its state on that call's result (rule 3)."""
FORMAT_METHODS = frozenset({"format", "format_map"})
"""String methods whose fields read attributes and items by name (``"{0.__globals__}"``)."""
CACHE_DECORATORS = frozenset({"cache", "lru_cache"})
"""The ``functools`` decorators a top-level function may have (never the entry point)."""

NO_TESTS = "def check(candidate):\n    return None\n"
"""The tests of a run of the tests' constant calls alone (:meth:`CodingProtocol.calls_request`)."""

SAFE_EVAL = '''\
def eval():
    def eval(source, /):
        """Evaluate literals and operators only (the coding protocol's trusted eval)."""
        import ast
        import builtins
        allowed = (ast.Expression, ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare,
                   ast.Tuple, ast.List, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
        tree = ast.parse(str(source).strip(), mode="eval")
        for node in ast.walk(tree):
            if not isinstance(node, allowed):
                raise ValueError(f"eval evaluates literals and operators only, not {type(node).__name__}")
        return builtins.eval(compile(tree, "<eval>", "eval"), {"__builtins__": {}}, {})
    return eval
eval = eval()
'''
"""The start of every judged program: ``eval`` bound to an evaluator of literals and
operators (module docstring), whose helpers live in a closure no agent can reach."""

SYSTEM = (
    "You are one of two programmers writing a Python solution together: a helper agent "
    f"writes a function {HELPER}(...), a main agent writes the function the problem asks for "
    f"and may call {HELPER}(...). Reply with your function only, in one ```python code block: "
    "imports and function definitions, no other code outside a function."
)
CROSSING = (
    "The two functions run in separate processes: {helper}(...) takes and returns plain values "
    "only (numbers, strings, bytes, None, booleans, and lists, tuples, dicts and sets of them); "
    "in-place changes to a list, dict or set argument reach the caller, and returning a "
    "function, a generator or an object of your own class makes the call raise TypeError."
)
"""What both roles read about the process boundary (module docstring)."""
HELPER_TASK = (
    "Write a helper function {helper}(...) that does a useful, self-contained part of the work "
    "for {entry}, with its own imports. Do not write {entry} itself, and do not call it. " + CROSSING
)
MAIN_TASK = (
    "Write the function {entry}. A helper function {helper}(...) written by your partner is "
    "available: call it where it helps, and do not define {helper} yourself. " + CROSSING
)
FIRST = "Problem:\n```python\n{prompt}```\n\n{task}"
LATER = "Problem:\n```python\n{prompt}```\n\n{task}\n\nYour previous code:\n{previous}\n\n{feedback}\n\nRevise your function."

_BUILTIN_NAMES = frozenset(dir(builtins))


# ---------------------------------------------------------------------- the tests
@dataclass(frozen=True)
class CountedTests:
    """A problem's trusted tests, rewritten so that ``check`` counts the tests it passes.

    Attributes:
        source: The rewritten test code: ``check(candidate)`` returns ``(passed, total,
            failed)`` (module docstring).
        tests: The source of each counted test, in order.
        calls: The calls of the candidate with constant arguments, in the tests' order and
            written with the entry point's name (what feedback shows; module docstring).
    """

    source: str
    tests: tuple[str, ...]
    calls: tuple[str, ...] = ()


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
        (node for node in ast.walk(check) if _calls_name(node, candidate) and _constant_arguments(node)),
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


def _literal_arguments(call: ast.Call) -> bool:
    return all(_literal(node) for node in [*call.args, *(keyword.value for keyword in call.keywords)])


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


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
            calls alone (module docstring); ``""`` otherwise.
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


class _Verdicts(Mapping[tuple[str, str], TestResult]):
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


# ---------------------------------------------------------------------- the rules
class Refused(Exception):
    """A rule of the module docstring that an agent's code breaks (line and rule)."""

    def __init__(self, node: ast.stmt | ast.expr | ast.pattern, rule: str) -> None:
        super().__init__(f"line {node.lineno}: {rule}")


@dataclass(frozen=True)
class Binding:
    """One top-level binding of a name.

    Attributes:
        name: The name bound.
        key: What it binds: an import's ``module`` or ``module:name``, else the
            :func:`statement_key` (the same key binds the same object).
        node: The statement.
        statement: Its :func:`statement_key`.
    """

    name: str
    key: str
    node: ast.stmt
    statement: str


def top_level_bindings(module: ast.Module) -> list[Binding]:
    """The names ``module``'s top-level statements bind, in order (imports, functions,
    classes and assignments' plain names)."""
    bindings = []
    for statement in module.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            for alias in statement.names:
                bindings.append(Binding(*_imported(statement, alias), statement, statement_key(statement)))
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            key = statement_key(statement)
            bindings.append(Binding(statement.name, key, statement, key))
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            key = statement_key(statement)
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                names = [node.id for node in ast.walk(target) if isinstance(node, ast.Name)]
                bindings += [Binding(name, key, statement, key) for name in names]
    return bindings


def statement_key(statement: ast.stmt) -> str:
    """What a top-level statement is, apart from its position and a definition's docstring:
    two statements with the same key do the same."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return ast.dump(_without_docstring(statement))
    return ast.dump(statement)


def _imported(statement: ast.Import | ast.ImportFrom, alias: ast.alias) -> tuple[str, str]:
    """The name an import alias binds, and what it binds (``module`` or ``module:name``)."""
    if isinstance(statement, ast.Import):
        if alias.asname:
            return alias.asname, alias.name
        return alias.name.split(".")[0], alias.name.split(".")[0]
    return alias.asname or alias.name, f"{'.' * statement.level}{statement.module}:{alias.name}"


def _without_docstring(node: ast.stmt) -> ast.stmt:
    """A shallow copy of a definition without its docstring (a repeated prompt function
    may drop it); the definition itself is unchanged."""
    node = copy.copy(node)
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1:
        node.body = body[1:]
    return node


def check_code(module: ast.Module, entry_point: str, prompt: Sequence[Binding], own: Sequence[Binding]) -> None:
    """Rules 1 to 3 of the module docstring on one agent's code; a top-level statement
    that repeats one of the prompt's unchanged is the prompt's trusted code, not checked.

    Args:
        module: The agent's parsed code.
        entry_point: The problem's entry point (no decorator may wrap its ``def``).
        prompt: The prompt's :func:`top_level_bindings`.
        own: The code's :func:`top_level_bindings`.

    Raises:
        Refused: Naming the line and the first rule broken.
        RecursionError: If the code is nested too deeply to check.
    """
    trusted = {binding.statement for binding in prompt}
    imports = {binding.name: binding.key for binding in [*prompt, *own]}
    checked = [statement for statement in module.body if statement_key(statement) not in trusted]
    for statement in checked:
        _check_top_level(statement, entry_point, imports)
    nodes = [node for statement in checked for node in ast.walk(statement)]
    type_calls = {id(node.func) for node in nodes if _type_of_one_value(node)}
    for node in nodes:
        _check_node(node)
        _check_reflection(node, type_calls)


def _check_top_level(statement: ast.stmt, entry_point: str, imports: Mapping[str, str]) -> None:
    """Rule 1: imports, functions whose definition runs nothing of the agent's, docstrings."""
    if isinstance(statement, ast.Import | ast.ImportFrom | ast.Pass):
        return
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return
    if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        raise Refused(
            statement,
            f"a top-level {type(statement).__name__} statement; only imports, function definitions "
            "and docstrings may stand at top level",
        )
    for decorator in statement.decorator_list:
        if statement.name == entry_point or not _cache_decorator(decorator, imports):
            raise Refused(
                decorator,
                f"a decorator on {statement.name}; top-level functions may only have "
                f"functools.cache or functools.lru_cache, and {entry_point} none",
            )
    arguments = statement.args
    for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
        if not _literal(default):
            raise Refused(default, f"a default value of {statement.name} that is not a literal")
    annotated = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    annotations = [a.annotation for a in annotated if a is not None] + [statement.returns]
    for annotation in annotations:
        if annotation is not None and not _type_expression(annotation):
            raise Refused(annotation, f"an annotation of {statement.name} that is not a type expression")


def _cache_decorator(decorator: ast.expr, imports: Mapping[str, str]) -> bool:
    """``functools.cache`` or ``functools.lru_cache`` (or those names imported from
    functools), called with literal arguments or not; ``imports`` maps each top-level name
    of the prompt and the agent's code to what it binds."""
    if isinstance(decorator, ast.Call):
        return _literal_arguments(decorator) and _cache_decorator(decorator.func, imports)
    if isinstance(decorator, ast.Attribute):
        return (
            decorator.attr in CACHE_DECORATORS
            and isinstance(decorator.value, ast.Name)
            and imports.get(decorator.value.id) == "functools"
        )
    return isinstance(decorator, ast.Name) and imports.get(decorator.id) in {f"functools:{n}" for n in CACHE_DECORATORS}


def _type_expression(node: ast.expr) -> bool:
    """Names, attributes, subscripts, tuples, lists, ``|`` and literals: evaluating it at
    ``def`` time calls no code of the agents'."""
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _type_expression(node.value)
    if isinstance(node, ast.Subscript):
        return _type_expression(node.value) and _type_expression(node.slice)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_type_expression(element) for element in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _type_expression(node.left) and _type_expression(node.right)
    return False


def _check_node(node: ast.AST) -> None:
    """Rules 2 and 3 on one node of an agent's code."""
    if isinstance(node, ast.Global):
        raise Refused(node, "a global statement")
    if isinstance(node, ast.Import | ast.ImportFrom):
        _check_import(node)
    elif isinstance(node, ast.Name):
        _check_identifier(node, node.id, "name")
    elif isinstance(node, ast.Attribute):
        _check_attribute(node, node.attr)
        if isinstance(node.ctx, ast.Store | ast.Del):
            raise Refused(node, f"an assignment or deletion of the attribute .{node.attr}")


def _type_of_one_value(node: ast.AST) -> bool:
    """``type(x)``: a call of the name ``type`` with one positional argument."""
    return (
        _calls_name(node, "type")
        and len(node.args) == 1
        and not isinstance(node.args[0], ast.Starred)
        and not node.keywords
    )


def _check_reflection(node: ast.AST, type_calls: set[int]) -> None:
    """Rule 3's reflective forms: class patterns, ``type`` but as ``type(x)``, a call of
    what ``type(x)`` returns, format strings that read attributes, the copy hooks.

    Args:
        node: A node of the agent's code.
        type_calls: The ``id`` of each ``type`` name that is called as ``type(x)``.
    """
    if isinstance(node, ast.MatchClass):
        raise Refused(node, "a class pattern (case C(...)), which reads attributes named by C.__match_args__")
    if isinstance(node, ast.Name) and node.id == "type" and id(node) not in type_calls:
        raise Refused(node, "the name type other than as type(value); type(name, bases, namespace) makes classes")
    if isinstance(node, ast.Call) and _type_of_one_value(node.func):
        raise Refused(node, "a call of what type(value) returns, which may be type itself")
    if isinstance(node, ast.Attribute) and node.attr in FORMAT_METHODS and not _plain_format_string(node.value):
        raise Refused(
            node,
            f"the method .{node.attr} on anything but a string literal whose fields name no "
            "attribute or item (write an f-string)",
        )
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in COPY_HOOKS:
        raise Refused(node, f"a method {node.name}, which copy.copy calls and whose state it sets by name")


def _plain_format_string(node: ast.expr) -> bool:
    """A string literal whose format fields (nested ones included) are plain positions or
    names: ``"{0.real}"`` and ``"{0[key]}"`` read by name, ``"{}"`` and ``"{x:>{w}}"`` do not."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and _plain_fields(node.value)


def _plain_fields(text: str) -> bool:
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return False
    return all(
        (name is None or not any(mark in name for mark in ".[")) and (not spec or _plain_fields(spec))
        for _, name, spec, _ in fields
    )


def _check_identifier(node: ast.stmt | ast.expr | ast.pattern, name: str, kind: str) -> None:
    if name.startswith("__"):
        raise Refused(node, f"the dunder {kind} {name}")
    if name in DENIED_NAMES:
        raise Refused(node, f"the {kind} {name}, which reads or writes namespaces or evaluates strings")


def _check_attribute(node: ast.expr | ast.pattern, name: str) -> None:
    if name.startswith("_"):
        raise Refused(node, f"the attribute .{name} (no attribute may start with _)")
    if name.startswith(FRAME_PREFIXES):
        raise Refused(node, f"the attribute .{name} (frames, code objects and tracebacks are out of reach)")
    if name in MODULE_ATTRIBUTES:
        raise Refused(node, f"the attribute .{name}, a module outside the allowed ones")
    _check_identifier(node, name, "attribute")


def _check_import(node: ast.Import | ast.ImportFrom) -> None:
    """Rule 2: absolute, named imports of allowed modules."""
    allowed = ", ".join(sorted(ALLOWED_MODULES))
    for alias in node.names:
        for name in filter(None, (alias.asname, alias.name.split(".")[-1])):
            _check_identifier(node, name, "import")
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name not in ALLOWED_MODULES:
                raise Refused(node, f"an import of {alias.name}; allowed modules: {allowed}")
        return
    if node.level or node.module not in ALLOWED_MODULES:
        raise Refused(node, f"an import from {'.' * node.level}{node.module}; allowed modules: {allowed}")
    for alias in node.names:
        if alias.name == "*" or alias.name.startswith("_") or alias.name in MODULE_ATTRIBUTES:
            raise Refused(node, f"from {node.module} import {alias.name}; import allowed names one by one")


def _module_attributes() -> frozenset[str]:
    """The names under which an allowed module holds a module that is not allowed: every
    way from an allowed module to another module ends with one of them."""
    return frozenset(
        name
        for path in ALLOWED_MODULES
        for name, value in vars(importlib.import_module(path)).items()
        if isinstance(value, types.ModuleType) and value.__name__ not in ALLOWED_MODULES
    )


MODULE_ATTRIBUTES = _module_attributes()
"""Attribute names that reach a module outside :data:`ALLOWED_MODULES` from an allowed one
(``typing.sys``, ``statistics.random``, ``re.enum``, ...): refused anywhere (rule 3)."""


def check_names(
    own: list[Binding], prompt: Mapping[str, set[str]], entry_point: str, seat: str
) -> None:
    """Rule 4 on one agent's top-level bindings.

    Args:
        own: The agent's :func:`top_level_bindings`.
        prompt: Each name the prompt binds, with the keys it binds it to.
        entry_point: The problem's entry point.
        seat: ``"helper"`` or ``"main"``.

    Raises:
        Refused: Naming the line and the binding.
    """
    for binding in own:
        name, node = binding.name, binding.node
        if name.startswith("__") or name in _BUILTIN_NAMES:
            raise Refused(node, f"a binding of {name}, a builtin or dunder name that the other agent's code uses")
        if name == entry_point:
            if seat == "helper":
                raise Refused(node, f"a binding of {entry_point}, the main agent's function")
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                raise Refused(node, f"a binding of {entry_point} that is not its def")
        elif name == HELPER and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            raise Refused(node, f"a binding of {HELPER} that is not a def")
        elif name in prompt and prompt[name] != {binding.key}:
            raise Refused(node, f"a binding of {name}, which the problem's prompt binds (repeat it unchanged or rename)")


def _clash(helper: list[Binding], main: list[Binding]) -> Binding | None:
    """The helper's first binding of a name the main agent binds to something else."""
    main_keys: dict[str, set[str]] = {}
    for binding in main:
        main_keys.setdefault(binding.name, set()).add(binding.key)
    return next((b for b in helper if b.name in main_keys and main_keys[b.name] != {b.key}), None)


# ---------------------------------------------------------------------- the analysis
@dataclass(frozen=True)
class Analysis:
    """The static facts of a team's two codes (module docstring).

    Attributes:
        program: The team's two programs: the prompt then the helper's code if admitted,
            the prompt then the main agent's code.
        helper_refused, main_refused: Why a code was refused (``""``: admitted).
    """

    helper_defined: bool
    main_defined: bool
    syntax_errors: tuple[str, ...]
    program: TeamProgram
    helper_refused: str = ""
    main_refused: str = ""
    calls_helper: bool = False
    helper_trivial: bool = True
    main_defines_helper: bool = False
    wrapper: bool = False
    ignored_call: bool = False

    @property
    def tested(self) -> bool:
        """The program reaches the tests: the main function is defined and everything compiles."""
        return self.main_defined and not self.syntax_errors


def analyse(helper_code: str, main_code: str, prompt: str, entry_point: str) -> Analysis:
    """What the syntax of the two codes says, after the rules (no code runs). A code that
    does not compile is read as text for its function (CoMLRL's format level), and the
    syntax level fails."""
    helper_error, main_error = _syntax_error("helper code", helper_code), _syntax_error("main code", main_code)
    helper_module = ast.Module([], []) if helper_error else ast.parse(helper_code)
    main_module = ast.Module([], []) if main_error else ast.parse(main_code)
    helper_refused, main_refused = _refusals(helper_module, main_module, _prompt_bindings(prompt), entry_point)
    functions = () if helper_refused else _function_names(helper_module)
    program = TeamProgram(prompt, helper_code if functions else "", main_code, functions)
    helper = None if helper_refused else _last_function(helper_module, HELPER)
    main = None if main_refused else _last_function(main_module, entry_point)
    helper_defined = _defines(helper_code, HELPER) if helper_error else _returns_value(helper)
    main_defined = _defines(main_code, entry_point) if main_error else _returns_value(main)
    error = helper_error or main_error or _program_syntax_error(program)
    if not main_defined or error:
        return Analysis(helper_defined, main_defined, (error,) if error else (), program, helper_refused, main_refused)
    return Analysis(
        helper_defined=helper_defined,
        main_defined=main_defined,
        syntax_errors=(),
        program=program,
        helper_refused=helper_refused,
        main_refused=main_refused,
        calls_helper=any(_calls_name(node, HELPER) for node in ast.walk(main)),
        helper_trivial=helper is None or _trivial(helper),
        main_defines_helper=_binds_helper(main_module),
        wrapper=_wrapper(main),
        ignored_call=any(isinstance(node, ast.Expr) and _calls_name(node.value, HELPER) for node in ast.walk(main)),
    )


@functools.lru_cache(maxsize=1024)
def _prompt_bindings(prompt: str) -> tuple[Binding, ...]:
    """The prompt's :func:`top_level_bindings` (parsed once per prompt)."""
    return tuple(top_level_bindings(ast.parse(prompt)))


def _refusals(
    helper: ast.Module, main: ast.Module, prompt_bindings: Sequence[Binding], entry_point: str
) -> tuple[str, str]:
    """Why each code is refused (``""``: admitted), by the module docstring's rules."""
    prompt_keys: dict[str, set[str]] = {}
    for binding in prompt_bindings:
        if binding.name != entry_point:
            prompt_keys.setdefault(binding.name, set()).add(binding.key)
    refusals, bindings = [], []
    for seat, module in (("helper", helper), ("main", main)):
        try:
            bindings.append(top_level_bindings(module))
            check_code(module, entry_point, prompt_bindings, bindings[-1])
            check_names(bindings[-1], prompt_keys, entry_point, seat)
        except Refused as refusal:
            refusals.append(str(refusal))
        except RecursionError:
            refusals.append("code nested too deeply to check")
        else:
            refusals.append("")
    helper_refused, main_refused = refusals
    if not helper_refused and not main_refused:
        clash = _clash(*bindings)
        if clash is not None:
            helper_refused = str(Refused(clash.node, f"a binding of {clash.name}, which the main agent's code binds too"))
    return helper_refused, main_refused


@dataclass(frozen=True)
class TeamProgram:
    """The team's code as the sandbox judges it: two programs, each run in its own process
    (module docstring, "Each agent's code runs in its own process").

    Attributes:
        prompt: The problem's prompt (its imports and helper functions), which starts both.
        helper_code: The helper's admitted code (``""``: none, and no helper process).
        main_code: The main agent's code.
        helper_functions: The helper code's top-level functions, which the main program
            calls through the sandbox's stubs.
    """

    prompt: str
    helper_code: str
    main_code: str
    helper_functions: tuple[str, ...] = ()

    @property
    def helper(self) -> str:
        """The helper's program: the prompt then the helper's code (``""`` without one)."""
        return f"{self.prompt}\n\n{self.helper_code}\n" if self.helper_code else ""

    @property
    def main(self) -> str:
        """The main agent's program: the prompt then the main agent's code."""
        return f"{self.prompt}\n\n{self.main_code}\n"

    @property
    def text(self) -> str:
        """Both codes after the prompt, as one listing (the team's output)."""
        return f"{self.prompt}\n\n{self.helper_code}\n\n{self.main_code}\n"

    def digest(self) -> str:
        """SHA-256 of what a verdict depends on (the verdict cache's key)."""
        material = json.dumps([self.helper, self.main, self.helper_functions])
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def _function_names(module: ast.Module) -> tuple[str, ...]:
    """The names of the top-level functions of an agent's code, each once."""
    functions = (node.name for node in module.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
    return tuple(dict.fromkeys(functions))


def _program_syntax_error(program: TeamProgram) -> str | None:
    return _syntax_error("main program", program.main) or (
        _syntax_error("helper program", program.helper) if program.helper else None
    )


def _defines(code: str, name: str) -> bool:
    """A top-level ``def name(`` whose block has a ``return <value>`` (read as text, so a
    syntax error elsewhere does not hide it)."""
    match = re.search(rf"^(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE)
    if match is None:
        return False
    block = re.split(r"\n(?=\S)", code[match.end() :], maxsplit=1)[0]
    return re.search(r"\breturn\b[ \t(]*[^\s#)]", block) is not None


def _returns_value(function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool:
    """The function has a ``return <value>`` in its block."""
    return function is not None and any(
        isinstance(node, ast.Return) and node.value is not None for node in ast.walk(function)
    )


def _syntax_error(name: str, code: str) -> str | None:
    try:
        compile(code, f"<{name}>", "exec")
    except SyntaxError as error:
        return f"{name}, line {error.lineno}: {error.msg}"
    except (ValueError, RecursionError, MemoryError) as error:
        return f"{name}: {type(error).__name__}"
    return None


def _last_function(module: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    functions = [
        node for node in module.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
    ]
    return functions[-1] if functions else None


def _calls_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _body(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The function's statements without its docstring."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        return body[1:]
    return body


def _trivial(helper: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every value the helper returns is a constant or one of its own parameters."""
    arguments = helper.args
    parameters = {a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs}
    parameters |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    returns = [node.value for node in ast.walk(helper) if isinstance(node, ast.Return)]
    return all(
        value is None or isinstance(value, ast.Constant) or (isinstance(value, ast.Name) and value.id in parameters)
        for value in returns
    )


def _binds_helper(module: ast.Module) -> bool:
    """The main agent's code defines, assigns or imports the name ``aux`` itself."""
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == HELPER:
            return True
        if isinstance(node, ast.Name) and node.id == HELPER and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == HELPER:
            return True
        if isinstance(node, ast.arg) and node.arg == HELPER:
            return True
    return False


def _wrapper(main: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``return aux(...)`` alone, or ``v = aux(...)`` then ``return v`` (CoMLRL's two forms)."""
    body = _body(main)
    if len(body) == 1:
        return isinstance(body[0], ast.Return) and body[0].value is not None and _calls_name(body[0].value, HELPER)
    if len(body) == 2:
        first, second = body
        return (
            isinstance(first, ast.Assign)
            and len(first.targets) == 1
            and isinstance(first.targets[0], ast.Name)
            and _calls_name(first.value, HELPER)
            and isinstance(second, ast.Return)
            and isinstance(second.value, ast.Name)
            and second.value.id == first.targets[0].id
        )
    return False


# ---------------------------------------------------------------------- the protocol
class CodingProtocol:
    """A helper function and a main function on HumanEval (see the module docstring).

    Args:
        task: The ``humaneval`` task (``deliberation_env.tasks.get("humaneval", ...)``);
            its sandbox limits (``timeout_s``, ``memory_mb``) judge the team's programs.
        cache_size: Verdicts kept at most (module docstring).

    Raises:
        ValueError: If ``task`` is not HumanEval, a problem's tests cannot be counted
            (naming the problem), or ``cache_size`` is not an integer >= 1.
    """

    name = "coding"
    reward_range = (0.0, 4.0)

    def __init__(self, task: Task, cache_size: int = VERDICT_CACHE_SIZE) -> None:
        if not isinstance(task, Task):
            raise TypeError(f"task must be a Task, got {type(task).__name__}")
        if task.name != "humaneval":
            raise ValueError(f"the coding protocol needs the 'humaneval' task, got {task.name!r}")
        self.task = task
        self._counted = {
            problem.id: count_tests(problem.meta["test"], f"problem {problem.id!r}", problem.meta["entry_point"])
            for split in ("train", "test")
            for problem in task.problems(split)
        }
        self._verdicts = _Verdicts(positive_int("cache_size", cache_size))

    def roles(self, n_agents: int) -> tuple[str, ...]:
        """``("helper", "main")``: the protocol seats exactly two agents."""
        if n_agents != 2:
            raise ValueError(f"the coding protocol seats 2 agents (helper, main), got n_agents={n_agents}")
        return ("helper", "main")

    def problems(self, split: str) -> Sequence[Problem]:
        """HumanEval's problems of ``split``."""
        return self.task.problems(split)

    def prompt(
        self, problem: Problem, roles: tuple[str, ...], agent: int, previous: str | None, feedback: str | None
    ) -> tuple[Message, ...]:
        """The problem and the role's job; later turns add the previous code and the feedback."""
        entry = problem.meta["entry_point"]
        job = HELPER_TASK if roles[agent] == "helper" else MAIN_TASK
        task = job.format(helper=HELPER, entry=entry)
        if previous is None:
            return chat(SYSTEM, FIRST.format(prompt=problem.meta["prompt"], task=task))
        return chat(SYSTEM, LATER.format(prompt=problem.meta["prompt"], task=task, previous=previous, feedback=feedback))

    def codes(self, problem: Problem, texts: Sequence[str]) -> tuple[str, str, TeamProgram]:
        """The helper's code, the main agent's code and the team's programs (without the
        helper's code if the rules refuse it)."""
        helper, main = _code(texts[0], HELPER), _code(texts[1], problem.meta["entry_point"])
        return helper, main, analyse(helper, main, problem.meta["prompt"], problem.meta["entry_point"]).program

    def score(self, problem: Problem, texts: Sequence[str]) -> Outcome:
        """The level reward of a helper text and a main text (module docstring)."""
        return self.score_many([(problem, texts)])[0]

    def score_many(self, teams: Sequence[tuple[Problem, Sequence[str]]]) -> list[Outcome]:
        """:meth:`score` of many teams; every program that reaches the tests is judged in
        one :meth:`judge` call, so the sandbox checks them concurrently."""
        read = []
        for problem, texts in teams:
            helper, main = _code(texts[0], HELPER), _code(texts[1], problem.meta["entry_point"])
            analysis = analyse(helper, main, problem.meta["prompt"], problem.meta["entry_point"])
            read.append((problem, helper, main, analysis))
        results = iter(self.judge([(problem, analysis.program) for problem, _, _, analysis in read if analysis.tested]))
        return [
            _outcome(problem, helper, main, analysis, next(results) if analysis.tested else None)
            for problem, helper, main, analysis in read
        ]

    def tests(self, problem: Problem, program: TeamProgram) -> TestResult:
        """The trusted count of the tests ``program`` passes (results are cached)."""
        return self.judge([(problem, program)])[0]

    def judge(self, pairs: Sequence[tuple[Problem, TeamProgram]]) -> list[TestResult]:
        """:meth:`tests` for many (problem, program) pairs, judged concurrently, each
        distinct one once; cached results are not judged again. Programs whose judged run
        gave no results on the tests' calls (it timed out or broke the protocol after they
        loaded) run the calls alone in a second concurrent batch (module docstring)."""
        keys = [(problem.id, program.digest()) for problem, program in pairs]
        found = {key: self._verdicts.recall(key) for key in dict.fromkeys(keys)}
        missing = {key: pair for key, pair in zip(keys, pairs, strict=True) if found[key] is None}
        verdicts = judge_many(
            [self.request(*pair) for pair in missing.values()],
            self.task.timeout_s,
            self.task.memory_mb,
            hidden_paths=self.task.hidden_paths,
        )
        for (key, (problem, _)), verdict in zip(missing.items(), verdicts, strict=True):
            found[key] = read_verdict(verdict, self._counted[problem.id], f"problem {problem.id!r}")
        unanswered = {key: pair for key, pair in missing.items() if found[key].results is None and found[key].reason != "load_error"}
        if unanswered:
            calls_alone = judge_many(
                [self.calls_request(*pair) for pair in unanswered.values()],
                self.task.timeout_s,
                self.task.memory_mb,
                hidden_paths=self.task.hidden_paths,
            )
            for (key, (problem, _)), verdict in zip(unanswered.items(), calls_alone, strict=True):
                found[key] = _with_results(found[key], verdict, self._counted[problem.id])
        for key in missing:
            self._verdicts.keep(key, found[key])
        return [found[key] for key in keys]

    def request(self, problem: Problem, program: TeamProgram) -> JudgeRequest:
        """What the sandbox judges for a team's programs: the trusted ``eval``
        (:data:`SAFE_EVAL`) then the main agent's program, the same start for the helper's
        program in its own process with the functions it defines, the counting tests, the
        entry point, the prompt as the judge's setup (its helper functions) and the tests'
        constant calls as probes (the feedback's results)."""
        counted = self._counted[problem.id]
        return JudgeRequest(
            program=SAFE_EVAL + program.main,
            tests=counted.source,
            entry_point=problem.meta["entry_point"],
            setup=problem.meta["prompt"],
            probes=counted.calls,
            helper=SAFE_EVAL + program.helper if program.helper else "",
            helper_functions=program.helper_functions,
        )

    def calls_request(self, problem: Problem, program: TeamProgram) -> JudgeRequest:
        """The tests' constant calls alone, without the tests: what the feedback shows of a
        program whose judged run gave no results (module docstring)."""
        return dataclasses.replace(self.request(problem, program), tests=NO_TESTS)

    def neutral_text(self, problem: Problem, agent: int) -> str:
        """The empty text: no helper, or no main function."""
        return ""


def _with_results(result: TestResult, verdict: Verdict, counted: CountedTests) -> TestResult:
    """``result`` with the calls' results of ``verdict``, a run of the calls alone."""
    if verdict.behaviour is None:
        return dataclasses.replace(result, no_results=f"{verdict.reason}: {verdict.detail}")
    shown = (quote(text, SHOWN_CHARS) for text in verdict.behaviour)
    return dataclasses.replace(result, results=tuple(zip(counted.calls, shown, strict=True)))


def _outcome(problem: Problem, helper_code: str, main_code: str, analysis: Analysis, tests: TestResult | None) -> Outcome:
    """The level reward, its parts and the feedback of a team's codes (module docstring);
    ``tests`` is the trusted count when ``analysis.tested``, else ``None``."""
    parts = dict.fromkeys(WEIGHTS, 0.0)
    parts["helper_defined"] = float(analysis.helper_defined)
    parts["main_defined"] = float(analysis.main_defined)
    if tests is not None:
        parts["syntax"] = 1.0
        parts["tests"] = tests.passed / tests.total
        cooperation = (
            tests.passed > 0
            and analysis.helper_defined
            and analysis.calls_helper
            and not analysis.helper_trivial
            and not analysis.main_defines_helper
        )
        if cooperation:
            parts["cooperation"] = 1.0
            parts["not_wrapper"] = float(not analysis.wrapper)
            parts["ignored_call"] = float(analysis.ignored_call)
    reward = sum(WEIGHTS[name] * value for name, value in parts.items())
    report = _report(problem, analysis, tests)
    feedback = (
        _feedback(report, "main agent", main_code, entry=None),
        _feedback(report, "helper agent", helper_code, entry=problem.meta["entry_point"], analysis=analysis),
    )
    return Outcome(reward=reward, parts=parts, feedback=feedback, output=analysis.program.text)


def _code(text: str, name: str) -> str:
    """The agent's code (module docstring); ``""`` if it never defines ``name`` (prose is no code)."""
    code = textwrap.dedent(extract_code(text, name)).strip("\n")
    return code if re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) else ""


def _report(problem: Problem, analysis: Analysis, tests: TestResult | None) -> str:
    """The diagnostics both agents read (module docstring): never an expected value, which
    tests passed or how many."""
    entry = problem.meta["entry_point"]
    lines = [
        f"- helper {HELPER}(...): {_found(analysis.helper_defined, analysis.helper_refused)}",
        f"- main {entry}(...): {_found(analysis.main_defined, analysis.main_refused)}",
    ]
    if analysis.syntax_errors:
        lines.append(f"- syntax: ERROR in the {analysis.syntax_errors[0]}")
    elif analysis.main_defined:
        lines.append("- syntax: OK")
    if tests is None:
        lines.append("- tests: not run")
        return "\n".join(lines)
    lines.append("- tests: run (their results are hidden)")
    lines += list(_run_outcome(tests))
    return "\n".join(lines)


def _found(defined: bool, refused: str) -> str:
    if refused:
        return f"REFUSED, its code did not run ({refused})"
    return "found" if defined else "MISSING (no def with a return value)"


def _run_outcome(tests: TestResult) -> Iterator[str]:
    """Whether the program loaded, and its results on the tests' calls: nothing that
    depends on the tests (module docstring)."""
    if tests.reason == "load_error":
        yield f"- the program did not load: {tests.detail}"
    elif tests.results is None:
        yield f"- the program gave no results on calls from the tests ({tests.no_results})"
    elif tests.results:
        yield "- what the program returns on calls from the tests (check them against the problem):"
        yield from (f"    {call} -> {result}" for call, result in tests.results)


def _feedback(report: str, partner: str, partner_code: str, entry: str | None, analysis: Analysis | None = None) -> str:
    """One agent's feedback: the diagnostics, its usage notes (main only), the partner's code."""
    lines = ["Diagnostics of the team's program:", report]
    if entry is not None and analysis is not None and analysis.main_defined and not analysis.syntax_errors:
        if not analysis.calls_helper:
            lines.append(f"- {entry} does NOT call {HELPER}")
        elif analysis.ignored_call:
            lines.append(f"- {entry} calls {HELPER} but throws its result away")
        if analysis.wrapper:
            lines.append(f"- {entry} is a thin wrapper around {HELPER}: do part of the work yourself")
    shown = quote(partner_code, 1_500) if partner_code else "(none)"
    lines.append(f"\nThe {partner}'s code:\n```python\n{shown}\n```")
    return "\n".join(lines)
