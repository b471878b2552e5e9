"""Doctest collection over the packages: skip modules that cannot be imported by design.

The test tiers (markers unit, api, integrations, ray, slow) are set in tests/conftest.py.
"""

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
