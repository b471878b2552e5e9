"""MATH, AIME and AMC: answer extraction, math-verify checking, loading and splits."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import sympy

import deliberation_env as de
from deliberation_env import tasks
from deliberation_env.tasks import Problem, answer_groups
from deliberation_env.tasks import math as math_task
from deliberation_env.tasks.expression_values import numeric_value
from deliberation_env.tasks.math import (
    AIMETask,
    AMCTask,
    MathTask,
    _parsed,
    answer_key,
    equivalent,
    extract_answer,
    last_boxed,
    states_nothing,
    ungrouped,
)

MATH_RECORDS = [
    {
        "problem": "Compute $1/4 + 1/4$.",
        "solution": "We get $\\boxed{\\frac{1}{2}}$.",
        "level": "Level 1",
        "type": "Algebra",
    },
    {
        "problem": "Solve $x^2 = 9$ for $x > 0$.",
        "solution": "So $x = \\boxed{3}$.",
        "level": "Level 2",
        "type": "Algebra",
    },
    {
        "problem": "Where is $x^2 - 4x + 3 \\le 0$?",
        "solution": "On $\\boxed{[1,3]}$.",
        "level": "Level 5",
        "type": "Intermediate Algebra",
    },
    {
        "problem": "Simplify $\\sqrt{18}$.",
        "solution": "It is $\\boxed{3\\sqrt{2}}$.",
        "level": "Level 3",
        "type": "Prealgebra",
    },
    {
        "problem": "What is $\\frac{1}{2}$ of 6?",
        "solution": "Half of six: $\\boxed{3}$.",
        "level": "Level 1",
        "type": "Prealgebra",
    },
    {
        "problem": "Evaluate $\\boxed{\\text{nested}}$?",
        "solution": "$\\boxed{\\frac{\\sqrt{3}}{2}}$",
        "level": "Level 4",
        "type": "Geometry",
    },
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


@pytest.fixture
def math_file(tmp_path):
    return write_jsonl(tmp_path / "math.jsonl", MATH_RECORDS)


# ------------------------------------------------------------------------- extraction
@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("So \\boxed{2}, no: \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"),
        ("\\boxed{\\frac{\\sqrt{3}}{2}}", "\\frac{\\sqrt{3}}{2}"),
        ("The set is \\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
        ("We find the answer is $[1,3)$.", "[1,3)"),
        ("The answer is: \\(\\pi\\)", "\\pi"),
        ("First \\boxed{5} then an unclosed \\boxed{6", "5"),
        ("The final answer is 42", "42"),
        ("No final answer here.", None),
        ("\\boxed{}", None),
    ],
)
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


def test_last_boxed_balances_braces():
    assert last_boxed("\\boxed{a{b}c} and \\boxed{{x}}") == "{x}"
    assert last_boxed("\\boxed{unclosed") is None


@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        ("\\frac{1}{2}", "0.5"),
        ("\\frac{1}{2}", "\\dfrac12"),
        ("\\frac{1}{2}", "1/2"),
        ("[1,3)", "\\left[1,3\\right)"),
        ("3\\sqrt{2}", "\\sqrt{18}"),
        ("(x+1)^2", "x^2+2x+1"),
        ("18", "18.0"),
        ("33", "033"),
        ("\\frac{\\pi}{2}", "\\pi/2"),
    ],
)
def test_equivalent_answers(reference, answer):
    assert equivalent(reference, answer)


@pytest.mark.parametrize(
    ("reference", "answer"),
    [
        ("\\frac{1}{2}", "\\frac{1}{3}"),
        ("[1,3)", "(1,3)"),
        ("3\\sqrt{2}", "2\\sqrt{3}"),
        ("5", "-5"),
        ("x+1", "x-1"),
    ],
)
def test_non_equivalent_answers(reference, answer):
    assert not equivalent(reference, answer)


def test_decision_key_groups_equal_values():
    assert (
        answer_key("\\dfrac{1}{2}")
        == answer_key("0.5")
        == answer_key("1/2")
        == answer_key("\\frac12")
    )
    assert answer_key("\\frac{1}{2}") != answer_key("\\frac{1}{3}")
    assert answer_key("[1,3)") != answer_key("(1,3)")


def test_an_integer_too_long_to_write_is_keyed_by_its_text_and_fails_no_step():
    """``\\binom{16000}{8000}`` parses to an integer of 4,815 digits, which Python refuses
    to write as text: its key is its own text, and the vote of a team holding it scores."""
    huge = r"\binom{16000}{8000}"
    assert answer_key(huge) == answer_key(huge) != answer_key(r"\binom{16000}{7999}")
    env = de.text_env(task="math", path="sample", n_agents=2)
    env.reset(seed=0, options={"problem_index": 0})
    _, rewards, *_ = env.step({"agent_0": f"$\\boxed{{{huge}}}$", "agent_1": "$\\boxed{7}$"})
    assert set(rewards.values()) == {0.1}  # both in the asked form, neither right


@pytest.mark.parametrize("tower", [r"9^{9^{9}}", r"\\sqrt{9^{9^{9}}}", r"(9^{9})!", r"2^{10^{8}}"])
def test_a_number_too_large_to_compute_is_compared_as_text(tower):
    """Each comparison with ``9^{9^{9}}`` computed 9^387420489 until its 5 s limit, for every
    answer and pair of agents (a step of four agents took 100 s). Such a number is not
    read as mathematics: it keys by its text, and is right only where the reference is
    written so."""
    assert not _parsed(tower) and answer_key(tower) == answer_key(tower + " ")
    assert not equivalent("5", tower) and equivalent(tower, tower)


@pytest.mark.parametrize(
    "huge",
    [r"2^{\lfloor e^{1000} \rfloor}", r"(\lceil e^{800} \rceil)!", r"\Gamma(10^{6})", r"\sinh(10^{7})",
     r"\binom{10^{6}}{5 \cdot 10^{5}}", r"\lfloor e^{10^{6}} \rfloor", r"(0.5)^{-10^{8}}",
     r"(\sin(10^{10^{10}}))^{2}", r"\lfloor 10^{10^{7}} \rfloor^{2}", r"(\Gamma(10^{10^{10}}))^{2}",
     r"\begin{pmatrix} 9^{9^{9}} \\ 2 \end{pmatrix}", r"(x+9^{9^{9}})^{2}", r"\sqrt{x+9^{9^{9}}}",
     r"(1+10^{-20})^{10^{10}}", r"\left(\frac{10^{20}+1}{10^{20}}\right)^{10^{10^{10}}}",
     r"\prod_{n=1}^{10^7+2} n", r"\sum_{n=1}^{10^{8}} \frac1n", r"\sum_{n=1}^{3} n^n", r"\int_0^1 x \, dx",
     r"1 + \lim_{n \to \infty} (1+1/n)^{n}"],
)  # fmt: skip
def test_functions_of_huge_arguments_are_compared_as_text_and_fail_no_step(huge):
    """Red team, round seventeen: ``2^{\\lfloor e^{1000} \\rfloor}`` raised sympy's
    PrecisionExhausted out of the bound (a step failed), and ``\\Gamma(10^{6})`` was
    computed to the 5 s limit at every comparison; rounds nineteen and twenty: a huge base
    (``\\sin(10^{10^{10}})``, ``x + 9^{9^{9}}``) or a base that is 1 in double precision
    escaped the bound, and each reading ran to its limit; round twenty-two: an unevaluated
    product or sum (``\\prod_{n=1}^{10^7} n``, its bound changed each turn) did too."""
    assert not _parsed(huge)
    assert not equivalent("5", huge) and MathTask(path="sample").is_correct(MathTask(path="sample").problems("test")[0], huge) is False


def continued_fraction(levels: int) -> str:
    """``\\frac{1}{1+\\frac{1}{1+...1}}``, ``levels`` deep."""
    text = "1"
    for _ in range(levels):
        text = rf"\frac{{1}}{{1+{text}}}"
    return text


def test_an_expression_too_deep_to_write_is_compared_as_text_and_fails_no_step():
    """Red team, round eighteen: a continued fraction 20 deep (286 characters) stalled a
    step for 136 s, in the size bound's ``evalf`` and its key's ``str``, where no time
    limit ran; each level doubled the time. Past MAX_DEPTH levels an answer is compared
    as text; below it, it is read as mathematics."""
    deep = continued_fraction(20)
    assert not _parsed(deep) and answer_key(deep) == answer_key(deep + " ") == deep
    assert equivalent(deep, deep) and not equivalent(deep, "0.618")
    assert equivalent(continued_fraction(3), r"\frac{3}{5}") and _parsed(continued_fraction(9))
    env = de.text_env(task="math", path="sample", n_agents=2, max_turns=1)
    env.reset(seed=0, options={"problem_index": 0})
    _, rewards, *_ = env.step({"agent_0": f"$\\boxed{{{deep}}}$", "agent_1": "I don't know."})
    assert rewards["agent_0"] == rewards["agent_1"]  # the asked form's bonus is the agent's; neither is right



def test_a_reading_cut_by_its_time_limit_is_tried_again_then_compared_as_text(monkeypatch, fresh_readings):
    """What follows the parse (depth, size, key) has the time limit too: cut, the answer
    is no parse this time and is read again the next, up to TIMEOUT_ATTEMPTS times."""
    from math_verify.errors import TimeoutException

    read = math_task._bounded_reading
    stalls = {r"\sqrt{8}": 1, r"\sqrt{18}": 3}  # answer -> readings cut

    def stalled(parsed, answer):
        if stalls.get(answer):
            stalls[answer] -= 1
            raise TimeoutException("Operation timed out!")
        return read(parsed, answer)

    monkeypatch.setattr(math_task, "_bounded_reading", stalled)
    assert not _parsed(r"\sqrt{8}") and _parsed(r"\sqrt{8}")  # cut once: read the next time
    assert not _parsed(r"\sqrt{18}") and not _parsed(r"\sqrt{18}") and not _parsed(r"\sqrt{18}")
    assert stalls[r"\sqrt{18}"] == 1  # cut twice, then not tried a third time
    assert answer_key(r"\sqrt{18}") == r"\sqrt{18}"  # text from then on
    assert not equivalent(r"3\sqrt{2}", r"\sqrt{18}")  # the answer compared as text, at once


def test_an_answer_whose_reading_runs_out_of_time_states_no_answer(monkeypatch, fresh_readings):
    """Red team, round nineteen: a reading cut by its time limit said the box hid nothing,
    while the correctness check could read it the next time (a hidden ``(or 3)`` passed);
    and a reviewer's: a cut reading keyed the answer by its text, the next by sympy's."""
    from math_verify.errors import TimeoutException

    def always_cut(parsed, answer):
        raise TimeoutException("Operation timed out!")

    monkeypatch.setattr(math_task, "_bounded_reading", always_cut)
    problem = Problem("x", "q", "2")
    for scoring in ("strict", "lenient"):
        task = MathTask(path="sample", scoring=scoring)
        assert task.parse(problem, r"The answer is $\boxed{2 \text{ (or 3)}}$.") is None, scoring
        assert task.parse(problem, r"The answer is $\boxed{2}$.") is None, scoring


def test_numbers_of_a_size_math_verify_computes_are_still_read():
    for small, value in ((r"2^{2^{2}}", "16"), (r"10^{3}", "1000"), ("3!", "6"), (r"1.5\\times10^{3}", "1500"),
                         (r"(\Gamma(5))^{2}", "576"), (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}")):
        assert _parsed(small) and equivalent(value, small), small
    assert _parsed(r"10^{5000}") and _parsed(r"x^{2}+1") and _parsed(r"e^{\\pi i}")
    for sized in (r"2^{2^{16}}", r"1^{1000000}", r"(-1)^{100001}", r"2^{100001}", r"\\binom{10}{3}", r"x^{2}"):
        assert _parsed(sized), sized  # the bound is the base's own size, not at least 10's
    assert equivalent("-1", r"(-1)^{100001}") and equivalent("7", r"\\texttt{7}") and equivalent(r"\\text{odd}", r"\\emph{odd}")


def test_every_name_of_the_empty_set_is_an_answer_and_the_same_one():
    """``\\varnothing`` was read as no answer (math-verify reads ``\\emptyset`` alone), so
    against a reference written ``\\varnothing`` no answer could be right."""
    for name in (r"\varnothing", r"\O", r"\empty"):
        assert not states_nothing(name)
        assert equivalent(name, r"\emptyset") and equivalent(r"\emptyset", name)
    assert not equivalent(r"\varnothing", "0") and ungrouped(r"\Omega + \Omicron") == r"\Omega + \Omicron"


@pytest.mark.parametrize(
    "box",
    [r"\text{I'm not sure}", r"\text{(no answer)}", r"\text{I do not know the answer}", r"\text{no clue}",
     r"\text{n.a.}", r"\texttt{idk}", r"\textsf{TBD}", r"\text{?}\text{?}", r"\text{pass}", r"\emph{skip}"],
)  # fmt: skip
def test_a_box_of_a_non_answer_states_nothing(box):
    """Red team, round sixteen: these paid the asked form and voted."""
    assert states_nothing(box)
    assert MathTask(path="sample").parse(MathTask(path="sample").problems("test")[0], f"So: $\\boxed{{{box}}}$") is None


@pytest.mark.parametrize("box", [r"\text{(C)}", r"\text{Monday}", r"\text{no solution}", r"\text{none}", r"\textbf{5}"])
def test_a_box_of_words_that_answer_is_an_answer(box):
    assert not states_nothing(box)


# ------------------------------------------------------------------------------ tasks
def test_math_task_parses_checks_and_keys(math_file):
    task = MathTask(math_file)
    problem = next(
        p for p in task.problems("train") + task.problems("test") if p.answer == "\\frac{1}{2}"
    )
    decision = task.parse(problem, "1/4 + 1/4 = 2/4, so the answer is \\boxed{\\dfrac{2}{4}}.")
    assert decision == "\\dfrac{2}{4}"
    assert task.is_correct(problem, decision) and task.is_correct(problem, "0.5")
    assert not task.is_correct(problem, "\\frac{1}{3}") and not task.is_correct(problem, None)
    assert task.decision_key(problem, decision) == task.decision_key(problem, "0.5")
    assert problem.meta["type"] == "Algebra" and problem.meta["level"] == "Level 1"
    assert task.parse(problem, "I cannot solve this.") is None


def test_single_file_is_split_disjointly_and_completely(math_file):
    task = MathTask(math_file)
    train, test = task.problems("train"), task.problems("test")
    assert train and test
    assert {p.id for p in train}.isdisjoint(p.id for p in test)
    assert sorted(p.question for p in train + test) == sorted(r["problem"] for r in MATH_RECORDS)
    assert MathTask(math_file).problems("test") == test  # fixed
    with pytest.raises(ValueError, match="unknown split"):
        task.problems("validation")


def test_split_does_not_depend_on_file_order(tmp_path, math_file):
    reversed_file = write_jsonl(tmp_path / "reversed.jsonl", MATH_RECORDS[::-1])
    forward, backward = MathTask(math_file), MathTask(reversed_file)
    assert sorted(p.question for p in forward.problems("test")) == sorted(
        p.question for p in backward.problems("test")
    )


def test_directory_with_own_splits(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", MATH_RECORDS[:4])
    write_jsonl(tmp_path / "test.jsonl", MATH_RECORDS[4:])
    task = tasks.get("math", path=tmp_path)
    assert [p.question for p in task.problems("test")] == [r["problem"] for r in MATH_RECORDS[4:]]
    assert len(task.problems("train")) == 4
    assert [p.id for p in task.problems("test")[:2]] == ["math:test-0", "math:test-1"]  # no own id: split and index


def test_level_and_type_selection(tmp_path):
    write_jsonl(tmp_path / "train.jsonl", MATH_RECORDS)
    write_jsonl(tmp_path / "test.jsonl", MATH_RECORDS)
    assert {p.answer for p in MathTask(tmp_path, levels=[1]).problems("test")} == {
        "\\frac{1}{2}",
        "3",
    }
    assert len(MathTask(tmp_path, levels=["Level 5", 4]).problems("test")) == 2
    assert len(MathTask(tmp_path, types=["Algebra"], levels=[2]).problems("test")) == 1


def test_answer_field_takes_precedence_and_ids_are_kept(tmp_path):
    record = {
        "problem": "p",
        "solution": "\\boxed{1}",
        "answer": "2",
        "unique_id": "test/algebra/7.json",
    }
    write_jsonl(tmp_path / "train.jsonl", [{**record, "unique_id": "train/algebra/7.json"}])
    write_jsonl(tmp_path / "test.jsonl", [record])
    (problem,) = MathTask(tmp_path).problems("test")
    assert (problem.id, problem.answer) == ("math:test/algebra/7.json", "2")
    write_jsonl(tmp_path / "train.jsonl", [record])  # the test problem's id again
    with pytest.raises(ValueError, match=r"test\.jsonl:1: problem id 'math:test/algebra/7\.json' is already used at .*train\.jsonl:1"):
        MathTask(tmp_path)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"problem": "p", "solution": "no boxed answer"}', "no \\\\boxed"),
        ('{"solution": "\\\\boxed{1}"}', "missing field 'problem'"),
        ('["a list"]', "expected a JSON object"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(MATH_RECORDS[0]) + "\n\n" + line + "\n")
    with pytest.raises(ValueError, match=rf"bad\.jsonl:3: .*{message}"):
        MathTask(path)


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no-such-file\.jsonl' \(--path\): no such file or directory\. Task 'math' reads"):
        MathTask(tmp_path / "no-such-file.jsonl")
    with pytest.raises(FileNotFoundError, match=r"did you mean path='hf:EleutherAI/hendrycks_math:algebra'\?"):
        MathTask("EleutherAI/hendrycks_math:algebra")


@pytest.mark.parametrize(("task_class", "name"), [(AIMETask, "aime"), (AMCTask, "amc")])
def test_aime_and_amc(tmp_path, task_class, name):
    records = [
        {"problem": f"Problem {i}?", "answer": str(answer)}
        for i, answer in enumerate([204, 33, 0.5, "\\frac{3}{4}", 7, 113])
    ]
    task = tasks.get(name, path=write_jsonl(tmp_path / f"{name}.jsonl", records))
    assert isinstance(task, task_class) and task.name == name
    problems = task.problems("train") + task.problems("test")
    assert len(problems) == 6
    by_answer = {p.answer: p for p in problems}
    assert task.is_correct(by_answer["33"], task.parse(by_answer["33"], "Thus the answer is \\boxed{033}."))
    assert task.parse(by_answer["33"], "Thus the answer is 033.") is None  # strict: the prompt asks for a box
    lenient = tasks.get(name, path=tmp_path / f"{name}.jsonl", scoring="lenient")
    assert lenient.is_correct(by_answer["33"], lenient.parse(by_answer["33"], "Thus the answer is 033."))
    assert task.is_correct(
        by_answer["0.5"], task.parse(by_answer["0.5"], "$\\boxed{\\frac{1}{2}}$")
    )
    assert not task.is_correct(by_answer["204"], task.parse(by_answer["204"], "\\boxed{205}"))


def test_hugging_face_dataset_id_with_one_split_is_hash_split(monkeypatch):
    rows = [{"problem": f"Problem {i}", "answer": str(i)} for i in range(20)]

    class FakeDatasets:
        @staticmethod
        def load_dataset(name, config):
            assert (name, config) == ("org/aime", None)
            return {"train": rows}

    monkeypatch.setitem(__import__("sys").modules, "datasets", FakeDatasets)
    task = AIMETask("hf:org/aime")
    train, test = task.problems("train"), task.problems("test")
    assert len(train) + len(test) == 20 and train and test
    assert [p.id for p in test] == [f"aime:test-{index}" for index in range(len(test))]


def test_each_check_has_a_time_limit(monkeypatch):
    monkeypatch.setattr(math_task, "CHECK_TIMEOUT_S", 1)
    math_task._equivalent_in_time.cache_clear()
    limits, verify = [], math_task.verify
    monkeypatch.setattr(
        math_task,
        "verify",
        lambda *args, timeout_seconds, **kwargs: limits.append(timeout_seconds)
        or verify(*args, timeout_seconds=timeout_seconds, **kwargs),
    )
    assert not equivalent(r"\sqrt{2} + \pi", "1")  # (a tower is never computed: too_large)
    assert limits and set(limits) == {1}  # math-verify was given the limit


def test_a_comparison_cut_by_a_loaded_machine_is_tried_again(monkeypatch, fresh_readings):
    """Red team: a check cut at its time limit (the process stalled) was kept as False, so a
    right answer stayed wrong for the rest of the process. It is tried again, up to
    TIMEOUT_ATTEMPTS times; one that keeps running out stays False without more tries."""
    from math_verify.errors import TimeoutException

    def stalled_once(function):
        """``function``, but its first call runs out of time as on a stalled machine."""
        stalls = [1]

        def stalling(*args, **kwargs):
            if stalls:
                stalls.pop()
                raise TimeoutException("Timeout")
            return function(*args, **kwargs)

        return stalling

    for name, pair in (("verify", ("3\\sqrt{2}", "\\sqrt{18}")), ("parse", ("2\\sqrt{2}", "\\sqrt{8}"))):  # a reviewer's: parse too
        monkeypatch.setattr(math_task, name, stalled_once(getattr(math_task, name)))
        math_task._equivalent_in_time.cache_clear()
        math_task._cached_reading.cache_clear()
        assert not equivalent(*pair) and equivalent(*pair), name  # cut: False this time, and right the next

    def always_slow(*args, **kwargs):
        raise TimeoutException("Timeout during comparison")

    monkeypatch.setattr(math_task, "verify", always_slow)
    assert not equivalent("x", "y") and not equivalent("x", "y") and not equivalent("x", "y")
    assert math_task._timed_out[("compare", "x", "y")] == math_task.TIMEOUT_ATTEMPTS  # no third try


def test_checks_work_off_the_main_thread():
    with ThreadPoolExecutor(1) as pool:  # math-verify's SIGALRM limit is main-thread only
        assert pool.submit(equivalent, "\\frac{7}{14}", "0.5").result()
        assert not pool.submit(equivalent, "\\frac{7}{15}", "0.5").result()


def test_a_slow_answer_is_compared_once_however_many_teams_hold_it(monkeypatch):
    """Four agents give one answer: the team and its four leave-one-out teams compare it
    with the reference once, so an answer that runs to the time limit costs it once."""
    from deliberation_env.text import text_env

    calls, verify = [], math_task.verify
    monkeypatch.setattr(math_task, "verify", lambda *args, **kwargs: calls.append(args) or verify(*args, **kwargs))
    math_task._equivalent_in_time.cache_clear()
    env = text_env(task="math", path="sample", n_agents=4)
    _, infos = env.reset(seed=0, options={"problem_index": 0})
    _, rewards, *_ = env.step({agent: "So the result is \\boxed{\\frac{123}{457}}." for agent in env.agents})
    once = len(calls)  # one comparison: each parsed form of the reference against each of the answer's
    task = math_task.MathTask("sample")
    (problem,) = [p for p in task.problems("train") + task.problems("test") if p.id == infos["agent_0"]["problem_id"]]
    math_task._equivalent_in_time.cache_clear()
    equivalent(problem.answer, "\\frac{123}{457}")
    assert 1 <= once == len(calls) - once and len(set(rewards.values())) == 1


@pytest.mark.parametrize(
    ("reference", "box"),
    [("10000", r"10\,000"), ("10000", r"10\ 000"), ("10000", "10~000"), ("1234567", r"1\,234\,567"),
     (r"10,\!000", "10000"), ("0.5", "0.5"), ("0.5", ".5"), ("3.14159", r"3.141\,59"), ("0.125", "0{,}125")],
)  # fmt: skip
def test_digits_grouped_by_latex_spaces_and_plain_decimals_are_read_as_written(reference, box):
    """Red team, round eight: math-verify read ``10\\,000`` as 10 x 000 (an honest answer
    wrong); strict scoring refused ``0.5``, which math-verify writes back as ``\\frac{1}{2}``."""
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Compute.", reference)
    assert task.is_correct(problem, task.parse(problem, f"So $\\boxed{{{box}}}$."))


@pytest.mark.parametrize(("reference", "box"), [("357", r"12\,345"), ("5", r"2 \quad 3"), ("6", r"2\,3")])
def test_two_numbers_with_only_space_between_are_no_answer(reference, box):
    """math-verify read ``2 \\quad 3`` as 2 + 3: a box of two values right for their sum."""
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Compute.", reference)
    assert not task.is_correct(problem, task.parse(problem, f"So $\\boxed{{{box}}}$."))


BOMB = r"1.0000001^{10^{10^{10}}}"
"""Red team, round eleven: sympy's ``evalf`` of this ran without end inside mpmath's C
arithmetic, where no alarm reaches it."""


def test_an_answer_too_costly_to_evaluate_is_read_in_bounded_time():
    """The rounding check evaluates a boxed value: on ``BOMB`` it hung the scorer for good.
    Run in a process of its own, so a regression fails here instead of hanging the suite."""
    script = (
        "from deliberation_env import tasks\n"
        "from deliberation_env.tasks import Problem\n"
        "task = tasks.get('math', path='sample')\n"
        "problem = Problem('math:p', 'Compute.', '1.5')\n"
        f"for text in [r'So $\\boxed{{{BOMB} \\approx 1.5}}$.', r'$\\boxed{{{BOMB}}}$.' + '\\nOr 1.5.']:\n"
        "    print(task.is_correct(problem, task.parse(problem, text)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2*sqrt(3)", 2 * 3**0.5), ("exp(I*pi)", -1), ("factorial(5)/2", 60), ("log(E**2)", 2), ("(-8)**(1/3)", None)],
)
def test_the_bounded_evaluation_matches_sympy(value, expected):
    value_of = numeric_value(sympy.sympify(value))
    if expected is None:  # a principal root: compare with sympy's own value
        expected = complex(sympy.sympify(value).evalf())
    assert value_of == pytest.approx(expected)


@pytest.mark.parametrize(
    "value", ["x + 1", "1.0000001**(10**(10**10))", "10**(10**400)", "factorial(10**7)", "Integral(x, x)", "exp(exp(exp(100)))"]
)
def test_the_bounded_evaluation_refuses_symbols_and_what_overflows(value):
    assert numeric_value(sympy.sympify(value, evaluate=False)) is None


@pytest.mark.parametrize("box", [r"\lfloor 2\rfloor = 3", r"\log_2 8 = 4", "2 = 3", "{2} = 3", "(2) = 3", "+2 = 3", "2^1 = 3", "2! = 3", r"\frac{4}{2} = 3", "1+1 = 3", r"2 \equiv 3"])
def test_an_equation_of_two_numbers_that_differ_is_no_answer(box):
    """math-verify reads ``2 = 3`` as 3: a regular expression refused it, and wrappers of the
    left side (``{2} = 3``, ``1+1 = 3``) got past it (red team, round eleven)."""
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Compute.", "3")
    assert not task.is_correct(problem, task.parse(problem, f"So $\\boxed{{{box}}}$."))


@pytest.mark.parametrize(
    ("box", "gold"),
    [
        (r"3 \times 4 = 12", "12"), (r"\frac{24}{2} = 12", "12"), ("x = 12", "12"),
        # the final read: a side with no value here, a log's base, degrees, floor and max
        ("f(2) = 5", "5"), (r"\gcd(12,18) = 6", "6"), (r"\log_3 81 = 4", "4"), (r"\cos 60^\circ = \frac12", r"\frac12"),
        (r"\lfloor 2.5\rfloor = 2", "2"), (r"\max(2,3) = 3", "3"), (r"\sec 0 = 1", "1"),
    ],
)  # fmt: skip
def test_an_equation_that_holds_keeps_its_value(box, gold):
    task = tasks.get("math", path="sample")
    problem = Problem("math:p", "Compute.", gold)
    assert task.is_correct(problem, task.parse(problem, f"So $\\boxed{{{box}}}$."))


@pytest.mark.parametrize("order", [(0, 1, 2), (0, 2, 1), (2, 0, 1), (1, 2, 0)])
def test_a_vote_groups_answers_the_checker_joins_in_any_seat_order(order):
    """``x = 7`` and ``7`` are one answer, ``7`` and ``y = 7`` are one, ``x = 7`` and ``y = 7``
    are not: taken one holder at a time, seat order decided whether the three were one
    group. Joined transitively they are, in every order; the paid vote then splits them by
    correctness alone."""
    task = MathTask(path="sample")
    problem = task.problems("test")[0]
    answers, right = ["x = 7", "7", "y = 7"], [False, True, True]
    decisions, correct = [answers[k] for k in order], [right[k] for k in order]
    assert answer_groups(task, problem, decisions) == [0, 0, 0]
    paid = answer_groups(task, problem, decisions, correct)
    assert all((paid[a] == paid[b]) == (correct[a] == correct[b]) for a in range(3) for b in range(3))


def test_numerals_in_other_bases_are_other_answers_and_vote_apart():
    """Red team, round twenty-two: math-verify drops a numeral's base, so 10001_3 was right
    for 10001_2 and the two voted together."""
    from deliberation_env.tasks import same_answer

    task = MathTask(path="sample")
    problem = Problem("math:p", "Write 17 in base 2.", "10001_2")
    assert not task.is_correct(problem, "10001_3") and task.is_correct(problem, "10001_{2}")
    assert not same_answer(task, problem, "10001_2", "10001_3") and same_answer(task, problem, "10001_2", "10001_{2}")
    # round twenty-three: the vote groups by key first, and the key dropped the base; an answer
    # without a base joined both
    assert answer_groups(task, problem, ["10001_2", "10001_3"]) == [0, 1]
    assert answer_groups(task, problem, ["10001_2", "10001", "10001_3"]) == [0, 1, 2]
    assert answer_groups(task, problem, ["10001_2", "10001_{2}", "10001_{ 2}"]) == [0, 0, 0]
    assert equivalent("x_1^2+x_2^2", "x^2_1+x^2_2")  # a reviewer's: an exponent's digit is no numeral with a base
