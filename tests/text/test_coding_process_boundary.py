"""The wall between the coding protocol's two agents is a process (issue 31, section 1).

The helper's code runs in its own confined process and the main agent's code calls its
functions through stubs that carry plain values: no object of one agent's code is
reachable from the other's. These tests run real attacks through ``CodingProtocol.score``,
the text env's step and the sandbox's judge, with the allow-list on (a first filter) and
with it switched off (the boundary alone), and check that a helper behaves as it would in
one process wherever plain values suffice.
"""

from __future__ import annotations

import re

import pytest

from deliberation_env.sandbox import JudgeRequest, judge_python
from deliberation_env.text import text_env
from deliberation_env.text.protocols import coding

FENCE = "`" * 3
PROBLEM = "HumanEval/8"  # sum_product(numbers) -> (sum, product); 5 tests

AUX = "def aux(numbers):\n    return sum(numbers)\n"
# Calls aux and is no wrapper, but is wrong alone: abs of a list raises.
WRONG = "def sum_product(numbers):\n    total = aux(numbers)\n    return (total, abs(numbers))\n"
# The helper reads its own function's globals through a class pattern whose metaclass
# (a three-argument type call) matches anything and whose __match_args__ names
# "__globals__", then binds abs to math.prod there: in one interpreter that namespace is
# the main function's too, and the wrong main function passes every test.
MATCH_ATTACK = (
    "import math\n"
    "def aux(numbers):\n"
    "    meta = type('Meta', (type,), {'__instancecheck__': lambda cls, obj: True})\n"
    "    reader = meta('Reader', (), {'__match_args__': ('__globals__',)})\n"
    "    match aux:\n"
    "        case reader(namespace):\n"
    "            namespace['abs'] = math.prod\n"
    "    return sum(numbers)\n"
)
# The main agent's version of the trick: __import__ with no import statement and no dunder name.
MAIN_IMPORT_ATTACK = (
    "def sum_product(numbers):\n"
    "    meta = type('Meta', (type,), {'__instancecheck__': lambda cls, obj: True})\n"
    "    reader = meta('Reader', (), {'__match_args__': ('__builtins__',)})\n"
    "    match sum_product:\n"
    "        case reader(found):\n"
    "            system = found['__import__']('os').system\n"
    "    return (aux(numbers), 0)\n"
)


def fenced(code: str) -> str:
    return f"{FENCE}python\n{code}{FENCE}"


@pytest.fixture(scope="module")
def honest(protocol, problem):
    """The honest team the attack dresses up: R = 0.4 + 0.6 + 0.5, no test passed."""
    outcome = protocol.score(problem, [fenced(AUX), fenced(WRONG)])
    assert outcome.parts["tests"] == 0.0 and outcome.reward == pytest.approx(1.5)
    return outcome


@pytest.fixture
def no_allow_list(monkeypatch):
    """The protocol with rules 1 to 3 switched off: what stops an attack is the boundary."""
    monkeypatch.setattr(coding.admission, "check_code", lambda *args: None)


def judged(main: str, helper: str, tests: str = "def check(f):\n    return f()\n", **limits):
    """The sandbox's verdict on ``main`` (entry point ``f``) with ``helper`` in its own process."""
    names = tuple(re.findall(r"^def (\w+)", helper, re.MULTILINE))
    request = JudgeRequest(main, tests, "f", helper=helper, helper_functions=names)
    return judge_python(request, **limits)


# ---------------------------------------------------------------- the attack
def test_the_allow_list_refuses_class_patterns_and_three_argument_type(protocol, problem, honest):
    outcome = protocol.score(problem, [fenced(MATCH_ATTACK), fenced(WRONG)])
    assert outcome.parts["helper_defined"] == 0.0 and "REFUSED" in outcome.feedback[1]
    assert outcome.reward <= honest.reward
    main = protocol.score(problem, [fenced(AUX), fenced(MAIN_IMPORT_ATTACK)])
    assert main.parts["main_defined"] == 0.0 and "REFUSED" in main.feedback[0]


def test_without_the_allow_list_the_process_boundary_still_holds(
    protocol, problem, honest, no_allow_list
):
    outcome = protocol.score(problem, [fenced(MATCH_ATTACK), fenced(WRONG)])
    assert outcome.parts["helper_defined"] == 1.0  # admitted: the rules did not stop it
    assert outcome.parts["tests"] == 0.0 and outcome.reward <= honest.reward


def test_the_text_env_step_pays_the_attack_no_more_than_the_honest_team(honest, no_allow_list):
    env = text_env(task="humaneval", split="test", max_turns=2)
    env.reset(options={"problem_id": PROBLEM})
    for _ in range(2):
        _, rewards, _, _, infos = env.step(
            {"agent_0": fenced(MATCH_ATTACK), "agent_1": fenced(WRONG)}
        )
        assert rewards["agent_0"] <= honest.reward + 1e-9
        assert infos["agent_0"]["reward_components"]["tests"] == 0.0


HELPER_SPY = (
    "import gc\n"
    "def aux():\n"
    "    main_code = [o for o in gc.get_objects() if type(o).__name__ == 'code' and o.co_filename == '<candidate>']\n"
    "    main_globals = [o for o in gc.get_objects() if type(o) is dict and 'f' in o and 'secret' in o]\n"
    "    return (len(main_code), len(main_globals))\n"
)
MAIN_SPY = (
    "import gc\n"
    "secret = 1\n"
    "def f():\n"
    "    helper_code = [o for o in gc.get_objects() if type(o).__name__ == 'code' and o.co_filename == '<helper>']\n"
    "    return (aux(), len(helper_code))\n"
)


def test_neither_process_holds_an_object_of_the_other_agents_code():
    """Walked with ``gc`` (no allow-list in the sandbox): the helper finds no code or
    namespace of the main's program, and the main none of the helper's."""
    verdict = judged(MAIN_SPY, HELPER_SPY)
    assert verdict.reason == "passed", verdict.detail
    assert verdict.returned == ((0, 0), 0)


def test_the_helper_cannot_rebind_what_the_main_program_calls():
    helper = "import builtins\ndef aux():\n    builtins.abs = lambda x: 42\n    globals()['f'] = None\n    return 0\n"
    verdict = judged("def f():\n    aux()\n    return (abs(-3), f is not None)\n", helper)
    assert verdict.returned == (3, True)


# ---------------------------------------------------------------- one process's behaviour
def test_a_helper_that_sorts_its_argument_in_place_behaves_as_in_one_process(protocol):
    problem = next(
        p
        for p in [*protocol.problems("train"), *protocol.problems("test")]
        if p.id == "HumanEval/34"
    )
    helper = "def aux(values):\n    values[:] = sorted(set(values))\n    return len(values)\n"
    main = "def unique(l):\n    values = list(l)\n    count = aux(values)\n    return values[:count]\n"
    outcome = protocol.score(problem, [fenced(helper), fenced(main)])
    assert outcome.parts["tests"] == 1.0
    # HumanEval/34's one test calls the helper once: no earlier change to swap its own with, so
    # the swapped run passes too and no bonus is paid (red team 31; before it, each element of
    # the change was altered, which also broke a property of every change: 4.0 for a main
    # function that solved the problem alone). With more calls it earns them (test_text_coding).
    assert outcome.parts["cooperation"] == 0.0 and outcome.reward == pytest.approx(2.5)


def test_each_call_of_the_helper_starts_from_a_fresh_load_of_its_program():
    """What a call leaves in a default or a cache is gone at the next call (a helper that
    kept it could count its calls and tell the coding protocol's runs apart); within a call
    a memo works as in one process. Unlike one process, on purpose."""
    helper = (
        "import functools\n"
        "@functools.cache\ndef box():\n    return []\n"
        "def aux(n, seen=[], memo={}):\n"
        "    seen.append(n)\n    box().append(n)\n"
        "    def fib(k):\n"
        "        if k not in memo:\n            memo[k] = k if k < 2 else fib(k - 1) + fib(k - 2)\n"
        "        return memo[k]\n"
        "    return (len(seen), len(box()), fib(n), len(memo))\n"
    )
    verdict = judged("def f():\n    return [aux(k) for k in (10, 20, 30)]\n", helper)
    assert verdict.reason == "passed", verdict.detail
    assert verdict.returned == [(1, 1, 55, 11), (1, 1, 6765, 21), (1, 1, 832040, 31)]


def test_each_call_of_the_helper_finds_nothing_an_earlier_call_left_below_its_program():
    """Below the program too: an attribute set on a module, a pattern left in ``re``'s cache
    (which a helper could tell by the time a match takes: red team 43) and the adaptive
    interpreter's warm-up of the helper's own code are gone at the next call, as in a
    process of its own. (This level has no allow-list: the sandbox holds without it.)"""
    helper = (
        "import re\nimport sys\n"
        "def aux(k):\n"
        "    seen = getattr(sys, 'calls_seen', 0)\n"
        "    sys.calls_seen = seen + 1\n"
        "    cached = len(re._cache)\n"
        "    re.match('(a|b)*c' + str(k), '')\n"
        "    return (seen, cached, getattr(aux.__code__, '_co_code_adaptive', None) == aux.__code__.co_code)\n"
    )
    verdict = judged("def f():\n    return [aux(k) for k in range(12)]\n", helper)
    assert verdict.reason == "passed", verdict.detail
    assert len(set(verdict.returned)) == 1 and verdict.returned[0][0] == 0


def test_a_call_of_the_helper_leaves_no_file_and_no_process_behind():
    """Nor outside its process: a call writes no file and starts no process (a file left
    behind or a process left running would carry a count to the next call); threads run."""
    helper = (
        "import os\nimport threading\n"
        "def aux(k):\n"
        "    out = []\n"
        "    try:\n        with open(f'calls-{k}', 'w') as f:\n            f.write('x')\n"
        "        out.append('wrote')\n"
        "    except OSError as error:\n        out.append(type(error).__name__)\n"
        "    try:\n        pid = os.fork()\n        if pid == 0:\n            os._exit(0)\n"
        "        os.waitpid(pid, 0)\n        out.append('forked')\n"
        "    except OSError as error:\n        out.append(type(error).__name__)\n"
        "    thread = threading.Thread(target=out.append, args=('thread',))\n"
        "    thread.start()\n    thread.join()\n"
        "    return out\n"
    )
    verdict = judged("def f():\n    return [aux(k) for k in range(2)]\n", helper)
    assert verdict.reason == "passed", verdict.detail
    assert verdict.returned == [["PermissionError", "PermissionError", "thread"]] * 2


def test_in_place_changes_reach_the_callers_own_objects_nested_and_aliased():
    helper = (
        "def aux(grid, index):\n"
        "    grid['rows'].sort()\n"
        "    grid['rows'][0].append(index['k'])\n"
        "    grid['seen'].add(3)\n"
        "    grid['new'] = [1]\n"
        "    index.clear()\n"
        "    return None\n"
    )
    main = (
        "def f():\n"
        "    second, first, seen, index = [2], [1], {1}, {'k': 9}\n"
        "    grid = {'rows': [second, first], 'seen': seen}\n"
        "    aux(grid, index=index)\n"
        "    return (grid['rows'][0] is first, first, second, seen, grid['new'], index, sorted(grid))\n"
    )
    verdict = judged(main, helper)
    assert verdict.returned == (True, [1, 9], [2], {1, 3}, [1], {}, ["new", "rows", "seen"]), (
        verdict.detail
    )


@pytest.mark.parametrize(
    ("returned", "kind"),
    [("lambda: 1", "function"), ("(n for n in [1])", "generator"), ("Box()", "Box")],
)
def test_a_value_that_cannot_cross_makes_the_mains_call_raise(returned, kind):
    helper = f"class Box:\n    pass\ndef aux():\n    return {returned}\n"
    main = "def f():\n    try:\n        aux()\n    except TypeError as error:\n        return str(error)\n    return 'crossed'\n"
    verdict = judged(main, helper)
    assert "cannot cross" in verdict.returned and kind in verdict.returned


def test_an_argument_that_cannot_cross_makes_the_call_raise_before_the_helper_runs():
    main = "def f():\n    try:\n        aux(lambda: 1)\n    except TypeError as error:\n        return str(error)\n"
    assert "cannot cross" in judged(main, "def aux(x):\n    return 0\n").returned


def test_the_helpers_exceptions_arrive_as_the_same_builtin_type_or_helper_error():
    helper = (
        "class Mine(Exception):\n    pass\n"
        "def aux(kind):\n"
        "    if kind == 'value':\n        raise ValueError('bad value')\n"
        "    if kind == 'key':\n        raise KeyError('k')\n"
        "    raise Mine('mine')\n"
    )
    main = (
        "def f():\n    caught = []\n"
        "    for kind in ('value', 'key', 'mine'):\n"
        "        try:\n            aux(kind)\n"
        "        except Exception as error:\n"
        "            caught.append((type(error).__name__, str(error)))\n"
        "    return caught\n"
    )
    verdict = judged(main, helper)
    assert verdict.returned == [
        ("ValueError", "bad value"),
        ("KeyError", "'k'"),
        ("HelperError", "Mine: mine"),
    ]


def test_a_helper_that_does_not_load_is_the_programs_load_error():
    verdict = judged(
        "def f():\n    return aux()\n", "def aux():\n    return 1\nraise ValueError('at load')\n"
    )
    assert verdict.reason == "load_error" and "at load" in verdict.detail


def test_a_helper_process_that_ends_fails_the_call_and_every_later_one():
    helper = "import os\ndef aux(n):\n    if n:\n        os._exit(0)\n    return n\n"
    main = (
        "def f():\n    out = [aux(0)]\n"
        "    for n in (1, 0):\n"
        "        try:\n            aux(n)\n        except Exception as error:\n"
        "            out.append(type(error).__name__)\n"
        "    return out\n"
    )
    assert judged(main, helper).returned == [0, "HelperError", "HelperError"]


def test_a_helper_that_stops_loading_fails_the_later_calls_without_waiting_for_the_timeout():
    """Each call loads the program anew: once a load fails (here: a file the main writes
    after its first call), the calls fail as when the helper's process ends."""
    helper = "import os\nif os.path.exists('stop'):\n    raise RuntimeError('stop')\ndef aux(n):\n    return n\n"
    main = (
        "def f():\n    out = [aux(1)]\n    open('stop', 'w').close()\n"
        "    for n in (2, 3, 4):\n"
        "        try:\n            out.append(aux(n))\n        except Exception as error:\n"
        "            out.append(type(error).__name__)\n"
        "    return out\n"
    )
    verdict = judged(main, helper, timeout_s=30)
    assert verdict.reason == "passed", verdict.detail
    assert verdict.returned[0] == 1 and verdict.returned[-2:] == ["HelperError", "HelperError"]


def test_two_thousand_helper_calls_finish_within_the_tasks_limit(protocol, problem):
    # each call has a process of its own, about 1 ms a call (BENCHMARKS.md, "The helper's process")
    helper = "def aux(total, n):\n    return total + n\n"
    main = "def sum_product(numbers):\n    total = 0\n    for n in numbers * 400:\n        total = aux(total, n)\n    p = 1\n    for n in numbers:\n        p *= n\n    return (total // 400, p)\n"
    verdict = judged(
        main.replace("sum_product", "f"),
        helper,
        "def check(f):\n    return f([1, 2, 3, 4, 5])\n",
        timeout_s=protocol.task.timeout_s,
    )
    assert verdict.reason == "passed" and verdict.returned == (15, 120)


def test_every_canonical_solution_passes_as_the_helper_behind_a_forwarding_main(protocol):
    """Each canonical solution renamed ``aux`` runs in the helper's process; the main
    function forwards its arguments: every test crosses the boundary both ways. (The
    team's own run only, as the protocol reads its codes: the counterfactual runs cross
    the same boundary, and each helper call costs a process.)"""
    problems = [*protocol.problems("train"), *protocol.problems("test")]
    pairs = []
    for problem in problems:
        entry = problem.meta["entry_point"]
        helper = re.sub(rf"\b{entry}\b", coding.HELPER, problem.answer)
        main = f"def {entry}(*args):\n    result = aux(*args)\n    return result\n"
        *_, program = protocol.codes(problem, [fenced(helper), fenced(main)])
        assert program.helper_functions, problem.id  # admitted: the helper's process runs
        pairs.append((problem, program))
    results = protocol.judge(pairs)
    assert [p.id for (p, _), result in zip(pairs, results, strict=True) if result.passed != result.total] == []


# ---------------------------------------------------------------- the allow-list's new rules
REFUSED = {
    "class pattern": "    match numbers:\n        case list():\n            pass\n",
    "three-argument type": "    kind = type('K', (), {})\n",
    "type as a value": "    make = type\n",
    "a call of what type(x) returns": "    kind = type(int)('K', (), {})\n",
    "what type(x) returns, kept and called": "    meta = type(int)\n    kind = meta('K', (int,), {'__eq__': lambda s, o: True})\n",
    "type(x) outside a comparison": "    kinds = [type(numbers)]\n",
    "type(x) to a shadowed str": "    str = lambda kind: kind('K', (), {})\n    str(type(numbers))\n",
    "type(x) to str imported under its name": "    from copy import copy as str\n    str(type(numbers))('K', (), {})\n",
    "type(x) to repr bound by except": "    try:\n        pass\n    except Exception as repr:\n        pass\n    repr(type(numbers))\n",
    "type(x) to str bound by a match capture": "    match (lambda kind: kind):\n        case str:\n            str(type(numbers))\n",
    "attribute field in format": "    text = '{0.real}'.format(numbers)\n",
    "item field in a nested format spec": "    text = '{0:{1[0]}}'.format(1, numbers)\n",
    "format on a variable": "    pattern = '{}'\n    text = pattern.format(1)\n",
    "format_map": "    text = '{x.real}'.format_map({'x': 1})\n",
    "hasattr": "    found = hasattr(numbers, 'real')\n",
    "copy hook": "    class Evil:\n        def __reduce_ex__(self, protocol):\n            return (list, ())\n",
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_reflective_forms_are_refused(protocol, problem, name):
    helper = "def aux(numbers):\n" + REFUSED[name] + "    return sum(numbers)\n"
    outcome = protocol.score(problem, [fenced(helper), fenced(WRONG)])
    assert outcome.parts["helper_defined"] == 0.0 and "REFUSED" in outcome.feedback[1], name


def test_plain_type_checks_and_format_strings_are_admitted(protocol, problem):
    helper = (
        "def aux(numbers):\n"
        "    assert type(numbers) == list\n"
        "    print(type(numbers), f'{type(numbers)}', str(type(numbers)), repr(type(numbers)))\n"
        "    label = '{} {x:>{w}}'.format(1, x=2, w=3)\n"
        "    return sum(numbers) + len(label) - 5\n"
    )
    main = "def sum_product(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return (aux(numbers), product)\n"
    outcome = protocol.score(problem, [fenced(helper), fenced(main)])
    assert (
        outcome.parts["tests"] == 1.0 and "REFUSED" not in outcome.feedback[0] + outcome.feedback[1]
    )


# ---------------------------------------------------------------- the sandbox's request
def test_a_helper_program_needs_its_function_names_and_they_must_be_identifiers():
    with pytest.raises(ValueError, match="name the helper's functions"):
        JudgeRequest(
            "def f():\n    pass\n", "def check(f):\n    f()\n", "f", helper="def aux():\n    pass\n"
        )
    with pytest.raises(ValueError, match="identifiers"):
        JudgeRequest("", "", "f", helper="x = 1\n", helper_functions=("not a name",))
