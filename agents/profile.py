"""The reasoning profile z_prof: cheap features of a reasoning text, each in [0, 1].

=====  ================  ==========================================================
index  name              feature
=====  ================  ==========================================================
0      length            words / 300, clipped to 1
1      steps             non-empty lines / 10, clipped to 1
2      equations         lines containing ``=`` / 5, clipped to 1
3      hedging           hedge words ("maybe", "perhaps", "not sure", ...) / 3, clipped
4      self_check        1 if the text checks itself ("check", "verify", ...), else 0
5      answer_repeated   1 if the decision appears more than once in the text, else 0
=====  ================  ==========================================================
"""

from __future__ import annotations

import re

PROFILE_FEATURES = ("length", "steps", "equations", "hedging", "self_check", "answer_repeated")
PROFILE_SIZE = len(PROFILE_FEATURES)

_HEDGES = re.compile(r"\b(maybe|perhaps|might|possibly|not sure|unsure|i think|guess|probably)\b", re.IGNORECASE)
_CHECKS = re.compile(r"\b(check|verify|verif|double[- ]check|confirm|let me re)", re.IGNORECASE)


def reasoning_profile(text: str, decision: str | None) -> tuple[float, ...]:
    """Compute the profile features of ``text`` (see the module table).

    >>> profile = reasoning_profile("2 + 3 = 5\\nLet me check: 5 - 3 = 2. The answer is 5.", "5")
    >>> [round(x, 2) for x in profile]
    [0.06, 0.2, 0.4, 0.0, 1.0, 1.0]
    """
    lines = [line for line in text.splitlines() if line.strip()]
    repeated = decision is not None and len(re.findall(rf"(?<![\w.]){re.escape(decision)}(?![\w])", text)) > 1
    return (
        min(1.0, len(text.split()) / 300),
        min(1.0, len(lines) / 10),
        min(1.0, sum("=" in line for line in lines) / 5),
        min(1.0, len(_HEDGES.findall(text)) / 3),
        float(bool(_CHECKS.search(text))),
        float(repeated),
    )
