"""Attacks on the coding protocol's reward (issue 23, section 1), each a real team of
programs scored with the real sandbox: the function analysed is the function judged, one
agent's code cannot change what the other's does, and feedback between turns never
reveals what the reward checks.

Every attack below earns the full reward, or more than its honest counterpart, when the
rules are not enforced (checked against the protocol before them); here it earns no more
than the honest team whose wrong main function it dresses up.
"""

from __future__ import annotations

import ast
import re

import pytest

from deliberation_env import tasks
from deliberation_env.text import CodingProtocol, text_env

FENCE = "`" * 3
PROBLEM = "HumanEval/8"  # sum_product(numbers) -> (sum, product); 5 tests

AUX = "def aux(numbers):\n    return sum(numbers)\n"
# Reads like cooperation (calls aux, not a wrapper) but is wrong alone: abs of a list raises.
WRONG = "def sum_product(numbers):\n    total = aux(numbers)\n    return (total, abs(numbers))\n"
SOLVED = "def solved(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return (aux(numbers), product)\n"
PRODUCT = "def product(numbers):\n    p = 1\n    for n in numbers:\n        p *= n\n    return p\n"


def fenced(code: str) -> str:
    return f"{FENCE}python\n{code}{FENCE}"


@pytest.fixture(scope="module")
def honest(protocol, problem):
    """The honest team the attacks dress up: R = 0.4 + 0.6 + 0.5, no test passed."""
    outcome = protocol.score(problem, [fenced(AUX), fenced(WRONG)])
    assert outcome.parts["tests"] == 0.0 and outcome.reward == pytest.approx(1.5)
    return outcome


def assert_no_gain(outcome, honest):
    assert outcome.parts["tests"] <= honest.parts["tests"]
    assert outcome.reward <= honest.reward + 1e-9
    assert outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == 0.0


# ---------------------------------------------------------------- the function judged
# The main agent's code: the wrong function the parser reads, then another binding of
# sum_product to a right one (rebinding appended after WRONG + SOLVED).
REBINDINGS = {
    "assignment": "sum_product = solved\n",
    "annotated assignment": "sum_product: object = solved\n",
    "walrus": "(sum_product := solved)\n",
    "for target": "for sum_product in [solved]:\n    pass\n",
    "with target": "import contextlib\nwith contextlib.nullcontext(solved) as sum_product:\n    pass\n",
    "conditional": "if True:\n    sum_product = solved\n",
    "try block": "try:\n    sum_product = solved\nexcept Exception:\n    pass\n",
    "delete then assign": "del sum_product\nsum_product = solved\n",
    "globals() write": "globals()['sum_product'] = solved\n",
    "globals().update": "globals().update(sum_product=solved)\n",
    "vars() write": "vars()['sum_product'] = solved\n",
    "exec": "exec('sum_product = solved')\n",
    "class of that name": "class sum_product:\n    def __new__(cls, numbers):\n        return solved(numbers)\n",
    "code swap": "sum_product.__code__ = solved.__code__\n",
    "function called at load": "def rebind():\n    global sum_product\n    sum_product = solved\n    return 0\nrebind()\n",
    "default argument": "def rebind(done=globals().update(sum_product=solved)):\n    return done\n",
    "annotation": "def rebind(x: globals().update(sum_product=solved)):\n    return x\n",
}
MAIN_ATTACKS = {name: WRONG + SOLVED + rebinding for name, rebinding in REBINDINGS.items()}
MAIN_ATTACKS["decorator"] = SOLVED + "@(lambda function: solved)\n" + WRONG
MAIN_ATTACKS["cache decorator on the entry point"] = "import functools\n" + SOLVED + "@functools.cache\n" + WRONG
MAIN_ATTACKS["own code swapped at its first call"] = (
    SOLVED + "def sum_product(numbers):\n    sum_product.__code__ = solved.__code__\n"
    "    total = aux(numbers)\n    return (total, abs(numbers))\n"
)
MAIN_ATTACKS["import of the entry point's name"] = WRONG + "from operator import itemgetter as sum_product\n"


@pytest.mark.parametrize("name", list(MAIN_ATTACKS))
def test_another_binding_of_the_entry_point_is_refused(protocol, problem, honest, name):
    outcome = protocol.score(problem, [fenced(AUX), fenced(MAIN_ATTACKS[name])])
    assert outcome.parts["main_defined"] == 0.0
    assert "REFUSED" in outcome.feedback[0] and "REFUSED" in outcome.feedback[1]
    assert_no_gain(outcome, honest)


HELPER_REBINDS = {
    "defines the entry point": AUX + "def sum_product(numbers):\n    return (sum(numbers), 0)\n",
    "code swap at call time": (
        SOLVED + "def aux(numbers):\n    sum_product.__code__ = solved.__code__\n    return sum(numbers)\n"
    ),
    "setattr at call time": (
        SOLVED + "def aux(numbers):\n    setattr(sum_product, '__co' + 'de__', solved.__code__)\n    return sum(numbers)\n"
    ),
    "update_wrapper at call time": (
        "import functools\n" + SOLVED + "def aux(numbers):\n"
        "    functools.update_wrapper(sum_product, solved, assigned=('__code__',), updated=())\n"
        "    return sum(numbers)\n"
    ),
}


@pytest.mark.parametrize("name", list(HELPER_REBINDS))
def test_the_helper_cannot_rebind_or_rewrite_the_entry_point(protocol, problem, honest, name):
    outcome = protocol.score(problem, [fenced(HELPER_REBINDS[name]), fenced(WRONG)])
    assert outcome.parts["helper_defined"] == 0.0 and "REFUSED" in outcome.feedback[1]
    assert_no_gain(outcome, honest)


# ---------------------------------------------------------------- one agent's code
# The helper's code, making the main function's abs(numbers) compute the product.
AT_LOAD = {
    "builtins edit": "import builtins\nimport math\nbuiltins.abs = math.prod\n" + AUX,
    "shadowing def": AUX + PRODUCT.replace("def product", "def abs"),
    "shadowing import": "from math import prod as abs\n" + AUX,
    "shadowing assignment": "import math\nabs = math.prod\n" + AUX,
    "globals() write": "import math\nglobals()['abs'] = math.prod\n" + AUX,
    "__builtins__ write": "import math\n__builtins__['abs'] = math.prod\n" + AUX,
    "sys.modules edit": "import sys\nimport math\nsys.modules['builtins'].abs = math.prod\n" + AUX,
    "decorator": "import builtins\nimport math\n@(lambda f: (setattr(builtins, 'abs', math.prod), f)[1])\n" + AUX,
    "default argument": "import builtins\nimport math\ndef aux(numbers, _=setattr(builtins, 'abs', math.prod)):\n    return sum(numbers)\n",
    "annotation": "import builtins\nimport math\ndef aux(numbers: setattr(builtins, 'abs', math.prod)):\n    return sum(numbers)\n",
    "class body": "import builtins\nimport math\nclass Patch:\n    builtins.abs = math.prod\n" + AUX,
    "top-level call": "import builtins\nimport math\nsetattr(builtins, 'abs', math.prod)\n" + AUX,
    "trace hook": "import sys\nsys.settrace(lambda frame, event, arg: None)\n" + AUX,
    "profile hook": "import sys\nsys.setprofile(lambda frame, event, arg: None)\n" + AUX,
    "audit hook": "import sys\nsys.addaudithook(lambda event, args: None)\n" + AUX,
}
AT_CALL = {
    "builtins edit": "def aux(numbers):\n    import builtins\n    import math\n    builtins.abs = math.prod\n    return sum(numbers)\n",
    "globals() write": "def aux(numbers):\n    import math\n    globals()['abs'] = math.prod\n    return sum(numbers)\n",
    "global statement": "def aux(numbers):\n    global abs\n    import math\n    abs = math.prod\n    return sum(numbers)\n",
    "generator frame": (
        "def aux(numbers):\n    import math\n    frame = (x for x in [0]).gi_frame\n"
        "    frame.f_globals['abs'] = math.prod\n    return sum(numbers)\n"
    ),
    "caller's frame": (
        "def aux(numbers):\n    import sys\n    import math\n    sys._getframe(1).f_globals['abs'] = math.prod\n    return sum(numbers)\n"
    ),
    "traceback frame": (
        "def aux(numbers):\n    import math\n    try:\n        1 / 0\n    except ZeroDivisionError as error:\n"
        "        error.__traceback__.tb_frame.f_globals['abs'] = math.prod\n    return sum(numbers)\n"
    ),
    "sys through typing": (
        "def aux(numbers):\n    import typing\n    import math\n    typing.sys.modules['builtins'].abs = math.prod\n    return sum(numbers)\n"
    ),
    "string.Formatter": (
        "def aux(numbers):\n    import string\n    import math\n"
        "    string.Formatter().get_field('0.__globals__', [aux], {})[0]['abs'] = math.prod\n    return sum(numbers)\n"
    ),
    "operator.attrgetter": (
        "def aux(numbers):\n    import operator\n    import math\n"
        "    operator.attrgetter('__glob' + 'als__')(aux)['abs'] = math.prod\n    return sum(numbers)\n"
    ),
    "getattr": (
        "def aux(numbers):\n    import math\n    getattr(aux, '__glob' + 'als__')['abs'] = math.prod\n    return sum(numbers)\n"
    ),
    "match pattern": (
        "def aux(numbers):\n    import math\n    match aux:\n        case object(__globals__=namespace):\n"
        "            namespace['abs'] = math.prod\n    return sum(numbers)\n"
    ),
    "exec": "def aux(numbers):\n    exec(\"import builtins, math\\nbuiltins.abs = math.prod\")\n    return sum(numbers)\n",
    "get_type_hints": (
        "def aux(numbers):\n    import typing\n"
        "    def probe(x: \"__import__('builtins').__setattr__('abs', __import__('math').prod)\"):\n        return x\n"
        "    typing.get_type_hints(probe)\n    return sum(numbers)\n"
    ),
    "module attribute edit": (
        "def aux(numbers):\n    import math\n    import functools\n    math.fsum = functools.reduce\n    return sum(numbers)\n"
    ),
}
HELPER_ATTACKS = {f"at load: {name}": code for name, code in AT_LOAD.items()}
HELPER_ATTACKS |= {f"at call: {name}": code for name, code in AT_CALL.items()}


@pytest.mark.parametrize("name", list(HELPER_ATTACKS))
def test_the_helper_cannot_change_what_the_main_function_does(protocol, problem, honest, name):
    outcome = protocol.score(problem, [fenced(HELPER_ATTACKS[name]), fenced(WRONG)])
    assert outcome.parts["helper_defined"] == 0.0
    assert "REFUSED, its code did not run" in outcome.feedback[1]
    assert "def aux" not in outcome.output  # the refused code is not in the judged program
    assert_no_gain(outcome, honest)


def test_eval_in_the_program_evaluates_literals_only(protocol, problem, honest):
    helper = "def aux(numbers):\n    eval(\"__import__('builtins').__setattr__('abs', __import__('math').prod)\")\n    return sum(numbers)\n"
    assert_no_gain(protocol.score(problem, [fenced(helper), fenced(WRONG)]), honest)
    arithmetic = "def aux(numbers):\n    return eval('+'.join(map(str, numbers)) or '0')\n"
    main = "def sum_product(numbers):\n    product = eval('*'.join(map(str, numbers)) or '1')\n    return (aux(numbers), product)\n"
    assert protocol.score(problem, [fenced(arithmetic), fenced(main)]).reward == 4.0


def test_the_main_agent_cannot_take_the_helpers_place(protocol, problem):
    """A main agent that binds aux itself replaces the helper's: the helper is refused and
    no cooperation is paid."""
    own = "def aux(numbers):\n    total = 0\n    for n in numbers:\n        total += n\n    return total\n"
    main = own + SOLVED.replace("def solved", "def sum_product")
    outcome = protocol.score(problem, [fenced(AUX), fenced(main)])
    assert outcome.parts["helper_defined"] == 0.0 and outcome.parts["tests"] == 1.0
    assert outcome.parts["cooperation"] == 0.0


@pytest.mark.parametrize("attack", ["main: assignment", "helper: at load: builtins edit", "helper: at call: globals() write"])
def test_every_turn_and_every_leave_one_out_keeps_the_rules(honest, attack):
    seat, name = attack.split(": ", 1)
    texts = (fenced(AUX), fenced(MAIN_ATTACKS[name])) if seat == "main" else (fenced(HELPER_ATTACKS[name]), fenced(WRONG))
    env = text_env(task="humaneval", split="test", max_turns=2)
    env.reset(options={"problem_id": PROBLEM})
    for _ in range(2):
        _, rewards, _, _, infos = env.step(dict(zip(env.agents, texts, strict=True)))
        assert rewards["agent_0"] <= honest.reward + 1e-9
        for agent in env.agents:  # R without that agent's text, scored by the same rules
            left_out = infos[agent]["reward_components"]["joint"] - infos[agent]["reward_components"]["contribution"]
            assert left_out <= honest.reward + 1e-9


# ---------------------------------------------------------------- feedback
LOOKUP_PROBLEMS = ["HumanEval/8", "HumanEval/24", "HumanEval/48", "HumanEval/55", "HumanEval/75"]
CALL = re.compile(r"(\w+)\((.*)\)\s*(==|->)\s*(.+?)\s*$")


def lookup_table(entry: str, feedback: str) -> dict[str, object]:
    """What a policy can learn from feedback alone: for each quoted call of the function,
    the value the tests expect (``call == value``), or, where only the program's own result
    is quoted (``call -> value``) next to word that the test failed and that result is a
    bool, its negation."""
    table: dict[str, object] = {}
    lines = feedback.splitlines()
    for index, line in enumerate(lines):
        match = CALL.search(line)
        if match is None or match.group(1) not in (entry, "candidate"):
            continue
        try:
            arguments = repr(ast.literal_eval(f"({match.group(2)},)"))
            value = ast.literal_eval(match.group(4))
        except (ValueError, SyntaxError):
            continue
        failed = "fail" in line.lower() or "fail" in " ".join(lines[index + 1 : index + 2]).lower()
        if match.group(3) == "==":
            table[arguments] = value
        elif failed and isinstance(value, bool):
            table[arguments] = not value
    return table


def table_program(entry: str, table: dict[str, object]) -> str:
    """The main agent's text: answer from the table, ``None`` for calls it does not hold."""
    return fenced(f"def {entry}(*args):\n    table = {table!r}\n    return table.get(repr(args))\n")


def test_a_lookup_table_built_from_feedback_alone_scores_no_more_tests_later():
    env = text_env(task="humaneval", split="test", max_turns=3)
    for problem_id in LOOKUP_PROBLEMS:
        obs, infos = env.reset(options={"problem_id": problem_id})
        entry = next(p for p in env.protocol.problems("test") if p.id == problem_id).meta["entry_point"]
        table: dict[str, object] = {}
        scores = []
        for _ in range(3):
            feedback = obs["agent_1"].split("Diagnostics of the team's program:", 1)[1] if scores else ""
            table |= lookup_table(entry, feedback)
            obs, _, _, _, infos = env.step({"agent_0": "", "agent_1": table_program(entry, table)})
            scores.append(infos["agent_1"]["reward_components"]["tests"])
        assert scores[1] <= scores[0] and scores[2] <= scores[0], (problem_id, scores)


def test_feedback_quotes_calls_and_the_programs_own_results_never_expected_values(protocol, problem):
    wrong = "def sum_product(numbers):\n    return (sum(numbers), 0)\n"
    outcome = protocol.score(problem, ["", fenced(wrong)])
    assert outcome.parts["tests"] == pytest.approx(1 / 5)  # (100, 0) for [100, 0] is right
    for feedback in outcome.feedback:
        assert "sum_product([3, 5, 7]) -> (15, 0)" in feedback  # the call and the program's result
        assert "sum_product([10]) -> (10, 0)" in feedback
        for expected in ("(0, 1)", "(3, 1)", "(15, 105)", "(10, 10)"):  # what the tests check
            assert expected not in feedback
        assert "1/5" not in feedback and "passed" not in feedback


SIGNAL_PROBLEM = "HumanEval/95"  # check_dict_case: a failed assert calls the function again for its message
SIGNALLER = (
    "def check_dict_case(d, seen=[]):\n"
    "    seen.append(repr(d))\n"
    "    if len(seen) > 1 and seen[-1] == seen[-2] == {target!r}:\n"
    "        return object()\n"  # the run ends with bad_answer: the signal
    "    return {answers!r}.get(repr(d), True)\n"
)


def test_a_program_cannot_signal_through_its_run_which_test_failed():
    """A program can tell that one of its answers failed a test (the assert's message calls
    it again with the same arguments) and end the judged run on purpose; the next feedback
    must read the same either way, so nothing learned from it scores a test more."""
    protocol = CodingProtocol(tasks.get("humaneval"))
    problem = next(p for p in protocol.problems("test") if p.id == SIGNAL_PROBLEM)
    target = repr({"p": "pineapple", "A": "banana", "B": "banana"})  # the second test: expected False
    silent = protocol.score(problem, ["", fenced(SIGNALLER.format(target="never", answers={}))])
    signalling = protocol.score(problem, ["", fenced(SIGNALLER.format(target=target, answers={}))])
    assert signalling.parts["tests"] == 0.0 < silent.parts["tests"]  # the signal was sent: the run broke
    assert signalling.feedback[1] == silent.feedback[1]  # the main agent's feedback: no trace of the signal
    learned = {target: False} if signalling.feedback[1] != silent.feedback[1] else {}  # the policy's reading
    later = protocol.score(problem, ["", fenced(SIGNALLER.format(target="never", answers=learned))])
    assert later.parts["tests"] == silent.parts["tests"]


def test_the_rules_hold_when_the_other_code_does_not_compile(protocol, problem):
    outcome = protocol.score(problem, [fenced("def aux(numbers):\n    return sum(numbers\n"), fenced(MAIN_ATTACKS["assignment"])])
    assert outcome.parts["main_defined"] == 0.0 and outcome.parts["helper_defined"] == 1.0  # CoMLRL's format level
    assert outcome.reward == pytest.approx(0.4)


def test_a_main_agent_binding_aux_by_a_match_takes_no_helper_place(protocol, problem):
    """Red team twenty-six: ``case aux:`` bound the main agent's own aux unseen, and the
    cooperation bonuses were paid for a helper never called (``except E as aux`` too)."""
    main = (
        "def sum_product(numbers):\n    own = lambda values: sum(values)\n    match own:\n        case aux:\n"
        "            total = aux(numbers)\n    product = 1\n    for n in numbers:\n        product *= n\n    return (total, product)\n"
    )
    outcome = protocol.score(problem, [fenced(AUX), fenced(main)])
    assert outcome.parts["tests"] == 1.0 and outcome.parts["cooperation"] == 0.0


def test_a_future_import_sharing_its_line_moves_nothing_else(protocol, problem, honest):
    """Red team twenty-six: ``from __future__ import annotations; '''`` moved its whole line
    to the top of the judged program, where the string swallowed the trusted eval and the
    prompt; the admission rules had read a harmless docstring. The import stays, and the
    program does not compile."""
    opened = "from __future__ import annotations; '''\n'''\n"
    escaping = "def sum_product(numbers):\n    return (sum(numbers) + 0 * len(eval(\"__import__('os').getcwd()\")), 0)\n"
    assert_no_gain(protocol.score(problem, [fenced(AUX), fenced(opened + escaping)]), honest)
    alone = "from __future__ import annotations\n\n" + SOLVED.replace("def solved", "def sum_product")
    assert protocol.score(problem, [fenced(AUX), fenced(alone)]).parts["tests"] == 1.0  # an honest one still runs
