"""Every import of the packages is provided by what a user installs.

A module-level import must come from the runtime dependencies (``make run`` installs nothing
else: a module only the dev extras provide once broke it on every fresh machine). An import
inside a function (an optional backend) must come from the runtime dependencies or from an
extra, so that its error can name the extra to install.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("deliberation_env", "agents", "algorithms")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(requirement: str) -> str:
    return _normalize(re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0])


def _closure(requirements: list[str]) -> set[str]:
    """Installed distributions reachable from ``requirements``, not following extras' edges."""
    seen: set[str] = set()
    todo = list(requirements)
    while todo:
        requirement = todo.pop()
        if ";" in requirement and "extra" in requirement.split(";", 1)[1]:
            continue
        name = _requirement_name(requirement)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo.extend(metadata.requires(name) or [])
        except metadata.PackageNotFoundError:
            pass
    return seen


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """Top-level module names imported by ``path``: (at module level, inside functions)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_level = {id(node) for node in tree.body}
    top, lazy = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {node.module.split(".")[0]}
        else:
            continue
        (top if id(node) in module_level else lazy).update(names)
    return top, lazy


def _third_party(names: set[str]) -> set[str]:
    ours = set(PACKAGES) | {"__future__"}
    return {name for name in names if name not in sys.stdlib_module_names and name not in ours}


DISTRIBUTIONS = metadata.packages_distributions()  # module -> distributions; slow: read once


def _providers(module: str) -> set[str]:
    return {_normalize(d) for d in DISTRIBUTIONS.get(module, [])}


SOURCES = sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))
RUNTIME = _closure(PROJECT["dependencies"])
EXTRAS = _closure(
    [r for name, extra in PROJECT["optional-dependencies"].items() if name != "dev" for r in extra]
)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_are_provided_by_runtime_dependencies_or_an_extra(path):
    top, lazy = _imports(path)
    for module in sorted(_third_party(top)):
        providers = _providers(module)
        assert providers & RUNTIME, (
            f"{path.relative_to(ROOT)} imports {module!r} at module level, but it comes from "
            f"{sorted(providers) or 'no installed distribution'}, not a runtime dependency"
        )
    for module in sorted(_third_party(lazy - top)):
        providers = _providers(module)
        if not providers:  # an optional backend not installed here (vLLM): nothing to check
            continue
        assert providers & (RUNTIME | EXTRAS), (
            f"{path.relative_to(ROOT)} imports {module!r}, which only the dev extras provide"
        )


def test_the_packages_import_with_the_runtime_dependencies_only():
    """What ``make run`` imports loads with every module of the extras blocked: an import of
    one of our modules at module level can pull an extra in too (the CLI once did, through
    the LLM-weight learners)."""
    extras_only = sorted(
        module
        for module, dists in DISTRIBUTIONS.items()
        if module.isidentifier() and module not in PACKAGES and not {_normalize(d) for d in dists} & RUNTIME
    )
    program = (
        "import sys\n"
        f"BLOCKED = set({extras_only!r})\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ImportError(f'{name} comes only with an extra')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import algorithms.cli, deliberation_env, agents\n"
    )
    result = subprocess.run([sys.executable, "-c", program], check=False, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
