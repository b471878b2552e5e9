"""docs/tutorial.md and README.md's quick start run as written.

Every ```python block of the tutorial runs, top to bottom, in one namespace, in a temporary
directory. The ```text block that follows a python block is what it printed, and must be
printed again exactly, unless the prose between the two says the output "may differ" (it
depends on torch's floating-point arithmetic, which varies a little between CPUs): then
it must print the same lines but for their numbers. README.md's quick start is the python block after the comment
``<!-- quick start -->``; it runs on its own.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.md"
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
VARIES = "may differ"


@dataclass
class Block:
    """A python block of a markdown page and the output the page says it prints."""

    line: int
    code: str
    expected: str | None  # None: not checked (no text block)
    varies: bool = False  # the page says its numbers may differ: compared without them


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of ``text``, each with the ```text block that follows it."""
    fences = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(text)]
    blocks = []
    for k, (language, code, start, end) in enumerate(fences):
        if language != "python":
            continue
        expected, varies = None, False
        following = fences[k + 1] if k + 1 < len(fences) else None
        if following is not None and following[0] == "text":
            expected, varies = following[1], VARIES in text[end:following[2]]
        blocks.append(Block(text.count("\n", 0, start) + 1, code, expected, varies))
    return blocks


NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d*)?%?")


def lines(text: str, varies: bool) -> list[str]:
    """The lines of ``text``; with ``varies``, each number a ``#`` and spaces collapsed."""
    rows = [line.rstrip() for line in text.rstrip("\n").split("\n")]
    return [" ".join(NUMBER.sub("#", row).split()) for row in rows] if varies else rows


def run_blocks(blocks: list[Block], name: str) -> None:
    """Run ``blocks`` in one namespace; compare each checked block's output with the page."""
    namespace: dict = {"__name__": "__tutorial__"}
    for block in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block.code, f"{name}:{block.line}", "exec"), namespace)  # noqa: S102
        if block.expected is not None:
            printed, expected = (lines(text, block.varies) for text in (out.getvalue(), block.expected))
            assert printed == expected, f"{name}, block at line {block.line} printed:\n" + "\n".join(printed)


def test_the_page_parser_pairs_code_with_its_output():
    page = (
        "```python\nprint(1)\n```\n\n```text\n1\n```\n"
        "```python\nprint(2)\n```\nThis output may differ:\n```text\n3\n```\n"
        "```python\nx = 3\n```\n```bash\nls\n```\n"
    )
    blocks = python_blocks(page)
    assert [(b.code, b.expected, b.varies) for b in blocks] == [
        ("print(1)\n", "1\n", False), ("print(2)\n", "3\n", True), ("x = 3\n", None, False)
    ]
    run_blocks(blocks, "page")  # block 2's 2 is not 3, and may differ: its numbers are not compared


def test_a_wrong_output_fails():
    with pytest.raises(AssertionError, match="printed"):
        run_blocks(python_blocks("```python\nprint(1)\n```\n```text\n2\n```\n"), "page")
    with pytest.raises(AssertionError, match="printed"):  # numbers may differ, the words may not
        run_blocks(python_blocks("```python\nprint('loss 1')\n```\nmay differ\n```text\nreward 2\n```\n"), "page")


@pytest.mark.slow
def test_the_tutorial_runs_top_to_bottom(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # whatever it writes lands here
    blocks = python_blocks(TUTORIAL.read_text())
    assert len(blocks) >= 8
    assert sum(block.expected is not None for block in blocks) >= 5  # most outputs are checked
    run_blocks(blocks, "docs/tutorial.md")


@pytest.mark.slow
def test_the_readme_quick_start_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = README.read_text()
    marker = text.index("<!-- quick start -->")
    block = python_blocks(text[marker:])[0]
    assert "train_step" in block.code  # the quick start shows learning
    run_blocks([block], "README.md")
