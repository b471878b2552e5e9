"""Doctest collection over the packages: skip modules that cannot be imported by design;
every test and doctest signs response-cache rows with a key of its own, never the user's,
and writes shared model bases into a folder of its own, never the user's ``~/.cache``.

The test tiers (markers unit, api, integrations, ray, slow) are set in tests/conftest.py.
"""

import pytest

collect_ignore = [
    "agents/vllm_backend.py",  # raises ImportError without vLLM (a CUDA machine); tested in tests/agents
    "benchmarks",
    "examples",
]
collect_ignore_glob = [
    "*/_sandbox_child.py",  # the sandbox's child program, not a library module
    # Fixtures, not doctests: collected as doctest modules, two files named conftest clash.
    "tests/*conftest.py",
]


@pytest.fixture(autouse=True, scope="session")
def _user_files(tmp_path_factory: pytest.TempPathFactory):
    """The response cache's signing key and the shared model bases in the session's
    temporary folder (the variables reach the processes tests start), never in the user's
    ``~/.config`` or ``~/.cache``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DELIBERATION_ENV_CACHE_KEY", str(tmp_path_factory.mktemp("cache-key") / "cache.key"))
        patch.setenv("DELIBERATION_ENV_BASES", str(tmp_path_factory.mktemp("bases")))
        yield
