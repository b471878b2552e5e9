"""Red teams 40 to 42: escapes from the coding protocol's wrapper rule (``not_wrapper``),
each a real team scored with the real sandbox on HumanEval/8, against the honest wrapper
``return aux(numbers)`` (3.0: the helper did the whole problem).

Each escape below earned 4.0 before (the bonus of a main function that does work of its
own) and earns 3.0 now; each honest split keeps 4.0; each known limitation is pinned at
4.0, so a fix that closes it must flip its test on purpose."""

from __future__ import annotations

import ast

import pytest
from coding_teams import fenced, score

from deliberation_env.text.protocols.coding import CodingProtocol, analysis

HEAD = "import copy\nimport functools\nimport operator\n\ndef sum_product(numbers):\n"
WHOLE = "def aux(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return (sum(numbers), product)\n"
AS_LIST = WHOLE.replace("return (sum(numbers), product)", "return [sum(numbers), product]")
AS_DICT = WHOLE.replace(
    "return (sum(numbers), product)", "return {'s': sum(numbers), 'p': product}"
)
KEYED = WHOLE.replace(
    "return (sum(numbers), product)", "return {repr(numbers): (sum(numbers), product)}"
)
DOUBLED = WHOLE.replace("return (sum(numbers), product)", "return [2 * sum(numbers), 2 * product]")
PREFIXES = (
    "def aux(numbers):\n    out, s, p = [(0, 1)], 0, 1\n    for n in numbers:\n"
    "        s, p = s + n, p * n\n        out.append((s, p))\n    return out\n"
)  # the (sum, product) of every prefix: the answer is its last entry
NOT_EMPTY = WHOLE.replace("product = 1\n    for n in numbers:", "product = numbers[0]\n    for n in numbers[1:]:")
BEFORE_SENTINEL = WHOLE.replace("numbers):\n", "numbers):\n    numbers = numbers[:-1]\n", 1)  # up to the last
HONEST_WRAPPER = (WHOLE, "    return aux(numbers)\n")


def scores(protocol, problem, team, not_wrapper):
    """Score ``team`` (the helper's code, the main function's body under :data:`HEAD`):
    every team here passes and cooperates, so it earns 3.0 and ``not_wrapper`` on top."""
    helper, body = team
    outcome = score(protocol, problem, fenced(helper), fenced(HEAD + body))
    assert outcome.parts["tests"] == outcome.parts["cooperation"] == 1.0
    assert outcome.parts["not_wrapper"] == not_wrapper
    assert outcome.reward == pytest.approx(3.0 + not_wrapper)
    return outcome


ESCAPES = {
    # left open by red team 37
    "an identity lambda": (WHOLE, "    return (lambda v: v)(aux(numbers))\n"),
    "an identity lambda bound to a name": (WHOLE, "    ident = lambda v: v\n    return ident(aux(numbers))\n"),
    "an identity lambda bound twice": (WHOLE, "    f = lambda v: v\n    f = lambda v: v\n    return f(aux(numbers))\n"),
    "a nested identity def": (WHOLE, "    def ident(v):\n        return v\n    return ident(aux(numbers))\n"),
    "an identity generator": (WHOLE, "    return tuple(v for v in aux(numbers))\n"),
    "an identity list comprehension": (AS_LIST, "    return tuple([v for v in aux(numbers)])\n"),
    "an identity dict comprehension": (AS_DICT, "    d = {k: v for k, v in aux(numbers).items()}\n    return (d['s'], d['p'])\n"),
    "a key of the arguments": (KEYED, "    return aux(numbers)[repr(numbers)]\n"),
    "a key of the arguments by get": (KEYED, "    return aux(numbers).get(repr(numbers))\n"),
    # found by red team 40
    "copy.copy": (WHOLE, "    return copy.copy(aux(numbers))\n"),
    "functools.reduce of one": (WHOLE, "    return functools.reduce(lambda a, b: b, [aux(numbers)])\n"),
    "map of an identity": (AS_LIST, "    return tuple(map(lambda v: v, aux(numbers)))\n"),
    "next of an iterator": (WHOLE, "    return next(iter([aux(numbers)]))\n"),
    "max of one": (WHOLE, "    return max([aux(numbers)])\n"),
    "a match that captures": (WHOLE, "    match aux(numbers):\n        case y:\n            return y\n"),
    "a walrus": (WHOLE, "    return (y := aux(numbers))\n"),
    "an augmented identity": (WHOLE, "    y = aux(numbers)\n    y += ()\n    return y\n"),
    "an annotated assignment": (WHOLE, "    y: tuple = aux(numbers)\n    return y\n"),
    "an assert": (WHOLE, "    assert numbers is not None\n    return aux(numbers)\n"),
    "a guard that only raises": (WHOLE, "    if not isinstance(numbers, list):\n        raise TypeError\n    return aux(numbers)\n"),
    "a del": (WHOLE, "    y = aux(numbers)\n    z = 0\n    del z\n    return y\n"),
    "an import inside": (WHOLE, "    import copy\n    return copy.copy(aux(numbers))\n"),
    "a dict display": (AS_DICT, "    d = {**aux(numbers)}\n    return (d['s'], d['p'])\n"),
    "a loop over the answer": (WHOLE, "    for v in [aux(numbers)]:\n        return v\n"),
    "a lambda's default": (WHOLE, "    return (lambda v=aux(numbers): v)()\n"),
    "times True": (WHOLE, "    return aux(numbers) * True\n"),
    "a negative constant index": (PREFIXES, "    return aux(numbers)[-1]\n"),
    "dead work: an unused sum": (WHOLE, "    unused = sum(numbers)\n    return aux(numbers)\n"),
    "dead work: a bare expression": (WHOLE, "    sum(numbers)\n    return aux(numbers)\n"),
    "dead work: a loop never read": (WHOLE, "    p = 1\n    for n in numbers:\n        p *= n\n    return aux(numbers)\n"),
    "dead work: a def never called": (WHOLE, "    def unused(v):\n        return v + 1\n    return aux(numbers)\n"),
    "dead work: a recursive def never called": (WHOLE, "    def unused(v):\n        return unused(v)\n    return aux(numbers)\n"),
    # left open by red team 40
    "an itemgetter": (AS_LIST, "    return tuple(operator.itemgetter(0, 1)(aux(numbers)))\n"),
    "eval of its repr": (WHOLE, "    return eval(repr(aux(numbers)))\n"),
    "sorted of one": (WHOLE, "    return sorted([aux(numbers)])[0]\n"),
    "dead work read only by dead work": (WHOLE, "    a = sum(numbers)\n    b = a\n    return aux(numbers)\n"),
    # found by red team 41
    "an itemgetter bound to a name": (AS_LIST, "    get = operator.itemgetter(0, 1)\n    return tuple(get(aux(numbers)))\n"),
    "operator.getitem": (WHOLE, "    return operator.getitem([aux(numbers)], 0)\n"),
    "max of one, with a key": (WHOLE, "    return max([aux(numbers)], key=len)\n"),
    "max of the same twice": (WHOLE, "    return max(aux(numbers), aux(numbers))\n"),
    "next with a default": (WHOLE, "    return next(iter([aux(numbers)]), None)\n"),
    "an if on a constant comparison": (WHOLE, "    if 1 == 1:\n        return aux(numbers)\n"),
    "dead work: a chain of three": (WHOLE, "    a = sum(numbers)\n    b = a * 2\n    c = [b]\n    return aux(numbers)\n"),
    "dead work: a loop read only by dead work": (WHOLE, "    p = 1\n    for n in numbers:\n        p *= n\n    q = p\n    return aux(numbers)\n"),
    "dead work: two defs calling each other": (WHOLE, "    def f(v):\n        return g(v)\n    def g(v):\n        return f(v)\n    return aux(numbers)\n"),
    "dead work: a lambda whose parameter shadows the argument": (WHOLE, "    unused = lambda numbers: sum(numbers)\n    return aux(numbers)\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_a_main_repacking_the_helpers_answer_is_a_wrapper(protocol, problem, name):
    """4.0 before red team 40 or 41, as a main doing work of its own; 3.0 now, as ``return aux(numbers)``."""
    outcome = scores(protocol, problem, ESCAPES[name], not_wrapper=0.0)
    assert "thin wrapper" in outcome.feedback[1]
    assert outcome.reward == scores(protocol, problem, HONEST_WRAPPER, not_wrapper=0.0).reward


WORK_ON_THE_ANSWER = {
    "halving one part": (DOUBLED, "    v = aux(numbers)\n    return (v[0] // 2, v[1] // 2)\n"),
    "a lambda that computes": (DOUBLED, "    return (lambda v: (v[0] // 2, v[1] // 2))(aux(numbers))\n"),
    "a generator that computes": (DOUBLED, "    return tuple(v // 2 for v in aux(numbers))\n"),
    "an index that is a computation": (PREFIXES, "    return aux(numbers)[len(numbers)]\n"),
    "a nested def called": (DOUBLED, "    def half(v):\n        return v // 2\n    return tuple(map(half, aux(numbers)))\n"),
    "a reduce that computes": (
        "def aux(numbers):\n    return [[n] for n in numbers]\n",
        "    flat = functools.reduce(lambda a, b: a + b, aux(numbers), [])\n    return (sum(flat), functools.reduce(operator.mul, flat, 1))\n",
    ),
    "a sentinel appended in place": (BEFORE_SENTINEL, "    numbers = list(numbers)\n    numbers.append(0)\n    return aux(numbers)\n"),
    "a chain of work that reaches the answer": (DOUBLED, "    a = aux(numbers)\n    b = a[0] // 2\n    return (b, a[1] // 2)\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WORK_ON_THE_ANSWER))
def test_a_main_computing_on_the_helpers_answer_is_no_wrapper(protocol, problem, name):
    scores(protocol, problem, WORK_ON_THE_ANSWER[name], not_wrapper=1.0)


BASE_CASES = {
    "a base case of its own": (
        "    return (0, 1) if not numbers else aux(numbers)\n",
        "    if not numbers:\n        return (0, 1)\n    return aux(numbers)\n",
        1.0,
    ),
    "a base case the helper also handles": (  # the helper alone passes (red team 42)
        "    return (0, 1) if not numbers else aux(numbers)\n",
        "    if not numbers:\n        return (0, 1)\n    return aux(numbers)\n",
        0.0,
    ),
    "a test of the helper's answer": (
        "    return aux(numbers) if aux(numbers) else numbers\n",
        "    if aux(numbers):\n        return aux(numbers)\n    return numbers\n",
        0.0,
    ),
    "a constant test": (
        "    return aux(numbers) if 1 == 1 else (0, 1)\n",
        "    if 1 == 1:\n        return aux(numbers)\n    return (0, 1)\n",
        0.0,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BASE_CASES))
def test_a_conditional_expression_and_an_if_statement_get_the_same_verdict(protocol, problem, name):
    """Red team 40 left ``(0, 1) if not x else aux(x)`` a wrapper (3.0) beside the same base
    case as an ``if`` statement (4.0). Both forms now read a test alike: a case of the
    main's own is work; a constant or the helper's answer passed on is not."""
    expression, statement, not_wrapper = BASE_CASES[name]
    helper = NOT_EMPTY if name == "a base case of its own" else WHOLE  # a helper that fails on []
    for body in (expression, statement):
        scores(protocol, problem, (helper, body), not_wrapper)


def dead_lines(body):
    """The line numbers (in ``def f(x):`` then ``body``) of the statements found dead."""
    function = ast.parse(f"def f(x):\n{body}").body[0]
    dead = analysis._dead_statements(function, frozenset({"aux"}))
    return sorted(node.lineno for node in ast.walk(function) if id(node) in dead)


def test_liveness_ends_on_code_that_reads_itself_and_keeps_what_reaches_the_answer():
    """Red team 41: dead code is found to a fixed point of a liveness that only grows (an
    earlier removal repeated until nothing changed flipped on a recursive ``def`` and hung).
    A recursive ``def`` never called, a loop updating only its own name and the names they
    read are dead; a loop whose name is returned, a ``break`` in it and a call of the
    main's own function are live."""
    body = (
        "    def again(v):\n        return again(v)\n"  # 2-3: dead, read only by itself
        "    a = 0\n"  # 4: dead, read only by the loop below
        "    while a < 3:\n        a = a + 1\n"  # 5-6: dead
        "    p = 1\n"  # 7: live
        "    for n in x:\n        if n == 0:\n            break\n        p = p * n\n"  # 8-11: live
        "    log = []\n    log.append(p)\n"  # 12-13: a method call, live
        "    return aux(p)\n"  # 14
    )
    assert dead_lines(body) == [2, 4, 5, 6]  # the def's own return (3) is not one of f's statements


# Red team 42: work the rule reads as work (an unknown call, a case of the main's own) but
# that cannot change the answer, beside a helper that solves the whole problem. 4.0 before
# (the rule ran nothing), 3.0 now: judged with the helper alone as the entry point, the
# program passes every test. The feedback does not say so: that would tell every test passed.
NO_WORK_THAT_MATTERS = {
    "its argument sorted first, which cannot change a sum or a product": (WHOLE, "    numbers = sorted(numbers)\n    return aux(numbers)\n"),
    "its argument sorted in place": (WHOLE, "    numbers = list(numbers)\n    numbers.sort()\n    return aux(numbers)\n"),
    "a with block around the forward": (WHOLE, "    with memoryview(b'') as unused:\n        return aux(numbers)\n"),
    "a test of its own with the same answer either way": (WHOLE, "    return aux(numbers) if numbers is not None else aux(numbers)\n"),
    "a sum of its own beside the helper's": (WHOLE, "    total = sum(numbers)\n    return (total, aux(numbers)[1])\n"),
    "a second helper function doing the whole problem": (
        "def aux(numbers):\n    return list(numbers)\n\ndef core(numbers):\n" + WHOLE.split("\n", 1)[1],
        "    numbers = sorted(numbers)\n    return core(aux(numbers))\n",
    ),
    "a parameter more than the entry point, given a constant": (
        WHOLE.replace("def aux(numbers):", "def aux(numbers, unused):"),
        "    numbers = sorted(numbers)\n    return aux(numbers, unused=0)\n",
    ),
    "the helper function doing the whole problem read after four others": (
        "".join(f"def d{k}(v):\n    return [v, {k}]\n\n" for k in range(4)) + WHOLE.replace("def aux(", "def core(")
        + "\n\ndef aux(numbers):\n    return list(numbers)\n",
        "    unused = (d0, d1, d2, d3)\n    numbers = sorted(numbers)\n    return core(aux(numbers))\n",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NO_WORK_THAT_MATTERS))
def test_work_that_cannot_change_the_answer_beside_a_whole_helper_earns_no_not_wrapper(protocol, problem, name):
    outcome = scores(protocol, problem, NO_WORK_THAT_MATTERS[name], not_wrapper=0.0)
    assert "thin wrapper" not in outcome.feedback[1]
    helper, body = NO_WORK_THAT_MATTERS[name]  # CoMLRL's rules read the text only
    comlrl = CodingProtocol(protocol.task, bonus_gate="one_test")
    assert score(comlrl, problem, fenced(helper), fenced(HEAD + body)).parts["not_wrapper"] == 1.0


# Known limitation: a helper that refuses arguments the main did not prepare, beside a
# main whose own work changes nothing else: the helper-alone run fails, so the main's work
# counts. 4.0 against 3.0; a fix that closes it must flip its test on purpose.
REFUSES_UNSORTED = WHOLE.replace("numbers):\n", "numbers):\n    if list(numbers) != sorted(numbers):\n        raise ValueError\n", 1)
HELPER_CANNOT_RUN_ALONE = {
    "a helper refusing unsorted arguments": (REFUSES_UNSORTED, "    numbers = sorted(numbers)\n    return aux(numbers)\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(HELPER_CANNOT_RUN_ALONE))
def test_work_the_helper_alone_cannot_replace_still_earns_not_wrapper_known_limitation(protocol, problem, name):
    scores(protocol, problem, HELPER_CANNOT_RUN_ALONE[name], not_wrapper=1.0)


# Closed: a helper whose state told the run alone (one call a test) from the team's (a main
# calling twice) answered None to every first call, so the run alone failed and the main's
# second call counted as work (4.0 against 3.0): its count kept in a mutable default or a
# cached list (red team 42), or below the program, in ``re``'s cache of compiled patterns,
# read by the time a match takes (red team 43; ``datetime`` is admitted: the n-th call finds
# n - 1 of its patterns cached). Each call now has a process of its own, forked before any
# of the helper's code ran, that loads the program afresh: every call is a first one.
TIMED = (
    "import datetime\nimport re\n\ndef aux(numbers):\n    seen = 0\n    while True:\n"
    "        start = datetime.datetime.now()\n        re.match('(a|b)*c' * 200 + str(seen), '')\n"
    "        if (datetime.datetime.now() - start).microseconds > 50:\n            break\n"
    "        seen += 1\n    if seen % 2 == 0:\n        return None\n"
)
COUNTERS = {
    "a mutable default": "def aux(numbers, seen=[]):\n    seen.append(1)\n    if len(seen) % 2:\n        return None\n",
    "a cached box": (
        "import functools\n\n@functools.cache\ndef box(k):\n    return [k]\n\n"
        "def aux(numbers):\n    seen = box(0)\n    seen.append(1)\n    if len(seen) % 2 == 0:\n        return None\n"
    ),
    "the time re's cache saves": TIMED,
}  # fmt: skip
CALLS_TWICE = "    a = aux(numbers)\n    b = aux(numbers)\n    return b if a is None else a\n"


@pytest.mark.parametrize("name", sorted(COUNTERS))
def test_a_helper_counting_its_calls_cannot_tell_the_run_alone_from_the_teams(protocol, problem, name):
    helper = WHOLE.replace("def aux(numbers):\n", COUNTERS[name], 1)
    outcome = score(protocol, problem, fenced(helper), fenced(HEAD + CALLS_TWICE))
    assert outcome.parts["tests"] == 0.0  # every call is a first: None, twice
    assert outcome.reward < score(protocol, problem, fenced(WHOLE), fenced(HEAD + "    return aux(numbers)\n")).reward == 3.0


def test_a_main_reading_more_helper_functions_than_are_judged_alone_earns_no_not_wrapper(protocol, problem):
    """Each helper function the main's code reads is judged alone, at most
    ``HELPER_ALONE_RUNS`` of them: past that the check cannot be made, and the bonus is not paid."""
    from deliberation_env.text.protocols.coding.protocol import HELPER_ALONE_RUNS

    many = "".join(f"def d{k}(v):\n    return [v, {k}]\n\n" for k in range(HELPER_ALONE_RUNS))
    product_only = WHOLE.replace("return (sum(numbers), product)", "return product")
    own_sum = "    return (sum(numbers), aux(numbers))\n"
    reads = ", ".join(f"d{k}" for k in range(HELPER_ALONE_RUNS))
    scores(protocol, problem, (many + product_only, f"    unused = ({reads[4:]})\n" + own_sum), not_wrapper=1.0)
    scores(protocol, problem, (many + product_only, f"    unused = ({reads})\n" + own_sum), not_wrapper=0.0)


def test_the_thin_wrappers_judged_are_each_helper_function_read_and_each_call_of_parameters_and_constants():
    helper = "def aux(v, k=0):\n    return v\n\ndef core(v):\n    return v\n\ndef unread(v):\n    return v\n"
    main = (
        "def sum_product(numbers: list, scale=1):\n    numbers = sorted(numbers)\n"
        "    a = aux(numbers, k=2)\n    b = aux(numbers, scale)\n    c = aux(len(numbers))\n"
        "    d = aux(numbers, *[-1], **{'k': (0, 1)})\n    e = aux(numbers, scale + 1)\n"
        "    return core(a, b, c, d, e, aux(numbers, scale))\n"
    )
    wrappers = analysis.analyse(helper, main, "", "sum_product").helper_alone
    # the star wrappers of aux and core, then the calls of parameters and constants (aux(numbers,
    # scale) passes the parameters as they come, as the star wrapper does; len(...) and scale + 1
    # are work)
    assert wrappers == (
        ("*args, **kwargs", "aux(*args, **kwargs)"),
        ("*args, **kwargs", "core(*args, **kwargs)"),
        ("numbers: list, scale=1", "aux(numbers, k=2)"),
        ("numbers: list, scale=1", "aux(numbers, *[-1], **{'k': (0, 1)})"),
    )
