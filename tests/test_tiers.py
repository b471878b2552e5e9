"""The tier markers of tests/conftest.py land where its docstring says, and the fast tier's
expression (``make test-fast``) leaves out every slow, Ray and integration test."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TIERS_CONFTEST = Path(__file__).with_name("conftest.py")
FAST = "not slow and not ray and not integrations"
TEST_DEF = re.compile(r"^\s*def (test_\w+)\(", re.MULTILINE)
CASES = "test_tierdemo_cases.py::test_an_oversized_row_is_refused_at_read_even_with_a_valid_mac"


@pytest.fixture(scope="module")
def preloaded() -> None:
    """The libraries the tree imports, loaded before ``pytester`` notes the loaded modules:
    it drops the ones loaded after, and numpy loads only once per process."""
    for name in ("ray", "supersuit", "pettingzoo.test"):
        importlib.import_module(name)


@pytest.fixture
def suite(preloaded: None, pytester: pytest.Pytester) -> pytest.Pytester:
    """A small test tree with one test per rule, under the tiers conftest."""
    pytester.makeconftest(TIERS_CONFTEST.read_text())
    pytester.mkdir("integrations")
    pytester.makepyfile(  # names no other test module has: pytest imports them by name
        **{
            "integrations/test_tierdemo_tool": "def test_wrapper(): pass",
            "test_tierdemo_ray": "import ray\n\ndef test_actor(): pass",
            "test_tierdemo_wrapper": "from supersuit import dtype_v0\n\ndef test_wrapped(): pass",
            "test_tierdemo_conformance": "from pettingzoo.test import parallel_api_test\n\ndef test_api(): pass",
            "test_tierdemo_paper": (
                "import pytest\n\n@pytest.fixture\ndef server():\n    return 'url'\n\n"
                "def test_served(server): pass\n\ndef test_config_only(): pass"
            ),
            "test_tierdemo_example": "def test_runs(): pass",
            "test_tierdemo_attacks": "def test_hostile(): pass",
            "test_tierdemo_cases": (  # one case of this test is named in SLOW_TESTS
                "import pytest\n\n@pytest.mark.parametrize('size', [6_000, 50 << 20])\n"
                "def test_an_oversized_row_is_refused_at_read_even_with_a_valid_mac(size): pass"
            ),
            "tierdemo_module": 'def f():\n    """\n    >>> 1 + 1\n    2\n    """',
        }
    )
    return pytester


def tiers(pytester: pytest.Pytester) -> dict[str, set[str]]:
    """Each collected test's id and its tier markers."""
    items, _ = pytester.inline_genitems("--doctest-modules", "-p", "no:cacheprovider")
    names = {"unit", "api", "integrations", "ray", "slow"}
    return {item.nodeid: {m.name for m in item.iter_markers()} & names for item in items}


def test_each_rule_gives_its_tier(suite):
    assert tiers(suite) == {
        "integrations/test_tierdemo_tool.py::test_wrapper": {"integrations"},
        "test_tierdemo_ray.py::test_actor": {"ray"},
        "test_tierdemo_wrapper.py::test_wrapped": {"integrations"},
        "test_tierdemo_conformance.py::test_api": {"api"},
        "test_tierdemo_paper.py::test_served": {"slow"},  # a real-model fixture's name
        "test_tierdemo_paper.py::test_config_only": {"unit"},
        "test_tierdemo_example.py::test_runs": {"slow"},
        "test_tierdemo_attacks.py::test_hostile": {"slow"},
        f"{CASES}[6000]": {"unit"},
        f"{CASES}[52428800]": {"slow"},
        "tierdemo_module.py::tierdemo_module.f": {"unit"},
    }


def test_the_fast_tier_runs_unit_and_api_only(suite):
    run = suite.inline_run("--doctest-modules", "-p", "no:cacheprovider", "-m", FAST)
    assert {report.nodeid for report in run.getreports("pytest_runtest_logreport") if report.when == "call"} == {
        "test_tierdemo_conformance.py::test_api",
        "test_tierdemo_paper.py::test_config_only",
        f"{CASES}[6000]",
        "tierdemo_module.py::tierdemo_module.f",
    }


def test_every_slow_test_named_is_a_test_of_the_suite():
    """A renamed test would leave its old name in ``SLOW_TESTS`` and rejoin the fast tier."""
    spec = importlib.util.spec_from_file_location("tiers_conftest", TIERS_CONFTEST)
    tiers_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiers_module)
    tests = TIERS_CONFTEST.parent
    defined = {name for path in tests.rglob("test_*.py") for name in TEST_DEF.findall(path.read_text())}
    named = {name.partition("[")[0] for name in tiers_module.SLOW_TESTS}
    assert sorted(named - defined) == []
    assert sorted(name for name in tiers_module.SLOW_FILES if not any(tests.rglob(name))) == []
