"""The coding protocol: PettingZoo API, CoMLRL's level reward by hand, leave-one-out,
tests counted only by the sandbox's trusted verdict, multi-turn feedback, bad input."""

from __future__ import annotations

import sys
import warnings

import pytest
from coding_teams import FENCE, score
from pettingzoo.test import parallel_api_test

from deliberation_env import tasks
from deliberation_env.sandbox import Verdict
from deliberation_env.text import CodingProtocol, text_env
from deliberation_env.text.protocols import coding
from deliberation_env.text.protocols.coding import count_tests, read_verdict

PROBLEM = "HumanEval/8"  # sum_product(numbers) -> (sum, product); 5 tests
HELPER = f"{FENCE}python\ndef aux(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return product\n{FENCE}"
MAIN = f"Here it is:\n{FENCE}python\ndef sum_product(numbers):\n    total = sum(numbers)\n    return (total, aux(numbers))\n{FENCE}"
ALONE = "def sum_product(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return (sum(numbers), product)\n"


# ---------------------------------------------------------------------- API
def test_parallel_api_coding():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the API test passes an unknown reset option
        parallel_api_test(text_env(task="humaneval", max_turns=2), num_cycles=5)


def test_humaneval_defaults_to_the_coding_protocol_and_seats_two():
    env = text_env(task="humaneval")
    assert env.protocol.name == "coding"
    obs, infos = env.reset(seed=0)
    assert [infos[a]["role"] for a in env.agents] == ["helper", "main"]
    assert "Write a helper function aux(...)" in obs["agent_0"]
    assert "Write the function" in obs["agent_1"] and "do not define aux yourself" in obs["agent_1"]
    with pytest.raises(ValueError, match="seats 2 agents"):
        text_env(task="humaneval", n_agents=3)


def test_the_coding_protocol_needs_humaneval():
    with pytest.raises(ValueError, match="'humaneval' task, got 'arithmetic'"):
        text_env(task="arithmetic", protocol="coding")


# ---------------------------------------------------------------------- counting tests
def test_count_tests_runs_each_test_alone_and_counts_a_loop_once():
    code = (
        "def check(candidate):\n"
        "    import math\n"
        "    assert True, 'not a test'\n"
        "    assert candidate(1) == 2\n"
        "    assert candidate(2) == 5\n"
        "    for x in range(3):\n"
        "        assert candidate(x) == x + 1\n"
        "    assert math.floor(candidate(0.5)) == 1\n"
        "    assert candidate(1) == candidate(1.0)\n"
    )
    counted = count_tests(code, "p", "f")
    assert counted.tests == (
        "assert candidate(1) == 2",
        "assert candidate(2) == 5",
        "for x in range(3):\n        assert candidate(x) == x + 1",
        "assert math.floor(candidate(0.5)) == 1",
        "assert candidate(1) == candidate(1.0)",
    )
    assert counted.calls == ("f(1)", "f(2)", "f(0.5)", "f(1.0)")  # constant arguments only, once each
    assert count_tests("def check(c):\n    x = 2\n    assert c(3 * 19, [-1]) and c(x)\n", "p", "f").calls == ("f(3 * 19, [-1])",)
    namespace: dict = {}
    exec(counted.source, namespace)  # noqa: S102 - the TRUSTED tests, on a trusted function
    assert namespace["check"](lambda x: x + 1) == (4, 5, (1,))
    assert namespace["check"](lambda x: 1 / 0) == (0, 5, (0, 1, 2, 3, 4))


@pytest.mark.parametrize(
    ("code", "match"),
    [
        ("def test(candidate):\n    assert candidate(1)\n", "one function check"),
        ("def check(candidate):\n    assert True\n", "nothing to count"),
    ],
)
def test_uncountable_tests_are_named(code, match):
    with pytest.raises(ValueError, match=f"problem 'X'.*{match}"):
        count_tests(code, "problem 'X'")


def test_every_humaneval_problem_has_counted_tests(protocol):
    for split in ("train", "test"):
        for p in protocol.problems(split):
            assert protocol._counted[p.id].tests


# ---------------------------------------------------------------------- rewards by hand
def test_a_correct_helper_and_main_get_the_full_reward(protocol, problem):
    outcome = score(protocol, problem, HELPER, MAIN)
    assert outcome.parts == {
        "helper_defined": 1.0, "main_defined": 1.0, "syntax": 1.0, "tests": 1.0,
        "cooperation": 1.0, "not_wrapper": 1.0, "ignored_call": 0.0,
    }
    assert outcome.reward == 4.0 == protocol.reward_range[1]


def test_a_syntax_error_loses_syntax_and_every_level_after_it(protocol, problem):
    broken = MAIN.replace("total = sum(numbers)", "total = sum(numbers")
    outcome = score(protocol, problem, HELPER, broken)
    assert outcome.parts["helper_defined"] == outcome.parts["main_defined"] == 1.0
    assert outcome.parts["syntax"] == outcome.parts["tests"] == outcome.parts["cooperation"] == 0.0
    assert outcome.reward == pytest.approx(1.0)
    assert "syntax: ERROR in the main code, line 2" in outcome.feedback[1]


def test_a_missing_main_function_loses_everything_but_the_helper(protocol, problem):
    outcome = score(protocol, problem, HELPER, "def solve(numbers):\n    return 0\n")
    assert outcome.parts["main_defined"] == 0.0
    assert outcome.reward == pytest.approx(0.4)
    assert "main sum_product(...): MISSING" in outcome.feedback[0]


def test_a_missing_helper_loses_its_part_and_cooperation(protocol, problem):
    outcome = score(protocol, problem, "I will not write code.", ALONE)
    assert outcome.parts["helper_defined"] == 0.0 and outcome.parts["tests"] == 1.0
    assert outcome.reward == pytest.approx(0.6 + 0.5 + 1.0)


def test_a_helper_that_is_never_called_loses_cooperation(protocol, problem):
    outcome = score(protocol, problem, HELPER, ALONE)
    assert outcome.parts["tests"] == 1.0 and outcome.parts["cooperation"] == 0.0
    assert outcome.reward == pytest.approx(0.4 + 0.6 + 0.5 + 1.0)
    assert "sum_product does NOT call aux" in outcome.feedback[1]


def test_a_thin_wrapper_loses_the_wrapper_bonus(protocol, problem):
    helper = "def aux(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return (sum(numbers), product)\n"
    main = "def sum_product(numbers):\n    result = aux(numbers)\n    return result\n"
    outcome = score(protocol, problem, helper, main)
    assert outcome.parts["cooperation"] == 1.0 and outcome.parts["not_wrapper"] == 0.0
    assert outcome.reward == pytest.approx(3.0)


WORK_OF_THE_HELPER = (
    "def aux(numbers):\n    return list(numbers)\n\n"
    "def core(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return (sum(numbers), product)\n"
)
PASSING_ON = {
    "a second helper function": "def sum_product(numbers):\n    return core(aux(numbers))\n",
    "a constant beside": "def sum_product(numbers):\n    copy = aux(numbers)\n    unused = 0\n    return core(copy)\n",
    "a pass beside": "def sum_product(numbers):\n    pass\n    result = core(aux(numbers))\n    return result\n",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PASSING_ON))
def test_a_main_that_only_passes_the_helpers_results_on_is_a_wrapper(protocol, problem, name):
    """Red team 34: a main function that returns ``core(aux(x))``, ``core`` a second function
    the helper wrote, did no work and escaped CoMLRL's two wrapper forms (4.0 against 3.0)."""
    outcome = score(protocol, problem, WORK_OF_THE_HELPER, PASSING_ON[name])
    assert outcome.parts["tests"] == outcome.parts["cooperation"] == 1.0 and outcome.parts["not_wrapper"] == 0.0
    assert outcome.reward == pytest.approx(3.0)
    own_work = "def sum_product(numbers):\n    _, product = core(aux(numbers))\n    return (sum(numbers), product)\n"
    product_only = WORK_OF_THE_HELPER.replace("return (sum(numbers), product)", "return (0, product)")
    assert score(protocol, problem, product_only, own_work).parts["not_wrapper"] == 1.0
    # beside a core that does the whole problem, the sum of its own cannot matter (red team 42)
    assert score(protocol, problem, WORK_OF_THE_HELPER, own_work).parts["not_wrapper"] == 0.0


WHOLE = HELPER.replace("return product", "return (sum(numbers), product)")  # the whole answer, fenced
AS_LIST = WHOLE.replace("return (sum(numbers), product)", "return [sum(numbers), product]")
IN_A_LIST = WHOLE.replace("return (sum(numbers), product)", "return [(sum(numbers), product)]")
ANSWERS_PASSED_ON = {
    "plus an empty tuple": (WHOLE, "    return aux(numbers) + ()\n"),
    "or the argument": (WHOLE, "    return aux(numbers) or numbers\n"),
    "a conditional that is always true": (WHOLE, "    y = aux(numbers)\n    return y if True else 0\n"),
    "an if True": (WHOLE, "    if True:\n        return aux(numbers)\n"),
    "a conversion": (AS_LIST, "    return tuple(aux(numbers))\n"),
    "unpacked and packed again": (WHOLE, "    a, b = aux(numbers)\n    return (a, b)\n"),
    "unwrapped from the helper's list": (IN_A_LIST, "    return aux(numbers)[0]\n"),
    "a second helper function, plus an empty tuple": (WORK_OF_THE_HELPER, "    return core(aux(numbers)) + ()\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ANSWERS_PASSED_ON))
def test_a_main_passing_the_helpers_answers_through_an_identity_is_a_wrapper(protocol, problem, name):
    """Red team 37: cheap escapes from the wrapper rule (an identity operation, ``or``, a
    conditional, ``if True:``, a conversion, a constant subscript, an unpacking) earned
    ``not_wrapper`` (4.0 against 3.0); the rule reads through them."""
    helper, body = ANSWERS_PASSED_ON[name]
    outcome = score(protocol, problem, helper, f"def sum_product(numbers):\n{body}")
    assert outcome.parts["tests"] == outcome.parts["cooperation"] == 1.0 and outcome.parts["not_wrapper"] == 0.0
    assert outcome.reward == pytest.approx(3.0)
    assert "thin wrapper" in outcome.feedback[1]


NOT_EMPTY = WHOLE.replace("product = 1\n    for n in numbers:", "product = numbers[0]\n    for n in numbers[1:]:")
PRODUCT_AS_PAIR = HELPER.replace("return product", "return (0, product)")
SUM_LESS_ONE = HELPER.replace("return product", "return (sum(numbers) - 1, product)")
WORK_BESIDE_THE_ANSWER = {
    "a base case of its own": (NOT_EMPTY, "    if not numbers:\n        return (0, 1)\n    return aux(numbers)\n"),
    "a sum of its own": (PRODUCT_AS_PAIR, "    total = sum(numbers)\n    return (total, aux(numbers)[1]) or ()\n"),
    "a loop on the answer": (SUM_LESS_ONE, "    s, p = aux(numbers)\n    for _ in range(1):\n        s = s + 1\n    return (s, p)\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WORK_BESIDE_THE_ANSWER))
def test_a_main_doing_work_beside_an_identity_is_no_wrapper(protocol, problem, name):
    """What the red team 37 reading keeps out of the wrapper rule: a statement of work of
    the main function's own, however small, where the helper alone does not solve the
    problem (beside one that does, the work cannot matter: red team 42)."""
    helper, body = WORK_BESIDE_THE_ANSWER[name]
    outcome = score(protocol, problem, helper, f"def sum_product(numbers):\n{body}")
    assert outcome.parts["tests"] == outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == 1.0
    assert score(protocol, problem, WHOLE, f"def sum_product(numbers):\n{body}").parts["not_wrapper"] == 0.0


def test_a_trivial_helper_or_a_main_defining_aux_earns_no_cooperation(protocol, problem):
    trivial = "def aux(x):\n    return x\n"
    main = "def sum_product(numbers):\n    product = 1\n    for n in aux(numbers):\n        product *= n\n    return (sum(numbers), product)\n"
    assert score(protocol, problem, trivial, main).parts["cooperation"] == 0.0
    own = ALONE + "\ndef aux(numbers):\n    return sum(numbers) * 2\n"
    own = own.replace("return (sum(numbers), product)", "return (aux(numbers) // 2, product)")
    outcome = score(protocol, problem, HELPER, own)
    assert outcome.parts["tests"] == 1.0 and outcome.parts["cooperation"] == 0.0


def test_an_ignored_helper_call_is_deducted(protocol, problem):
    main = "def sum_product(numbers):\n    aux(numbers)\n    total = sum(numbers)\n    return (total, aux(numbers))\n"
    outcome = score(protocol, problem, HELPER, main)
    assert outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == outcome.parts["ignored_call"] == 1.0
    assert outcome.reward == pytest.approx(4.0 - 0.5)


# Red team 27: a main function that solves the problem alone and calls aux where its result
# cannot matter; read as text (CoMLRL's check) each earned the 1.5 points of the bonuses.
SOLVED_ALONE_WITH_A_CALL = {
    "dead code": ALONE.replace("    product = 1\n", "    if 0 > 1:\n        w = aux(numbers)\n        numbers = w\n    product = 1\n"),
    "result unused": ALONE.replace("    product = 1\n", "    _unused = aux(numbers)\n    product = 1\n"),
    "result thrown away": ALONE.replace("    product = 1\n", "    aux(numbers)\n    product = 1\n"),
    "result overwritten": ALONE.replace("    product = 1\n", "    product = aux(numbers)\n    product = 1\n"),
    "a fallback": ALONE.replace("    return (sum(numbers), product)", "    found = aux(numbers)\n    return (sum(numbers), product if found is None else found)"),
    # the result checked, then ignored: fails with the answers withheld, passes with them altered
    "a property checked": ALONE.replace("    product = 1\n", "    assert aux(numbers) is not None\n    product = 1\n"),
    "a type checked": ALONE.replace("    product = 1\n", "    if not isinstance(aux(numbers), int):\n        raise TypeError\n    product = 1\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SOLVED_ALONE_WITH_A_CALL))
def test_a_call_whose_result_cannot_matter_earns_no_cooperation(protocol, problem, name):
    outcome = score(protocol, problem, HELPER, SOLVED_ALONE_WITH_A_CALL[name])
    assert outcome.parts["tests"] == 1.0 and outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == 0.0
    assert outcome.reward == pytest.approx(2.5) == score(protocol, problem, HELPER, ALONE).reward
    assert "passed" not in outcome.feedback[1].lower()  # nothing says how the tests went
    comlrl = CodingProtocol(tasks.get("humaneval"), bonus_gate="one_test")  # CoMLRL's rules read the text
    assert score(comlrl, problem, HELPER, SOLVED_ALONE_WITH_A_CALL[name]).parts["cooperation"] == 1.0


def sandbox_child():
    """The trusted code of the sandbox's processes, loaded as a module of its own."""
    import importlib.util
    from pathlib import Path

    from deliberation_env import sandbox

    path = Path(sandbox.__file__).with_name("_sandbox_child.py")
    spec = importlib.util.spec_from_file_location("_sandbox_child_for_test", path)
    child = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(child)
    return child


def helper_replies(child, swap, function, calls):
    """What the helper's process sends for each call of ``function`` (named ``aux``), and
    the arguments as the helper's own code holds them after each call."""
    answers, namespace, replies = child._Answers(swap=swap), {"aux": function}, []
    for args in calls:
        call = ("aux", args, {})
        replies.append(child.codec.decode(answers.reply(namespace, frozenset({"aux"}), child.codec.encode(call), call)))
    return replies


def test_the_swapped_answers_and_changes_are_earlier_calls_and_the_helpers_objects_stay_its_own():
    child = sandbox_child()

    def aux(xs):
        xs.append(len(xs))  # a change every call makes: its last element is its former length
        return 2 * len(xs)

    calls = [([5],), ([5, 6, 7],), ([1],)]
    returned = helper_replies(child, False, aux, calls)
    assert [reply[1] for reply in returned] == [4, 8, 4] and [reply[2][0] for reply in returned] == [([5, 1],), ([5, 6, 7, 3],), ([1, 1],)]
    held = [([5],), ([5, 6, 7],), ([1],)]
    swapped = helper_replies(child, True, aux, held)
    # nothing earlier to swap with at the first call; then the last answer, and the last change, that differ
    assert [reply[1] for reply in swapped] == [4, 4, 8]
    assert [reply[2][0] for reply in swapped] == [([5, 1],), ([5, 1],), ([5, 6, 7, 3],)]
    assert held == [([5, 1],), ([5, 6, 7, 3],), ([1, 1],)]  # the helper's own objects as it left them (red team 31)


def test_both_runs_do_the_same_work_for_each_call(monkeypatch):
    # red team 31: the swapped run encoded the call once more, which a main function could time
    child = sandbox_child()

    def aux(xs, n):
        xs.append(n)
        return len(xs) + n

    calls = [([1], 2), ([1, 2], 3), ([3], 2), ([], 0), ("not a list", 1)]
    work = {}
    for swap in (False, True):
        counts = {"encode": 0, "decode": 0, "deepcopy": 0}
        for module, name in ((child.codec, "encode"), (child.codec, "decode"), (child.copy, "deepcopy")):
            original = getattr(module, name)

            def counted(*args, _original=original, _name=name, _counts=counts, **kwargs):
                _counts[_name] += 1
                return _original(*args, **kwargs)

            monkeypatch.setattr(module, name, counted)
        replies = helper_replies(child, swap, aux, [tuple(list(a) if type(a) is list else a for a in call) for call in calls])
        monkeypatch.undo()
        work[swap] = counts
        assert [reply[1] for reply in replies] == ([4, 6, 4, 1, "AttributeError"] if not swap else [4, 4, 6, 4, "AttributeError"])
    assert work[False] == work[True] and work[False]["deepcopy"] > 0


# Red team 28: a main function that solves the problem alone and checks only a property that
# every answer of its helper has; with the answers altered by rebinding the helper's names
# (round 27) each earned the 1.5 points of the bonuses (4.0 against 2.5 for the same main
# function without the check). The helper's answers are now swapped between calls at the
# process boundary, where its code cannot see it.
NOT_NONE = ALONE.replace("    product = 1\n", "    if aux(numbers) is None:\n        return None\n    product = 1\n")
PROPERTY_ONLY = {
    # an input-validation helper (always True on the tests' inputs) and a main that raises without it
    "a validation guard": (
        "def aux(numbers):\n    return isinstance(numbers, list)\n",
        ALONE.replace("    product = 1\n", "    if not aux(numbers):\n        raise TypeError('a list')\n    product = 1\n"),
    ),
    "a constant True": ("def aux(x):\n    return not None\n", ALONE.replace("    product = 1\n", "    if aux(0) is not True:\n        return None\n    product = 1\n")),
    "a parity checked": (
        "def aux(numbers):\n    return 2 * len(numbers)\n",
        ALONE.replace("    product = 1\n", "    if aux(numbers) % 2:\n        return None\n    product = 1\n"),
    ),
    # the helper tells the counterfactual run from the judged one and fails it on purpose
    "a helper reading its own binding": ("def aux(numbers):\n    if 'altered' in repr(aux):\n        raise ValueError(0)\n    return sum(numbers)\n", NOT_NONE),
    "a helper reading its cache": (
        "import functools\n\n@functools.cache\ndef aux(numbers):\n    return len(str(aux.cache_info())) + sum(numbers)\n",
        NOT_NONE.replace("aux(numbers)", "aux(tuple(numbers))"),
    ),
    # red team 31: a property of every change the helper makes in place, which the altered
    # change (each element plus one) broke: 4.0 against 2.5
    "a change in place checked": (
        "def aux(xs):\n    xs[0] = 0\n    return len(xs) + 7\n",
        ALONE.replace("    product = 1\n", "    probe = [5]\n    if aux(probe) < 0 or probe[0] != 0:\n        raise ValueError\n    product = 1\n"),
    ),
    # red team 31: the helper kept its argument (a default list) and saw it altered in place
    "a helper keeping its argument": (
        (
            "def aux(numbers, seen=[]):\n    for old in seen:\n        if old[-1] != 'mark':\n            raise ValueError(0)\n"
            "    numbers.append('mark')\n    seen.append(numbers)\n    return len(numbers) * 3\n"
        ),
        NOT_NONE.replace("aux(numbers)", "aux(list(numbers))"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PROPERTY_ONLY))
def test_a_property_every_answer_has_earns_no_cooperation(protocol, problem, name):
    helper, main = PROPERTY_ONLY[name]
    outcome = score(protocol, problem, helper, main)
    assert outcome.parts["tests"] == 1.0 and outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == 0.0
    assert outcome.reward == pytest.approx(2.5) == score(protocol, problem, helper, ALONE).reward


@pytest.mark.parametrize("parity", [0, 1])
def test_a_helper_counting_the_frames_below_it_cannot_tell_the_runs_apart(protocol, problem, parity):
    # the depth at which it hits RecursionError: the swapped run answered one call deeper, so
    # a helper that failed at one parity failed that run alone (4.0 against 2.5)
    depth = "    def d(k):\n        try:\n            return d(k + 1)\n        except RecursionError:\n            return k\n"
    helper = f"def aux(numbers):\n{depth}    if d(0) % 2 == {parity}:\n        raise ValueError(0)\n    return sum(numbers)\n"
    outcome = score(protocol, problem, helper, NOT_NONE)
    assert outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == 0.0
    assert outcome.reward <= score(protocol, problem, helper, ALONE).reward


def test_an_answer_that_cannot_cross_once_changed_earns_no_cooperation(protocol, problem):
    # the helper's answer one byte under the codec's limit: altered (a character more) it could
    # not cross, and the call raised in the main function, which checks only that it is not None
    n = 16 * 2**20 - len('["tuple",[["str","return"],["str",""],["none"]]]')
    helper = f"def aux(numbers):\n    return 'a' * ({n} + len(numbers) - len(numbers))\n"
    outcome = score(protocol, problem, helper, NOT_NONE)
    assert outcome.parts["tests"] == 1.0 and outcome.parts["cooperation"] == 0.0 and outcome.reward == pytest.approx(2.5)


# Left open (module docstring): a main function that solves the problem alone and checks a
# relation between a call's arguments and aux's answer (its value recomputed, or only its
# length) fails both counterfactual runs as a main function that uses the answer does, and
# earns the bonuses (4.0 against 2.5). A fix that closes it must flip this test on purpose.
RELATION_CHECKED = {
    "the value recomputed": (
        "def aux(numbers):\n    return sum(numbers)\n",
        ALONE.replace("    product = 1\n", "    if aux(numbers) != sum(numbers):\n        raise ValueError\n    product = 1\n"),
    ),
    "the length of the answer": (
        "def aux(numbers):\n    return [2 * n for n in numbers]\n",
        ALONE.replace("    product = 1\n", "    if len(aux(numbers)) != len(numbers):\n        raise ValueError\n    product = 1\n"),
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RELATION_CHECKED))
def test_a_relation_between_the_arguments_and_the_answer_still_earns_cooperation(protocol, problem, name):
    helper, main = RELATION_CHECKED[name]
    outcome = score(protocol, problem, helper, main)
    assert outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == 1.0 and outcome.reward == pytest.approx(4.0)
    assert score(protocol, problem, helper, ALONE).reward == pytest.approx(2.5)


def test_a_helper_changing_its_argument_in_place_still_earns_cooperation(protocol, problem):
    helper = "def aux(numbers):\n    numbers.append(sum(numbers))\n    return len(numbers)\n"
    main = (
        "def sum_product(numbers):\n    numbers = list(numbers)\n    size = aux(numbers)\n    total = numbers.pop()\n"
        "    product = 1\n    for n in numbers[: size - 1]:\n        product *= n\n    return (total, product)\n"
    )
    outcome = score(protocol, problem, helper, main)
    assert outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == 1.0 and outcome.reward == pytest.approx(4.0)


def test_a_helper_whose_result_is_used_keeps_its_leave_one_out_credit(problem):
    env = text_env(task="humaneval", split="test")
    # used: 4.0 against 1.1 without the helper; a dead call: 2.5 against 2.1, its own definition alone
    for main, credit in ((MAIN, 4.0 - 1.1), (f"{FENCE}python\n{SOLVED_ALONE_WITH_A_CALL['dead code']}{FENCE}", 0.4)):
        env.reset(options={"problem_id": PROBLEM})
        _, _, _, _, infos = env.step({"agent_0": HELPER, "agent_1": main})
        assert infos["agent_0"]["reward_components"]["contribution"] == pytest.approx(credit)


ANY_HELPER = f"{FENCE}python\ndef aux(x):\n    return [x, 1]\n{FENCE}"  # not trivial, and no use to sum_product


@pytest.mark.parametrize("name", ["result unused", "result thrown away", "result overwritten", "a fallback"])
def test_a_helper_whose_result_cannot_matter_earns_only_its_own_definition(name):
    """Red team 35: without a helper the main function's calls of ``aux`` raised NameError,
    so a helper was pivotal wherever the main function called it, even where its answer
    cannot matter: any helper earned 1.4 of leave-one-out credit (0.9 of Shapley) for the
    tests the main function passed alone. Without a helper each unbound function the main
    code reads answers ``None``, as in the withheld run."""
    env = text_env(task="humaneval", split="test", shapley=True)
    main = f"{FENCE}python\n{SOLVED_ALONE_WITH_A_CALL[name]}{FENCE}"
    for helper in (HELPER, ANY_HELPER):
        env.reset(options={"problem_id": PROBLEM})
        _, rewards, _, _, infos = env.step({"agent_0": helper, "agent_1": main})
        if name == "a fallback" and helper == ANY_HELPER:
            continue  # its answer is used, and wrong: 1.5
        assert rewards["agent_0"] == pytest.approx(2.5)
        parts = infos["agent_0"]["reward_components"]
        assert parts["contribution"] == pytest.approx(0.4) and parts["shapley"] == pytest.approx(0.4)
        assert infos["agent_1"]["reward_components"]["contribution"] == pytest.approx(2.5 - 0.4)


def test_a_helper_left_out_has_its_functions_answer_none_and_a_team_without_one_runs_as_written(protocol, problem):
    """Red teams 35 and 36: a helper left out for the credit has its results withheld (its
    functions the main code reads answer None: a main function that needs the answer fails,
    1.1, one that does not passes, 2.1); a team whose helper wrote nothing is judged as its
    program is, so aux raises NameError (1.1); a main function that calls nothing unbound runs
    without a helper process."""
    prompt = problem.meta["prompt"]
    left_out = coding.protocol.LeftOutHelper(HELPER)
    assert left_out == "" and score(protocol, problem, left_out, MAIN).reward == pytest.approx(1.1)
    for name in ("result unused", "a fallback"):
        assert score(protocol, problem, left_out, SOLVED_ALONE_WITH_A_CALL[name]).reward == pytest.approx(2.1)
        assert score(protocol, problem, "", SOLVED_ALONE_WITH_A_CALL[name]).reward == pytest.approx(1.1)
    assert protocol.request(problem, coding.analyse("", ALONE, prompt, "sum_product", ("aux",)).program).helper == ""
    another = ALONE.replace("    product = 1\n", "    _unused = core(numbers)\n    product = 1\n")  # not the helper's
    assert score(protocol, problem, left_out, another).reward == pytest.approx(1.1)
    assert score(protocol, problem, coding.protocol.LeftOutHelper(WORK_OF_THE_HELPER), another).reward == pytest.approx(2.1)


def test_failing_tests_are_counted(protocol, problem):
    main = MAIN.replace("    total = sum(numbers)", "    total = sum(numbers) + (len(numbers) == 1)")
    outcome = score(protocol, problem, HELPER, main)
    assert outcome.parts["tests"] == pytest.approx(4 / 5)


def test_the_structure_bonuses_need_every_test_passed(protocol, problem):
    main = MAIN.replace("    total = sum(numbers)", "    total = sum(numbers) + (len(numbers) == 1)")
    outcome = score(protocol, problem, HELPER, main)
    assert outcome.parts["tests"] == pytest.approx(4 / 5)
    assert outcome.parts["cooperation"] == outcome.parts["not_wrapper"] == 0.0
    assert outcome.reward < score(protocol, problem, HELPER, ALONE).reward  # correct, aux never called: 2.5


# A constant that passes one test of five (sum_product([]) == (0, 1)), a call of aux that never
# runs, and a helper that is not trivial on paper: CoMLRL's gate (one test) pays it the bonuses.
DEAD_CALL = "def sum_product(numbers):\n    if 0 > 1:\n        unused = aux(numbers)\n    return (0, 1)\n"
ON_PAPER = "def aux(x):\n    return [x, x][0]\n"


def test_a_constant_with_a_dead_call_of_aux_does_not_outscore_a_correct_solution(protocol, problem):
    correct = score(protocol, problem, ON_PAPER, ALONE)
    farmed = score(protocol, problem, ON_PAPER, DEAD_CALL)
    assert farmed.parts["tests"] == pytest.approx(1 / 5) and farmed.parts["cooperation"] == 0.0
    assert farmed.reward == pytest.approx(1.5 + 0.2) and correct.reward == pytest.approx(2.5)
    comlrl = CodingProtocol(tasks.get("humaneval"), bonus_gate="one_test")  # to compare with CoMLRL's numbers
    assert score(comlrl, problem, ON_PAPER, DEAD_CALL).reward == pytest.approx(1.5 + 0.2 + 1.5)
    assert score(comlrl, problem, ON_PAPER, ALONE).reward == pytest.approx(2.5)
    with pytest.raises(ValueError, match="bonus_gate must be one of 'all_tests', 'one_test', got 'some'"):
        CodingProtocol(tasks.get("humaneval"), bonus_gate="some")


# ---------------------------------------------------------------------- leave-one-out
def test_leave_one_out_contributions_by_hand(problem):
    env = text_env(task="humaneval", split="test")
    env.reset(options={"problem_id": PROBLEM})
    _, rewards, _, _, infos = env.step({"agent_0": HELPER, "agent_1": MAIN})
    assert rewards["agent_0"] == rewards["agent_1"] == 4.0
    # Without the helper, aux answers None: 0 tests, R = 0.6 + 0.5. Without the main function, R = 0.4.
    assert infos["agent_0"]["reward_components"]["contribution"] == pytest.approx(4.0 - 1.1)
    assert infos["agent_1"]["reward_components"]["contribution"] == pytest.approx(4.0 - 0.4)
    assert infos["agent_0"]["team_output"].endswith("return (total, aux(numbers))\n")


# ---------------------------------------------------------------------- multi-turn feedback
def test_the_next_prompt_shows_the_programs_results_on_the_tests_calls_not_the_tests():
    env = text_env(task="humaneval", split="test", max_turns=2)
    env.reset(options={"problem_id": PROBLEM})
    wrong = MAIN.replace("    total = sum(numbers)", "    total = sum(numbers) + (len(numbers) == 1)")
    obs, _, terms, _, infos = env.step({"agent_0": HELPER, "agent_1": wrong})
    assert not terms["agent_1"] and infos["agent_1"]["reward_components"]["tests"] == pytest.approx(4 / 5)
    for agent in env.agents:
        assert "sum_product([10]) -> (11, 10)" in obs[agent]  # the failing call, the program's result
        assert "sum_product([3, 5, 7]) -> (15, 105)" in obs[agent]
        assert "(10, 10)" not in obs[agent] and "4/5" not in obs[agent]  # not what the test expects, nor the count
    assert "def aux(numbers):" in obs["agent_1"]  # the main agent sees its partner's code
    assert "total = sum(numbers) + (len(numbers) == 1)" in obs["agent_0"]


def test_a_program_that_fails_or_does_not_load_says_so(protocol, problem):
    outcome = score(protocol, problem, "", MAIN)  # aux is called but nobody defines it
    assert "answers None" not in outcome.feedback[1]
    assert "sum_product([10]) -> raised NameError" in outcome.feedback[1]
    exits = f"{FENCE}python\ndef sum_product(numbers):\n    return (sum(numbers), 1)\n\ndef aux(x):\n    return x\n\nraise SystemExit\n{FENCE}"
    outcome = score(protocol, problem, "", exits)
    assert outcome.parts["main_defined"] == 0.0 and "line 7: a top-level Raise statement" in outcome.feedback[0]


# ---------------------------------------------------------------------- the rules
def test_every_canonical_solution_is_admitted_and_passes_its_tests(protocol):
    problems = [*protocol.problems("train"), *protocol.problems("test")]
    outcomes = protocol.score_many([(p, ["", p.answer]) for p in problems])  # prompt + canonical solution
    assert [p.id for p, outcome in zip(problems, outcomes, strict=True) if outcome.parts["tests"] != 1.0] == []
    assert all(outcome.reward == pytest.approx(0.6 + 0.5 + 1.0) for outcome in outcomes)


def test_code_that_runs_at_load_is_refused_and_the_feedback_names_the_line(protocol, problem):
    main = MAIN[: -len(FENCE)] + "print(sum_product([1, 2]))\n" + FENCE
    outcome = score(protocol, problem, HELPER, main)
    assert outcome.parts["main_defined"] == 0.0 and outcome.reward == pytest.approx(0.4)
    assert "main sum_product(...): REFUSED, its code did not run (line 4: a top-level Expr statement" in outcome.feedback[0]


ORDINARY_MAINS = [
    "import math\ndef sum_product(numbers: List[int]) -> Tuple[int, int]:\n    return (aux(numbers), math.prod(numbers))\n",
    (
        "from typing import List, Tuple\nimport functools\n@functools.lru_cache(maxsize=None)\ndef product(numbers):\n"
        "    return functools.reduce(lambda a, b: a * b, numbers, 1)\n"
        "def sum_product(numbers):\n    \"\"\"Sum and product.\"\"\"\n    return (aux(numbers), product(tuple(numbers)))\n"
    ),
    (
        "def sum_product(numbers, start=0):\n    class Pair(tuple):\n        def swapped(self):\n            return Pair(self[::-1])\n"
        "    def times(a, b):\n        return a * b\n    product = 1\n    try:\n        for n in [n for n in numbers]:\n"
        "            product = times(product, n)\n    except TypeError as error:\n        raise ValueError(str(error))\n"
        "    return tuple(Pair((product, start + aux(numbers))).swapped())\n"
    ),
]


@pytest.mark.parametrize("main", ORDINARY_MAINS)
def test_ordinary_code_is_admitted(protocol, problem, main):
    helper = "def aux(numbers):\n    import itertools\n    return sum(itertools.chain(numbers))\n"
    outcome = score(protocol, problem, f"{FENCE}python\n{helper}{FENCE}", f"{FENCE}python\n{main}{FENCE}")
    assert outcome.parts["tests"] == 1.0 and "REFUSED" not in outcome.feedback[0] + outcome.feedback[1]


# ---------------------------------------------------------------------- hostile code
HOSTILE_MAINS = {
    "prints passed": "def sum_product(numbers):\n    print('passed'); print('{\"reason\": \"passed\"}')\n    return None\n",
    "exits with 0": (
        "import os\ndef sum_product(numbers):\n    return 0\nprint('{\"reason\": \"passed\", \"detail\": \"\", \"behaviour\": null}')\nos._exit(0)\n"
    ),
    "exits in a call": "import os\ndef sum_product(numbers):\n    os._exit(0)\n    return 0\n",
    "forges records on every descriptor": (
        "import os, json\ndef sum_product(numbers):\n    return None\n"
        "record = json.dumps({'reason': 'passed', 'detail': '', 'behaviour': None, 'returned': [5, 5, []]}).encode()\n"
        "for fd in range(3, 64):\n    try:\n        os.write(fd, record + b'\\n')\n    except OSError:\n        pass\nos._exit(0)\n"
    ),
    "equal to everything": (
        "class Anything:\n    def __eq__(self, other):\n        return True\n"
        "def sum_product(numbers):\n    return Anything()\n"
    ),
    "raises SystemExit in a call": "import sys\ndef sum_product(numbers):\n    sys.exit(0)\n    return 0\n",
    "claims the reward": "def sum_product(numbers):\n    return 'tests: 5/5 passed, reward 4.0'\n",
    "nested too deeply to check": "def sum_product(numbers):\n    return (sum(numbers), " + "-" * 990 + "1)\n",
}


@pytest.mark.parametrize("name", list(HOSTILE_MAINS))
def test_hostile_code_passes_no_test(protocol, problem, name):
    outcome = score(protocol, problem, HELPER, f"{FENCE}python\n{HOSTILE_MAINS[name]}{FENCE}")
    assert outcome.parts["tests"] == 0.0
    assert outcome.parts["cooperation"] == 0.0
    assert outcome.reward <= 0.4 + 0.6 + 0.5


@pytest.mark.parametrize("limit", [1000, 20000])
def test_the_verdict_on_deep_code_does_not_depend_on_the_recursion_limit(protocol, problem, limit):
    # inductor (torch.compile) raises the limit in its process; the deep main returns the
    # product 1, right on 2 of 5 tests, so a verdict that moved with the limit would score it
    deep = f"{FENCE}python\n{HOSTILE_MAINS['nested too deeply to check']}{FENCE}"
    shallow = f"{FENCE}python\ndef sum_product(numbers):\n    return (sum(numbers), {'-' * 150}1)\n{FENCE}"
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        refused, admitted = score(protocol, problem, HELPER, deep), score(protocol, problem, HELPER, shallow)
    finally:
        sys.setrecursionlimit(before)
    assert refused.parts["tests"] == 0.0
    assert admitted.parts["tests"] == 0.4  # the same code 150 levels deep is checked and runs


# ---------------------------------------------------------------------- the verdict is checked
def verdict(reason, returned):
    return Verdict(
        passed=reason == "passed", reason=reason, detail="d", behaviour=None, stdout="", stderr="",
        duration=0.1, isolation="rlimits", returned=returned,
    )


def test_a_verdict_that_did_not_pass_counts_no_test(protocol, problem):
    counted = protocol._counted[PROBLEM]
    for reason in ("failed", "load_error", "bad_answer", "timeout", "no_verdict"):
        result = read_verdict(verdict(reason, (5, 5, ())), counted, "p")
        assert (result.passed, result.total, result.reason) == (0, 5, reason)


@pytest.mark.parametrize(
    "returned", [None, (6, 5, ()), (5, 4, ()), (4, 5, ()), (4, 5, (9,)), (3, 5, (1, 1)), (3, 5, (2, 1)), "5/5", (True, 5, ())]
)
def test_a_malformed_count_or_a_judge_error_is_an_error_not_a_reward(protocol, returned):
    counted = protocol._counted[PROBLEM]
    with pytest.raises(RuntimeError, match="problem 'X'"):
        read_verdict(verdict("passed", returned), counted, "problem 'X'")
    with pytest.raises(RuntimeError, match="could not load"):
        read_verdict(verdict("judge_error", None), counted, "problem 'X'")


# ---------------------------------------------------------------------- the verdict cache
@pytest.fixture
def judged(monkeypatch):
    """The number of requests of every judge_many call the coding protocol makes (the real one runs)."""
    calls = []
    real = coding.judge.judge_many

    def recording(requests, *args, **kwargs):
        requests = list(requests)
        calls.append(len(requests))
        return real(requests, *args, **kwargs)

    monkeypatch.setattr(coding.judge, "judge_many", recording)
    return calls


def test_verdicts_are_cached_per_program_without_the_programs_output(protocol, problem, judged):
    noisy = MAIN.replace("    total = sum(numbers)", "    print('x' * 100_000)\n    total = sum(numbers)")
    program = protocol.codes(problem, [HELPER, noisy])[2]
    first = protocol.tests(problem, program)
    assert protocol.tests(problem, program) == first and judged == [1, 0]
    assert (first.passed, first.total, first.failed) == (5, 5, ())
    assert len(repr(first)) < 2_000  # what rewards and feedback read, not 100,000 characters of output


def test_the_cache_is_bounded_least_recently_used_first(problem, judged):
    protocol = CodingProtocol(tasks.get("humaneval"), cache_size=2)
    programs = [protocol.codes(problem, [HELPER, MAIN.replace("sum(numbers)", f"sum(numbers) + {k}")])[2] for k in range(3)]
    protocol.judge([(problem, program) for program in programs])
    assert len(protocol._verdicts) == 2
    protocol.judge([(problem, programs[2]), (problem, programs[1])])
    protocol.judge([(problem, programs[0])])
    assert judged == [3, 0, 1]


def test_transient_outcomes_are_judged_again(problem, judged):
    protocol = CodingProtocol(tasks.get("humaneval", timeout_s=1.0))
    hangs = f"{FENCE}python\ndef sum_product(numbers):\n    while True:\n        pass\n    return (0, 1)\n{FENCE}"
    program = protocol.codes(problem, [HELPER, hangs])[2]
    for _ in range(2):
        result = protocol.tests(problem, program)
        assert result.reason == "timeout" and result.results is None and result.no_results.startswith("timeout")
    assert judged == [1, 1, 1, 1] and len(protocol._verdicts) == 0  # each time: the judged run, then the calls alone


@pytest.mark.parametrize("size", [0, -1, 1.5, True])
def test_the_cache_size_must_be_a_positive_integer(size):
    with pytest.raises(ValueError, match="cache_size must be an integer >= 1"):
        CodingProtocol(tasks.get("humaneval"), cache_size=size)


def test_a_timeout_of_the_calls_alone_is_not_kept_in_the_feedback(protocol, monkeypatch):
    """Red team: the calls-alone run that timed out once on a loaded machine was kept with
    the program's lasting verdict, so every later turn's feedback said its calls timed out."""
    from deliberation_env.text.protocols.coding import judge

    problem = next(p for p in protocol.task.problems("test") if protocol._counted[p.id].calls)
    calls, runs = protocol._counted[problem.id].calls, []

    def judged(requests, task):
        verdicts = []
        for request in requests:
            alone = request.tests == judge.NO_TESTS
            runs.append(alone)
            if not alone:  # the judged run: a lasting verdict without the calls' results
                verdicts.append(Verdict(False, "bad_answer", "not a plain value", None, "", "", 0.2, "rlimits"))
            elif runs.count(True) == 1:  # the calls alone, the first time: the machine was loaded
                verdicts.append(Verdict(False, "timeout", "no verdict within 10 s", None, "", "", 10.0, "rlimits"))
            else:
                verdicts.append(Verdict(True, "passed", "", tuple("1" for _ in calls), "", "", 0.2, "rlimits"))
        return verdicts

    monkeypatch.setattr(judge, "_judged", judged)
    program = protocol.codes(problem, ["", f"```python\n{problem.meta['prompt']}    return 1\n```"])[2]
    assert protocol.tests(problem, program).no_results.startswith("timeout")
    again = protocol.tests(problem, program)
    assert again.results is not None and runs.count(True) == 2  # the calls ran again: their results show


# Red team 36: a team without a helper answered None for every unbound name the main code read,
# where a team with a helper raised NameError for the names it did not define, so an honest
# helper beside a main function that calls a function nobody wrote scored less than no helper
# (1.5 against 2.1; leave-one-out credit -0.6, Shapley -0.1).
STRAY_CALL = ALONE.replace("    product = 1\n", "    if is_prime(len(numbers)):\n        pass\n    product = 1\n")


def test_an_honest_helper_never_scores_less_than_no_helper_beside_a_call_nobody_defines(protocol, problem):
    env = text_env(task="humaneval", split="test", shapley=True)
    rewards = {}
    for helper in (HELPER, "", "I will not write code."):
        env.reset(options={"problem_id": PROBLEM})
        _, reward, _, _, infos = env.step({"agent_0": helper, "agent_1": f"{FENCE}python\n{STRAY_CALL}{FENCE}"})
        rewards[helper] = reward["agent_0"]
        if helper == HELPER:  # the helper's own definition, and nothing for the main function's NameError
            parts = infos["agent_0"]["reward_components"]
            assert parts["contribution"] == pytest.approx(0.4) and parts["shapley"] == pytest.approx(0.4)
    assert rewards[HELPER] == pytest.approx(1.5) and rewards[""] == rewards["I will not write code."] == pytest.approx(1.1)
    outcome = score(protocol, problem, "", STRAY_CALL)  # the team's real program: is_prime raises NameError
    assert "answers None" not in outcome.feedback[1] and "NameError" in outcome.feedback[1]


SHIFT = 'def encode_shift(s: str):\n    """Shift by 5."""\n    return "".join([chr(((ord(ch) + 5 - ord("a")) % 26) + ord("a")) for ch in s])\n'


def test_a_helper_repeating_the_prompts_function_does_not_make_the_main_a_wrapper():
    """Red team 36: the main function's calls of a function the prompt gives are its own work
    (``return encode_shift(encode_shift(aux(s)))`` is no wrapper); they were read as passing
    on the helper's results once the helper's code repeated that function, as models do."""
    prompt = f'{SHIFT}\n\ndef decode_shift(s: str):\n    """Decode."""\n'
    helper = "def aux(s):\n    return ''.join(chr(((ord(c) - 15 - ord('a')) % 26) + ord('a')) for c in s)\n"
    main = "def decode_shift(s: str):\n    shifted = aux(s)\n    return encode_shift(encode_shift(shifted))\n"
    for code in (helper, f"{SHIFT}\n\n{helper}"):
        analysis = coding.analyse(code, main, prompt, "decode_shift")
        assert not analysis.helper_refused and not analysis.wrapper
    passing_on = "def decode_shift(s: str):\n    return aux(s)\n"
    assert coding.analyse(f"{SHIFT}\n\n{helper}", passing_on, prompt, "decode_shift").wrapper
