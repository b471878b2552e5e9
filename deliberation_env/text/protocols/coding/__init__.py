"""The coding protocol: a helper function and a main function on HumanEval (MAGRPO, CoMLRL).

Its documentation page (roles, reward, rules, feedback, what is proven) is
:mod:`deliberation_env.text.protocols.coding.protocol`. One module per job:

- :mod:`~deliberation_env.text.protocols.coding.protocol`: :class:`CodingProtocol`, its
  reward, feedback and prompts.
- :mod:`~deliberation_env.text.protocols.coding.admission`: the rules an agent's code must
  keep to before it runs (the allow-list).
- :mod:`~deliberation_env.text.protocols.coding.analysis`: what the syntax of the team's
  two codes says (functions defined, calls of ``aux``, wrappers).
- :mod:`~deliberation_env.text.protocols.coding.judge`: the team's two programs, each in
  its own sandbox process, and the requests the sandbox judges.
- :mod:`~deliberation_env.text.protocols.coding.counting`: the problem's tests rewritten to
  count, the verdict read back, the verdict cache.
"""

from deliberation_env.text.protocols.coding.admission import (
    ALLOWED_MODULES,
    DENIED_NAMES,
    HELPER,
    Binding,
    Refused,
    check_code,
    check_names,
    top_level_bindings,
)
from deliberation_env.text.protocols.coding.analysis import Analysis, analyse
from deliberation_env.text.protocols.coding.counting import (
    CountedTests,
    TestResult,
    count_tests,
    read_verdict,
)
from deliberation_env.text.protocols.coding.judge import TeamProgram
from deliberation_env.text.protocols.coding.protocol import WEIGHTS, CodingProtocol

__all__ = [
    "ALLOWED_MODULES",
    "DENIED_NAMES",
    "HELPER",
    "WEIGHTS",
    "Analysis",
    "Binding",
    "CodingProtocol",
    "CountedTests",
    "Refused",
    "TeamProgram",
    "TestResult",
    "analyse",
    "check_code",
    "check_names",
    "count_tests",
    "read_verdict",
    "top_level_bindings",
]
