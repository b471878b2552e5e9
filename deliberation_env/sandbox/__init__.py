"""The trusted code verdict: run model-written Python in a sandbox and judge it with tests
it cannot reach (:mod:`deliberation_env.sandbox.sandbox`; its threat model is there).

The child program (``_sandbox_child.py``) and the wire codec (``_sandbox_codec.py``) are
loaded by path in the sandboxed interpreter, never imported by the package.
"""

from deliberation_env.sandbox.sandbox import (
    JudgeRequest,
    SandboxResult,
    SandboxUnavailable,
    Verdict,
    judge_many,
    judge_python,
    run_many,
    run_python,
)

__all__ = [
    "JudgeRequest",
    "SandboxResult",
    "SandboxUnavailable",
    "Verdict",
    "judge_many",
    "judge_python",
    "run_many",
    "run_python",
]
