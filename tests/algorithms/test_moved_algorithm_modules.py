"""The module paths of release 0.1 still import, warn, and give the new modules' objects."""

import importlib
import sys

import pytest

import algorithms
from algorithms.meta.base import PolicyGradientLearner
from algorithms.meta.compare import CompareConfig


@pytest.fixture
def forget_old_names():
    """Each test imports the old names afresh (the first import of a name is the one that warns)."""
    yield
    for old in algorithms.MOVED:
        sys.modules.pop(old, None)


@pytest.mark.parametrize("old", sorted(algorithms.MOVED))
def test_an_old_path_warns_and_forwards_to_the_new_module(old, forget_old_names):
    new = importlib.import_module(algorithms.MOVED[old])
    sys.modules.pop(old, None)
    parent = old.rpartition(".")[0]
    if parent in algorithms.MOVED and parent not in sys.modules:
        with pytest.warns(DeprecationWarning, match=f"{parent} moved"):
            importlib.import_module(parent)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {algorithms.MOVED[old]}"):
        stand_in = importlib.import_module(old)
    public = [name for name in vars(new) if not name.startswith("_")]
    assert public and all(getattr(stand_in, name) is getattr(new, name) for name in public)


def test_names_of_the_old_learners_package_and_the_harness_import(forget_old_names):
    with pytest.warns(DeprecationWarning):
        from algorithms.learners.base import PolicyGradientLearner as old_learner
    with pytest.warns(DeprecationWarning):
        from algorithms.harness import CompareConfig as old_config
    assert old_learner is PolicyGradientLearner and old_config is CompareConfig


def test_a_name_that_never_was_a_module_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("algorithms.no_such_module")
