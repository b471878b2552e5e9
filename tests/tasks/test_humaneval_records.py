"""HumanEval-format data files: a record no program could be judged against is refused at
load, naming ``path:line`` and the field; a record whose own tests break while judging is
an error, never a wrong answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation_env import tasks
from deliberation_env.tasks.humaneval import HumanEvalTask

GOOD = {
    "task_id": "Local/0",
    "prompt": 'def add(a, b):\n    """The sum of a and b.\n    >>> add(1, 2)\n    3\n    """\n',
    "canonical_solution": "    return a + b\n",
    "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n",
    "entry_point": "add",
}
"""A valid record; the bad ones below change one field."""


def _write(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _with_bad_second_line(tmp_path: Path, **change) -> Path:
    """A file whose first record is good and whose second is ``GOOD`` changed."""
    return _write(tmp_path / "data.jsonl", GOOD, {**GOOD, "task_id": "Local/1", **change})


def test_a_good_file_loads_and_judges(tmp_path):
    task = HumanEvalTask(_write(tmp_path / "data.jsonl", GOOD))
    (problem,) = task.problems("train") + task.problems("test")
    assert task.is_correct(problem, problem.answer)
    assert not task.is_correct(problem, task.parse(problem, "    return a - b"))


def test_a_task_id_used_twice_names_both_lines(tmp_path):
    path = _write(tmp_path / "data.jsonl", GOOD, {**GOOD, "test": GOOD["test"] + "    assert False\n"})
    with pytest.raises(ValueError, match=r"data\.jsonl:2: problem id 'Local/0' is already used at .*data\.jsonl:1"):
        HumanEvalTask(path)


def test_a_task_id_in_both_split_files_is_refused(tmp_path):
    _write(tmp_path / "train.jsonl", GOOD)
    _write(tmp_path / "test.jsonl", GOOD)
    with pytest.raises(ValueError, match=r"test\.jsonl:1: problem id 'Local/0' is already used at .*train\.jsonl:1"):
        tasks.get("humaneval", path=tmp_path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"entry_point": "not an id"}, r"field 'entry_point' must be the name .* got 'not an id'"),
        ({"entry_point": "class"}, r"field 'entry_point' must be the name .* got 'class'"),
        ({"entry_point": "__init__"}, r"field 'entry_point' .* dunder .* got '__init__'"),
        ({"entry_point": "ﬁnd"}, r"field 'entry_point' .* NFKC .* got 'ﬁnd'"),
        ({"entry_point": " add"}, r"field 'entry_point' must be the name"),
        ({"entry_point": 7}, r"field 'entry_point' must be a string, got int 7"),
        ({"test": ["assert True"]}, r"field 'test' must be a string, got list"),
        ({"prompt": None}, r"field 'prompt' is null"),
        ({"canonical_solution": ""}, r"field 'canonical_solution' is empty"),
    ],
)
def test_mistyped_fields_and_unusable_entry_points_name_the_line(tmp_path, change, message):
    with pytest.raises(ValueError, match=rf"data\.jsonl:2: {message}"):
        HumanEvalTask(_with_bad_second_line(tmp_path, **change))


@pytest.mark.parametrize("missing", sorted(GOOD))
def test_every_field_is_required(tmp_path, missing):
    record = {key: value for key, value in GOOD.items() if key != missing}
    path = _write(tmp_path / "data.jsonl", record)
    with pytest.raises(ValueError, match=rf"data\.jsonl:1: missing field '{missing}'"):
        HumanEvalTask(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"prompt": "def add(a, b:\n"}, r"field 'prompt': the prompt does not compile: .*line 1"),
        ({"prompt": GOOD["prompt"] + "\x00"}, r"field 'prompt': the prompt does not compile"),
        ({"prompt": "def plus(a, b):\n    '''Add.'''\n"}, r"field 'prompt' must end with `def add\(\.\.\.\)`"),
        ({"prompt": GOOD["prompt"] + "add = print\n"}, r"field 'prompt' must end with `def add"),
        ({"canonical_solution": "    return (a +\n"}, r"field 'canonical_solution': .* does not compile"),
    ],
)
def test_a_prompt_or_solution_that_cannot_run_is_refused(tmp_path, change, message):
    with pytest.raises(ValueError, match=rf"data\.jsonl:2: {message}"):
        HumanEvalTask(_with_bad_second_line(tmp_path, **change))


def test_an_entry_point_named_like_a_builtin_is_refused(tmp_path):
    # The judge binds the entry point's name to the candidate, so tests that use the
    # builtin would ask the candidate for their expected values.
    record = {
        **GOOD,
        "prompt": 'def sum(values):\n    """The sum of the values."""\n',
        "canonical_solution": "    total = 0\n    for value in values:\n        total += value\n    return total\n",
        "test": "def check(candidate):\n    assert candidate([1, 2, 3]) == sum([1, 2, 3])\n",
        "entry_point": "sum",
    }
    path = _write(tmp_path / "data.jsonl", GOOD, {**record, "task_id": "Local/1"})
    with pytest.raises(ValueError, match=r"data\.jsonl:2: field 'entry_point' 'sum' is the name of a builtin"):
        HumanEvalTask(path)


@pytest.mark.parametrize(
    "test",
    [
        "def add(a, b):\n    return a + b\ndef check(candidate):\n    assert candidate(1, 2) == add(1, 2)\n",
        "from operator import add\ndef check(candidate):\n    assert candidate(1, 2) == add(1, 2)\n",
        "def check(candidate):\n    global add\n    add = lambda a, b: a + b\n    assert candidate(1, 2) == add(1, 2)\n",
    ],
)
def test_tests_that_bind_the_entry_points_name_are_refused(tmp_path, test):
    with pytest.raises(ValueError, match=r"data\.jsonl:2: field 'test' binds the entry point's name 'add'"):
        HumanEvalTask(_with_bad_second_line(tmp_path, test=test))


def test_prompt_helpers_that_use_the_entry_points_name_are_refused(tmp_path):
    prompt = "def reference(a, b):\n    return add(a, b)\n\n" + GOOD["prompt"]
    test = "def check(candidate):\n    assert candidate(1, 2) == reference(1, 2)\n"
    with pytest.raises(ValueError, match=r"data\.jsonl:2: field 'prompt' uses the entry point's name 'add' before"):
        HumanEvalTask(_with_bad_second_line(tmp_path, prompt=prompt, test=test))


CHECK_BODY = "    assert candidate(1, 2) == 3\n"

BAD_TESTS = [
    ("def check(candidate):\n    assert candidate(1, 2) ==\n", r"the tests does not compile: .*line 2"),
    ("def check(candidate):\n    pass\nreturn 1\n", r"does not compile: 'return' outside function"),
    ("def check(candidate):\n    await candidate(1, 2)\n", r"does not compile: 'await' outside async"),
    ("def verify(candidate):\n" + CHECK_BODY, r"defines no function `check\(candidate\)`"),
    ("METADATA = {}\n", r"defines no function `check\(candidate\)`"),
    ("async def check(candidate):\n" + CHECK_BODY, r"must bind `check` exactly once, by a plain .* \(it has 1 bindings"),
    ("check = lambda candidate: None\n", r"must bind `check` exactly once, by a plain .* \(it has 1 bindings"),
    ("def check(candidate):\n" + CHECK_BODY + "check = print\n", r"must bind `check` exactly once.*\(it has 2 bindings"),
    ("def check(candidate):\n" + CHECK_BODY + "from os import path as check\n", r"must bind `check` exactly once.*\(it has 2 bindings"),
    ("def check(candidate):\n" + CHECK_BODY + "def check(candidate):\n    pass\n", r"must bind `check` exactly once.*\(it has 2 bindings"),
    ("import functools\n@functools.lru_cache\ndef check(candidate):\n" + CHECK_BODY, r"no decorator, yield or await"),
    ("def check(candidate):\n" + CHECK_BODY + "    yield\n", r"no decorator, yield or await"),
    ("def check():\n    assert True\n", r"check must take the candidate as its one argument"),
    ("def check(candidate, expected):\n" + CHECK_BODY, r"check must take the candidate as its one argument"),
    ("def check(candidate, *, strict):\n" + CHECK_BODY, r"check must take the candidate as its one argument"),
    ("def check(candidate):\n" + CHECK_BODY + "check(add)\n", r"uses check when it loads"),
    ("def check(candidate):\n" + CHECK_BODY + "if __name__ == '__main__':\n    check(add)\n", r"uses check when it loads"),
    ("def check(candidate):\n" + CHECK_BODY + "class Run:\n    check(add)\n", r"uses check when it loads"),
    ("def check(candidate):\n" + CHECK_BODY + "results = list(map(check, [add]))\n", r"uses check when it loads"),
    ("def check(candidate):\n    assert candidate(1, 2) == expected(1, 2)\n", r"reads expected, which neither"),
    ("def check(candidate):\n    assert candidate(1, 2) == math.floor(3.5)\n", r"reads math, which neither"),
    ("def check(candidate):\n    def inner():\n        return candidate(1, 2) == THREE\n    assert inner()\n", r"reads THREE"),
    ("LIMIT = UNDEFINED + 1\ndef check(candidate):\n" + CHECK_BODY, r"reads UNDEFINED"),
]


@pytest.mark.parametrize(("test", "message"), BAD_TESTS)
def test_tests_no_program_could_pass_are_refused_naming_the_line_and_field(tmp_path, test, message):
    with pytest.raises(ValueError, match=rf"data\.jsonl:2: field 'test'.*{message}"):
        HumanEvalTask(_with_bad_second_line(tmp_path, test=test))


def test_a_prompt_reading_an_undefined_name_is_refused(tmp_path):
    prompt = "def add(a, b: Number):\n    '''Add.'''\n"
    with pytest.raises(ValueError, match=r"data\.jsonl:2: field 'prompt' reads Number"):
        HumanEvalTask(_with_bad_second_line(tmp_path, prompt=prompt))


@pytest.mark.parametrize(
    "test",
    [
        # names bound by the prompt, an import, a global statement, a class, the entry point
        "import math\nTHREE = 3\ndef check(candidate):\n    assert candidate(1, 2) == THREE == math.floor(3.5)\n",
        "def check(candidate):\n    global seen\n    seen = candidate(1, 2)\n    assert seen == 3 and candidate(2, 2) == add(2, 2)\n",
        "class Case:\n    args = (1, 2)\ndef check(candidate):\n    assert candidate(*Case.args) == 3\n",
        "from math import *\ndef check(candidate):\n    assert candidate(1, 2) == floor(pi)\n",
        "def check(candidate, strict=True):\n" + CHECK_BODY,
        "def check(*candidates):\n    assert candidates[0](1, 2) == 3\n",
        "def check(candidate):\n    def gen():\n        yield 1\n    assert candidate(*gen(), 2) == 3\n",
    ],
)
def test_unusual_but_working_tests_are_accepted(tmp_path, test):
    task = HumanEvalTask(_with_bad_second_line(tmp_path, test=test))  # each solution judged
    assert len(task.problems("train") + task.problems("test")) == 2


def test_a_canonical_solution_that_fails_its_tests_is_refused(tmp_path):
    path = _with_bad_second_line(tmp_path, canonical_solution="    return a * b\n")
    HumanEvalTask(path, validate=False)  # the static checks cannot know
    with pytest.raises(ValueError, match=r"data\.jsonl:2: problem 'Local/1': its canonical solution does not pass its tests \(failed: AssertionError"):
        HumanEvalTask(path)


def test_tests_that_break_while_running_are_refused(tmp_path):
    test = "def check(candidate):\n    assert candidate(1, 2) == {}['expected']\n"
    with pytest.raises(ValueError, match=r"data\.jsonl:2: problem 'Local/1': its canonical solution .*KeyError"):
        HumanEvalTask(_with_bad_second_line(tmp_path, test=test))


def test_tests_that_do_not_load_in_the_judge_are_refused(tmp_path):
    test = "import no_such_module_for_this_test\n" + GOOD["test"]
    with pytest.raises(ValueError, match=r"data\.jsonl:2: problem 'Local/1': the judge could not run .*ModuleNotFoundError.*fix its 'prompt' or 'test'"):
        HumanEvalTask(_with_bad_second_line(tmp_path, test=test))


@pytest.mark.parametrize("stop", ["raise SystemExit(0)", "import os\nos._exit(0)"])
def test_tests_that_end_the_judge_are_refused(tmp_path, stop):
    test = GOOD["test"] + stop + "\n"
    with pytest.raises(ValueError, match=r"data\.jsonl:2: problem 'Local/1': the judge ended without a verdict .*do not exit"):
        HumanEvalTask(_with_bad_second_line(tmp_path, test=test))


def test_a_canonical_solution_too_slow_to_judge_names_the_way_out(tmp_path):
    solution = "    import time\n    time.sleep(60)\n    return a + b\n"
    with pytest.raises(ValueError, match=r"data\.jsonl:2: problem 'Local/1': .*could not be judged in time \(timeout.*validate=False"):
        HumanEvalTask(_with_bad_second_line(tmp_path, canonical_solution=solution), timeout_s=1)


@pytest.mark.parametrize(
    "change",
    [
        {"test": "import no_such_module_for_this_test\n" + GOOD["test"]},
        {"prompt": "1 / 0\n" + GOOD["prompt"]},
    ],
)
def test_a_judge_error_while_scoring_raises_naming_the_problem_and_record(tmp_path, change):
    task = HumanEvalTask(_with_bad_second_line(tmp_path, **change), validate=False)
    problem = next(p for p in task.problems("train") + task.problems("test") if p.id == "Local/1")
    program = task.parse(problem, "    return a + b")
    with pytest.raises(RuntimeError, match=r"problem 'Local/1' \(.*data\.jsonl:2\): the sandbox could not run"):
        task.is_correct(problem, program)
    with pytest.raises(RuntimeError, match=r"problem 'Local/1'"):
        task.check_all([(problem, program)])
    with pytest.raises(RuntimeError, match=r"problem 'Local/1'"):
        task.decision_key(problem, program)
    assert task.cache_info().currsize == 0


@pytest.mark.parametrize(
    "check_body",
    [
        "    assert candidate(1, 2) == helper(1, 2)\n",
        "    import no_such_module_for_this_test\n    assert candidate(1, 2) == 3\n",
        "    if candidate(1, 2) == 3:\n        del total\n    total = 3\n",
    ],
    ids=["NameError", "ImportError", "UnboundLocalError"],
)
def test_tests_whose_own_code_raises_are_a_judge_error_not_a_wrong_answer(tmp_path, check_body):
    test = "def check(candidate):\n" + check_body
    if "helper" in check_body:  # a name the static check sees bound, then deleted
        test = "def helper(a, b):\n    return a + b\ndel helper\n" + test
    task = HumanEvalTask(_with_bad_second_line(tmp_path, test=test), validate=False)
    problem = next(p for p in task.problems("train") + task.problems("test") if p.id == "Local/1")
    with pytest.raises(RuntimeError, match=r"problem 'Local/1' \(.*data\.jsonl:2\): the problem's tests raised \w+Error on their own"):
        task.is_correct(problem, problem.answer)
    with pytest.raises(RuntimeError, match="on their own"):
        task.is_correct(problem, problem.answer)  # judged again: a judge fault is never kept
    assert task.cache_info() == (0, 2, task.cache_info().maxsize, 0)


def test_a_candidates_own_name_error_is_its_wrong_answer(tmp_path):
    task = HumanEvalTask(_write(tmp_path / "data.jsonl", GOOD))
    (problem,) = task.problems("train") + task.problems("test")
    assert task.verdict(problem, task.parse(problem, "    return undefined_name")).reason == "failed"
    assert not task.is_correct(problem, task.parse(problem, "    import no_such_module\n    return 3"))
