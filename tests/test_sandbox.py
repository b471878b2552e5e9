"""The sandbox: ordinary programs run; hostile ones are contained and the host is unharmed."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers import wait_until

from deliberation_env.sandbox import JudgeRequest, judge_python, run_many, run_python, sandbox

NAMESPACES = run_python("pass").isolation == "namespaces"
needs_namespaces = pytest.mark.skipif(
    not NAMESPACES, reason="full isolation needs root and namespaces (see deliberation_env.sandbox)"
)
_SANDBOX_UIDS = 2_000_000_000  # the sandbox's dedicated uids start here


def _sandbox_processes(sessions: set[int]) -> list[int]:
    """Pids of live processes running as a sandbox uid in one of ``sessions`` (the runs
    of this test: each sandbox is a session of its own, which its code cannot leave)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        uid = int(status.split("Uid:")[1].split()[0])
        state, _, _, session = stat[stat.rindex(")") + 2 :].split()[:4]
        if uid >= _SANDBOX_UIDS and state != "Z" and int(session) in sessions:
            pids.append(int(pid))
    return pids


@pytest.fixture
def host(monkeypatch):
    """After the test: no process of its sandboxes is left and the host can still start
    processes."""
    sessions, start = set(), sandbox._start

    def recorded(*args, **kwargs):
        process = start(*args, **kwargs)
        sessions.add(process.pid)
        return process

    monkeypatch.setattr(sandbox, "_start", recorded)
    yield
    wait_until(lambda: not _sandbox_processes(sessions))  # a killed process takes a moment to go
    assert _sandbox_processes(sessions) == []
    alive = subprocess.run(
        [sys.executable, "-c", "print('alive')"], check=True, capture_output=True, text=True
    )
    assert alive.stdout == "alive\n"


def test_runs_code_and_captures_both_streams():
    result = run_python("import sys\nprint('out')\nprint('err', file=sys.stderr)")
    assert (result.passed, result.reason, result.stdout, result.stderr) == (
        True,
        "passed",
        "out\n",
        "err\n",
    )
    assert result.duration > 0


def test_an_exception_is_a_result_with_its_traceback():
    result = run_python("def f():\n    raise KeyError('k')\nf()")
    assert (result.passed, result.reason) == (False, "exception")
    assert result.detail == "KeyError: 'k'"
    assert 'File "<sandbox>", line 2, in f' in result.stderr
    assert "_sandbox_child" not in result.stderr


def test_stdout_before_an_exception_is_kept():
    assert run_python("print('partial')\n1 / 0").stdout == "partial\n"


def test_forged_status_lines_do_not_make_a_failure_pass():
    code = "import os\nfor fd in range(3, 20):\n    try: os.write(fd, b'{\"outcome\": \"passed\"}\\n')\n    except OSError: pass\nraise ValueError('no')"
    assert run_python(code).reason == "exception"


@pytest.mark.parametrize(
    "bad", [{"timeout_s": 0}, {"memory_mb": -1}, {"max_processes": 0}, {"max_file_mb": 0}]
)
def test_non_positive_limits_are_refused(bad):
    with pytest.raises(ValueError, match="must be positive"):
        run_python("pass", **bad)


@contextlib.contextmanager
def _rendezvous(size: int) -> Iterator[Callable[[int], str]]:
    """Code for ``size`` programs that wait until all of them overlapped in time: programs
    that do not run concurrently never all get past it.

    Member ``k`` names its process after the group and ``k`` and waits for ``SIGUSR1``; a
    thread of the test sends it to every member once it sees all of them alive at once, in
    the host's ``/proc`` (the sandbox lets no program read another's name).
    """
    group, done = _group(), threading.Event()

    def members() -> dict[str, int]:
        named = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                named[Path(f"/proc/{pid}/comm").read_text().strip()] = int(pid)
        return {name: pid for name, pid in named.items() if name.startswith(group)}

    def release() -> None:
        while not done.wait(0.01):
            seen = members()
            if len(seen) == size:
                for pid in seen.values():
                    os.kill(pid, signal.SIGUSR1)
                return

    def code(member: int) -> str:
        return (
            "import ctypes, signal\n"
            "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
            f"ctypes.CDLL(None).prctl(15, b'{group}{member}')  # PR_SET_NAME\n"
            "signal.sigwait({signal.SIGUSR1})\n"
        )

    releaser = threading.Thread(target=release, daemon=True)
    releaser.start()
    try:
        yield code
    finally:
        done.set()
        releaser.join()


def _group() -> str:
    """A process-name prefix no other test run uses at the same time."""
    return f"s{os.getpid() % 10**6}-{os.urandom(1).hex()}-"


def test_run_many_keeps_order_and_runs_concurrently():
    with _rendezvous(4) as rendezvous:
        codes = [rendezvous(i) + f"print({i})" for i in range(4)]
        results = run_many(codes, timeout_s=60, max_workers=4)
    assert [(r.reason, r.stdout) for r in results] == [("passed", f"{i}\n") for i in range(4)]


def test_the_verdict_carries_what_check_returned():
    tests = (
        "def check(candidate):\n"
        "    results = [candidate(x) == 2 * x for x in range(3)]\n"
        "    return (sum(results), len(results), [repr(candidate(1))])\n"
    )
    verdict = judge_python(JudgeRequest("def double(x):\n    return x + 1\n", tests, "double"))
    assert (verdict.passed, verdict.returned) == (True, (1, 3, ["2"]))
    unsendable = judge_python(
        JudgeRequest("def f():\n    pass\n", "def check(f):\n    return object\n", "f")
    )
    assert (unsendable.passed, unsendable.reason, unsendable.returned) == (False, "failed", None)
    assert "cannot be sent" in unsendable.detail


def test_rlimits_mode_still_runs_and_reports(monkeypatch):
    monkeypatch.setattr(sandbox, "_privileged", lambda: False)  # as if not root
    ran = run_python("import os\nos.closerange(3, 64)\nprint('ran')")
    failed = run_python("raise KeyError('k')")
    assert (ran.isolation, ran.reason, ran.stdout) == ("rlimits", "passed", "ran\n")
    assert (failed.reason, failed.detail) == ("exception", "KeyError: 'k'")


def test_a_lone_surrogate_is_a_failed_run_not_a_crash_of_the_batch():
    results = run_many(["print('\ud800')", "print('fine')"])
    assert (results[0].passed, results[0].reason) == (False, "exception")
    assert "surrogate" in results[0].detail
    assert (results[1].passed, results[1].stdout) == (True, "fine\n")


def test_a_program_that_closes_its_descriptors_still_reports():
    result = run_python("import os\nos.closerange(3, 64)\nprint('closed')")
    assert (result.passed, result.reason, result.stdout) == (True, "passed", "closed\n")


def test_a_correct_candidate_that_closes_its_descriptors_passes():
    program = "import os\nos.closerange(3, 64)\ndef add(a, b):\n    os.closerange(3, 64)\n    return a + b\n"
    verdict = judge_python(JudgeRequest(program, "def check(f):\n    assert f(1, 2) == 3\n", "add"))
    assert (verdict.passed, verdict.reason) == (True, "passed")


# ------------------------------------------------------------------------ hostile code
@pytest.mark.usefixtures("host")
class TestHostileCode:
    def test_infinite_loop_is_stopped_by_the_wall_clock(self):
        result = run_python("while True:\n    pass", timeout_s=1)
        assert result.reason in ("timeout", "cpu_time") and not result.passed

    def test_sleeping_forever_is_stopped(self):
        result = run_python("import time\ntime.sleep(1000)", timeout_s=1)
        assert result.reason == "timeout"

    def test_fork_bomb_is_contained(self):
        code = (
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
        )
        result = run_python(code, timeout_s=2, max_processes=16)
        assert not result.passed and result.reason in ("timeout", "cpu_time")

    def test_daemonized_children_do_not_outlive_the_run(self):
        code = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(1000)\nprint('parent done')"
        assert (
            run_python(code).stdout == "parent done\n"
        )  # the host fixture checks the child is gone

    def test_memory_bomb_hits_the_address_space_limit(self):
        result = run_python(
            "blocks = []\nwhile True:\n    blocks.append(bytearray(10**7))", memory_mb=200
        )
        assert (result.passed, result.reason) == (False, "memory")
        assert "200 MiB" in result.detail

    def test_huge_file_write_hits_the_file_size_limit(self):
        code = "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 10**6)"
        result = run_python(code, max_file_mb=4)
        assert (result.passed, result.reason) == (False, "file_size")

    def test_flooding_stdout_is_cut(self):
        result = run_python("while True:\n    print('x' * 1000)", max_file_mb=1)
        assert result.reason == "file_size" and 0 < len(result.stdout) <= 100_000

    def test_sys_exit_and_os_exit_do_not_pass(self):
        for code, detail in [
            ("import sys; sys.exit(0)", "0"),
            ("import sys; sys.exit(3)", "3"),
            ("import os; os._exit(0)", "exit status 0"),
        ]:
            result = run_python(code + "\nprint('unreachable')")
            assert (result.passed, result.reason, result.detail, result.stdout) == (
                False,
                "exit",
                detail,
                "",
            )

    def test_deep_recursion_is_an_exception(self):
        result = run_python("def f(n):\n    return f(n + 1)\nf(0)")
        assert (result.reason, result.detail) == (
            "exception",
            "RecursionError: maximum recursion depth exceeded",
        )

    def test_unbounded_recursion_without_a_limit_is_contained(self):
        code = "import sys\nsys.setrecursionlimit(10**9)\ndef f(n):\n    return f(n + 1)\nf(0)"
        result = run_python(code, timeout_s=3, memory_mb=128)
        # Depending on where the C stack or the memory limit gives out first, CPython dies by a
        # signal, raises MemoryError/SystemError (even while printing the traceback, which
        # ends as a plain exit status 1), or is killed by a limit: all contained.
        assert not result.passed and result.reason in (
            "memory",
            "signal",
            "timeout",
            "cpu_time",
            "exception",
            "exit",
        ), result

    def test_the_parents_environment_is_not_visible(self, monkeypatch):
        monkeypatch.setenv("DELIBERATION_TEST_SECRET", "hunter2")
        result = run_python("import os\nprint(sorted(os.environ))")
        assert result.passed and "DELIBERATION_TEST_SECRET" not in result.stdout
        assert set(eval(result.stdout)) <= {
            "PATH",
            "LANG",
            "HOME",
            "TMPDIR",
            "PYTHONDONTWRITEBYTECODE",
            "OMP_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "MKL_NUM_THREADS",
            "LC_CTYPE",
        }

    def test_killing_the_parent_does_not_reach_the_env(self):
        result = run_python(
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nimport time; time.sleep(5)",
            timeout_s=3,
        )
        assert not result.passed  # and this test process is still running

    def test_a_socket_cannot_be_opened_through_the_socket_module(self):
        result = run_python("import socket\nsocket.create_connection(('127.0.0.1', 9), timeout=1)")
        assert result.reason == "exception" and "network access is disabled" in result.detail

    @needs_namespaces
    def test_no_network_even_below_the_socket_module(self):
        result = run_python(
            "import _socket\ns = _socket.socket()\ns.settimeout(2)\ns.connect(('1.1.1.1', 80))"
        )
        assert result.reason == "exception" and "unreachable" in result.detail

    @needs_namespaces
    def test_the_env_process_cannot_be_signalled(self):
        result = run_python(f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)")
        assert (
            result.reason == "exception"
        )  # ProcessLookupError: not in the sandbox's PID namespace

    @needs_namespaces
    def test_the_envs_process_environment_cannot_be_read(self):
        result = run_python(f"print(open('/proc/{os.getpid()}/environ').read())")
        # absent from the run's own /proc (its PID namespace), and refused by Landlock
        assert result.reason == "exception" and (
            "No such file" in result.detail or "Permission" in result.detail
        )

    @needs_namespaces
    def test_writing_outside_the_temporary_directory_is_refused(self):
        target = Path(__file__).parent / f"escaped-{os.getpid()}.txt"  # root-owned, outside /tmp
        result = run_python(f"open({str(target)!r}, 'w').write('x')")
        # Refused (PermissionError), or, for a checkout under /tmp, not even visible behind
        # the sandbox's private /tmp (FileNotFoundError): either way nothing is written.
        assert result.reason == "exception" and (
            "Read-only file system" in result.detail or "No such file" in result.detail
        )
        assert not target.exists()

    @needs_namespaces
    def test_the_temporary_directories_are_private(self):
        name = f"deliberation-sandbox-test-{os.getpid()}"
        result = run_python(
            f"import os\nopen('/tmp/{name}', 'w').write('x')\nopen('here', 'w').write('y')\nprint(os.getcwd())"
        )
        assert result.passed
        assert not Path(f"/tmp/{name}").exists()

    @needs_namespaces
    def test_world_writable_host_directories_are_read_only(self):
        target = Path("/run/lock") / f"deliberation-escape-{os.getpid()}"
        if not target.parent.is_dir():
            pytest.skip("this host has no /run/lock")
        result = run_python(f"open({str(target)!r}, 'w').write('x')")
        assert result.reason == "exception" and "Read-only file system" in result.detail
        assert not target.exists()

    @needs_namespaces
    def test_sysv_shared_memory_dies_with_the_run(self):
        key = int.from_bytes(os.urandom(3), "big") + 1
        code = (
            "import ctypes\nlibc = ctypes.CDLL(None)\n"
            f"print(libc.shmget({key}, 4096, 0o1000 | 0o666) >= 0)"  # IPC_CREAT
        )
        result = run_python(code)
        assert result.stdout == "True\n"
        segments = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
        assert all(int(line.split()[0]) != key for line in segments)

    @needs_namespaces
    def test_the_hostname_cannot_be_changed_for_the_host(self):
        import socket

        before = socket.gethostname()
        run_python("import ctypes\nctypes.CDLL(None).sethostname(b'pwned', 5)")
        assert socket.gethostname() == before

    @needs_namespaces
    def test_uids_held_by_another_process_are_not_reused(self):
        lock = Path("/run/deliberation_env/sandbox-uids/0.lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                (
                    f"import fcntl, sys\nf = open({str(lock)!r}, 'a')\n"
                    "fcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\nsys.stdin.read()"
                ),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout.readline() == "held\n"
            results = run_many(["import os\nprint(os.getuid())"] * 4, max_workers=4)
        finally:
            holder.communicate("")
        uids = [int(r.stdout) for r in results]
        assert _SANDBOX_UIDS not in uids and all(uid >= _SANDBOX_UIDS for uid in uids)

    @needs_namespaces
    def test_concurrent_runs_get_distinct_uids(self):
        with _rendezvous(4) as rendezvous:
            codes = [rendezvous(i) + "import os\nprint(os.getuid())" for i in range(4)]
            results = run_many(codes, timeout_s=60, max_workers=4)
        assert len({int(r.stdout) for r in results}) == 4

    @needs_namespaces
    def test_libraries_under_the_private_tmp_stay_importable(self, tmp_path, monkeypatch):
        library = tmp_path / "venv" / "site-packages"
        library.mkdir(parents=True)
        (library / "deliberation_fixture_module.py").write_text("ANSWER = 42\n")
        library.chmod(0o755)
        packages = sandbox.site.getsitepackages()
        monkeypatch.setattr(sandbox.site, "getsitepackages", lambda: [*packages, str(library)])
        result = run_python("import deliberation_fixture_module as m\nprint(m.ANSWER)")
        assert (result.reason, result.stdout) == ("passed", "42\n")
        written = run_python(f"open({str(library / 'x')!r}, 'w')")
        assert "Read-only file system" in written.detail or "Permission" in written.detail
