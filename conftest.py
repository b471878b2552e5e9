"""Doctest collection over the packages: skip modules that cannot be imported by design."""

collect_ignore = [
    "agents/vllm_backend.py",  # raises ImportError without vLLM (a CUDA machine); tested in tests/agents
    "deliberation_env/sandbox/_sandbox_child.py",  # the sandbox's child program, not a library module
    # Fixtures, not doctests: collected as doctest modules, two files named conftest clash.
    "tests/conftest.py",
    "tests/algorithms/text/conftest.py",
    "benchmarks",
    "examples",
]
