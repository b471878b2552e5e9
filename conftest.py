"""Doctest collection over the packages: skip modules that cannot be imported by design."""

collect_ignore = [
    "agents/vllm_backend.py",  # raises ImportError without vLLM (a CUDA machine); tested in tests/agents
    "deliberation_env/_sandbox_child.py",  # the sandbox's child program, not a library module
    "benchmarks",
    "examples",
]
