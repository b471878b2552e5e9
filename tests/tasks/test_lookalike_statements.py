"""A statement a person reads is a statement the reader reads.

A second "The answer is" written with Cyrillic or Greek look-alike letters, full-width
letters or a zero-width space inside its words was invisible to the numeric and letter
readers, so a hedged text was read as its first statement alone.
"""

from __future__ import annotations

import pytest

from deliberation_env import tasks
from deliberation_env.tasks import Problem
from deliberation_env.tasks.lookalikes import as_read

HIDDEN_HEADS = [
    "\u0422he answer is",  # Cyrillic Т
    "The \u0430nswer is",  # Cyrillic а
    "The answ\u0435r is",  # Cyrillic е
    "The ans\u200bwer is",  # zero-width space
    "The answer \u0456s",  # Cyrillic і
    "The \uff41\uff4e\uff53\uff57\uff45\uff52 is",  # full-width
    "\u03a4he \u03b1nswer is",  # Greek Τ, α
]


@pytest.mark.parametrize("head", HIDDEN_HEADS)
@pytest.mark.parametrize("name", ["arithmetic", "gsm8k"])
def test_a_second_statement_in_lookalike_letters_is_a_hedge(name, head):
    task = tasks.get(name, path="sample") if name == "gsm8k" else tasks.get(name)
    problem = Problem("p", "What is 5 + 6?", "11")
    assert task.parse(problem, "The answer is 11.") == "11"
    assert task.parse(problem, f"The answer is 11.\n{head} 12.") is None  # two statements
    assert task.parse(problem, f"{head} 11.") == "11"  # read as a person reads it


@pytest.mark.parametrize("head", ["\u0410nswer:", "Answ\u0435r:", "Ans\u200bwer:", "\uff21nswer:"])
def test_a_second_letter_statement_in_lookalike_letters_is_a_hedge(head):
    task = tasks.get("mmlu", path="sample")
    problem = task.problems("test")[0]
    other = "B" if problem.answer != "B" else "C"
    assert task.parse(problem, f"Answer: {problem.answer}") == problem.answer
    assert task.parse(problem, f"Answer: {problem.answer}\n{head} {other}") is None
    assert task.parse(problem, f"{head} {other}") == other


def test_a_lookalike_option_letter_is_the_letter_it_looks_like():
    task = tasks.get("mmlu", path="sample")
    problem = task.problems("test")[0]
    for letter, lookalike in zip("ABC", "\u0410\u0412\u0421", strict=True):  # Cyrillic А, В, С
        assert task.parse(problem, f"Answer: {lookalike}") == letter


def test_reading_as_read_changes_only_lookalike_letters_and_invisible_characters():
    text = "x\u00b2 = \uff14, \u0663 \u041c\u043e\u0441\u043a\u0432\u0430 \u65e5\u672c\u00ad"
    # superscript, full-width and Arabic-Indic digits stay (the number readers decide on them);
    # Cyrillic letters with a Latin look-alike become it, the others stay; the soft hyphen goes
    assert as_read(text) == "x\u00b2 = \uff14, \u0663 Moc\u043a\u0432a \u65e5\u672c"
    assert as_read("plain ASCII 12") == "plain ASCII 12"


@pytest.mark.parametrize("head", ["\u0410nswer:", "Answ\u0435r:", "Ans\u200bwer:", "\uff21nswer:", "Final \uff41nswer:"])
def test_a_second_text_answer_under_a_lookalike_head_is_a_second_answer(tmp_path, head):
    path = tmp_path / "capitals.jsonl"
    path.write_text('{"question": "Capital of France?", "answer": "Paris"}\n', encoding="utf-8")
    problem = Problem("p", "Capital of France?", "paris")
    strict, lenient = tasks.get("jsonl", path=str(path)), tasks.get("jsonl", path=str(path), scoring="lenient")
    assert strict.parse(problem, "Answer: Paris") == "paris"
    assert strict.parse(problem, f"Answer: Paris\n{head} London") is None  # two answers, as a person reads it
    assert lenient.parse(problem, f"Answer: Paris\n{head} London") == "london"  # the last one
    assert strict.parse(problem, f"{head} Paris") == "paris"


def test_a_text_answer_in_another_script_is_read_as_written(tmp_path):
    path = tmp_path / "capitals.jsonl"
    path.write_text('{"question": "Столица России?", "answer": "Москва"}\n', encoding="utf-8")
    task = tasks.get("jsonl", path=str(path))
    problem = next(p for split in ("train", "test") for p in task.problems(split))
    assert task.parse(problem, "Ответ. \u0410nswer: Москва") == "москва"  # a look-alike head, a Cyrillic answer
    assert task.is_correct(problem, task.parse(problem, "Answer:\nМосква"))
