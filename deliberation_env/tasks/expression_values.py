"""The number a parsed MATH answer is, in bounded time, or ``None``.

sympy's ``evalf`` can run without end on a few characters a model writes:
``1.0000001^{10^{10^{10}}}`` builds an integer of ten billion digits inside mpmath's C
arithmetic, where no alarm reaches it (red team, round eleven). So a value is computed here
in double precision, one operation per node of the expression, over an allow-list of
nodes (numbers, pi and e, i, sums, products, powers, the elementary functions, floor and
ceiling, max and min), with at
most :data:`MAX_NODES` nodes; anything else (a symbol, a set, an integral, an overflow)
has no value. Double precision is enough for what the readers ask: whether a decimal is a
rounding of an answer, and whether the two sides of an equation of numbers agree.
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Callable, Mapping
from typing import Any

import sympy

MAX_NODES = 200
"""Nodes of an expression at most: past them it has no value here."""

MAX_FACTORIAL = 170
"""The largest ``n!`` a double holds."""

_FUNCTIONS: dict[type, Callable[[complex], complex]] = {
    sympy.sin: cmath.sin,
    sympy.cos: cmath.cos,
    sympy.tan: cmath.tan,
    sympy.asin: cmath.asin,
    sympy.acos: cmath.acos,
    sympy.atan: cmath.atan,
    sympy.sinh: cmath.sinh,
    sympy.cosh: cmath.cosh,
    sympy.tanh: cmath.tanh,
    sympy.exp: cmath.exp,
    sympy.log: cmath.log,
    sympy.Abs: lambda z: complex(abs(z)),
    sympy.sec: lambda z: 1 / cmath.cos(z),
    sympy.csc: lambda z: 1 / cmath.sin(z),
    sympy.cot: lambda z: 1 / cmath.tan(z),
    sympy.floor: lambda z: complex(math.floor(z.real)) if z.imag == 0 else _no_value(),
    sympy.ceiling: lambda z: complex(math.ceil(z.real)) if z.imag == 0 else _no_value(),
}
"""The functions of one argument that have a value here, and how to compute it."""


class _NoValue(Exception):
    """The expression has no value here."""


def _no_value() -> complex:
    """Raise :class:`_NoValue` (where an expression is wanted)."""
    raise _NoValue


def numeric_value(expr: Any, at: Mapping[sympy.Symbol, complex] | None = None) -> complex | None:
    """The complex number ``expr`` (a sympy expression) is, computed in double precision,
    or ``None`` when it holds anything but numbers, constants, arithmetic and elementary
    functions, has more than :data:`MAX_NODES` nodes, or overflows. With ``at``, its
    symbols take those values (a symbol not in it has none).

    >>> numeric_value(sympy.sympify("2*sqrt(3)")).real
    3.4641016151377544
    >>> numeric_value(sympy.sympify("x + 1")), numeric_value(sympy.sympify("1.0000001**(10**(10**10))", evaluate=False))
    (None, None)
    >>> numeric_value(sympy.sympify("x + 1"), at={sympy.Symbol("x"): 2})
    (3+0j)
    """
    try:
        budget = [MAX_NODES]
        value = _value(expr, budget, at or {})
    except (_NoValue, OverflowError, ValueError, ZeroDivisionError, TypeError):
        return None
    return value if cmath.isfinite(value) else None


def _value(node: Any, budget: list[int], at: Mapping[sympy.Symbol, complex]) -> complex:
    """The value of ``node``, its symbols valued ``at``, counting its nodes against
    ``budget``; raises :class:`_NoValue`."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _NoValue
    if isinstance(node, sympy.Symbol):
        return complex(at[node]) if node in at else _no_value()
    if isinstance(node, sympy.Integer):
        return complex(float(int(node)))  # an integer past a double's range raises OverflowError
    if isinstance(node, sympy.Rational):
        return complex(int(node.p) / int(node.q))
    if isinstance(node, sympy.Float):
        return complex(float(node))
    if node is sympy.I:
        return 1j
    if isinstance(node, sympy.NumberSymbol):  # pi, E, EulerGamma, GoldenRatio, Catalan
        return complex(float(node.evalf(17)))
    if isinstance(node, sympy.Add):
        return sum((_value(arg, budget, at) for arg in node.args), 0j)
    if isinstance(node, sympy.Mul):
        return math.prod((_value(arg, budget, at) for arg in node.args), start=1 + 0j)
    if isinstance(node, sympy.Pow):
        base, exponent = _value(node.base, budget, at), _value(node.exp, budget, at)
        if exponent.imag == 0 and exponent.real == int(exponent.real) and base.imag == 0:
            return complex(base.real ** int(exponent.real))  # exact signs for negative bases
        return base**exponent
    if isinstance(node, sympy.factorial):
        n = _value(node.args[0], budget, at)
        if n.imag or n.real != int(n.real) or not 0 <= n.real <= MAX_FACTORIAL:
            raise _NoValue
        return complex(float(math.factorial(int(n.real))))
    function = _FUNCTIONS.get(type(node))
    if function is not None and len(node.args) == 1:
        return function(_value(node.args[0], budget, at))
    if isinstance(node, sympy.log) and len(node.args) == 2:  # log(x, b), as parsed unevaluated
        return cmath.log(_value(node.args[0], budget, at)) / cmath.log(_value(node.args[1], budget, at))
    if isinstance(node, (sympy.Max, sympy.Min)):
        values = [_value(arg, budget, at) for arg in node.args]
        if any(value.imag for value in values):
            raise _NoValue
        return complex((max if isinstance(node, sympy.Max) else min)(value.real for value in values))
    raise _NoValue
