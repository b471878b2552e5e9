"""Modules that moved into ``deliberation_env/meta/`` still import under their old
names for one release: with a DeprecationWarning, and giving the new modules' objects."""

from __future__ import annotations

import importlib
import sys

import pytest

import deliberation_env as de
from deliberation_env import MOVED
from deliberation_env.moved_modules import MovedModules


@pytest.fixture
def forget(monkeypatch):
    """Forget an old module name, so that the next import of it loads it anew."""

    def forget_name(name: str) -> None:
        monkeypatch.delitem(sys.modules, name, raising=False)
        monkeypatch.delattr(de, name.rpartition(".")[2], raising=False)

    return forget_name


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_warns_and_gives_the_new_modules_objects(old, new, forget):
    forget(old)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    moved = importlib.import_module(new)
    public = [name for name in dir(moved) if not name.startswith("_")]
    assert public and all(getattr(module, name) is getattr(moved, name) for name in public)


def test_from_import_of_an_old_path_gives_the_same_class(forget):
    forget("deliberation_env.config")
    with pytest.warns(DeprecationWarning):
        from deliberation_env.config import EnvConfig
    assert EnvConfig is de.EnvConfig
    assert EnvConfig(team="simulated").team == "simulated"


def test_the_old_env_module_name_stays_the_aec_constructor():
    assert "deliberation_env.env" not in MOVED
    assert callable(de.env) and de.env(team="simulated", task="arithmetic").possible_agents == [
        "agent_0",
        "agent_1",
        "agent_2",
    ]


def test_a_name_not_in_the_table_is_left_to_the_other_finders():
    finder = MovedModules({"deliberation_env.gone": "deliberation_env.meta.env"}, removal="0.2")
    assert finder.find_spec("deliberation_env.meta.env") is None
    assert finder.find_spec("deliberation_env.gone").name == "deliberation_env.gone"


def test_an_attribute_the_new_module_lacks_raises_attribute_error(forget):
    forget("deliberation_env.spaces")
    with pytest.warns(DeprecationWarning):
        spaces = importlib.import_module("deliberation_env.spaces")
    with pytest.raises(AttributeError, match="no_such_name"):
        spaces.no_such_name  # noqa: B018
