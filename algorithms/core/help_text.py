"""Docstrings as ``--help`` prints them: a terminal shows no Sphinx markup, so a role reads
as the name it names and a literal as one pair of backquotes."""

from __future__ import annotations

import functools
import re
from typing import Any

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|ref|math|const):`(~?)([^`<]*?)(?: <[^`>]*>)?`")
"""A Sphinx role in a docstring: ``:func:`~a.b``` (its target's last name), ``:meth:`text <target>```
(the text) or ``:mod:`a.b``` (the whole target)."""


def plain_markup(text: str | None) -> str | None:
    """A docstring as ``--help`` prints it: a Sphinx role as the name it names, in single
    backquotes (``:func:`~algorithms.core.optimizers.adam``` -> ```adam```), and double
    backquotes single (Sphinx's literal ```lr_schedule``` -> ```lr_schedule```): a
    terminal shows neither markup.

    Example:
        >>> plain_markup("see :func:`~algorithms.core.optimizers.adam` and ``lr_schedule``")
        'see `adam` and `lr_schedule`'
    """
    if not text:
        return text

    def named(role: re.Match[str]) -> str:
        tilde, target = role.groups()
        return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"

    return ROLE.sub(named, text).replace("``", "`")


def readable_help() -> None:
    """Make tyro's ``--help`` show the docstrings through :func:`plain_markup` (a client read
    ``:func:`~algorithms.core.advantages.grpo_advantages``` in the help). tyro reads them
    through two functions of its ``_docstrings`` module; where a tyro release lacks one,
    its help keeps the markup."""
    from tyro import _docstrings

    for name in ("get_field_docstring", "get_callable_description"):
        original = getattr(_docstrings, name, None)
        if original is None or getattr(original, "plain_markup", False):
            continue

        @functools.wraps(original)
        def plain(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            return plain_markup(_original(*args, **kwargs))

        plain.plain_markup = True  # type: ignore[attr-defined]
        setattr(_docstrings, name, plain)
