"""What the syntax of the coding team's two codes says, after the admission rules (no code runs).

:func:`analyse` reads the facts that the reward's structure parts score
(:mod:`deliberation_env.text.protocols.coding.protocol`, the reward table): whether each
code is admitted (:mod:`deliberation_env.text.protocols.coding.admission`) and defines its
function with a ``return <value>``; whether the codes and the team's two programs
compile; and, for a main function that reaches the tests, whether it calls ``aux``, binds
``aux`` itself, is a thin wrapper (CoMLRL's two forms, or no work besides passing the
helper's results on) or throws a call's result away, and whether the helper is trivial (it returns only constants or its own parameters). All
are read from the syntax tree, except the definition of a function in a code that does not
compile, read as text (CoMLRL's format level). What these facts do not prove, and the
run that the cooperation bonus adds, are in the protocol's page ("What the structure
bonuses prove, and what not").
"""

from __future__ import annotations

import ast
import builtins
import re
import symtable
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace

from deliberation_env.text.protocols.coding.admission import (
    HELPER,
    calls_name,
    prompt_bindings,
    refusals,
    top_level_bindings,
)
from deliberation_env.text.protocols.coding.counting import CONSTANT_NODES
from deliberation_env.text.protocols.coding.judge import TeamProgram


@dataclass(frozen=True)
class Analysis:
    """The static facts of a team's two codes (module docstring).

    Attributes:
        program: The team's two programs: the prompt then the helper's code if admitted,
            the prompt then the main agent's code.
        helper_refused, main_refused: Why a code was refused (``""``: admitted).
        helper_alone: The thin wrappers judged for ``not_wrapper`` (:func:`_helper_alone`):
            each a (parameters, call) pair, ``def entry(parameters): return call``.
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
    helper_alone: tuple[tuple[str, str], ...] = ()

    @property
    def tested(self) -> bool:
        """The program reaches the tests: the main function is defined and everything compiles."""
        return self.main_defined and not self.syntax_errors


def analyse(
    helper_code: str, main_code: str, prompt: str, entry_point: str, withheld: tuple[str, ...] = ()
) -> Analysis:
    """What the syntax of the two codes says, after the rules (no code runs). A code that
    does not compile is read as text for its function (CoMLRL's format level), and the
    syntax level fails.

    Args:
        withheld: The functions of a helper left out for the credit (its team's
            ``program.helper_functions``): without a helper, those the main code reads
            answer ``None`` (red teams 35 and 36); every other unbound name raises
            ``NameError``, as in the team's own program."""
    helper_error, main_error = _syntax_error("helper code", helper_code), _syntax_error("main code", main_code)
    helper_module = ast.Module([], []) if helper_error else ast.parse(helper_code)
    main_module = ast.Module([], []) if main_error else ast.parse(main_code)
    helper_refused, main_refused = refusals(helper_module, main_module, prompt, entry_point)
    functions = () if helper_refused else _function_names(helper_module)
    program = TeamProgram(prompt, helper_code if functions else "", main_code, functions)
    if not functions and not main_error and not main_refused:
        unbound = _unbound_names(main_code, main_module, prompt)
        program = program.without_helper(tuple(name for name in unbound if name in withheld))
    helper = None if helper_refused else _last_function(helper_module, HELPER)
    main = None if main_refused else _last_function(main_module, entry_point)
    helper_defined = _defines(helper_code, HELPER) if helper_error else _returns_value(helper)
    main_defined = _defines(main_code, entry_point) if main_error else _returns_value(main)
    error = helper_error or main_error or _program_syntax_error(program)
    if not main_defined or error:
        return Analysis(helper_defined, main_defined, (error,) if error else (), program, helper_refused, main_refused)
    own = _own_functions(functions, prompt)
    return Analysis(
        helper_defined=helper_defined,
        main_defined=main_defined,
        syntax_errors=(),
        program=program,
        helper_refused=helper_refused,
        main_refused=main_refused,
        calls_helper=any(calls_name(node, HELPER) for node in ast.walk(main)),
        helper_trivial=helper is None or _trivial(helper),
        main_defines_helper=_binds_helper(main_module),
        wrapper=_wrapper(main, own),
        ignored_call=any(isinstance(node, ast.Expr) and calls_name(node.value, HELPER) for node in ast.walk(main)),
        helper_alone=_helper_alone(main_module, main, own),
    )


CONSTANT_PARTS = (*CONSTANT_NODES, ast.BoolOp, ast.Compare, ast.boolop, ast.cmpop)
"""What a constant expression may be built of (literals and operators)."""
ANY_ARGUMENTS = "*args, **kwargs"
"""The parameters of a thin wrapper that passes the tests' arguments on as they come."""


def _helper_alone(
    module: ast.Module, main: ast.FunctionDef | ast.AsyncFunctionDef, helper_functions: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    """The thin wrappers that stand for the main function in the check that its own work
    matters (the protocol's ``not_wrapper``), each a (parameters, call) pair: each of the
    helper's functions that the main agent's code reads, called with the tests' arguments as
    they come (``def entry(*args, **kwargs): return core(*args, **kwargs)``); then each call
    of one in the main function whose arguments are only its parameters and constants
    (``aux(x, 0)`` after ``x = sorted(x)``), taken alone with the main's parameters (``def
    entry(x): return aux(x, 0)``), but a call that passes the parameters on as they come."""
    loaded = (node.id for node in ast.walk(module) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load))
    read = dict.fromkeys(name for name in loaded if name in helper_functions)
    wrappers = [(ANY_ARGUMENTS, f"{name}({ANY_ARGUMENTS})") for name in read]
    arguments = main.args
    parameters = [a.arg for a in (*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs, arguments.kwarg) if a]
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    for node in ast.walk(main):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in read):
            continue
        values = [*node.args, *(keyword.value for keyword in node.keywords)]
        as_they_come = not node.keywords and [getattr(v, "id", None) for v in node.args] == positional
        if all(_no_work(value, parameters) for value in values) and not as_they_come:
            wrappers.append((ast.unparse(arguments), ast.unparse(node)))
    return tuple(dict.fromkeys(wrappers))


def _no_work(node: ast.expr, parameters: list[str]) -> bool:
    """``node``, an argument of a call, is one of ``parameters`` or a constant expression
    (literals and operators: ``0``, ``-1``, ``(0, 1)``, ``*[0]``), so that the call taken
    alone with the main's parameters does none of the main's work."""
    node = node.value if isinstance(node, ast.Starred) else node
    if isinstance(node, ast.Name):
        return node.id in parameters
    return all(isinstance(part, CONSTANT_PARTS) for part in ast.walk(node))


def _unbound_names(main_code: str, main_module: ast.Module, prompt: str) -> tuple[str, ...]:
    """The global names the main agent's code reads that neither it, the prompt nor Python's
    builtins bind: those of a helper left out for the credit answer ``None`` in the team
    without it (:meth:`~deliberation_env.text.protocols.coding.judge.TeamProgram.without_helper`).
    Read with :mod:`symtable`, Python's own scoping, so a local of the same name is not one."""
    bound = {binding.name for binding in (*top_level_bindings(main_module), *prompt_bindings(prompt))}
    found: dict[str, None] = {}
    tables = [symtable.symtable(main_code, "<main code>", "exec")]
    while tables:
        table = tables.pop()
        module = table.get_type() == "module"  # a StrEnum from Python 3.13
        for symbol in table.get_symbols():
            name = symbol.get_name()
            free = symbol.is_referenced() and (symbol.is_global() or (module and not symbol.is_assigned() and not symbol.is_imported()))
            if free and name not in bound and not hasattr(builtins, name):
                found[name] = None
        tables += table.get_children()
    return tuple(sorted(found))


def _own_functions(functions: tuple[str, ...], prompt: str) -> tuple[str, ...]:
    """The helper code's functions but those the prompt binds: a prompt's function that the
    helper repeats is the problem's, so calling it is the main function's work, as where the
    helper does not repeat it (red team 36)."""
    given = {binding.name for binding in prompt_bindings(prompt)}
    return tuple(name for name in functions if name not in given)


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
    return _binding_counts(module)[HELPER] > 0


def _wrapper(main: ast.FunctionDef | ast.AsyncFunctionDef, helper_functions: tuple[str, ...]) -> bool:
    """The main function does no work of its own: CoMLRL's two forms (``return aux(...)``
    alone, or ``v = aux(...)`` then ``return v``), or (red team 34) a body of returns,
    assignments to names and ``pass`` whose values are only the helper's: calls of the
    helper code's functions (whatever their arguments, as CoMLRL's forms), names, constants
    and tuples of them (``return core(aux(x))``; ``v = aux(x)``, ``w = 0``, ``return v``)."""
    body = _body(main)
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None and calls_name(body[0].value, HELPER):
        return True
    if len(body) == 2:
        first, second = body
        if (
            isinstance(first, ast.Assign)
            and len(first.targets) == 1
            and isinstance(first.targets[0], ast.Name)
            and calls_name(first.value, HELPER)
            and isinstance(second, ast.Return)
            and isinstance(second.value, ast.Name)
            and second.value.id == first.targets[0].id
        ):
            return True
    return _helpers_work_only(main, helper_functions)


IDENTITIES: dict[type[ast.operator], tuple[object, ...]] = {
    ast.Add: (0, 0.0, False, (), [], "", b""), ast.Sub: (0, 0.0, False), ast.Mult: (1, 1.0, True),
    ast.FloorDiv: (1, True), ast.Div: (1, 1.0, True), ast.Pow: (1, 1.0, True),
    ast.BitOr: (0, False), ast.BitXor: (0, False), ast.LShift: (0, False), ast.RShift: (0, False),
}  # fmt: skip
"""The constants that leave a value as it is under each operator (``x + 0``, ``x + ()``,
``x * 1``, ``x * True``): a value passed through one is passed on (red teams 37 and 40)."""
CONVERSIONS = frozenset({
    "list", "tuple", "set", "frozenset", "dict", "str", "int", "float", "bool", "copy", "deepcopy", "iter", "repr",
})  # fmt: skip
"""Calls that give their argument back in another container or type, or as its text:
passed on (red teams 37 and 40)."""
MODULE_CONVERSIONS = frozenset({("copy", "copy"), ("copy", "deepcopy")})
""":data:`CONVERSIONS` called through their module (``copy.copy(aux(x))``, red team 40)."""
VIEWS = {"copy": 0, "items": 0, "keys": 0, "values": 0, "get": 2}
"""Methods that give a value back, its parts or one of its entries, with at most this many
arguments (``aux(x).items()``, ``aux(x).get(key)``): passed on where their arguments are
(red team 40)."""
ONE_ELEMENT_REDUCTIONS = frozenset({"min", "max", "sum", "next"})
"""Calls that give back the one element of a one-element display (``max([aux(x)])``; ``next``
the first of any passed-on iterable): passed on (red team 40), with keywords of passed-on
values (``max([v], key=len)``, red team 41)."""
ONE_ELEMENT_ORDERINGS = frozenset({"sorted", "reversed"})
"""Calls that give back a one-element display as it was, in a list or an iterator
(``sorted([aux(x)])[0]``): passed on, with keywords of passed-on values (red team 41). Of
any other value they reorder it: work."""
EVALUATIONS = frozenset({"eval"})
"""Builtins that run code given as text: of passed-on values (``eval(repr(aux(x)))``) they
compute nothing of the main's own (red team 41). ``exec`` and ``compile`` are refused
(:data:`~deliberation_env.text.protocols.coding.admission.DENIED_NAMES`)."""
ITEM_GETTERS = frozenset({"itemgetter", "getitem"})
""":mod:`operator`'s subscripts, as ``operator.itemgetter(0, 1)(v)`` or ``getitem(v, 0)``:
``(v[0], v[1])`` and ``v[0]``, read as subscripts (red team 41)."""


def _helpers_work_only(main: ast.FunctionDef | ast.AsyncFunctionDef, helper_functions: tuple[str, ...]) -> bool:
    """Every statement of the main function passes the helper's results on (:func:`_wrapper`),
    one returns a value, and ``aux`` is called outside dead code. Trivial identities are
    read through (red teams 37, 40 and 41; :class:`_PassingOn`): identity operations (``+ 0``, ``+ ()``, ``* 1``,
    ``not not``, ``== True``), ``or``/``and`` of passed-on values, conditional expressions
    whose test is a constant or the helper's answer (as ``if`` statements),
    conversions (``tuple(aux(x))``, ``copy.copy``), subscripts with a constant or a key of
    passed-on values (``aux(x)[0]``, ``aux(x)[repr(x)]``), views (``.items()``, ``.get``),
    displays and comprehensions that only repack (``[v for v in aux(x)]``), the main's own
    identity functions (``(lambda v: v)(aux(x))``, a nested ``def`` that passes on), ``map``
    and ``functools.reduce`` of one, the one element of a one-element display (``max([v])``,
    ``next(iter([v]))``, ``sorted([v])``, ``max(v, v)``), ``operator.itemgetter`` and
    ``getitem`` of constants, ``eval`` of passed-on values, walrus, augmented (by an identity) and annotated assignments,
    and statements that compute nothing (``assert``, ``if ...: raise``, ``del`` of names,
    imports, expressions, dead code: :func:`_dead_statements`); the blocks of an ``if`` or
    ``while`` on a constant, an ``if`` on the helper's answer, a ``for`` over a constant
    or a passed-on value, a ``try``, and a ``match`` of a passed-on value whose cases only
    capture."""
    reading = _with_identities(main, frozenset(helper_functions))
    statements = list(reading.flattened(_body(main)))
    if any(statement is None or not reading.statement(statement) for statement in statements):
        return False
    if not all(reading.value(node.value) for node in ast.walk(main) if isinstance(node, ast.NamedExpr)):
        return False  # a walrus anywhere binds a name: only to a passed-on value
    returns = any(isinstance(statement, ast.Return) and statement.value is not None for statement in statements)
    # aux called where it can reach the answer: a call in dead code or a guard wraps nothing
    return returns and any(calls_name(node, HELPER) for statement in statements for node in ast.walk(statement))


def _binding_counts(node: ast.AST) -> Counter[str]:
    """How many times ``node``'s code binds each name: definitions, assignments,
    parameters, imports, ``except ... as``, ``match`` captures."""
    return Counter(name for item in ast.walk(node) if (name := _bound_name(item)))


def _bound_name(item: ast.AST) -> str | None:
    """The name ``item`` binds, if it binds one (:func:`_binding_counts`)."""
    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return item.name
    if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
        return item.id
    if isinstance(item, ast.arg):
        return item.arg
    if isinstance(item, ast.alias):
        return item.asname or item.name
    if isinstance(item, ast.MatchAs | ast.MatchStar | ast.ExceptHandler):
        return item.name  # ``case aux:``, ``case [*aux]``, ``except E as aux`` (red team twenty-six)
    if isinstance(item, ast.MatchMapping):
        return item.rest  # ``case {**aux}``
    return None


def _with_identities(main: ast.FunctionDef | ast.AsyncFunctionDef, helpers: frozenset[str]) -> _PassingOn:
    """The reading of ``main`` with its own identity functions: the names it binds only to
    lambdas or nested ``def``s that pass their arguments on (or to other such names),
    found until no more are (``ident = lambda v: v``, ``same = ident``)."""
    bindings = _binding_counts(main)
    functions = [node for node in ast.walk(main) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    reading = _PassingOn(helpers, dead=frozenset().union(*(_dead_statements(function, helpers) for function in functions)))
    while True:
        passing = Counter(name for name, function in _local_functions(main) if reading.function(function))
        found = {name for name, count in passing.items() if count == bindings[name]}
        if found <= reading.identities:
            return reading
        reading = replace(reading, identities=reading.identities | found)


def _reads(node: ast.AST) -> Counter[str]:
    """How many times ``node``'s code reads each name."""
    return Counter(item.id for item in ast.walk(node) if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Load))


def _local_functions(main: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[str, ast.AST]]:
    """The functions ``main`` binds to a name: nested ``def``s, and a lambda, a name or a
    call (``operator.itemgetter(0)``) assigned to one name."""
    for node in ast.walk(main):
        if node is not main and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node
        elif _assigns_one_name(node) and isinstance(node.value, ast.Lambda | ast.Name | ast.Call):
            yield node.targets[0].id, node.value


def _assigns_one_name(node: ast.AST) -> bool:
    """``node`` is an assignment to one name (``f = ...``)."""
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)


@dataclass(frozen=True)
class _PassingOn:
    """Whether a main function's code only passes the helper's results on
    (:func:`_helpers_work_only`).

    Attributes:
        helpers: The helper code's functions: a call of one passes on whatever its
            arguments (CoMLRL's forms).
        identities: The main function's own functions that only pass their arguments on
            (:func:`_with_identities`): a call of one passes on where its arguments do.
        dead: The ``id``\\ s of the statements of the main function and its nested
            ``def``\\ s whose work never reaches their answers (:func:`_dead_statements`).
    """

    helpers: frozenset[str]
    identities: frozenset[str] = frozenset()
    dead: frozenset[int] = frozenset()

    def flattened(self, body: list[ast.stmt]) -> Iterator[ast.stmt | None]:
        """The simple statements of ``body``, the blocks of trivial compound statements
        read through; ``None`` for a compound statement that is not. A guard that can
        only raise (``if not x: raise ValueError``) and dead code (:func:`_dead_statements`) compute
        nothing of the answer: left out."""
        for statement in body:
            if id(statement) in self.dead:
                continue
            if _trivial_block(statement) or self._loop_over_answer(statement):
                if isinstance(statement, ast.For):
                    yield ast.Expr(statement.iter)  # what it loops over, read as passed on
                yield from self.flattened([*statement.body, *statement.orelse])
            elif isinstance(statement, ast.Try):
                handlers = [line for handler in statement.handlers for line in handler.body]
                yield from self.flattened([*statement.body, *handlers, *statement.orelse, *statement.finalbody])
            elif isinstance(statement, ast.Match) and self._capture_only(statement):
                yield ast.Expr(statement.subject)
                yield from self.flattened([line for case in statement.cases for line in case.body])
            elif isinstance(statement, ast.If) and not statement.orelse and _raises_only(statement.body):
                continue
            elif isinstance(statement, ast.If) and self._no_test_of_its_own(statement.test):
                yield ast.Expr(statement.test)
                yield from self.flattened([*statement.body, *statement.orelse])
            elif isinstance(statement, ast.If | ast.While | ast.For | ast.AsyncFor | ast.With | ast.AsyncWith | ast.Match):
                yield None
            else:
                yield statement

    def statement(self, statement: ast.stmt) -> bool:
        """A simple statement that passes on or computes nothing (``return aux(x)``,
        ``v = aux(x)``, ``v += ()``, ``assert x``, ``import copy``, a nested identity
        ``def``)."""
        if isinstance(statement, ast.Return):
            return statement.value is None or self.value(statement.value)
        if isinstance(statement, ast.Assign):
            return all(_names_only(target) for target in statement.targets) and self.value(statement.value)
        if isinstance(statement, ast.AnnAssign):
            return isinstance(statement.target, ast.Name) and (statement.value is None or self.value(statement.value))
        if isinstance(statement, ast.AugAssign):
            return isinstance(statement.target, ast.Name) and _literal_in(statement.value, IDENTITIES.get(type(statement.op), ()))
        if isinstance(statement, ast.Expr):
            return self.value(statement.value)
        if isinstance(statement, ast.Delete):
            return all(isinstance(target, ast.Name) for target in statement.targets)
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            return statement.name in self.identities
        return isinstance(statement, ast.Pass | ast.Raise | ast.Assert | ast.Break | ast.Continue | ast.Import | ast.ImportFrom)

    def value(self, value: ast.expr | None) -> bool:
        """``value`` is only the helper's results, names and constants, read through
        trivial identities (:func:`_helpers_work_only`)."""
        if isinstance(value, ast.Call):
            return self._call(value)
        if isinstance(value, ast.Lambda):
            return self.function(value)
        if isinstance(value, ast.Tuple | ast.List | ast.Set):
            return all(map(self.value, value.elts))
        if isinstance(value, ast.Dict):
            return all(key is None or self.value(key) for key in value.keys) and all(map(self.value, value.values))
        if isinstance(value, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return self._repacking(value.generators) and self.value(value.elt)
        if isinstance(value, ast.DictComp):
            return self._repacking(value.generators) and self.value(value.key) and self.value(value.value)
        if isinstance(value, ast.Starred | ast.NamedExpr):
            return self.value(value.value)
        if isinstance(value, ast.BinOp):
            return self._identity_operation(value)
        if isinstance(value, ast.UnaryOp):
            return _twice_or_plus(value) and self.value(value.operand if isinstance(value.op, ast.UAdd) else value.operand.operand)
        if isinstance(value, ast.Compare):
            kept = _compared_with_truth(value)
            return kept is not None and self.value(kept)
        if isinstance(value, ast.BoolOp):
            return all(map(self.value, value.values))
        if isinstance(value, ast.IfExp):  # a test of its own is work, as in an ``if`` statement
            return self._no_test_of_its_own(value.test) and self.value(value.body) and self.value(value.orelse)
        if isinstance(value, ast.Subscript):
            return self.value(value.value) and self._key(value.slice)
        if isinstance(value, ast.JoinedStr):  # f"{v}", as str(v)
            parts = value.values
            return len(parts) == 1 and isinstance(parts[0], ast.FormattedValue) and parts[0].format_spec is None and self.value(parts[0].value)
        return isinstance(value, ast.Name | ast.Constant)

    def function(self, function: ast.AST) -> bool:
        """``function`` passes its arguments on: a helper function, a conversion, one of
        the main's identities, a lambda whose defaults and body pass on, or a nested
        ``def`` whose defaults and statements do."""
        if isinstance(function, ast.Name):
            return function.id in self.helpers | self.identities | CONVERSIONS
        if isinstance(function, ast.Attribute):
            return _module_call(function) in MODULE_CONVERSIONS
        if isinstance(function, ast.Call):  # operator.itemgetter(0, 1)
            return _item_getter(function.func) == "itemgetter" and bool(function.args) and not function.keywords and all(map(self._key, function.args))
        if isinstance(function, ast.Lambda):
            return self._defaults(function.args) and self.value(function.body)
        if isinstance(function, ast.FunctionDef):
            if function.decorator_list or not self._defaults(function.args):
                return False
            statements = list(self.flattened(_body(function)))
            return all(statement is not None and self.statement(statement) for statement in statements)
        return False

    def _defaults(self, arguments: ast.arguments) -> bool:
        return all(default is None or self.value(default) for default in (*arguments.defaults, *arguments.kw_defaults))

    def _call(self, call: ast.Call) -> bool:
        """A call that gives back the helper's results (:func:`_helpers_work_only`)."""
        function, arguments = call.func, call.args
        if isinstance(function, ast.Name) and function.id in self.helpers:
            return True
        spread = all(keyword.arg is None for keyword in call.keywords)  # ``dict(**aux(x))``
        passed = all(map(self.value, arguments)) and all(self.value(keyword.value) for keyword in call.keywords)
        name = function.id if isinstance(function, ast.Name) else _module_call(function)[1]
        if isinstance(function, ast.Name) and function.id in CONVERSIONS or _module_call(function) in MODULE_CONVERSIONS:
            return len(arguments) <= 1 and spread and passed
        if isinstance(function, ast.Lambda) or isinstance(function, ast.Name) and function.id in self.identities:
            return self.function(function) and passed
        if name in ONE_ELEMENT_REDUCTIONS | ONE_ELEMENT_ORDERINGS:
            element = self._one_element_of(name, call)
            return element is not None and self.value(element)
        if isinstance(function, ast.Name) and name in EVALUATIONS:
            return bool(arguments) and passed
        if _item_getter(function) == "itemgetter":  # the getter itself, bound to a name
            return self.function(call)
        if _item_getter(function) == "getitem":
            return len(arguments) == 2 and not call.keywords and self.value(arguments[0]) and self._key(arguments[1])
        if isinstance(function, ast.Call):
            return len(arguments) == 1 and not call.keywords and passed and self.function(function)
        if name in ("map", "reduce") and arguments and not call.keywords:
            alone = name == "reduce" and len(arguments) == 2 and _one_element(arguments[1]) is not None
            return (alone or self.function(arguments[0])) and all(map(self.value, arguments[1:]))
        if isinstance(function, ast.Attribute) and _is_empty_text(function.value) and function.attr == "join":
            return len(arguments) == 1 and passed and not call.keywords  # "".join(aux(s)), as str
        if isinstance(function, ast.Attribute) and function.attr in VIEWS and not call.keywords:
            return len(arguments) <= VIEWS[function.attr] and passed and self.value(function.value)
        return False

    def _one_element_of(self, name: str, call: ast.Call) -> ast.expr | None:
        """The element that a reduction or ordering of one element gives back: ``v`` of
        ``max([v])``, ``max(v, v)``, ``sorted([v], key=len)``, ``next(it, None)``; else
        ``None``. Keywords only of ``min``, ``max`` and ``sorted``, of passed-on values
        (``sum([v], start=(1,))`` computes)."""
        arguments, keywords = call.args, call.keywords
        if not arguments or keywords and (name not in ("min", "max", "sorted") or not all(self.value(k.value) for k in keywords)):
            return None
        if name == "next":  # the first of any passed-on iterable, or a passed-on default
            return arguments[0] if len(arguments) == 1 or len(arguments) == 2 and self.value(arguments[1]) else None
        if name in ("min", "max") and len(arguments) > 1:
            return arguments[0] if len({ast.dump(argument) for argument in arguments}) == 1 else None
        return _one_element(arguments[0]) if len(arguments) == 1 else None

    def _identity_operation(self, operation: ast.BinOp) -> bool:
        """``v + 0``, ``0 + v``, ``v * 1``, ``v - 0`` (not ``0 - v``) of a passed-on ``v``."""
        identities = IDENTITIES.get(type(operation.op), ())
        for kept, other in ((operation.left, operation.right), (operation.right, operation.left)):
            if isinstance(other, ast.Constant | ast.Tuple | ast.List) and _literal_in(other, identities) and self.value(kept):
                return other is operation.right or isinstance(operation.op, ast.Add | ast.Mult | ast.BitOr | ast.BitXor)
        return False

    def _key(self, index: ast.expr) -> bool:
        """A constant index or slice (``[0]``, ``[:]``, ``[::-1]``), or one of passed-on
        values: a key made of the main's arguments, with no computation (``[repr(x)]``,
        ``[x]``, ``[:k]``; red team 40). ``[len(x) - 1]`` is work."""
        if isinstance(index, ast.Slice):
            return all(part is None or _constant(part) or self.value(part) for part in (index.lower, index.upper, index.step))
        return _constant(index) or self.value(index)

    def _repacking(self, generators: list[ast.comprehension]) -> bool:
        """The ``for`` clauses of a comprehension that only repacks: names taken from
        passed-on or constant values, no filter but a constant one (red team 40)."""
        return all(
            _names_only(generator.target)
            and (_constant(generator.iter) or self.value(generator.iter))
            and all(map(_constant, generator.ifs))
            for generator in generators
        )

    def _loop_over_answer(self, statement: ast.stmt) -> bool:
        """``for v in [aux(x)]:`` or ``for v in aux(x):`` (red team 40)."""
        return isinstance(statement, ast.For) and _names_only(statement.target) and self.value(statement.iter)

    def _no_test_of_its_own(self, test: ast.expr) -> bool:
        """The test of a conditional (statement or expression, read alike: red team 41) is
        a constant, or the helper's answer passed on (``aux(x) if aux(x) else x``, as
        ``aux(x) or x``); any other test is a case of the main's own (``if not x:``)."""
        return _constant(test) or self.value(test) and any(
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.helpers for node in ast.walk(test)
        )

    def _capture_only(self, statement: ast.Match) -> bool:
        """A ``match`` of a passed-on value whose cases only capture it or unpack it, with
        no guard (``case y:``, ``case [a, b]:``; red team 40)."""
        return self.value(statement.subject) and all(case.guard is None and _capture(case.pattern) for case in statement.cases)


LOOPS = (ast.For, ast.AsyncFor, ast.While)
COMPOUND = (ast.If, *LOOPS, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.Match)
EFFECTS = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Nonlocal, ast.Global)
"""Statements and expressions whose work leaves the statement without binding a name: an
answer, a value sent out, a name of another scope written."""


def _dead_statements(function: ast.FunctionDef | ast.AsyncFunctionDef, helpers: frozenset[str]) -> frozenset[int]:
    """The ``id``\\ s of ``function``'s statements whose work never reaches its answer (red
    team 41): the statements, at any depth of its blocks, that are not live.

    Liveness grows from the statements with an effect (:func:`_effect`: ``return``,
    ``yield``, a store into an object, a call of anything but a builtin or the helper's
    functions) backwards through the names they read, to a fixed point: a statement is live
    if it has an effect, binds a name that a live statement reads, or holds a live
    statement in its blocks (then its own test, iterable or subject is read); a ``break``
    or ``continue`` is live in a live loop. A statement read only by dead ones is dead
    (``a = sum(x)``, ``b = a``, neither read after), and so are a recursive ``def`` never
    called from live code and a loop updating only its own names (``a = a + 1``). The sets
    only grow, so the reading ends, whatever reads itself. Names are not told apart by
    where they are bound: a name read anywhere live keeps every statement binding it."""
    parents: dict[int, ast.stmt | None] = {}
    jumps: defaultdict[int, list[ast.stmt]] = defaultdict(list)
    statements = list(_units(_body(function), None, None, parents, jumps))
    binders: defaultdict[str, list[ast.stmt]] = defaultdict(list)
    for statement in statements:
        for name in _head_bindings(statement):
            binders[name].append(statement)
    live: set[int] = set()
    names: set[str] = set()
    pending = [statement for statement in statements if _effect(statement, helpers)]
    while pending:  # each statement is marked once, each name read once: linear
        statement = pending.pop()
        while statement is not None and id(statement) not in live:  # it and the blocks holding it
            live.add(id(statement))
            for name in _head_reads(statement) - names:
                names.add(name)
                pending += binders[name]
            pending += jumps[id(statement)]  # a loop's break and continue
            statement = parents[id(statement)]
    return frozenset(id(statement) for statement in statements if id(statement) not in live)


def _units(
    body: list[ast.stmt],
    parent: ast.stmt | None,
    loop: ast.stmt | None,
    parents: dict[int, ast.stmt | None],
    jumps: defaultdict[int, list[ast.stmt]],
) -> Iterator[ast.stmt]:
    """The statements of ``body`` and of its blocks, at any depth but not inside a nested
    ``def`` or class (one statement each); each one's enclosing statement in ``parents``, and
    each loop's ``break`` and ``continue`` statements in ``jumps``."""
    for statement in body:
        parents[id(statement)] = parent
        if isinstance(statement, ast.Break | ast.Continue) and loop is not None:
            jumps[id(loop)].append(statement)
        yield statement
        if isinstance(statement, COMPOUND):
            inner = statement if isinstance(statement, LOOPS) else loop
            yield from _units(_blocks(statement), statement, inner, parents, jumps)


def _blocks(statement: ast.stmt) -> list[ast.stmt]:
    """The statements of a compound statement's blocks, in order."""
    if isinstance(statement, ast.Match):
        return [line for case in statement.cases for line in case.body]
    handlers = [line for handler in getattr(statement, "handlers", ()) for line in handler.body]
    return [*statement.body, *handlers, *getattr(statement, "orelse", ()), *getattr(statement, "finalbody", ())]


def _head(statement: ast.stmt) -> list[ast.AST]:
    """What a statement runs itself, without its blocks: a simple statement whole, a
    compound one's test, target and iterable, context managers, exception types or subject,
    patterns and guards; a nested ``def`` or class's decorators, defaults and bases (its
    body runs only when called)."""
    if isinstance(statement, ast.If | ast.While):
        return [statement.test]
    if isinstance(statement, ast.For | ast.AsyncFor):
        return [statement.target, statement.iter]
    if isinstance(statement, ast.With | ast.AsyncWith):
        return list(statement.items)
    if isinstance(statement, ast.Try | ast.TryStar):
        return [handler.type for handler in statement.handlers if handler.type is not None]
    if isinstance(statement, ast.Match):
        return [statement.subject, *(case.pattern for case in statement.cases), *(case.guard for case in statement.cases if case.guard)]
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = statement.args
        return [*statement.decorator_list, *arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
    if isinstance(statement, ast.ClassDef):
        return [*statement.decorator_list, *statement.bases, *statement.keywords]
    return [statement]


def _head_bindings(statement: ast.stmt) -> set[str]:
    """The names a statement binds in its function's scope (its blocks' bindings are their own)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    names = {handler.name for handler in getattr(statement, "handlers", ()) if handler.name}
    names.update(name for part in _head(statement) for node in _own_scope(part) if (name := _bound_name(node)))
    return names


def _own_scope(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what it holds, but a lambda and the targets of a comprehension, which
    bind names of their own scope (``f = lambda x: 0`` binds ``f`` alone)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.Lambda) and not (isinstance(node, ast.comprehension) and child is node.target):
            yield from _own_scope(child)


def _head_reads(statement: ast.stmt) -> set[str]:
    """The names a statement reads when it runs, or may read later: a nested ``def`` or
    class every name its body reads; ``v += 1`` reads ``v``."""
    nodes = [statement] if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else _head(statement)
    names = {name for node in nodes for name in _reads(node)}
    if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
        names.add(statement.target.id)
    return names


def _effect(statement: ast.stmt, helpers: frozenset[str]) -> bool:
    """Running the statement (its head, :func:`_head`) does more than bind names: it
    returns or yields, writes another scope's name, stores into an object (a subscript or
    attribute target, ``del xs[0]``), or calls anything but a builtin or one of the
    helper's functions (a method such as ``xs.sort()`` may change its object; a call of
    the main's own function may do any of these)."""
    nodes = [node for part in _head(statement) for node in ast.walk(part)]
    return (
        any(isinstance(node, EFFECTS) for node in nodes)
        or any(isinstance(node, ast.Subscript | ast.Attribute) and not isinstance(node.ctx, ast.Load) for node in nodes)
        or not all(_pure(node.func, helpers) for node in nodes if isinstance(node, ast.Call))
    )


def _pure(function: ast.expr, helpers: frozenset[str]) -> bool:
    """A builtin or one of the helper's functions: no call of the main's own code, nor
    a method (``xs.sort()``), which may change an object in place. (A nested ``def``
    that rebinds a builtin's name is read, so it is live itself.)"""
    return isinstance(function, ast.Name) and (function.id in helpers or hasattr(builtins, function.id))


def _capture(pattern: ast.pattern) -> bool:
    """A pattern that only names the value or its parts: ``y``, ``_``, ``[a, *rest]``."""
    if isinstance(pattern, ast.MatchAs):
        return pattern.pattern is None or _capture(pattern.pattern)
    if isinstance(pattern, ast.MatchSequence):
        return all(map(_capture, pattern.patterns))
    return isinstance(pattern, ast.MatchStar)


def _raises_only(body: list[ast.stmt]) -> bool:
    """A block that computes nothing but may raise: ``raise``, ``assert``, ``pass``."""
    return all(isinstance(statement, ast.Raise | ast.Assert | ast.Pass) for statement in body)


def _module_call(function: ast.expr) -> tuple[str, str]:
    """``("copy", "copy")`` for ``copy.copy``; ``("", name)`` for a plain name or an
    attribute of anything else."""
    if isinstance(function, ast.Attribute):
        return (function.value.id if isinstance(function.value, ast.Name) else "", function.attr)
    return ("", function.id if isinstance(function, ast.Name) else "")


def _item_getter(function: ast.expr) -> str:
    """``"itemgetter"`` or ``"getitem"`` for :data:`ITEM_GETTERS` by name or through
    ``operator``; else ``""``."""
    module, name = _module_call(function)
    return name if name in ITEM_GETTERS and module in ("", "operator") else ""


def _one_element(display: ast.expr) -> ast.expr | None:
    """The element of a one-element list, tuple or set display (not unpacked), else ``None``."""
    if isinstance(display, ast.List | ast.Tuple | ast.Set) and len(display.elts) == 1:
        return None if isinstance(display.elts[0], ast.Starred) else display.elts[0]
    return None


def _is_empty_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == "" and isinstance(node.value, str)


def _twice_or_plus(operation: ast.UnaryOp) -> bool:
    """``+v``, or ``not not v``, ``- -v``, ``~~v``: the value as it was."""
    if isinstance(operation.op, ast.UAdd):
        return True
    return isinstance(operation.operand, ast.UnaryOp) and type(operation.operand.op) is type(operation.op)


def _compared_with_truth(comparison: ast.Compare) -> ast.expr | None:
    """The value ``v`` of ``v == True``, ``v is True``, ``v != False``, ``v is not False``
    (either side), a boolean answer as it was; else ``None``."""
    if len(comparison.ops) != 1:
        return None
    left, right, operator = comparison.left, comparison.comparators[0], comparison.ops[0]
    truth = True if isinstance(operator, ast.Eq | ast.Is) else False if isinstance(operator, ast.NotEq | ast.IsNot) else None
    for kept, other in ((left, right), (right, left)):
        if truth is not None and isinstance(other, ast.Constant) and other.value is truth:
            return kept
    return None


def _trivial_block(statement: ast.stmt) -> bool:
    """An ``if`` or ``while`` on a constant (``if 1 == 1:``), or a ``for`` of names over a constant."""
    if isinstance(statement, ast.If | ast.While):
        return _constant(statement.test)
    return isinstance(statement, ast.For) and _constant(statement.iter) and _names_only(statement.target)


def _constant(value: ast.expr) -> bool:
    """Built of literals and operators only (``[0]``, ``(1, 2)``, ``-1``, ``range(1)``, ``1 == 1``)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "range":
        return all(_constant(argument) for argument in value.args) and not value.keywords
    literals = ast.Constant | ast.Tuple | ast.List | ast.Set | ast.Load | ast.UnaryOp | ast.BinOp | ast.BoolOp | ast.Compare
    literals |= ast.unaryop | ast.operator | ast.boolop | ast.cmpop
    return all(isinstance(node, literals) for node in ast.walk(value))


def _names_only(target: ast.expr) -> bool:
    """A name, or a tuple or list of names (``a, b = ...``)."""
    if isinstance(target, ast.Tuple | ast.List):
        return all(_names_only(item) for item in target.elts)
    return isinstance(target, ast.Name | ast.Starred) and (not isinstance(target, ast.Starred) or _names_only(target.value))


def _literal_in(node: ast.expr, identities: tuple[object, ...]) -> bool:
    """``node`` is a literal equal to one of ``identities`` and of its type (``()`` is not ``0``)."""
    try:
        literal = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return any(type(literal) is type(identity) and literal == identity for identity in identities)
