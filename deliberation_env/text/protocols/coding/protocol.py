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
``cooperation``       0.5     every test passed (``bonus_gate="one_test"``: at least
                              one, CoMLRL's gate), the helper is defined and
                              non-trivial, the main function calls ``aux`` without
                              binding ``aux`` itself, and the helper's results matter:
                              judged again with each helper function answering ``None``
                              (changing nothing in place), and again with each call
                              answered with the helper's answer to an earlier call
                              (and what it changes in place left as an earlier
                              call left its argument), the program
                              passes fewer tests each time (not with CoMLRL's gate,
                              which reads the text only)
``not_wrapper``       1.0     given cooperation: the main function is not a thin wrapper
                              (``return aux(...)``, or ``v = aux(...)`` then ``return v``,
                              CoMLRL's forms; or no statement but returns and assignments
                              of the helper functions' results, names and constants:
                              ``return core(aux(x))``, read through trivial identities:
                              ``aux(x) + ()``, ``aux(x) or x``, ``tuple(aux(x))``,
                              ``aux(x)[0]``, ``if True: return aux(x)``,
                              ``(lambda v: v)(aux(x))``, ``[v for v in aux(x)]``,
                              ``aux(x)[repr(x)]``, ``eval(repr(aux(x)))``; dead
                              code, found to a fixed point, and checks that only
                              raise are no work; a test of its own, in an ``if``
                              or a conditional expression, is); and its work
                              matters: judged again with each helper function it
                              reads alone as the entry point (``return
                              aux(*args)``, the tests' own arguments), and each of
                              its calls of one with only its parameters and
                              constants alone (``return aux(x, 0)``), at most
                              :data:`HELPER_ALONE_RUNS` runs, the program passes
                              fewer tests each time
``ignored_call``      -0.5    given cooperation: the main function calls ``aux`` as a bare
                              statement, throwing its result away
====================  ======  ===============================================================

**What each agent's code may hold.** Both codes are checked with :mod:`ast` before
anything runs, by the same rules on every path (scoring, leave-one-out, every turn). Code
that breaks a rule is *refused*: it scores as not defined and does not run (a refused
helper's code is left out: no helper process runs; a refused main function ends the
scoring at ``main_defined``), and the agents' feedback names the line and the rule. The
rules, each with what it keeps out, are documented with their code in
:mod:`deliberation_env.text.protocols.coding.admission`; in short:

1. *Top level*: only imports, function definitions and docstrings; literal defaults,
   annotations that are type expressions, no decorator but ``functools``' caches. No code
   an agent wrote runs while the program loads.
2. *Imports*: absolute and named, of the modules of pure computation in
   :data:`~deliberation_env.text.protocols.coding.admission.ALLOWED_MODULES` only.
3. *Anywhere*: no ``global``, no attribute assignment, no dunder name, no attribute that
   starts with ``_`` or reads a frame, none of
   :data:`~deliberation_env.text.protocols.coding.admission.DENIED_NAMES`, and none of the
   other ways found to reach an attribute by a string (class patterns in ``match``,
   ``type`` but as ``type(value)`` compared, format fields that read attributes,
   ``__reduce__``).
4. *Names*: each agent binds at top level only names of its own; the main agent binds
   the entry point by ``def`` only.

A top-level statement that repeats one of the prompt's unchanged is the prompt's own
code and is not checked, so every canonical solution is admitted.

**Each agent's code runs in its own process**
(:mod:`deliberation_env.text.protocols.coding.judge`, which says what crosses and how).
The helper's program runs in a confined process of its own; in the main agent's process
each of the helper code's top-level functions is a stub that sends the arguments there
and receives the result. Only plain values cross (the sandbox's codec, never pickle);
in-place changes of a list, dict or set argument are copied back, and a value that cannot
cross makes the call raise ``TypeError``. The prompts say so. Each call is answered by a
process of its own that loads the helper's program afresh: what one call leaves, in a
default, a cache or the interpreter, the next does not see (below, "What the structure
bonuses prove"). ``eval`` in the team's
programs evaluates literals and operators only (HumanEval/160's solution calls it).

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
one); what such a path reaches is the agent's own process. *Not proven* by the
boundary: that the helper's result matters (the cooperation bonus checks that apart,
below), or that either function is correct beyond the tests.

**What the structure bonuses prove, and what not.** ``helper_defined``, ``main_defined``,
``not_wrapper`` and ``ignored_call`` are facts of the judged functions' text, as in
CoMLRL: that ``aux`` returns something other than a constant or one of its parameters,
that the main function's text calls ``aux`` and is not a thin wrapper (CoMLRL's two forms,
or only passing the helper's results on).
``cooperation`` also needs behaviour: the helper's results must matter to the tests. A
call that never runs (``if 0 > 1: aux(x)``), a result never used (``v = aux(x)``),
overwritten, or replaced by a fallback, passes every test with the helper's answers
withheld (``None``); a result checked for a property and then ignored (``assert aux(x)
is not None``, ``if not aux(x): raise`` beside a helper that validates its input and so
always answers ``True``, ``aux(x) % 2`` beside one whose answers are all even) passes
every test with each call answered with the helper's answer to an earlier call (the last
one that differs from its own; :meth:`~deliberation_env.text.protocols.coding.judge.TeamProgram.results_swapped`),
since every answer of the helper has that property. Either earns no bonus. As text alone
(CoMLRL's check, red team 27) such a main function, solving the problem by itself, earned
the 1.5 points of the bonuses, and its helper a leave-one-out contribution of 1.9 for code
that never ran. Red team 28: with the answers altered instead (a number plus one, a
flipped boolean, by rebinding the helper's names in its own program) a property check
still earned them (4.0 against 2.5), and so did a helper that told the altered run from
the judged one (``repr(aux)``, ``aux.cache_info``) and failed it on purpose, or whose
answer, one byte under the codec's limit, could not cross once altered: the answers are
now swapped by the sandbox at the process boundary (``JudgeRequest.helper_answers``),
where the helper's code runs unchanged and at the same depth of calls, and an answer that
could not cross so is sent as returned. Red team 31: what the helper changed in place was
still altered (each element plus one), so a property of every such change (``xs[0] = 0``)
earned the bonuses (4.0 against 2.5), and the alteration was made on the helper's own
objects, so a helper that kept its argument (in a default list) saw it and failed the run
on purpose (4.0 against 2.5); each changed argument is now left as an earlier call left its
argument at that place (the last state that differs and has its type), on a copy. The
swapped run also did more work than the judged one (it encoded the call again), which a
main function could time with ``datetime`` (a ratio of about 1.0 judged against 1.2 to 1.5
swapped, on 1 MB arguments; no reward was won with it in five tries, the noise failed
judged runs too): both runs now do the same work and differ only in the answer they send.
Not proven: that the main function needs the helper. It may compute the same value
itself and compare it with aux's, or check any relation between a call's arguments and
its answer (``len(aux(x)) == len(x)``), which fails with either change as a main function
that uses the answer does: such a team still earns the bonuses (4.0 against 2.5 for the
same main function without the check; red teams 28 and 31 found no behaviour of the
program that tells the two apart, and a rule on the text, such as a comparison with
``aux``'s result, would also take the bonus from honest predicates like ``if aux(c) == 0``;
pinned by ``test_a_relation_between_the_arguments_and_the_answer_still_earns_cooperation``).
Nor that it does part of the work itself: a body that only passes the helper's results on
(returns and assignments of calls of the helper code's functions, names and constants:
``return core(aux(x))``, ``core`` a second function of the helper's, red team 34) is a
wrapper too, read through trivial identities (red team 37: an identity operation such as
``+ 0``, ``+ ()`` or ``* 1``, ``or``/``and``, a conditional expression, a conversion such
as ``tuple(...)``, a constant subscript, a display, an unpacking assignment, and the blocks
of an ``if``/``while`` on a constant, a ``for`` over a constant and a ``try``), but one
statement of work of its own that can reach the answer, however small, takes it out. A semantic reading (the main
function's results follow the helper's answers alone in the swapped run) was tried and
dropped: it also took the bonus from a main function that computes on the helper's answer
(``len(aux(s))``, the product of a list the helper returned), the natural split of a
problem. Red team 40 read through more: the main's own identity functions (a lambda or
nested ``def`` that only passes its arguments on, ``(lambda v: v)(aux(x))``), comprehensions
that only repack (``tuple(v for v in aux(x))``, ``{k: v for k, v in aux(x).items()}``), a
subscript or ``.get`` whose key is made of the main's arguments without computation
(``aux(x)[repr(x)]``, ``aux(x)[x]``, ``aux(x)[:k]``: a helper answering ``{repr(x):
answer}``), ``copy.copy``, ``map`` and ``functools.reduce`` of identities, the one element
of a one-element display (``max([v])``, ``next(iter([v]))``), ``match`` cases that only
capture, a walrus, augmented and annotated assignments, ``for`` over the answer, and
statements that compute nothing of the answer: ``assert``, ``if ...: raise``, ``del``,
imports, and dead code (an assignment, expression or loop whose names are never read, a
nested ``def`` never called, calling builtins only: ``unused = sum(x)``). Each earned 4.0
against 3.0 for ``return aux(x)``. Red team 41 found dead code to a fixed point (a liveness
that grows from the returns and the statements with effects back through the names they
read, so ``a = sum(x)``, ``b = a``, neither read after, is dead, and a recursive ``def`` or
a loop that reads only itself ends dead), and read through ``operator.itemgetter`` and
``operator.getitem`` of constants, ``eval`` of passed-on values, ``sorted`` of a one-element
display, ``max(v, v)``, keywords of ``min``/``max``/``sorted`` and ``next``'s default;
an ``if`` or ``while`` on a constant expression (``1 == 1``). A conditional expression's
test is read as an ``if`` statement's: a constant or the helper's answer passed on is no
work (``aux(x) if aux(x) else x``, as ``aux(x) or x``), any other test is a case of the
main's own (``(0, 1) if not x else aux(x)``, 4.0 as the ``if`` statement). What the text
cannot read, a run does (red team 42): a call the rule does not know as an identity
(``with memoryview(b'')`` around the forward), work on the arguments that cannot change
the answer (``x = sorted(x)`` before ``return aux(x)`` for a sum), a test of its own whose
arms are the same (``aux(x) if x is not None else aux(x)``), a base case or a sum the
helper also computes: each earned 4.0 against 3.0, and each is now judged again with the
helper alone as the entry point (:meth:`~deliberation_env.text.protocols.coding.judge.TeamProgram.helper_alone`,
each of the helper's functions the main's code reads, and each call of one in the main
function whose arguments are only its parameters and constants, taken alone with the
main's parameters: ``def entry(x): return aux(x, 0)`` where the main sorted ``x`` first;
more than :data:`HELPER_ALONE_RUNS` such runs and the main earns no ``not_wrapper``, as
the check cannot be made), which passes every test: the helper did the whole problem, so
the main's work did not matter. A preprocessing step or a case the helper needs keeps
the bonus (the main sorts, the helper picks from the sorted list: the helper alone
fails). Not read either way (pinned by
``test_work_the_helper_alone_cannot_replace_still_earns_not_wrapper_known_limitation``,
4.0): a helper that refuses what the main did not prepare (``if x != sorted(x): raise``)
beside a main whose preparation changes nothing else, and in general a helper that tells
the run alone from the team's by a call's arguments and fails it on purpose. By the
number or order of its calls it cannot: each call is answered by a process of its own,
forked before any of the helper's code ran, which loads the program and exits after the
answer, so nothing a call leaves reaches the next, in the program (a default's contents,
a cache) or below it (a module imported, a pattern in ``re``'s cache, the interpreter's
warm-up of the helper's code), not even as the time something takes. A helper answering
``None`` to every first call beside a main that calls twice failed the run alone and
earned 4.0 against 3.0, its count kept in a mutable default or a cached list (red team
42) or read from the time a match took with ``re``'s cache warm (red team 43); now its
team fails every test. An index that
is a computation (``aux(x)[len(x)]``, ``aux(x)[len(x) // 2]``) is work too. Nor that
the helper is correct beyond the tests; a helper whose answers and changes are all the
same, or whose swapped ones the tests cannot tell apart, earns no bonus. Only the ``tests`` part measures the program's correctness.

**Tests passed come only from the sandbox's verdict**
(:mod:`deliberation_env.text.protocols.coding.counting`). The trusted tests are rewritten
once, in this process (the candidate's code is never rewritten or run here): each
top-level statement of ``check`` that uses the candidate is one *test*, and the judge
process returns how many passed. A verdict whose reason is not ``"passed"`` counts 0 tests
passed: a program that exits, prints "passed", forges records or returns objects
claiming equality earns no test.

**Feedback** (multi-turn, after CoMLRL's ``level_feedback`` mode): each agent's next
prompt says which functions were found (or why a code was refused), the syntax error
(which code, line, message), whether the program loaded (its error if not), and *what the
program returns on the tests' calls*: each call of the candidate with constant arguments
(literals and operators) in the tests (at most
:data:`~deliberation_env.text.protocols.coding.counting.FEEDBACK_CALLS`, in the tests'
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

**Verdict cache.** What the reward and the feedback read of a verdict, never the
candidate's output, is kept per (problem, program digest), at most ``cache_size`` entries,
the least recently used dropped first; only verdicts that say something lasting about the
program are kept (:class:`~deliberation_env.text.protocols.coding.counting.VerdictCache`).

**Neutral text** (leave-one-out): the empty text, for both roles: no helper, or no main
function (R is at most 0.4). A helper left out for the credit (``left_out_text``) leaves
its results withheld: each of *its* functions that the main agent's code reads and nothing
binds answers ``None``
(:meth:`~deliberation_env.text.protocols.coding.judge.TeamProgram.without_helper`, the
withheld run's stubs), and any other unbound name raises ``NameError`` as in the team's own
program; a team whose helper wrote nothing, or was refused, is judged as its program is
(``aux`` raises ``NameError``; red team 36: when every unbound name answered ``None`` there,
an honest helper beside a main function that calls a function nobody wrote scored 1.5 to
no helper's 2.1, its leave-one-out credit -0.6). Red team 35 found that when those calls
raised ``NameError`` a helper was pivotal wherever the main function called it, so any helper
beside a main function that solved the problem alone and called ``aux`` for a result it
never used (unused, overwritten, replaced by a fallback) earned 1.4 of leave-one-out
credit (0.9 of Shapley) for the main function's tests, where its own definition is 0.4.
A main function that checks a property of aux's answer (``aux(x) is not None``) still
fails without it, so its helper keeps that credit for having the property.

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
- The structure bonuses (cooperation, not a wrapper, the ignored call) are paid only to a
  program that passes *every* test; CoMLRL pays them once *one* test passes. Its gate
  can be farmed: a main function that returns one constant (``[]``, ``True``, ...) and
  calls ``aux`` in code that never runs (``if 0 > 1: aux(0)``), beside a helper that is
  non-trivial on paper, out-scored the correct canonical solution that does not call
  ``aux`` on 62 of the 90 test problems (2.77 against 2.50 on average), and its helper's
  leave-one-out contribution was 1.90 against 0.40. With every test, no program that
  fails a test out-scores one that passes them all (R <= 1.5 + the share passed < 2.5).
  ``bonus_gate="one_test"`` restores CoMLRL's gate, to compare with its numbers.
- Cooperation needs the helper's results to matter (the program judged again with them
  withheld, and again with each call answered with another call's answer, passes fewer
  tests each time), where CoMLRL
  reads the call in the text: a call that never runs or whose result is unused farms its
  bonuses (above).
- ``not_wrapper`` needs the main function's own work to matter (the program judged again
  with the helper alone as the entry point passes fewer tests), where CoMLRL reads two
  forms of the text: any statement around ``return aux(x)`` that cannot change the
  answer farms it (above).
- Feedback shows the program's results, never the expected values (above). It does not
  say whether the helper's results mattered: that would tell whether every test passed.

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

import re
import textwrap
from collections.abc import Iterator, Sequence
from typing import Literal, Self, get_args

from agents.base import Message
from deliberation_env.sandbox import JudgeRequest
from deliberation_env.tasks import Problem, Task
from deliberation_env.tasks.base import positive_int
from deliberation_env.tasks.humaneval import extract_code
from deliberation_env.text.protocols.base import Outcome, chat, quote
from deliberation_env.text.protocols.coding.admission import HELPER
from deliberation_env.text.protocols.coding.analysis import Analysis, analyse
from deliberation_env.text.protocols.coding.counting import (
    VERDICT_CACHE_SIZE,
    TestResult,
    VerdictCache,
    count_tests,
)
from deliberation_env.text.protocols.coding.judge import TeamProgram, judge_programs, judge_request

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
HELPER_ALONE_RUNS = 8
"""Most thin wrappers of the helper judged for ``not_wrapper`` (module docstring, the reward
table): a main that asks for more (each helper function it reads, each call of one with
only its parameters and constants) earns no ``not_wrapper``, since the check that its own
work matters cannot be made."""
BonusGate = Literal["all_tests", "one_test"]
BONUS_GATES: tuple[BonusGate, ...] = get_args(BonusGate)
"""When the structure bonuses are paid (:class:`CodingProtocol`'s ``bonus_gate``)."""

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


class CodingProtocol:
    """A helper function and a main function on HumanEval (see the module docstring).

    Args:
        task: The ``humaneval`` task (``deliberation_env.tasks.get("humaneval", ...)``);
            its sandbox limits (``timeout_s``, ``memory_mb``) judge the team's programs.
        cache_size: Verdicts kept at most (module docstring).
        bonus_gate: When the structure bonuses are paid: ``"all_tests"`` (the program
            passes every test) or ``"one_test"`` (at least one, CoMLRL's gate, which a
            constant answer farms: module docstring, "Where this differs from CoMLRL").

    Raises:
        ValueError: If ``task`` is not HumanEval, a problem's tests cannot be counted
            (naming the problem), ``cache_size`` is not an integer >= 1, or
            ``bonus_gate`` is neither gate.
    """

    name = "coding"
    reward_range = (0.0, 4.0)

    def __init__(
        self, task: Task, cache_size: int = VERDICT_CACHE_SIZE, bonus_gate: BonusGate = "all_tests"
    ) -> None:
        if not isinstance(task, Task):
            raise TypeError(f"task must be a Task, got {type(task).__name__}")
        if task.name != "humaneval":
            raise ValueError(f"the coding protocol needs the 'humaneval' task, got {task.name!r}")
        if bonus_gate not in BONUS_GATES:
            raise ValueError(f"bonus_gate must be one of {', '.join(map(repr, BONUS_GATES))}, got {bonus_gate!r}")
        self.task = task
        self.bonus_gate = bonus_gate
        self._verdicts = VerdictCache(positive_int("cache_size", cache_size))
        self._counted = {
            problem.id: count_tests(problem.meta["test"], f"problem {problem.id!r}", problem.meta["entry_point"])
            for split in ("train", "test")
            for problem in task.problems(split)
        }

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
            withheld = _withheld(problem, texts[0], main)
            analysis = analyse(helper, main, problem.meta["prompt"], problem.meta["entry_point"], withheld)
            read.append((problem, helper, main, analysis))
        results = iter(self.judge([(problem, analysis.program) for problem, _, _, analysis in read if analysis.tested]))
        tested = [next(results) if analysis.tested else None for _, _, _, analysis in read]
        # the teams whose bonuses hang on whether the helper's results matter, and the main's own work
        asks = {
            k: _counterfactuals(problem, analysis)
            for k, (problem, _, _, analysis) in enumerate(read)
            if self._cooperates_on_paper(analysis, tested[k])
        }
        pairs = [(read[k][0], variant) for k, variants in asks.items() for variant in variants]
        judged = iter(self.judge(pairs) if pairs else [])
        counterfactual = {k: tuple(next(judged) for _ in variants) for k, variants in asks.items()}
        return [
            _outcome(problem, helper, main, analysis, tested[k], self.bonus_gate, counterfactual.get(k))
            for k, (problem, helper, main, analysis) in enumerate(read)
        ]

    def _cooperates_on_paper(self, analysis: Analysis, tests: TestResult | None) -> bool:
        """Whether ``analysis`` earns the structure bonuses but for the check that the
        helper's results matter (the default gate only: ``one_test`` is CoMLRL's rule)."""
        return self.bonus_gate == "all_tests" and tests is not None and _on_paper(analysis, tests, self.bonus_gate)

    def tests(self, problem: Problem, program: TeamProgram) -> TestResult:
        """The trusted count of the tests ``program`` passes (results are cached)."""
        return self.judge([(problem, program)])[0]

    def judge(self, pairs: Sequence[tuple[Problem, TeamProgram]]) -> list[TestResult]:
        """:meth:`tests` for many (problem, program) pairs, judged concurrently, each
        distinct one once; cached results are not judged again
        (:func:`~deliberation_env.text.protocols.coding.judge.judge_programs`)."""
        return judge_programs(pairs, self._counted, self._verdicts, self.task)

    def request(self, problem: Problem, program: TeamProgram) -> JudgeRequest:
        """What the sandbox judges for a team's programs
        (:func:`~deliberation_env.text.protocols.coding.judge.judge_request`)."""
        return judge_request(problem, program, self._counted[problem.id])

    def neutral_text(self, problem: Problem, agent: int) -> str:
        """The empty text: no helper, or no main function."""
        return ""

    def left_out_text(self, problem: Problem, agent: int, text: str) -> str:
        """The empty text, which for a helper left out for the credit remembers its ``text``:
        the team without it is judged with that helper's results withheld (module
        docstring, "Neutral text")."""
        return LeftOutHelper(text) if agent == 0 else self.neutral_text(problem, agent)


class LeftOutHelper(str):
    """The empty text of a helper left out for the leave-one-out and Shapley credit
    (:meth:`CodingProtocol.left_out_text`); ``left_out`` is the helper's text. An agent's
    text is a plain ``str``, so no agent can write one."""

    left_out: str

    def __new__(cls, left_out: str) -> Self:
        text = super().__new__(cls, "")
        text.left_out = left_out
        return text


def _withheld(problem: Problem, helper_text: str, main_code: str) -> tuple[str, ...]:
    """The functions of the helper left out in ``helper_text`` (a :class:`LeftOutHelper`),
    as its team's program had them; ``()`` for an agent's own text."""
    if not isinstance(helper_text, LeftOutHelper):
        return ()
    entry, prompt = problem.meta["entry_point"], problem.meta["prompt"]
    return analyse(_code(helper_text.left_out, HELPER), main_code, prompt, entry).program.helper_functions


def _counterfactuals(problem: Problem, analysis: Analysis) -> tuple[TeamProgram, ...]:
    """The programs judged again for the structure bonuses (module docstring): the helper's
    results withheld, then swapped, then (where the main function's text is no wrapper)
    the helper alone in each thin wrapper of
    :func:`~deliberation_env.text.protocols.coding.analysis.Analysis`'s ``helper_alone``
    (none where there are more than :data:`HELPER_ALONE_RUNS`: no bonus)."""
    program, entry = analysis.program, problem.meta["entry_point"]
    variants = (program.results_withheld(), program.results_swapped())
    if analysis.wrapper or not _alone_checkable(analysis):
        return variants
    return (*variants, *(program.helper_alone(entry, *wrapper) for wrapper in analysis.helper_alone))


def _alone_checkable(analysis: Analysis) -> bool:
    """Whether the check that the main function's own work matters can be made: at most
    :data:`HELPER_ALONE_RUNS` thin wrappers to judge."""
    return len(analysis.helper_alone) <= HELPER_ALONE_RUNS


def _on_paper(analysis: Analysis, tests: TestResult, bonus_gate: BonusGate) -> bool:
    """The structure bonuses' conditions that the tests' count and the code's text decide
    (module docstring, the reward table)."""
    return (
        tests.passed > 0
        and (bonus_gate == "one_test" or tests.passed == tests.total)
        and analysis.helper_defined
        and analysis.calls_helper
        and not analysis.helper_trivial
        and not analysis.main_defines_helper
    )


def _outcome(
    problem: Problem,
    helper_code: str,
    main_code: str,
    analysis: Analysis,
    tests: TestResult | None,
    bonus_gate: BonusGate,
    counterfactual: tuple[TestResult, ...] | None = None,
) -> Outcome:
    """The level reward, its parts and the feedback of a team's codes (module docstring);
    ``tests`` is the trusted count when ``analysis.tested``, else ``None``;
    ``counterfactual`` the counts of :func:`_counterfactuals`' programs, where the bonuses
    hang on them."""
    parts = dict.fromkeys(WEIGHTS, 0.0)
    parts["helper_defined"] = float(analysis.helper_defined)
    parts["main_defined"] = float(analysis.main_defined)
    if tests is not None:
        parts["syntax"] = 1.0
        parts["tests"] = tests.passed / tests.total
        cooperation = _on_paper(analysis, tests, bonus_gate) and (
            bonus_gate == "one_test"
            or (counterfactual is not None and all(other.passed < tests.passed for other in counterfactual[:2]))
        )
        if cooperation:  # and the main's own work matters (not with CoMLRL's gate, which reads the text only)
            work_matters = counterfactual is None or (
                _alone_checkable(analysis) and all(alone.passed < tests.passed for alone in counterfactual[2:])
            )
            parts["cooperation"] = 1.0
            parts["not_wrapper"] = float(not analysis.wrapper and work_matters)
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
    # spaces and tabs only: ``\s*`` crosses lines, quadratic on a run of blank lines (45 s)
    defines = rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\("
    return code if re.search(defines, code, re.MULTILINE) else ""


def _report(problem: Problem, analysis: Analysis, tests: TestResult | None) -> str:
    """The diagnostics both agents read (module docstring): never an expected value, which
    tests passed or how many."""
    entry = problem.meta["entry_point"]
    lines = [
        f"- helper {HELPER}(...): {_found(analysis.helper_defined, analysis.helper_refused)}",
        f"- main {entry}(...): {_found(analysis.main_defined, analysis.main_refused)}",
    ]
    if analysis.program.no_helper:
        lines.append(f"- no helper: each call of {', '.join(analysis.program.helper_functions)} answers None")
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
