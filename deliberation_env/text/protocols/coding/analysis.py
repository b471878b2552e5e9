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
from collections.abc import Iterator
from dataclasses import dataclass

from deliberation_env.text.protocols.coding.admission import (
    HELPER,
    calls_name,
    prompt_bindings,
    refusals,
    top_level_bindings,
)
from deliberation_env.text.protocols.coding.judge import TeamProgram


@dataclass(frozen=True)
class Analysis:
    """The static facts of a team's two codes (module docstring).

    Attributes:
        program: The team's two programs: the prompt then the helper's code if admitted,
            the prompt then the main agent's code.
        helper_refused, main_refused: Why a code was refused (``""``: admitted).
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
        wrapper=_wrapper(main, _own_functions(functions, prompt)),
        ignored_call=any(isinstance(node, ast.Expr) and calls_name(node.value, HELPER) for node in ast.walk(main)),
    )


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
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == HELPER:
            return True
        if isinstance(node, ast.Name) and node.id == HELPER and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == HELPER:
            return True
        if isinstance(node, ast.arg) and node.arg == HELPER:
            return True
        if isinstance(node, ast.MatchAs | ast.MatchStar | ast.ExceptHandler) and node.name == HELPER:
            return True  # ``case aux:``, ``case [*aux]``, ``except E as aux`` (red team twenty-six)
        if isinstance(node, ast.MatchMapping) and node.rest == HELPER:
            return True  # ``case {**aux}``
    return False


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
    return _helpers_work_only(body, helper_functions)


IDENTITIES: dict[type[ast.operator], tuple[object, ...]] = {
    ast.Add: (0, (), "", b""), ast.Sub: (0,), ast.Mult: (1,), ast.FloorDiv: (1,), ast.Div: (1,), ast.Pow: (1,),
    ast.BitOr: (0,), ast.BitXor: (0,), ast.LShift: (0,), ast.RShift: (0,),
}  # fmt: skip
"""The constants that leave a value as it is under each operator (``x + 0``, ``x + ()``,
``x * 1``): a value passed through one is passed on (red team 37)."""
CONVERSIONS = frozenset({"list", "tuple", "set", "frozenset", "dict", "str", "int", "float", "bool", "copy", "deepcopy"})
"""Calls that give their argument back in another container or type: passed on (red team 37)."""


def _helpers_work_only(body: list[ast.stmt], helper_functions: tuple[str, ...]) -> bool:
    """Every statement of ``body`` passes the helper's results on (:func:`_wrapper`), one
    returns a value, and ``aux`` is called. Trivial identities are read through (red team
    37): a value under an identity operation (``+ 0``, ``+ ()``, ``* 1``), ``or``/``and``
    and a conditional expression of passed-on values, a conversion (``tuple(aux(x))``), a
    subscript with a constant (``aux(x)[0]``, ``aux(x)[:]``), a display of passed-on values
    (``[*aux(x)]``), an unpacking assignment (``a, b = aux(x)``), and the blocks of an ``if``
    or ``while`` on a constant, a ``for`` over a constant and a ``try``."""
    statements = list(_flattened(body))
    if any(statement is None for statement in statements):
        return False
    returns = False
    for statement in statements:
        if isinstance(statement, ast.Return):
            returns = returns or statement.value is not None
            if statement.value is not None and not _passed_on(statement.value, helper_functions):
                return False
        elif isinstance(statement, ast.Assign):
            if not all(_names_only(target) for target in statement.targets):
                return False
            if not _passed_on(statement.value, helper_functions):
                return False
        elif not isinstance(statement, ast.Pass | ast.Raise):
            return False
    return returns and any(calls_name(node, HELPER) for statement in body for node in ast.walk(statement))


def _flattened(body: list[ast.stmt]) -> Iterator[ast.stmt | None]:
    """The simple statements of ``body``, the blocks of trivial compound statements read
    through (:func:`_helpers_work_only`); ``None`` for a compound statement that is not."""
    for statement in body:
        if _trivial_block(statement):
            yield from _flattened([*statement.body, *statement.orelse])
        elif isinstance(statement, ast.Try):
            handlers = [line for handler in statement.handlers for line in handler.body]
            yield from _flattened([*statement.body, *handlers, *statement.orelse, *statement.finalbody])
        elif isinstance(statement, ast.If | ast.While | ast.For | ast.AsyncFor | ast.With | ast.AsyncWith | ast.Match):
            yield None
        else:
            yield statement


def _trivial_block(statement: ast.stmt) -> bool:
    """An ``if`` or ``while`` on a constant, or a ``for`` of names over a constant."""
    if isinstance(statement, ast.If | ast.While):
        return isinstance(statement.test, ast.Constant)
    return isinstance(statement, ast.For) and _constant(statement.iter) and _names_only(statement.target)


def _constant(value: ast.expr) -> bool:
    """Built of literals only (``[0]``, ``(1, 2)``, ``range(1)``)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "range":
        return all(_constant(argument) for argument in value.args) and not value.keywords
    return all(isinstance(node, ast.Constant | ast.Tuple | ast.List | ast.Set | ast.Load) for node in ast.walk(value))


def _names_only(target: ast.expr) -> bool:
    """A name, or a tuple or list of names (``a, b = ...``)."""
    if isinstance(target, ast.Tuple | ast.List):
        return all(_names_only(item) for item in target.elts)
    return isinstance(target, ast.Name | ast.Starred) and (not isinstance(target, ast.Starred) or _names_only(target.value))


def _passed_on(value: ast.expr | None, helper_functions: tuple[str, ...]) -> bool:
    """``value`` is only the helper's results, names and constants, read through trivial
    identities (:func:`_helpers_work_only`)."""
    def passed(item: ast.expr | None) -> bool:
        return _passed_on(item, helper_functions)

    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        if value.func.id in helper_functions:
            return True
        return value.func.id in CONVERSIONS and len(value.args) <= 1 and not value.keywords and all(map(passed, value.args))
    if isinstance(value, ast.Tuple | ast.List | ast.Set):
        return all(passed(item) for item in value.elts)
    if isinstance(value, ast.Starred):
        return passed(value.value)
    if isinstance(value, ast.BinOp):
        identities = IDENTITIES.get(type(value.op), ())
        for kept, other in ((value.left, value.right), (value.right, value.left)):
            if isinstance(other, ast.Constant | ast.Tuple) and _literal_in(other, identities) and passed(kept):
                return other is value.right or isinstance(value.op, ast.Add | ast.Mult | ast.BitOr | ast.BitXor)
        return False
    if isinstance(value, ast.BoolOp):
        return all(passed(item) for item in value.values)
    if isinstance(value, ast.IfExp):
        return passed(value.body) and passed(value.orelse)
    if isinstance(value, ast.Subscript):
        return passed(value.value) and _constant_index(value.slice)
    return isinstance(value, ast.Name | ast.Constant)


def _literal_in(node: ast.expr, identities: tuple[object, ...]) -> bool:
    """``node`` is a literal equal to one of ``identities`` and of its type (``()`` is not ``0``)."""
    try:
        literal = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return any(type(literal) is type(identity) and literal == identity for identity in identities)


def _constant_index(index: ast.expr) -> bool:
    """A constant index or slice (``[0]``, ``[:]``, ``[::-1]``)."""
    if isinstance(index, ast.Slice):
        return all(part is None or _constant(part) for part in (index.lower, index.upper, index.step))
    return _constant(index)
