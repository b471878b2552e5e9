"""Red team 40: escapes from the coding protocol's wrapper rule (``not_wrapper``), each a
real team scored with the real sandbox on HumanEval/8, against the honest wrapper
``return aux(numbers)`` (3.0: the helper did the whole problem).

Each escape below earned 4.0 before (the bonus of a main function that does work of its
own) and earns 3.0 now; each honest split keeps 4.0; each known limitation is pinned at
4.0, so a fix that closes it must flip its test on purpose."""

from __future__ import annotations

import pytest

from deliberation_env.text.protocols.coding import WEIGHTS

FENCE = "`" * 3
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


def score(protocol, problem, helper, body):
    outcome = protocol.score(
        problem, [f"{FENCE}python\n{helper}{FENCE}", f"{FENCE}python\n{HEAD}{body}{FENCE}"]
    )
    assert outcome.reward == pytest.approx(
        sum(WEIGHTS[name] * value for name, value in outcome.parts.items())
    )
    assert (
        outcome.parts["tests"] == outcome.parts["cooperation"] == 1.0
    )  # every team here passes and cooperates
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
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_a_main_repacking_the_helpers_answer_is_a_wrapper(protocol, problem, name):
    """4.0 before red team 40, as a main doing work of its own; 3.0 now, as ``return aux(numbers)``."""
    helper, body = ESCAPES[name]
    outcome = score(protocol, problem, helper, body)
    assert outcome.parts["not_wrapper"] == 0.0 and outcome.reward == pytest.approx(3.0)
    assert "thin wrapper" in outcome.feedback[1]
    assert outcome.reward == score(protocol, problem, WHOLE, "    return aux(numbers)\n").reward


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
    "its argument sorted in place": (WHOLE, "    numbers = list(numbers)\n    numbers.sort()\n    return aux(numbers)\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WORK_ON_THE_ANSWER))
def test_a_main_computing_on_the_helpers_answer_is_no_wrapper(protocol, problem, name):
    helper, body = WORK_ON_THE_ANSWER[name]
    outcome = score(protocol, problem, helper, body)
    assert outcome.parts["not_wrapper"] == 1.0 and outcome.reward == pytest.approx(4.0)


# Known limitations: the rule reads through the identities it knows; any other call is
# work, even one that gives its argument back unchanged, and work on the arguments counts
# even where it cannot change the answer (the rule runs nothing). 4.0 against 3.0.
UNKNOWN_IDENTITIES = {
    "an itemgetter": (AS_LIST, "    return tuple(operator.itemgetter(0, 1)(aux(numbers)))\n"),
    "eval of its repr": (WHOLE, "    return eval(repr(aux(numbers)))\n"),
    "sorted of one": (WHOLE, "    return sorted([aux(numbers)])[0]\n"),
    "its argument sorted first, which cannot change a sum or a product": (WHOLE, "    numbers = sorted(numbers)\n    return aux(numbers)\n"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(UNKNOWN_IDENTITIES))
def test_an_identity_the_rule_does_not_know_still_earns_not_wrapper_known_limitation(
    protocol, problem, name
):
    helper, body = UNKNOWN_IDENTITIES[name]
    outcome = score(protocol, problem, helper, body)
    assert outcome.parts["not_wrapper"] == 1.0 and outcome.reward == pytest.approx(4.0)


def test_dead_work_read_only_by_other_dead_code_still_earns_not_wrapper_known_limitation(
    protocol, problem
):
    """Dead code is found one statement at a time: a name read only by another dead
    statement counts as read (no elimination to a fixed point). 4.0 against 3.0."""
    outcome = score(
        protocol, problem, WHOLE, "    a = sum(numbers)\n    b = a\n    return aux(numbers)\n"
    )
    assert outcome.parts["not_wrapper"] == 1.0 and outcome.reward == pytest.approx(4.0)
