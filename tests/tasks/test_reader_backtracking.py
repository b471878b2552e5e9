"""The answer readers on texts built to make a regular expression backtrack: a long run of
spaces or markup after an answer's head, ended by something else. Each reader must read
such a text as any other (a run of 100,000 characters is read in well under a second; the
runs used to be split every way between two patterns, minutes at this length), so the test
bounds each read by an alarm far above that: a guard, not a measurement."""

from __future__ import annotations

import signal
from contextlib import contextmanager

import pytest

from deliberation_env.tasks import mmlu
from deliberation_env.tasks.humaneval import extract_code
from deliberation_env.tasks.math import extract_answer, stated_answer
from deliberation_env.tasks.numeric import extract_number, stated_number
from deliberation_env.text.protocols.coding.protocol import _code

RUN = 100_000
READERS = {
    "numeric strict": stated_number,
    "numeric lenient": extract_number,
    "math strict": stated_answer,
    "math lenient": extract_answer,
    "mmlu strict": mmlu.stated_letter,
    "mmlu lenient": mmlu.extract_letter,
    "code": lambda text: extract_code(text, "f"),
    "coding protocol's code": lambda text: _code(text, "f"),  # `^\s*def` crossed lines: 45 s for 40,000
}
HEADS = ["####", "answer:", "The answer is", "The answer is 5", "Answer: A", "\\boxed{", "\\boxed{A", "answer is **", "```", "```python"]


@contextmanager
def at_most(seconds: int):
    def stop(*_):
        raise TimeoutError(f"still reading after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("fill", [" ", "\t", " *", "\n"], ids=["spaces", "tabs", "stars", "newlines"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_long_run_after_an_answers_head_is_read_as_a_short_one(reader, fill):
    read = READERS[reader]
    for head in HEADS:
        with at_most(60):
            long = read(head + fill * (RUN // len(fill)) + "x")
        short = read(head + fill * 4 + "x")
        assert (long is None) == (short is None), head  # an answer, or none, as with a short run
        if reader.startswith(("numeric", "mmlu")):
            assert long == short, head  # a number or a letter: the same one
        with at_most(60):
            ended = read(head + fill * (RUN // len(fill)))  # the run ends the text
        assert (ended is None) == (read(head + fill * 4) is None), head


@pytest.mark.parametrize("head", ["\\boxed{", "The answer is", "```", "```\n", "Answer: ", "#### "])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_text_of_one_head_repeated_is_read_in_one_pass(reader, head):
    """Each unclosed box was rescanned to the text's end: 33 s for 7,000 of them."""
    with at_most(60):
        READERS[reader](head * (RUN // len(head)))


@pytest.mark.parametrize(
    "fill",
    [" ", "\u00a0", "_", "(", ", maybe", "a, ", "x is right, "],
    ids=["spaces", "nbsp", "underscores", "parens", "doubts", "parts", "parts that call a value right"],
)
@pytest.mark.parametrize(
    ("reader", "answer"),
    [("numeric strict", "The answer is 5.\n"), ("math strict", "$\\boxed{5}$\n"), ("mmlu strict", "Answer: A\n")],
)
def test_a_long_run_on_a_line_after_the_answer_is_read_in_one_pass(reader, answer, fill):
    """Red team, round ten: the lines after a final answer (read for hedges) took 22 s (35 s
    in MATH) for a run of 99,000 spaces between two words, and as long for 8,000 parts that
    each called a value right (each part looked at all the parts after it)."""
    with at_most(60):
        READERS[reader](answer + "a" + fill * (2 * RUN // len(fill)) + "b or 6")  # quadratic: minutes
