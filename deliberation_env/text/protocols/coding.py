"""The coding protocol: a helper function and a main function on HumanEval (MAGRPO, CoMLRL).

**Roles.** Two agents (n = 2), as in the MAGRPO paper's coding collaboration and its
reference code (CoMLRL's ``LLM_Collab_Code_Generation``): agent 0 is the ``"helper"``,
which writes a function ``aux(...)``; agent 1 is the ``"main"`` agent, which writes the
problem's entry point and may call ``aux``. The team's program is the HumanEval prompt
(its imports and helper functions), then the helper's code, then the main agent's code.
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
``helper_defined``    0.4     the helper's code defines ``aux`` at top level, with a
                              ``return <value>`` in it (format/structure)
``main_defined``      0.6     the main agent's code defines the entry point likewise; if
                              not, nothing below is scored
``syntax``            0.5     both codes and the team's program compile; if not, nothing
                              below is scored
``tests``             1.0     the fraction of the hidden tests the program passes, from the
                              sandbox's trusted verdict (below)
``cooperation``       0.5     at least one test passed, the helper is defined and
                              non-trivial, and the main function calls ``aux`` without
                              defining ``aux`` itself
``not_wrapper``       1.0     given cooperation: the main function is not a thin wrapper
                              (``return aux(...)``, or ``v = aux(...)`` then ``return v``)
``ignored_call``      -0.5    given cooperation: the main function calls ``aux`` as a bare
                              statement, throwing its result away
====================  ======  ===============================================================

**Tests passed come only from the sandbox's verdict** (:func:`deliberation_env.sandbox.
judge_many`). The trusted test code of a problem is rewritten once, in this process, with
:mod:`ast` (the candidate's code is never rewritten or run here): each top-level statement
of ``check``'s body that uses the candidate (its parameter) is one *test*, run in its own
``try``/``except Exception``; a loop with asserts inside is one test (it passes when the
whole loop runs without an exception), so the number of tests never depends on what the
candidate does. Other statements (``import math``, setup, ``assert True``) run as they are.
The rewritten ``check`` returns ``(passed, total, failures)``, ``failures`` being one
``(test index, "Error: message")`` pair per failed test; the judge process runs it on a
proxy of the candidate, and :attr:`~deliberation_env.sandbox.Verdict.returned` carries
that value back. A verdict whose reason is not ``"passed"`` (``load_error``,
``bad_answer``, ``timeout``, ...) counts 0 tests passed: a program that exits, prints
"passed", forges records or returns objects claiming equality earns no test.

**Feedback** (multi-turn, as CoMLRL's ``level_feedback`` mode): each agent's next prompt
says which functions were found, the syntax error (which code, line, message), how many
tests passed, and each failed test with its source and its error (from the trusted
verdict), or why the program was not judged; the main agent also reads whether it calls
``aux`` and whether it is a thin wrapper. Each agent also sees its partner's code.

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
- Calls, wrappers and ignored results are read from the syntax tree, not with regular
  expressions (which count ``aux(`` inside a string or a comment as a call).
- Cooperation also needs a *non-trivial* helper (one that returns something other than a
  constant or one of its own parameters), and a main agent that does not define ``aux``
  itself: otherwise ``def aux(x): return x`` farms the 1.5 points of cooperation.
- The ignored-call deduction applies only with the cooperation bonus it offsets, so R is
  never negative (CoMLRL's reward function does the same; its logger applies it always).

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
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from agents.base import Message
from deliberation_env.sandbox import JudgeRequest, Verdict, judge_many
from deliberation_env.tasks import Problem, Task
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
ERROR_CHARS = 300
"""Most characters of one failed test's error that the judge returns."""
FAILURES_SHOWN = 5
"""Most failed tests listed in one agent's feedback."""

SYSTEM = (
    "You are one of two programmers writing a Python solution together: a helper agent "
    f"writes a function {HELPER}(...), a main agent writes the function the problem asks for "
    f"and may call {HELPER}(...). Reply with your function only, in one ```python code block."
)
HELPER_TASK = (
    "Write a helper function {helper}(...) that does a useful, self-contained part of the work "
    "for {entry}. Do not write {entry} itself."
)
MAIN_TASK = (
    "Write the function {entry}. A helper function {helper}(...) written by your partner is "
    "available: call it where it helps, and do not define {helper} yourself."
)
FIRST = "Problem:\n```python\n{prompt}```\n\n{task}"
LATER = "Problem:\n```python\n{prompt}```\n\n{task}\n\nYour previous code:\n{previous}\n\n{feedback}\n\nRevise your function."


@dataclass(frozen=True)
class CountedTests:
    """A problem's trusted tests, rewritten so that ``check`` counts the tests it passes.

    Attributes:
        source: The rewritten test code: ``check(candidate)`` returns ``(passed, total,
            failures)`` (module docstring).
        tests: The source of each counted test, in order (what feedback quotes).
    """

    source: str
    tests: tuple[str, ...]


def count_tests(test_code: str, where: str) -> CountedTests:
    """The test code with each top-level statement of ``check`` that uses the candidate run
    as one counted test (see the module docstring).

    Args:
        test_code: Trusted source defining ``check(candidate)`` (HumanEval's ``test``).
        where: What the tests belong to, named in errors (e.g. the problem id).

    Raises:
        ValueError: If the code defines no ``check(candidate)`` or it has no test.

    >>> counted = count_tests("def check(c):\\n    import math\\n    assert c(1) == 2\\n    assert True\\n", "p")
    >>> counted.tests
    ('assert c(1) == 2',)
    """
    module = ast.parse(test_code)
    checks = [node for node in module.body if isinstance(node, ast.FunctionDef) and node.name == "check"]
    if len(checks) != 1 or not checks[0].args.args:
        raise ValueError(f"{where}: the tests must define one function check(candidate)")
    check = checks[0]
    candidate = check.args.args[0].arg
    tests: list[str] = []
    body: list[ast.stmt] = _parse("_passed, _failures = 0, []")
    for statement in check.body:
        if not any(isinstance(node, ast.Name) and node.id == candidate for node in ast.walk(statement)):
            body.append(statement)
            continue
        counted = _parse(
            f"try:\n    pass\nexcept Exception as _error:\n"
            f"    _failures.append(({len(tests)}, f'{{type(_error).__name__}}: {{_error}}'[:{ERROR_CHARS}]))\n"
            f"else:\n    _passed += 1\n"
        )[0]
        counted.body = [statement]
        body.append(counted)
        tests.append(ast.get_source_segment(test_code, statement) or ast.unparse(statement))
    if not tests:
        raise ValueError(f"{where}: check({candidate}) has no statement that uses {candidate}: nothing to count")
    body += _parse(f"return (_passed, {len(tests)}, _failures)")
    check.body = body
    return CountedTests(ast.unparse(ast.fix_missing_locations(module)), tuple(tests))


def _parse(source: str) -> list[ast.stmt]:
    return ast.parse(source).body


@dataclass(frozen=True)
class TestResult:
    """What the trusted verdict says of a program's tests.

    Attributes:
        passed: Tests passed (0 unless the verdict's reason is ``"passed"``).
        total: Tests of the problem.
        failures: ``(test source, error)`` of each failed test, in order.
        reason: The verdict's reason; ``detail``: its explanation.
    """

    passed: int
    total: int
    failures: tuple[tuple[str, str], ...]
    reason: str
    detail: str


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
    if verdict.reason != "passed":
        failures = tuple((test, f"not run: {verdict.reason}") for test in counted.tests)
        return TestResult(0, total, failures, verdict.reason, verdict.detail)
    returned = verdict.returned
    if not _well_formed(returned, total):
        raise RuntimeError(f"{where}: the judged check returned {returned!r:.200}, not (passed, {total}, failures)")
    passed, _, failures = returned
    shown = tuple((counted.tests[index], error) for index, error in failures)
    return TestResult(passed, total, shown, verdict.reason, verdict.detail)


def _well_formed(returned: object, total: int) -> bool:
    if not (isinstance(returned, tuple | list) and len(returned) == 3):
        return False
    passed, count, failures = returned
    return (
        type(passed) is int
        and count == total
        and isinstance(failures, tuple | list)
        and len(failures) == total - passed
        and all(
            isinstance(f, tuple | list) and len(f) == 2 and type(f[0]) is int and 0 <= f[0] < total and type(f[1]) is str
            for f in failures
        )
    )


@dataclass(frozen=True)
class Analysis:
    """The static facts of a team's two codes (module docstring)."""

    helper_defined: bool
    main_defined: bool
    syntax_errors: tuple[str, ...]
    calls_helper: bool = False
    helper_trivial: bool = True
    main_defines_helper: bool = False
    wrapper: bool = False
    ignored_call: bool = False

    @property
    def tested(self) -> bool:
        """The program reaches the tests: the main function is defined and everything compiles."""
        return self.main_defined and not self.syntax_errors


def analyse(helper_code: str, main_code: str, program: str, entry_point: str) -> Analysis:
    """What the syntax of the two codes says (no code runs)."""
    helper_defined, main_defined = _defines(helper_code, HELPER), _defines(main_code, entry_point)
    errors = tuple(
        error
        for name, code in (("helper code", helper_code), ("main code", main_code), ("team program", program))
        if (error := _syntax_error(name, code))
    )
    if not main_defined or errors:
        return Analysis(helper_defined, main_defined, errors[:1])
    helper_module, main_module = ast.parse(helper_code), ast.parse(main_code)
    helper = _last_function(helper_module, HELPER)
    main = _last_function(main_module, entry_point)
    return Analysis(
        helper_defined=helper_defined,
        main_defined=main_defined,
        syntax_errors=(),
        calls_helper=any(_calls_helper(node) for node in ast.walk(main)),
        helper_trivial=helper is None or _trivial(helper),
        main_defines_helper=_binds_helper(main_module),
        wrapper=_wrapper(main),
        ignored_call=any(isinstance(node, ast.Expr) and _calls_helper(node.value) for node in ast.walk(main)),
    )


def _defines(code: str, name: str) -> bool:
    """A top-level ``def name(`` whose block has a ``return <value>`` (read as text, so a
    syntax error elsewhere does not hide it)."""
    match = re.search(rf"^(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE)
    if match is None:
        return False
    block = re.split(r"\n(?=\S)", code[match.end() :], maxsplit=1)[0]
    return re.search(r"\breturn\b[ \t(]*[^\s#)]", block) is not None


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


def _calls_helper(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == HELPER


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
        return isinstance(body[0], ast.Return) and body[0].value is not None and _calls_helper(body[0].value)
    if len(body) == 2:
        first, second = body
        return (
            isinstance(first, ast.Assign)
            and len(first.targets) == 1
            and isinstance(first.targets[0], ast.Name)
            and _calls_helper(first.value)
            and isinstance(second, ast.Return)
            and isinstance(second.value, ast.Name)
            and second.value.id == first.targets[0].id
        )
    return False


class CodingProtocol:
    """A helper function and a main function on HumanEval (see the module docstring).

    Args:
        task: The ``humaneval`` task (``deliberation_env.tasks.get("humaneval", ...)``);
            its sandbox limits (``timeout_s``, ``memory_mb``) judge the team's programs.

    Raises:
        ValueError: If ``task`` is not HumanEval, or a problem's tests cannot be counted
            (naming the problem).
    """

    name = "coding"
    reward_range = (0.0, 4.0)

    def __init__(self, task: Task) -> None:
        if not isinstance(task, Task):
            raise TypeError(f"task must be a Task, got {type(task).__name__}")
        if task.name != "humaneval":
            raise ValueError(f"the coding protocol needs the 'humaneval' task, got {task.name!r}")
        self.task = task
        self._counted = {
            problem.id: count_tests(problem.meta["test"], f"problem {problem.id!r}")
            for split in ("train", "test")
            for problem in task.problems(split)
        }
        self._verdicts: dict[tuple[str, str], Verdict] = {}

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

    def codes(self, problem: Problem, texts: Sequence[str]) -> tuple[str, str, str]:
        """The helper's code, the main agent's code and the team's program."""
        helper = _code(texts[0], HELPER)
        main = _code(texts[1], problem.meta["entry_point"])
        return helper, main, f"{problem.meta['prompt']}\n\n{helper}\n\n{main}\n"

    def score(self, problem: Problem, texts: Sequence[str]) -> Outcome:
        """The level reward of a helper text and a main text (module docstring)."""
        return self.score_many([(problem, texts)])[0]

    def score_many(self, teams: Sequence[tuple[Problem, Sequence[str]]]) -> list[Outcome]:
        """:meth:`score` of many teams; every program that reaches the tests is judged in
        one :meth:`judge` call, so the sandbox checks them concurrently."""
        read = [(problem, self.codes(problem, texts)) for problem, texts in teams]
        analyses = [analyse(*codes, problem.meta["entry_point"]) for problem, codes in read]
        judged = [(problem, codes[2]) for (problem, codes), analysis in zip(read, analyses, strict=True) if analysis.tested]
        results = iter(self.judge(judged))
        return [
            _outcome(problem, codes, analysis, next(results) if analysis.tested else None)
            for (problem, codes), analysis in zip(read, analyses, strict=True)
        ]

    def tests(self, problem: Problem, program: str) -> TestResult:
        """The trusted count of the tests ``program`` passes (verdicts are cached)."""
        return self.judge([(problem, program)])[0]

    def judge(self, pairs: Sequence[tuple[Problem, str]]) -> list[TestResult]:
        """:meth:`tests` for many (problem, program) pairs, judged concurrently."""
        problems = {problem.id: problem for problem, _ in pairs}
        missing = list(dict.fromkeys((p.id, program) for p, program in pairs if (p.id, program) not in self._verdicts))
        verdicts = judge_many(
            [self.request(problems[pid], program) for pid, program in missing],
            self.task.timeout_s,
            self.task.memory_mb,
            hidden_paths=self.task.hidden_paths,
        )
        self._verdicts.update(zip(missing, verdicts, strict=True))
        return [
            read_verdict(self._verdicts[p.id, program], self._counted[p.id], f"problem {p.id!r}") for p, program in pairs
        ]

    def request(self, problem: Problem, program: str) -> JudgeRequest:
        """What the sandbox judges for a team's program: the program, the counting tests,
        the entry point, and the prompt as the judge's setup (its helper functions)."""
        return JudgeRequest(
            program=program,
            tests=self._counted[problem.id].source,
            entry_point=problem.meta["entry_point"],
            setup=problem.meta["prompt"],
        )

    def neutral_text(self, problem: Problem, agent: int) -> str:
        """The empty text: no helper, or no main function."""
        return ""


def _outcome(problem: Problem, codes: tuple[str, str, str], analysis: Analysis, tests: TestResult | None) -> Outcome:
    """The level reward, its parts and the feedback of a team's codes (module docstring);
    ``tests`` is the trusted count when ``analysis.tested``, else ``None``."""
    helper_code, main_code, program = codes
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
    return Outcome(reward=reward, parts=parts, feedback=feedback, output=program)


def _code(text: str, name: str) -> str:
    """The agent's code (module docstring); ``""`` if it never defines ``name`` (prose is no code)."""
    code = textwrap.dedent(extract_code(text, name)).strip("\n")
    return code if re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) else ""


def _report(problem: Problem, analysis: Analysis, tests: TestResult | None) -> str:
    """The diagnostics both agents read (CoMLRL's level feedback)."""
    entry = problem.meta["entry_point"]
    lines = [
        f"- helper {HELPER}(...): {'found' if analysis.helper_defined else 'MISSING (no def with a return value)'}",
        f"- main {entry}(...): {'found' if analysis.main_defined else 'MISSING (no def with a return value)'}",
    ]
    if analysis.syntax_errors:
        lines.append(f"- syntax: ERROR in the {analysis.syntax_errors[0]}")
    elif analysis.main_defined:
        lines.append("- syntax: OK")
    if tests is None:
        lines.append("- tests: not run")
        return "\n".join(lines)
    lines.append(f"- tests: {tests.passed}/{tests.total} passed")
    if tests.reason != "passed":
        lines.append(f"  the program was not judged ({tests.reason}): {tests.detail}")
    else:
        for test, error in tests.failures[:FAILURES_SHOWN]:
            lines.append(f"  failed: {test}\n    -> {error}")
        if len(tests.failures) > FAILURES_SHOWN:
            lines.append(f"  ... and {len(tests.failures) - FAILURES_SHOWN} more failed tests")
    return "\n".join(lines)


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
