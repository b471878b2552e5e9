"""Packages that import their names when first used (PEP 562), so that importing a package
(as the ``deliberate`` command's help does) loads no torch until a learner is asked for.

:func:`lazy_package` turns a package into a :class:`LazyPackage` with a table of where each
of its names lives. A name may also be the name of a submodule (``algorithms.text.train``
the module, ``algorithms.text.train`` the function exported by the package): the package's
attribute stays the function, as an eager ``from algorithms.text.train import train`` in
its ``__init__`` left it, whichever of the two is imported first.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Mapping
from typing import Any


class LazyPackage(types.ModuleType):
    """A package whose names of :attr:`homes` are imported from their modules when first used.

    Attributes:
        homes: The module of each name (a name that is the module itself, such as a
            package's ``baselines`` submodule, maps to that module).
    """

    homes: Mapping[str, str]

    def __getattr__(self, name: str) -> Any:
        if name not in self.homes:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        module = importlib.import_module(self.homes[name])
        value = module if module.__name__ == f"{self.__name__}.{name}" and not hasattr(module, name) else getattr(module, name)
        super().__setattr__(name, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        # The import system names a newly imported submodule on its package; where the
        # package offers a name of that submodule's (train), the package keeps that name.
        if isinstance(value, types.ModuleType) and self.homes.get(name) == value.__name__ and hasattr(value, name):
            value = getattr(value, name)
        super().__setattr__(name, value)


def lazy_package(name: str, homes: Mapping[str, str]) -> None:
    """Make the package ``name`` (call it from its ``__init__`` with ``__name__``) a
    :class:`LazyPackage` importing each of ``homes``' names from its module when first used."""
    package = sys.modules[name]
    package.__class__ = LazyPackage
    package.homes = dict(homes)
