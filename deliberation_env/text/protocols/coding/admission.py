"""The coding protocol's admission rules: what each agent's code may hold (the allow-list).

Both codes are checked with :mod:`ast` before anything runs, by the same rules on every
path (scoring, leave-one-out, every turn). Code that breaks a rule is *refused*: it scores
as not defined and does not run (a refused helper's code is left out: no helper process
runs; a refused main function ends the scoring at ``main_defined``), and the agents'
feedback names the line and the rule (:mod:`deliberation_env.text.protocols.coding.protocol`,
the protocol's documentation page, has the reward and what the rules prove).

1. *Top level*: only imports, function definitions (``def``, ``async def``) and
   docstrings. A top-level function has literal default values, annotations that are
   type expressions (names, attributes, subscripts, ``|``, literals) and no decorator but
   ``functools.cache`` and ``functools.lru_cache`` (with literal arguments; never on the
   entry point). So no code an agent wrote runs while the program loads: no trace,
   profile or audit hook, no edit of builtins or ``sys.modules``, no decorator, default
   argument, annotation or class body that calls something.
2. *Imports* anywhere: absolute and named (no ``*``), of :data:`ALLOWED_MODULES` only
   (and ``from __future__ import annotations``):
   modules of pure computation, none of which reaches the interpreter (``sys``,
   ``builtins``, ``gc``, ``inspect``, ``ctypes``, ``os`` are out) or keeps state one
   agent's call could change for the other (``random``'s seed, ``decimal``'s context).
3. *Anywhere*: no ``global`` statement, no attribute assignment or deletion, no dunder
   name (``__builtins__``, ``__import__``), no attribute whose name starts with ``_`` or
   reads a frame, code object or traceback (``gi_frame``, ``f_globals``, ``tb_frame``,
   ``co_code``; prefixes :data:`FRAME_PREFIXES`), none of :data:`DENIED_NAMES` (the
   builtins that read or write another object's namespace or run strings: ``globals``,
   ``vars``, ``getattr``, ``setattr``, ``hasattr``, ``exec``, ``compile``, ``open``; the
   library functions that reach attributes by name or evaluate strings: ``attrgetter``,
   ``Formatter``, ``get_type_hints``, ``update_wrapper``, ``singledispatch``, ...), no
   attribute under which an allowed module holds one that is not (``typing.sys``,
   ``statistics.random``: :data:`MODULE_ATTRIBUTES`). And none of the other ways found to
   reach an attribute by a string: no class pattern in ``match`` (``case C(x)`` reads the
   attributes named by ``C.__match_args__``, and a metaclass decides what ``C`` matches),
   ``type`` only as ``type(value)`` compared (``type(x) is int``) or made a string
   (``str(type(x))``, ``f"{type(x)}"``), so never its result called or kept (``type(name, bases, namespace)`` makes such classes and metaclasses,
   and so does ``meta = type(int)`` called later), ``.format`` and ``.format_map`` only
   on a string literal whose fields name no attribute or item (``"{0.__globals__}"``
   reads one: :data:`FORMAT_METHODS`), no method ``__reduce__`` or ``__reduce_ex__``
   (``copy.copy`` calls what it returns and sets the names of its state with
   ``setattr``: :data:`COPY_HOOKS`).
4. *Names*: each agent binds at top level only names of its own: no builtin's name, no
   dunder name, no name the prompt binds (unless it repeats the prompt's own import or
   function unchanged). The helper never binds the entry point; the main agent binds it
   by ``def`` only. A name both agents bind differently refuses the helper's code (the
   main agent's binding would replace it).
5. *Depth*: no code nested deeper than :data:`MAX_NESTING` syntax-tree levels. The checks
   walk the tree recursively, so deeper code could only be refused by a ``RecursionError``,
   which depends on the interpreter's recursion limit (a library may raise it: inductor
   does); a fixed bound gives every process the same verdict.

A top-level statement that repeats one of the prompt's unchanged (its imports, its helper
functions, even without their docstrings) is the prompt's own code and is not checked:
an answer that copies the prompt before its solution is admitted, and every canonical
solution is.

The rules are a first filter, not the wall between the agents: that one agent's code
cannot change what another's does rests on the process boundary
(:mod:`deliberation_env.text.protocols.coding.judge`); what the rules prove, and what they
may miss, is in the protocol's page ("What is proven, and by what").

>>> helper = ast.parse("def aux(x):\\n    return x\\n")
>>> main = ast.parse("def f(x):\\n    return getattr(x, 'y')\\n")
>>> refusals(helper, main, "", "f")
('', 'line 2: the name getattr, which reads or writes namespaces or evaluates strings')
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
import importlib
import string
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

HELPER = "aux"
"""The name of the helper agent's function."""

ALLOWED_MODULES = frozenset({
    "bisect", "cmath", "collections", "collections.abc", "copy", "datetime", "fractions",
    "functools", "hashlib", "heapq", "itertools", "math", "operator", "re", "statistics",
    "string", "typing",
})  # fmt: skip
"""The modules the agents' code may import (rule 2 of the module docstring)."""
DENIED_NAMES = frozenset({
    # builtins that read or write another object's namespace, or run strings
    "globals", "vars", "locals", "getattr", "setattr", "delattr", "hasattr", "exec", "compile",
    "open", "breakpoint",
    # library functions that reach attributes by name, set them, or evaluate strings
    "attrgetter", "methodcaller", "Formatter", "get_type_hints", "ForwardRef",
    "singledispatch", "singledispatchmethod", "update_wrapper", "wraps", "total_ordering",
    "register",
})  # fmt: skip
"""Names the agents' code may not use, as a name, an attribute or an import (rule 3)."""

FRAME_PREFIXES = ("f_", "gi_", "cr_", "ag_", "tb_", "co_")
"""Attribute prefixes of frames, generators, coroutines, tracebacks and code objects."""
COPY_HOOKS = frozenset({"__reduce__", "__reduce_ex__"})
"""Methods no class may define: ``copy.copy`` and ``copy.deepcopy`` call what they return
and ``setattr`` the names in its state on that call's result (rule 3)."""
FORMAT_METHODS = frozenset({"format", "format_map"})
"""String methods whose fields read attributes and items by name (``"{0.__globals__}"``)."""
CACHE_DECORATORS = frozenset({"cache", "lru_cache"})
"""The ``functools`` decorators a top-level function may have (never the entry point)."""
MAX_NESTING = 200
"""The deepest syntax tree admitted (rule 5): far beyond written code (every canonical
HumanEval solution is admitted), and shallow enough that the recursive checks stay well
inside Python's default recursion limit."""

_BUILTIN_NAMES = frozenset(dir(builtins))


class Refused(Exception):
    """A rule of the module docstring that an agent's code breaks (line and rule)."""

    def __init__(self, node: ast.stmt | ast.expr | ast.pattern, rule: str) -> None:
        super().__init__(f"line {node.lineno}: {rule}")


@dataclass(frozen=True)
class Binding:
    """One top-level binding of a name.

    Attributes:
        name: The name bound.
        key: What it binds: an import's ``module`` or ``module:name``, else the
            :func:`statement_key` (the same key binds the same object).
        node: The statement.
        statement: Its :func:`statement_key`.
    """

    name: str
    key: str
    node: ast.stmt
    statement: str


def check_depth(module: ast.Module) -> None:
    """Refuse a syntax tree deeper than :data:`MAX_NESTING` levels (rule 5), walked without
    recursion, so the verdict does not depend on the recursion limit.

    Raises:
        Refused: Naming the line of the first node past the bound.
    """
    level = [module]
    for _ in range(MAX_NESTING):
        level = [child for node in level for child in ast.iter_child_nodes(node)]
        if not level:
            return
    deeper = next((node for node in level if hasattr(node, "lineno")), None)
    raise Refused(deeper or module.body[0], f"code nested deeper than {MAX_NESTING} levels, too deep to check")


def top_level_bindings(module: ast.Module) -> list[Binding]:
    """The names ``module``'s top-level statements bind, in order (imports, functions,
    classes and assignments' plain names)."""
    bindings = []
    for statement in module.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            for alias in statement.names:
                bindings.append(Binding(*_imported(statement, alias), statement, statement_key(statement)))
        elif isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            key = statement_key(statement)
            bindings.append(Binding(statement.name, key, statement, key))
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            key = statement_key(statement)
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                names = [node.id for node in ast.walk(target) if isinstance(node, ast.Name)]
                bindings += [Binding(name, key, statement, key) for name in names]
    return bindings


def statement_key(statement: ast.stmt) -> str:
    """What a top-level statement is, apart from its position and a definition's docstring:
    two statements with the same key do the same."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return ast.dump(_without_docstring(statement))
    return ast.dump(statement)


def _imported(statement: ast.Import | ast.ImportFrom, alias: ast.alias) -> tuple[str, str]:
    """The name an import alias binds, and what it binds (``module`` or ``module:name``)."""
    if isinstance(statement, ast.Import):
        if alias.asname:
            return alias.asname, alias.name
        return alias.name.split(".")[0], alias.name.split(".")[0]
    return alias.asname or alias.name, f"{'.' * statement.level}{statement.module}:{alias.name}"


def _without_docstring(node: ast.stmt) -> ast.stmt:
    """A shallow copy of a definition without its docstring (a repeated prompt function
    may drop it); the definition itself is unchanged."""
    node = copy.copy(node)
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1:
        node.body = body[1:]
    return node


def check_code(module: ast.Module, entry_point: str, prompt: Sequence[Binding], own: Sequence[Binding]) -> None:
    """Rules 1 to 3 of the module docstring on one agent's code; a top-level statement
    that repeats one of the prompt's unchanged is the prompt's trusted code, not checked.

    Args:
        module: The agent's parsed code.
        entry_point: The problem's entry point (no decorator may wrap its ``def``).
        prompt: The prompt's :func:`top_level_bindings`.
        own: The code's :func:`top_level_bindings`.

    Raises:
        Refused: Naming the line and the first rule broken.
        RecursionError: If the code is nested too deeply to check.
    """
    trusted = {binding.statement for binding in prompt}
    imports = {binding.name: binding.key for binding in [*prompt, *own]}
    checked = [statement for statement in module.body if statement_key(statement) not in trusted]
    for statement in checked:
        _check_top_level(statement, entry_point, imports)
    nodes = [node for statement in checked for node in ast.walk(statement)]
    type_calls = {id(operand.func) for operand in _type_operands(nodes) if _type_of_one_value(operand)}
    for node in nodes:
        _check_node(node)
        _check_reflection(node, type_calls)


def _check_top_level(statement: ast.stmt, entry_point: str, imports: Mapping[str, str]) -> None:
    """Rule 1: imports, functions whose definition runs nothing of the agent's, docstrings."""
    if isinstance(statement, ast.Import | ast.ImportFrom | ast.Pass):
        return
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return
    if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        raise Refused(
            statement,
            f"a top-level {type(statement).__name__} statement; only imports, function definitions "
            "and docstrings may stand at top level",
        )
    for decorator in statement.decorator_list:
        if statement.name == entry_point or not _cache_decorator(decorator, imports):
            raise Refused(
                decorator,
                f"a decorator on {statement.name}; top-level functions may only have "
                f"functools.cache or functools.lru_cache, and {entry_point} none",
            )
    arguments = statement.args
    for default in [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]:
        if not _literal(default):
            raise Refused(default, f"a default value of {statement.name} that is not a literal")
    annotated = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    annotations = [a.annotation for a in annotated if a is not None] + [statement.returns]
    for annotation in annotations:
        if annotation is not None and not _type_expression(annotation):
            raise Refused(annotation, f"an annotation of {statement.name} that is not a type expression")


def _cache_decorator(decorator: ast.expr, imports: Mapping[str, str]) -> bool:
    """``functools.cache`` or ``functools.lru_cache`` (or those names imported from
    functools), called with literal arguments or not; ``imports`` maps each top-level name
    of the prompt and the agent's code to what it binds."""
    if isinstance(decorator, ast.Call):
        return _literal_arguments(decorator) and _cache_decorator(decorator.func, imports)
    if isinstance(decorator, ast.Attribute):
        return (
            decorator.attr in CACHE_DECORATORS
            and isinstance(decorator.value, ast.Name)
            and imports.get(decorator.value.id) == "functools"
        )
    return isinstance(decorator, ast.Name) and imports.get(decorator.id) in {f"functools:{n}" for n in CACHE_DECORATORS}


def _literal_arguments(call: ast.Call) -> bool:
    return all(_literal(node) for node in [*call.args, *(keyword.value for keyword in call.keywords)])


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _type_expression(node: ast.expr) -> bool:
    """Names, attributes, subscripts, tuples, lists, ``|`` and literals: evaluating it at
    ``def`` time calls no code of the agents'."""
    if isinstance(node, ast.Constant | ast.Name):
        return True
    if isinstance(node, ast.Attribute):
        return _type_expression(node.value)
    if isinstance(node, ast.Subscript):
        return _type_expression(node.value) and _type_expression(node.slice)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_type_expression(element) for element in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _type_expression(node.left) and _type_expression(node.right)
    return False


def _check_node(node: ast.AST) -> None:
    """Rules 2 and 3 on one node of an agent's code."""
    if isinstance(node, ast.Global):
        raise Refused(node, "a global statement")
    if isinstance(node, ast.Import | ast.ImportFrom):
        _check_import(node)
    elif isinstance(node, ast.Name):
        _check_identifier(node, node.id, "name")
    elif isinstance(node, ast.Attribute):
        _check_attribute(node, node.attr)
        if isinstance(node.ctx, ast.Store | ast.Del):
            raise Refused(node, f"an assignment or deletion of the attribute .{node.attr}")


def calls_name(node: ast.AST, name: str) -> bool:
    """``node`` is a call of the plain name ``name`` (``name(...)``)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _identifiers_bound(node: ast.AST) -> set[str]:
    """Every identifier ``node`` could bind: any name it holds but a read (``Name`` loaded),
    an attribute's or a constant's: assignments, parameters, definitions, import aliases,
    ``except ... as``, ``match`` captures, ``global`` (one list of kinds would miss one)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) or isinstance(node, ast.Attribute | ast.Constant):
        return set()
    names: set[str] = set()
    for _, value in ast.iter_fields(node):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                names.add(item)
    return names


STRING_CALLS = frozenset({"str", "repr", "print"})
"""Builtins that make what they are given a string (or print it): ``type(x)`` may be their argument."""


def _type_of_one_value(node: ast.AST) -> bool:
    """``type(x)``: a call of the name ``type`` with one positional argument."""
    return (
        calls_name(node, "type")
        and len(node.args) == 1
        and not isinstance(node.args[0], ast.Starred)
        and not node.keywords
    )


def _type_operands(nodes: list[ast.AST]) -> list[ast.AST]:
    """Where ``type(x)`` is admitted, as what it returns goes nowhere it could be called: an
    operand of a comparison (``type(x) is int``), a field of an f-string, the only argument
    of ``str`` or ``repr`` or an argument of ``print``, where the code binds none of those
    names."""
    bound = set().union(*map(_identifiers_bound, nodes))
    operands: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.Compare):
            operands += [node.left, *node.comparators]
        elif isinstance(node, ast.FormattedValue):
            operands.append(node.value)
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in STRING_CALLS
            and node.func.id not in bound and not node.keywords and (len(node.args) == 1 or node.func.id == "print")
        ):  # fmt: skip
            operands += node.args
    return operands


def _check_reflection(node: ast.AST, type_calls: set[int]) -> None:
    """Rule 3's reflective forms: class patterns, ``type`` but as ``type(x)`` in a
    comparison, a call of what ``type(x)`` returns, format strings that read attributes,
    the copy hooks.

    Args:
        node: A node of the agent's code.
        type_calls: The ``id`` of each ``type`` name that is called as ``type(x)`` as an
            operand of a comparison (``type(x) == list``).
    """
    if isinstance(node, ast.MatchClass):
        raise Refused(node, "a class pattern (case C(...)), which reads attributes named by C.__match_args__")
    if isinstance(node, ast.Name) and node.id == "type" and id(node) not in type_calls:
        raise Refused(
            node,
            "the name type other than as type(value) in a comparison (type(x) is int) or a string "
            "(str(type(x)), f'{type(x)}'); "
            "type(name, bases, namespace) makes classes, and so does what type(value) returns",
        )
    if isinstance(node, ast.Call) and _type_of_one_value(node.func):
        raise Refused(node, "a call of what type(value) returns, which may be type itself")
    if isinstance(node, ast.Attribute) and node.attr in FORMAT_METHODS and not _plain_format_string(node.value):
        raise Refused(
            node,
            f"the method .{node.attr} on anything but a string literal whose fields name no "
            "attribute or item (write an f-string)",
        )
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in COPY_HOOKS:
        raise Refused(node, f"a method {node.name}, which copy.copy calls and whose state it sets by name")


def _plain_format_string(node: ast.expr) -> bool:
    """A string literal whose format fields (nested ones included) are plain positions or
    names: ``"{0.real}"`` and ``"{0[key]}"`` read by name, ``"{}"`` and ``"{x:>{w}}"`` do not."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and _plain_fields(node.value)


def _plain_fields(text: str) -> bool:
    try:
        fields = list(string.Formatter().parse(text))
    except ValueError:
        return False
    return all(
        (name is None or not any(mark in name for mark in ".[")) and (not spec or _plain_fields(spec))
        for _, name, spec, _ in fields
    )


def _check_identifier(node: ast.stmt | ast.expr | ast.pattern, name: str, kind: str) -> None:
    if name.startswith("__"):
        raise Refused(node, f"the dunder {kind} {name}")
    if name in DENIED_NAMES:
        raise Refused(node, f"the {kind} {name}, which reads or writes namespaces or evaluates strings")


def _check_attribute(node: ast.expr | ast.pattern, name: str) -> None:
    if name.startswith("_"):
        raise Refused(node, f"the attribute .{name} (no attribute may start with _)")
    if name.startswith(FRAME_PREFIXES):
        raise Refused(node, f"the attribute .{name} (frames, code objects and tracebacks are out of reach)")
    if name in MODULE_ATTRIBUTES:
        raise Refused(node, f"the attribute .{name}, a module outside the allowed ones")
    _check_identifier(node, name, "attribute")


def _check_import(node: ast.Import | ast.ImportFrom) -> None:
    """Rule 2: absolute, named imports of allowed modules."""
    allowed = ", ".join(sorted(ALLOWED_MODULES))
    for alias in node.names:
        for name in filter(None, (alias.asname, alias.name.split(".")[-1])):
            _check_identifier(node, name, "import")
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name not in ALLOWED_MODULES:
                raise Refused(node, f"an import of {alias.name}; allowed modules: {allowed}")
        return
    if node.module == "__future__" and not node.level and {alias.name for alias in node.names} == {"annotations"}:
        return  # postponed annotations only: the judged program opens with it (humaneval.with_futures_first)
    if node.level or node.module not in ALLOWED_MODULES:
        raise Refused(node, f"an import from {'.' * node.level}{node.module}; allowed modules: {allowed}")
    for alias in node.names:
        if alias.name == "*" or alias.name.startswith("_") or alias.name in MODULE_ATTRIBUTES:
            raise Refused(node, f"from {node.module} import {alias.name}; import allowed names one by one")


def _module_attributes() -> frozenset[str]:
    """The names under which an allowed module holds a module that is not allowed: every
    way from an allowed module to another module ends with one of them."""
    return frozenset(
        name
        for path in ALLOWED_MODULES
        for name, value in vars(importlib.import_module(path)).items()
        if isinstance(value, types.ModuleType) and value.__name__ not in ALLOWED_MODULES
    )


MODULE_ATTRIBUTES = _module_attributes()
"""Attribute names that reach a module outside :data:`ALLOWED_MODULES` from an allowed one
(``typing.sys``, ``statistics.random``, ``re.enum``, ...): refused anywhere (rule 3)."""


def check_names(
    own: list[Binding], prompt: Mapping[str, set[str]], entry_point: str, seat: str
) -> None:
    """Rule 4 on one agent's top-level bindings.

    Args:
        own: The agent's :func:`top_level_bindings`.
        prompt: Each name the prompt binds, with the keys it binds it to.
        entry_point: The problem's entry point.
        seat: ``"helper"`` or ``"main"``.

    Raises:
        Refused: Naming the line and the binding.
    """
    for binding in own:
        name, node = binding.name, binding.node
        if name.startswith("__") or name in _BUILTIN_NAMES:
            raise Refused(node, f"a binding of {name}, a builtin or dunder name that the other agent's code uses")
        if name == entry_point:
            if seat == "helper":
                raise Refused(node, f"a binding of {entry_point}, the main agent's function")
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                raise Refused(node, f"a binding of {entry_point} that is not its def")
        elif name == HELPER and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            raise Refused(node, f"a binding of {HELPER} that is not a def")
        elif name in prompt and prompt[name] != {binding.key}:
            raise Refused(node, f"a binding of {name}, which the problem's prompt binds (repeat it unchanged or rename)")


def _clash(helper: list[Binding], main: list[Binding]) -> Binding | None:
    """The helper's first binding of a name the main agent binds to something else."""
    main_keys: dict[str, set[str]] = {}
    for binding in main:
        main_keys.setdefault(binding.name, set()).add(binding.key)
    return next((b for b in helper if b.name in main_keys and main_keys[b.name] != {b.key}), None)


def refusals(helper: ast.Module, main: ast.Module, prompt: str, entry_point: str) -> tuple[str, str]:
    """Why each code is refused (``""``: admitted), by the module docstring's rules.

    Args:
        helper: The helper's parsed code.
        main: The main agent's parsed code.
        prompt: The problem's prompt (its bindings are the trusted ones).
        entry_point: The problem's entry point.
    """
    trusted = prompt_bindings(prompt)
    prompt_keys: dict[str, set[str]] = {}
    for binding in trusted:
        if binding.name != entry_point:
            prompt_keys.setdefault(binding.name, set()).add(binding.key)
    found, bindings = [], []
    for seat, module in (("helper", helper), ("main", main)):
        try:
            check_depth(module)
            bindings.append(top_level_bindings(module))
            check_code(module, entry_point, trusted, bindings[-1])
            check_names(bindings[-1], prompt_keys, entry_point, seat)
        except Refused as refusal:
            found.append(str(refusal))
        except RecursionError:
            found.append("code nested too deeply to check")
        else:
            found.append("")
    helper_refused, main_refused = found
    if not helper_refused and not main_refused:
        clash = _clash(*bindings)
        if clash is not None:
            helper_refused = str(Refused(clash.node, f"a binding of {clash.name}, which the main agent's code binds too"))
    return helper_refused, main_refused


@functools.lru_cache(maxsize=1024)
def prompt_bindings(prompt: str) -> tuple[Binding, ...]:
    """The prompt's :func:`top_level_bindings` (parsed once per prompt)."""
    return tuple(top_level_bindings(ast.parse(prompt)))
