"""Old module paths that still import for one release, with a ``DeprecationWarning``.

A package that moves a module installs one :class:`MovedModules` finder with the table of
its moves (old dotted name -> new dotted name). Importing an old name warns once, naming
the new one, and gives a module whose attributes are the new module's own objects:

>>> import sys, warnings
>>> finder = MovedModules({"old_json_home": "json"}, "0.2")
>>> sys.meta_path.append(finder)
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     from old_json_home import loads
>>> import json
>>> loads is json.loads, caught[0].category.__name__
(True, 'DeprecationWarning')
>>> sys.meta_path.remove(finder); del sys.modules["old_json_home"]
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import types
import warnings
from collections.abc import Mapping
from typing import Any


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A finder and loader for modules that moved: each old name loads as a stand-in
    module that forwards every attribute to the new module.

    The stand-in forwards rather than being the new module itself so that the new module
    keeps its own ``__name__`` and ``__spec__`` (pickling, reloading and tools read them).

    Args:
        moved: Old dotted module name -> the new dotted module name.
        removal: The release in which the old names go (said in the warning).
    """

    def __init__(self, moved: Mapping[str, str], removal: str) -> None:
        self.moved = dict(moved)
        self.removal = removal

    def find_spec(
        self, fullname: str, path: Any = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for an old name (loaded by this finder); None for any other name."""
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def exec_module(self, module: types.ModuleType) -> None:
        """Warn that the module moved, and make ``module`` forward to the new one."""
        new_name = self.moved[module.__name__]
        warnings.warn(
            f"{module.__name__} moved to {new_name}: import that instead "
            f"({module.__name__} goes in release {self.removal})",
            DeprecationWarning,
            stacklevel=2,
        )
        new = importlib.import_module(new_name)
        module.__getattr__ = lambda name: getattr(new, name)
        module.__dir__ = lambda: dir(new)
        module.__doc__ = new.__doc__
