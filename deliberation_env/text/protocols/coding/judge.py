"""How the coding team's programs reach the sandbox: two programs, two processes.

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
imports. Each call is answered by a process of its own, forked before any of the helper's
code ran, that loads the program afresh: no call finds what an earlier one left, in a
default, a cache or the interpreter, not even by the time something takes (the helper
cannot count its calls). A call costs about 1 ms, most of it the fork (2,000 calls in
one check take about two seconds of the ten the task allows; BENCHMARKS.md, "The
helper's process"). What this boundary proves is in the
protocol's page (:mod:`deliberation_env.text.protocols.coding.protocol`, "What is proven,
and by what").

``eval`` in the team's programs evaluates literals and operators only (numbers, strings,
arithmetic, comparisons): each judged program starts with a trusted definition of it
(:data:`SAFE_EVAL`), since HumanEval/160's own solution calls ``eval``.

**A batch of programs** (:func:`judge_programs`) is judged in one concurrent sandbox call,
each distinct program once, cached verdicts not again
(:class:`~deliberation_env.text.protocols.coding.counting.VerdictCache`); a program whose
judged run gave no results on the tests' calls runs the calls alone in a second batch
(:func:`calls_request`), for the feedback.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deliberation_env.sandbox import JudgeRequest, Verdict, judge_many
from deliberation_env.tasks import Problem, Task
from deliberation_env.tasks.humaneval import UNCACHED_REASONS, with_futures_first
from deliberation_env.text.protocols.coding.admission import HELPER
from deliberation_env.text.protocols.coding.counting import (
    CountedTests,
    TestResult,
    VerdictCache,
    read_verdict,
    with_call_results,
)

NO_TESTS = "def check(candidate):\n    return None\n"
"""The tests of a run of the tests' constant calls alone (:func:`calls_request`)."""

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
        helper_answers: ``"returned"``, or ``"swapped"`` (:meth:`results_swapped`).
        no_helper: The team has no helper: ``helper_code`` is :meth:`without_helper`'s
            stubs, not an agent's code.
    """

    prompt: str
    helper_code: str
    main_code: str
    helper_functions: tuple[str, ...] = ()
    helper_answers: str = "returned"
    no_helper: bool = False

    @property
    def helper(self) -> str:
        """The helper's program: the prompt then the helper's code (``""`` without one),
        its ``from __future__`` imports first (:func:`~deliberation_env.tasks.humaneval.with_futures_first`)."""
        return with_futures_first(f"{self.prompt}\n\n{self.helper_code}\n") if self.helper_code else ""

    @property
    def main(self) -> str:
        """The main agent's program: the prompt then the main agent's code, its
        ``from __future__`` imports first."""
        return with_futures_first(f"{self.prompt}\n\n{self.main_code}\n")

    @property
    def text(self) -> str:
        """Both codes after the prompt, as one listing (the team's output)."""
        return f"{self.prompt}\n\n{'' if self.no_helper else self.helper_code}\n\n{self.main_code}\n"

    def without_helper(self, names: tuple[str, ...]) -> TeamProgram:
        """These programs, which have no helper, with each of ``names`` (the unbound names
        the main agent's code reads) answering ``None`` as in :meth:`results_withheld`, where
        they raised ``NameError``: a team without a helper is judged as the team with the
        helper's results withheld, so that a helper earns no leave-one-out credit where only
        the existence of a function of that name mattered (red team 35). The team's output
        (:attr:`text`) still has no helper code."""
        if not names:
            return self
        return dataclasses.replace(self, helper_functions=names, no_helper=True).results_withheld()

    def results_withheld(self) -> TeamProgram:
        """These programs with each of the helper's functions answering ``None`` and changing
        nothing in place: what the main function does without the helper's results (the
        coding protocol's check that they matter)."""
        stubs = "\n\n".join(f"def {name}(*args, **kwargs):\n    return None\n" for name in self.helper_functions)
        return dataclasses.replace(self, helper_code=stubs)

    def results_swapped(self) -> TeamProgram:
        """These programs with each call of the helper's functions answered with what the
        helper returned to an earlier call (the last answer that differs from the call's
        own), and each argument it changed in place left as an earlier call left its
        argument at that place: the coding protocol's check that the answer to *each* call
        matters, beside :meth:`results_withheld` (``JudgeRequest.helper_answers``, done by
        the sandbox at the process boundary, on copies and with the same work as the judged
        run, so the helper's code runs unchanged and cannot tell this run from the judged
        one: red teams 28 and 31). A main function that only checks a property of every
        answer or change (``aux(x) is not None``, ``if not aux(x): raise`` beside a helper
        that always answers ``True``, ``xs[0] == 0`` after a helper that sets it) passes
        this run."""
        return dataclasses.replace(self, helper_answers="swapped") if self.helper_code else self

    def helper_alone(
        self, entry: str, parameters: str = "*args, **kwargs", call: str = f"{HELPER}(*args, **kwargs)"
    ) -> TeamProgram:
        """These programs with the main agent's code replaced by the thin wrapper ``def
        entry(parameters): return call``, by default ``def entry(*args, **kwargs): return
        aux(*args, **kwargs)``: the helper alone, called with the tests' own arguments. The
        coding protocol's check that the main function's own work matters
        (``not_wrapper``): where this program passes every test the team passes, the
        helper did the whole problem, whatever the main function did around its calls. The
        helper's code runs unchanged, and where the main function passed the tests'
        arguments on unchanged it receives the very same calls."""
        return dataclasses.replace(self, main_code=f"def {entry}({parameters}):\n    return {call}\n")

    def digest(self) -> str:
        """SHA-256 of what a verdict depends on (the verdict cache's key)."""
        material = json.dumps([self.helper, self.main, self.helper_functions, self.helper_answers])
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def judge_request(problem: Problem, program: TeamProgram, counted: CountedTests) -> JudgeRequest:
    """What the sandbox judges for a team's programs: the trusted ``eval``
    (:data:`SAFE_EVAL`) then the main agent's program, the same start for the helper's
    program in its own process with the functions it defines, the counting tests, the
    entry point, the reference as the judge's setup (the prompt's helper functions, and the
    canonical solution that tests reading the entry point compare with) and the tests'
    constant calls as probes (the feedback's results).

    Args:
        problem: The HumanEval problem.
        program: The team's programs.
        counted: The problem's counted tests.
    """
    return JudgeRequest(
        program=with_futures_first(SAFE_EVAL + program.main),
        tests=counted.source,
        entry_point=problem.meta["entry_point"],
        setup=problem.answer,
        probes=counted.calls,
        helper=with_futures_first(SAFE_EVAL + program.helper) if program.helper else "",
        helper_functions=program.helper_functions,
        helper_answers=program.helper_answers if program.helper else "returned",
    )


def calls_request(problem: Problem, program: TeamProgram, counted: CountedTests) -> JudgeRequest:
    """The tests' constant calls alone, without the tests: what the feedback shows of a
    program whose judged run gave no results (module docstring)."""
    return dataclasses.replace(judge_request(problem, program, counted), tests=NO_TESTS)


def judge_programs(
    pairs: Sequence[tuple[Problem, TeamProgram]],
    counted: Mapping[str, CountedTests],
    verdicts: VerdictCache,
    task: Task,
) -> list[TestResult]:
    """The trusted count of the tests each (problem, program) pair passes, judged
    concurrently, each distinct one once; cached results are not judged again. Programs
    whose judged run gave no results on the tests' calls (it timed out or broke the
    protocol after they loaded) run the calls alone in a second concurrent batch (module
    docstring).

    Args:
        pairs: The (problem, program) pairs.
        counted: Each problem's counted tests, by problem id.
        verdicts: The verdict cache, read and filled.
        task: The ``humaneval`` task, whose sandbox limits judge the programs.
    """
    keys = [(problem.id, program.digest()) for problem, program in pairs]
    found = {key: verdicts.recall(key) for key in dict.fromkeys(keys)}
    missing = {key: pair for key, pair in zip(keys, pairs, strict=True) if found[key] is None}
    results = _judged(
        [judge_request(problem, program, counted[problem.id]) for problem, program in missing.values()],
        task,
    )
    for (key, (problem, _)), verdict in zip(missing.items(), results, strict=True):
        found[key] = read_verdict(verdict, counted[problem.id], f"problem {problem.id!r}")
    unanswered = {key: pair for key, pair in missing.items() if found[key].results is None and found[key].reason != "load_error"}
    transient: set[tuple[str, str]] = set()  # the calls alone ran out of time: judged again next time
    if unanswered:
        calls_alone = _judged(
            [calls_request(problem, program, counted[problem.id]) for problem, program in unanswered.values()],
            task,
        )
        for (key, (problem, _)), verdict in zip(unanswered.items(), calls_alone, strict=True):
            found[key] = with_call_results(found[key], verdict, counted[problem.id])
            if verdict.reason in UNCACHED_REASONS:  # a loaded machine's timeout says nothing lasting
                transient.add(key)
    for key in missing:  # in order: the cache drops the least recently kept first
        if key not in transient:
            verdicts.keep(key, found[key])
    return [found[key] for key in keys]


def _judged(requests: list[JudgeRequest], task: Task) -> list[Verdict]:
    """The sandbox's verdicts on ``requests``, judged concurrently under ``task``'s limits."""
    return judge_many(requests, task.timeout_s, task.memory_mb, hidden_paths=task.hidden_paths)
