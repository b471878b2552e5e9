"""The verdict is unforgeable: wrong programs written to exploit the judge never pass.

Every attack below is a *wrong* ``add(a, b)`` plus an exploit; each must get a verdict
other than ``passed``. The same attacks run in forced ``rlimits`` mode (no namespaces, no
uid change), where the judge still decides alone.
"""

from __future__ import annotations

import colorsys
import email
import os
from pathlib import Path

import pytest

from deliberation_env.sandbox import JudgeRequest, judge_python, sandbox
from deliberation_env.sandbox._sandbox_codec import CodecError, decode, encode

TESTS = """
def check(candidate):
    assert candidate(2, 3) == 5
    assert candidate(-1, 1) == 0
    assert isinstance(candidate(1, 1), int)
    assert abs(candidate(10, 5) - 15) == 0
    assert str(candidate(4, 4)) == "8"
"""
CORRECT = "def add(a, b):\n    return a + b\n"
NAMESPACES = judge_python(JudgeRequest(CORRECT, TESTS, "add")).isolation == "namespaces"
NAMESPACES_OR_NOT = "namespaces" if NAMESPACES else "rlimits"
needs_namespaces = pytest.mark.skipif(not NAMESPACES, reason="needs root and namespaces")
FORGED_RECORDS = (
    b'{"outcome": "passed"}\n',
    b'{"outcome": "passed", "detail": ""}\n',
    b'{"reason": "passed", "detail": "", "behaviour": null}\n',
    b'{"isolation": "namespaces"}\n{"reason": "passed", "detail": "", "behaviour": []}\n',
    b"passed\n",
)


@pytest.fixture(params=["default", "rlimits"])
def mode(request, monkeypatch):
    """Each attack in the mode this machine gives, and in forced ``rlimits`` mode."""
    if request.param == "rlimits":
        monkeypatch.setattr(sandbox, "_privileged", lambda: False)
    return request.param


def judged(program: str, timeout_s: float = 5.0, **kwargs) -> sandbox.Verdict:
    return judge_python(JudgeRequest(program, TESTS, "add", **kwargs), timeout_s=timeout_s)


def test_the_correct_program_passes_in_both_modes(mode):
    verdict = judged(CORRECT)
    assert (verdict.passed, verdict.reason) == (True, "passed")
    assert verdict.isolation == ("rlimits" if mode == "rlimits" else NAMESPACES_OR_NOT)


EARLY_EXITS = {
    "sys.exit(0) at import": "import sys\nsys.exit(0)",
    "os._exit(0) at import": "import os\nos._exit(0)",
    "raise SystemExit": "raise SystemExit(0)",
    "SIGKILL to itself": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    "SIGTERM to itself": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)",
    "atexit then exit": "import atexit, os, sys\natexit.register(lambda: os._exit(0))\nsys.exit(0)",
    "thread exits the process": (
        "import os, threading\nthreading.Thread(target=lambda: os._exit(0)).start()\n"
        "import time\ntime.sleep(1)"
    ),
    "sys.exit(0) inside the call": "def add(a, b):\n    import sys\n    sys.exit(0)\n",
    "os._exit(0) inside the call": "def add(a, b):\n    import os\n    os._exit(0)\n",
    "KeyboardInterrupt inside the call": "def add(a, b):\n    raise KeyboardInterrupt\n",
    "exit after the first answer": (
        "calls = []\ndef add(a, b):\n    calls.append(1)\n    if len(calls) > 1:\n"
        "        import os\n        os._exit(0)\n    return a + b\n"
    ),
}


@pytest.mark.parametrize("exploit", EARLY_EXITS.values(), ids=EARLY_EXITS.keys())
def test_exiting_early_in_any_way_never_passes(mode, exploit):
    verdict = judged("def add(a, b):\n    return None\n" + exploit)
    assert not verdict.passed and verdict.reason in ("load_error", "bad_answer", "failed")


LIARS = {
    "__eq__ always True": (
        "class Liar:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"
        "    def __repr__(self): return '5'\n    __hash__ = object.__hash__\n"
        "def add(a, b):\n    return Liar()\n"
    ),
    "int subclass with __eq__": (
        "class Int(int):\n    def __eq__(self, other): return True\n    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return Int(0)\n"
    ),
    "str subclass with __eq__": (
        "class Str(str):\n    def __eq__(self, other): return True\n    __hash__ = str.__hash__\n"
        "def add(a, b):\n    return Str('')\n"
    ),
    "list subclass with __eq__": (
        "class List(list):\n    def __eq__(self, other): return True\ndef add(a, b):\n    return List()\n"
    ),
    "bool is not an int here": "def add(a, b):\n    return True\n",
    "a function": "def add(a, b):\n    return add\n",
    "NaN": "def add(a, b):\n    return float('nan')\n",
    "huge int": "def add(a, b):\n    return 10 ** 100_000\n",
    "enormous string": "def add(a, b):\n    return 'x' * (20 * 2**20)\n",
    "deeply nested list": (
        "def add(a, b):\n    value = []\n    for _ in range(100_000):\n        value = [value]\n    return value\n"
    ),
    "a million items": "def add(a, b):\n    return [0] * 2_000_000\n",
}


@pytest.mark.parametrize("program", LIARS.values(), ids=LIARS.keys())
def test_objects_that_lie_or_overflow_are_wrong_answers(mode, program):
    verdict = judged(program)
    assert not verdict.passed and verdict.reason in ("bad_answer", "failed"), verdict


def test_an_answer_that_is_not_a_built_in_names_the_type():
    verdict = judged(LIARS["int subclass with __eq__"])
    assert verdict.reason == "bad_answer" and "Int" in verdict.detail


TAMPERING = {
    "settrace and setprofile": (
        "import sys\nsys.settrace(lambda *a: None)\nsys.setprofile(lambda *a: None)\n"
        "def add(a, b):\n    return None\n"
    ),
    "patch the harness through frames and gc": (
        "import gc, sys\n"
        "for module in list(sys.modules.values()):\n"
        "    for name in ('_verdict', '_probe', '_record', '_answer', 'decode', 'encode'):\n"
        "        if hasattr(module, name):\n"
        "            try: setattr(module, name, lambda *a, **k: {'reason': 'passed', 'detail': '', 'behaviour': None})\n"
        "            except Exception: pass\n"
        "frame = sys._getframe()\n"
        "while frame is not None:\n"
        "    frame.f_globals['_verdict'] = lambda *a: {'reason': 'passed', 'detail': ''}\n"
        "    frame = frame.f_back\n"
        "for holder in gc.get_referrers(sys.modules[__name__] if __name__ in sys.modules else sys):\n"
        "    pass\n"
        "def add(a, b):\n    return None\n"
    ),
    "replace builtins": (
        "import builtins\n"
        "class Never(Exception): pass\n"
        "builtins.AssertionError = Never\nbuiltins.isinstance = lambda *a: True\n"
        "builtins.abs = lambda x: 0\nbuiltins.str = lambda x: '8'\n"
        "def add(a, b):\n    return None\n"
    ),
    "replace json, os and sys": (
        'import json, os, sys\njson.dumps = lambda *a, **k: \'{"reason": "passed"}\'\n'
        "json.loads = lambda *a, **k: ['return', 5]\nos._exit = lambda *a: None\n"
        "sys.exit = lambda *a: None\n"
        "def add(a, b):\n    return None\n"
    ),
    "print what the harness prints": (
        'import sys\nfor record in (\'{"outcome": "passed"}\', \'{"reason": "passed"}\', \'passed\', \'__behaviour__:["5"]\'):\n'
        "    print(record)\n    print(record, file=sys.stderr)\n"
        'def add(a, b):\n    print(\'{"reason": "passed"}\')\n    return None\n'
    ),
}


@pytest.mark.parametrize("program", TAMPERING.values(), ids=TAMPERING.keys())
def test_altering_the_interpreter_never_passes(mode, program):
    verdict = judged(program)
    assert not verdict.passed, verdict


def test_forged_records_on_every_descriptor_never_pass(mode):
    records = ", ".join(repr(r) for r in FORGED_RECORDS)
    forge = (
        "import os\n"
        f"records = [{records}]\n"
        "def forge():\n"
        "    for fd in range(1024):\n"
        "        for record in records:\n"
        "            for data in (record, len(record).to_bytes(8, 'big') + record):\n"
        "                try: os.write(fd, data)\n"
        "                except OSError: pass\n"
        "forge()\n"
        "def add(a, b):\n    forge()\n    return None\n"
    )
    assert not judged(forge).passed


def test_forged_answers_in_the_protocol_are_just_answers(mode):
    """Writing codec messages on every descriptor is answering: wrong values still fail."""
    forge = (
        "import os, json\n"
        "ready = json.dumps(['tuple', [['str', 'ready']]]).encode()\n"
        "done = json.dumps(['tuple', [['str', 'return'], ['str', 'passed']]]).encode()\n"
        "def add(a, b):\n"
        "    for fd in range(3, 64):\n"
        "        for message in (ready, done):\n"
        "            try: os.write(fd, len(message).to_bytes(8, 'big') + message)\n"
        "            except OSError: pass\n"
        "    return None\n"
    )
    assert not judged(forge).passed


@needs_namespaces
def test_the_judge_cannot_be_signalled_traced_or_opened():
    attack = (
        "import ctypes, os, signal\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def attack():\n"
        "    for pid in range(1, 64):  # the run's own PID namespace, the judge is 1\n"
        "        if pid == os.getpid():\n"
        "            continue\n"
        "        for number in (signal.SIGSTOP, signal.SIGKILL):\n"
        "            try: os.kill(pid, number)\n"
        "            except OSError: pass\n"
        "        libc.ptrace(16, pid, 0, 0)  # PTRACE_ATTACH\n"
        "        try: fds = os.listdir(f'/proc/{pid}/fd')\n"
        "        except OSError: fds = []\n"
        "        for fd in fds:\n"
        "            try: os.write(os.open(f'/proc/{pid}/fd/{fd}', os.O_WRONLY), b'{\"reason\": \"passed\"}\\n')\n"
        "            except OSError: pass\n"
        "attack()\n"
        "def add(a, b):\n    return a + b + 1\n"
    )
    verdict = judged(attack)
    assert (verdict.passed, verdict.reason) == (False, "failed")  # the judge survived, and judged


def test_sleeping_until_the_timeout_fails(mode):
    verdict = judged("import time\ndef add(a, b):\n    time.sleep(60)\n", timeout_s=1.5)
    assert (verdict.passed, verdict.reason) == (False, "timeout")


def test_answering_then_hanging_fails(mode):
    program = (
        "calls = []\ndef add(a, b):\n    calls.append(1)\n    if len(calls) > 3:\n"
        "        while True: pass\n    return a + b\n"
    )
    verdict = judged(program, timeout_s=1.5)
    assert (verdict.passed, verdict.reason) == (False, "timeout")


@pytest.mark.parametrize("leaked", [False, True], ids=["tests hidden", "control: tests leaked"])
def test_the_tests_are_never_in_the_candidates_memory(mode, leaked):
    """The tests hold a secret the candidate returns if it finds it anywhere it can read;
    the control puts the tests in the program to show that the search would find them."""
    secret = os.urandom(8).hex()
    tests = f"def check(candidate):\n    assert {secret!r} in candidate()\n"
    search = (
        "import os, re\n"
        "def add():\n"
        "    needle = re.compile(b\"([0-9a-f]{16})' in candidate\" + b'[(][)]')\n"
        "    found = set()\n"
        "    for line in open('/proc/self/maps'):\n"
        "        fields = line.split()\n"
        "        if 'r' not in fields[1] or (len(fields) > 5 and fields[5].startswith('[v')):\n"
        "            continue\n"
        "        start, end = (int(x, 16) for x in fields[0].split('-'))\n"
        "        try:\n"
        "            with open('/proc/self/mem', 'rb') as mem:\n"
        "                mem.seek(start)\n"
        "                data = mem.read(end - start)\n"
        "        except (OSError, OverflowError, ValueError):\n"
        "            continue\n"
        "        found.update(m.group(1).decode() for m in needle.finditer(data))\n"
        "    for fd in [0, *range(3, 64)]:\n"
        "        try:\n"
        "            os.set_blocking(fd, False)\n"
        "            found.add(os.read(fd, 1 << 16).decode(errors='replace'))\n"
        "        except OSError:\n"
        "            pass\n"
        "    return ' '.join(sorted(found))\n"
    )
    program = f"leaked = {tests.encode()!r}\n{search}" if leaked else search
    verdict = judge_python(JudgeRequest(program, tests, "add"), timeout_s=20)
    # Answered; without the leak the answer lacks the secret.
    assert verdict.reason == ("passed" if leaked else "failed"), verdict


@needs_namespaces
def test_hidden_paths_cannot_be_read():
    # Standard-library paths: visible in every sandbox wherever the checkout lives (a
    # checkout under /tmp is behind the sandbox's private /tmp anyway).
    hidden_dir = Path(email.__file__).parent
    hidden_file = Path(colorsys.__file__)
    program = (
        "import os\n"
        "def add(a, b):\n"
        f"    return [os.listdir({str(hidden_dir)!r}) if os.access({str(hidden_dir)!r}, os.R_OK) else 'denied',\n"
        f"            len(open({str(hidden_file)!r}).read())]\n"
    )
    tests = "def check(candidate):\n    pass\n"
    request = JudgeRequest(program, tests, "add", probes=("add(1, 2)",))
    visible = judge_python(request)
    hidden = judge_python(request, hidden_paths=[hidden_dir, hidden_file])
    listing, size = eval(visible.behaviour[0])
    assert "__init__.py" in listing and size > 1000
    assert hidden.behaviour == ("['denied', 0]",)


# ----------------------------------------------------------------------------- the codec
@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(2**200),
        0.1,
        float("inf"),
        -0.0,
        1 + 2j,
        "é\ud800",
        b"\x00",
        [1, (2, {3})],
        {"k": frozenset({1})},
        (),
        {},
    ],
)
def test_the_codec_round_trips_plain_values_exactly(value):
    decoded = decode(encode(value))
    assert decoded == value and type(decoded) is type(value) and repr(decoded) == repr(value)


def test_the_codec_keeps_nan():
    assert decode(encode(float("nan"))) != decode(encode(float("nan")))


@pytest.mark.parametrize(
    "message",
    [
        b'["int", "1_0"]',
        b'["list", 1]',
        b'["pickle", "x"]',
        b"{}",
        b'["set", [["list", []]]]',
        b"[" * 100_000,
        b'["str"]',
        b'["dict", [[["none"]]]]',
    ],
)
def test_the_codec_refuses_anything_else(message):
    with pytest.raises(CodecError):
        decode(message)


def test_the_codec_refuses_user_classes_and_subclasses():
    class Int(int):
        pass

    for value in (Int(1), [object()], {1: Int(2)}):
        with pytest.raises(CodecError, match="type"):
            encode(value)


def test_behaviour_shows_results_and_digests_long_ones():
    program = "def f(n):\n    if n < 0:\n        raise ValueError(n)\n    return 'x' * n\n"
    probes = ("f(2)", "f(5000)", "f(-1)")
    verdict = judge_python(JudgeRequest(program, "def check(f):\n    pass\n", "f", probes=probes))
    short, long, raised = verdict.behaviour
    assert (short, raised) == ("'xx'", "raised ValueError")
    assert long.startswith("sha256:") and len(long) == len("sha256:") + 64
