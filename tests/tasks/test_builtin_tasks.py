"""The built-in tasks: arithmetic, gsm8k, jsonl."""

import json
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

import deliberation_env as de
from deliberation_env.tasks.numeric import (
    canonical_number,
    exact_value,
    extract_number,
    stated_number,
)


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_arithmetic_levels_are_fixed_disjoint_and_correct(level):
    task = de.tasks.get("arithmetic", difficulty=level, n_train=300, n_test=100)
    train, test = task.problems("train"), task.problems("test")
    assert len(train) == 300 and len(test) == 100
    assert not {p.question for p in train} & {p.question for p in test}
    assert [p.question for p in test] == [p.question for p in de.tasks.get("arithmetic", difficulty=level, n_test=100).problems("test")]
    for problem in test[:20]:
        if level < 5:  # the expression itself evaluates to the answer
            expression = problem.question.removeprefix("What is ").removesuffix("?")
            assert str(eval(expression)) == problem.answer
        assert task.is_correct(problem, task.parse(problem, f"so the answer is {problem.answer}."))
        assert not task.is_correct(problem, None)


def test_numbers_are_canonical():
    assert canonical_number("1,000") == "1000"
    assert canonical_number("$18") == canonical_number("18.0") == canonical_number(" 18. ") == "18"
    assert extract_number("Total: $1,234.50. The answer is $1,234.50") == "1234.5"
    assert extract_number("\\boxed{42} but then 7") == "42"
    assert extract_number("####  -3") == "-3"


def test_decimals_are_exact_and_never_rounded_onto_another_number():
    assert canonical_number("-0.50") == "-0.5" and canonical_number("+.25") == "0.25"
    assert canonical_number("0.30000000000000004") != canonical_number("0.3")
    assert canonical_number("12345678901234567.5") == "12345678901234567.5"

def test_digits_of_other_scripts_are_no_number():
    """The asked form writes N in ASCII digits; a digit of another script may be drawn like
    another digit (Bengali 4, "\u09ea", looks like an 8), so neither reader reads one."""
    assert canonical_number("\u0663.\u0665") is None and canonical_number("\uff11\uff18") is None
    for text in ["The answer is \u09ea.", "The answer is 1\u09ea.", "#### \u09e7\u09e8"]:
        assert stated_number(text) is None
    assert extract_number("The answer is \u09ea.") is None


@pytest.mark.parametrize("scoring", ["strict", "lenient"])
@pytest.mark.parametrize(
    "number",
    ["9" * 400 + ".5", "9" * 5000, "1" + "0" * 4500 + ".25", "1.5/2"],
    ids=["past a float", "past printable ints", "long decimal", "a decimal over a denominator"],
)
def test_a_number_no_reader_can_read_is_a_wrong_answer_not_an_error(scoring, number):
    task = de.tasks.get("arithmetic", scoring=scoring)
    problem = task.problems("test")[0]
    assert not task.is_correct(problem, task.parse(problem, f"The answer is {number}."))
    env = de.text_env(task="arithmetic", n_agents=2, scoring=scoring)  # the whole team's step goes on
    env.reset(seed=0, options={"problem_index": 0})
    _, rewards, *_ = env.step({"agent_0": f"The answer is {number}.", "agent_1": "The answer is 18."})
    assert all(math.isfinite(reward) for reward in rewards.values()) and set(rewards) == {"agent_0", "agent_1"}


def test_an_exponent_is_no_number_and_costs_no_time():
    # Fraction("1e10000000") builds a 10-million-digit integer (13 s); an exponent is never read
    assert canonical_number("1e10000000") is None and canonical_number("11e3") is None
    assert extract_number("\\boxed{1e10000000}") == "10000000"  # lenient: the last plain number instead


def write_jsonl(path, rows):
    path.write_text("\n".join(json.dumps(r) if isinstance(r, dict) else r for r in rows) + "\n")
    return path


def test_gsm8k_reads_local_jsonl(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", [{"question": "q1", "answer": "work\n#### 1,000"}])
    write_jsonl(tmp_path / "test.jsonl", [{"question": "q2", "answer": "#### $18"}, {"question": "q3", "answer": "#### 18.0"}])
    task = de.tasks.get("gsm8k", path=tmp_path)
    assert [p.answer for p in task.problems("train")] == ["1000"]
    test = task.problems("test")
    assert [p.answer for p in test] == ["18", "18"]
    assert task.is_correct(test[0], task.parse(test[0], "She pays $18.00 in total.\nThe answer is $18."))
    env = de.parallel_env(task=task, team="simulated", split="test")
    _, infos = env.reset(seed=0)
    assert infos["agent_0"]["problem_id"].startswith("gsm8k-test")


@pytest.mark.parametrize(
    "line,message",
    [
        ("{not json", "test.jsonl:2: not valid JSON"),
        ('["a list"]', "test.jsonl:2: expected a JSON object"),
        ('{"question": "q"}', "test.jsonl:2: missing field 'answer'"),
        ('{"question": "q", "answer": "no marker"}', "test.jsonl:2: answer has no '#### <number>'"),
        ('{"question": "q", "answer": "#### many"}', "test.jsonl:2: the text after '####' is not a number"),
    ],
)
def test_gsm8k_malformed_lines_name_file_and_line(tmp_path, line, message):
    write_jsonl(tmp_path / "train.jsonl", [{"question": "fine", "answer": "#### 2"}])
    write_jsonl(tmp_path / "test.jsonl", [{"question": "ok", "answer": "#### 1"}, line])
    with pytest.raises(ValueError, match=message):
        de.tasks.get("gsm8k", path=tmp_path)


def test_gsm8k_missing_path_says_what_path_accepts():
    with pytest.raises(FileNotFoundError, match=r"path='/nonexistent/gsm8k' \(--path\): no such file or directory.*hf:.*'sample'.*docs/data\.md"):
        de.tasks.get("gsm8k", path="/nonexistent/gsm8k")


def test_jsonl_task_numeric_and_text(tmp_path):
    numeric = write_jsonl(tmp_path / "n.jsonl", [{"q": "2+2?", "a": "4.0"}])
    task = de.tasks.get("jsonl", path=numeric, question_field="q", answer_field="a")
    (problem,) = task.problems("train") + task.problems("test")  # one file: hash-split
    assert task.numeric and problem.answer == "4"
    assert task.is_correct(problem, task.parse(problem, "It is 4. The answer is 4."))
    text = write_jsonl(tmp_path / "t.jsonl", [{"question": "Capital of France?", "answer": "Paris"}])
    task = de.tasks.get("jsonl", path=text)
    (problem,) = task.problems("train") + task.problems("test")
    assert not task.numeric
    assert task.is_correct(problem, task.parse(problem, "Let me think.\nAnswer:  paris."))
    assert task.parse(problem, "ANSWER: no.\nİİ think. Answer: Paris") is None  # strict: two different answers
    lenient = de.tasks.get("jsonl", path=text, scoring="lenient")
    assert lenient.is_correct(problem, lenient.parse(problem, "ANSWER: no.\nİİ think. Answer: Paris"))
    assert task.parse(problem, "no marker here") is None


def test_unknown_task_and_split():
    with pytest.raises(ValueError, match="unknown task 'chess'; known: arithmetic"):
        de.tasks.get("chess")
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        de.tasks.get("arithmetic").problems("dev")


@given(st.one_of(st.integers(-10**30, 10**30).map(str), st.text("0123456789-/.,$ e_١", max_size=12)))
def test_exact_value_is_the_fraction_of_a_canonical_number_and_any_other_text_itself(text):
    """Its integer fast path (the simulated team's hot path) gives what the Fraction gives."""
    expected = str(Fraction(text)) if canonical_number(text) == text else text
    assert exact_value(text) == expected
