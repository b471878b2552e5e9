"""Built-in protocols of the text-action env, and the protocol a user implements.

- :class:`~deliberation_env.text.protocols.coding.CodingProtocol`: a helper and a main function.
- :class:`~deliberation_env.text.protocols.math.MathProtocol`: parallel answers and a vote.
- :class:`~deliberation_env.text.protocols.writing.WritingProtocol`: two writers, one text.
- :class:`~deliberation_env.text.protocols.function.FunctionProtocol`: a protocol made of
  plain prompt, reward and feedback functions (CoMLRL's formatters, reward function and
  external transition).
- :class:`~deliberation_env.text.protocols.base.TextProtocol`: the interface;
  :class:`~deliberation_env.text.protocols.base.BatchScoring`: its optional batch method.
"""

from deliberation_env.text.protocols.base import BatchScoring, Outcome, TextProtocol
from deliberation_env.text.protocols.coding import CodingProtocol
from deliberation_env.text.protocols.function import FunctionProtocol
from deliberation_env.text.protocols.math import MathProtocol
from deliberation_env.text.protocols.writing import WritingProtocol, WritingTargets

__all__ = [
    "BatchScoring",
    "CodingProtocol",
    "FunctionProtocol",
    "MathProtocol",
    "Outcome",
    "TextProtocol",
    "WritingProtocol",
    "WritingTargets",
]
