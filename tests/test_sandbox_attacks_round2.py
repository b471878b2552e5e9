"""A run learns nothing from earlier runs and reaches nothing on the host.

Every attack is a real program run in the sandbox, in the mode this machine gives and in
forced ``rlimits`` mode (no namespaces, no uid change). Where the attack leaves the host
unharmed, a control runs the same program outside the sandbox to show that it works there.
"""

from __future__ import annotations

import ast
import colorsys
import email
import errno
import os
import platform
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import unsandboxed

from deliberation_env.sandbox import (
    JudgeRequest,
    judge_many,
    judge_python,
    sandbox,
)

SYSCALLS = {
    "x86_64": {"add_key": 248, "keyctl": 250, "mq_open": 240, "mq_unlink": 241, "clone": 56},
    "aarch64": {"add_key": 217, "keyctl": 219, "mq_open": 180, "mq_unlink": 181, "clone": 220},
}.get(platform.machine())
needs_syscall_table = pytest.mark.skipif(SYSCALLS is None, reason="syscall numbers of this CPU")
MiB = 2**20
NAMESPACES = judge_python(JudgeRequest("def f():\n    pass\n", "", "f")).isolation == "namespaces"


@pytest.fixture(params=["default", "rlimits"])
def mode(request, monkeypatch):
    """Each attack in the mode this machine gives, and in forced ``rlimits`` mode."""
    if request.param == "rlimits":
        monkeypatch.setattr(sandbox, "_privileged", lambda: False)
    return request.param


def secret() -> str:
    return "delib-" + os.urandom(4).hex()


def request(program: str, call: str) -> JudgeRequest:
    """A check of nothing, whose one probe is ``call`` (a function ``program`` defines)."""
    tests = "def check(candidate):\n    pass\n"
    return JudgeRequest(program, tests, call.split("(")[0], probes=(call,))


def value(verdict: sandbox.Verdict) -> object:
    """The value of the request's probe, as the judge decoded it."""
    assert verdict.passed and verdict.behaviour is not None, verdict
    return ast.literal_eval(verdict.behaviour[0])


def in_sandbox(program: str, call: str, **limits) -> object:
    """What ``call`` returns in a fresh sandbox, after ``program`` ran there."""
    return value(judge_python(request(program, call), **limits))


# --------------------------------------------------------------- state between runs
KEYRINGS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
RINGS = (-4, -5, -3)  # the user, user-session and session keyrings

def leave(name):
    return [libc.syscall({add_key}, b"user", name, b"1", 1, ring) >= 0 for ring in RINGS]

def look(name):  # KEYCTL_SEARCH
    return [libc.syscall({keyctl}, 10, ring, b"user", name, 0) >= 0 for ring in RINGS]

def forget(name):  # KEYCTL_INVALIDATE
    for ring in RINGS:
        key = libc.syscall({keyctl}, 10, ring, b"user", name, 0)
        if key >= 0:
            libc.syscall({keyctl}, 21, key)
    return look(name)
"""


@needs_syscall_table
def test_kernel_keyrings_keep_nothing_between_runs(mode):
    program, name = KEYRINGS.format(**SYSCALLS), secret().encode()
    assert in_sandbox(program, f"leave({name!r})") == [False] * 3  # refused
    assert in_sandbox(program, f"look({name!r})") == [False] * 3


@needs_syscall_table
def test_control_keyrings_carry_state_between_processes():
    program, name = KEYRINGS.format(**SYSCALLS), secret().encode()
    try:
        assert any(unsandboxed(program, f"leave({name!r})"))
        assert any(unsandboxed(program, f"look({name!r})"))
    finally:
        assert unsandboxed(program, f"forget({name!r})") == [False] * 3


SYSV = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)

def leave(key):  # IPC_CREAT | 0666
    return [libc.shmget(key, 4096, 0o1666) >= 0, libc.msgget(key, 0o1666) >= 0,
            libc.semget(key, 1, 0o1666) >= 0]

def look(key):
    return [libc.shmget(key, 0, 0) >= 0, libc.msgget(key, 0) >= 0, libc.semget(key, 0, 0) >= 0]

def forget(key):  # IPC_RMID
    for get, remove in ((lambda: libc.shmget(key, 0, 0), lambda i: libc.shmctl(i, 0, None)),
                        (lambda: libc.msgget(key, 0), lambda i: libc.msgctl(i, 0, None)),
                        (lambda: libc.semget(key, 0, 0), lambda i: libc.semctl(i, 0, 0))):
        if get() >= 0:
            remove(get())
    return look(key)
"""


def test_sysv_ipc_keeps_nothing_between_runs(mode):
    key = int.from_bytes(os.urandom(3), "big") + 1
    leave = in_sandbox(SYSV, f"leave({key})")
    assert leave == ([True] * 3 if mode == "default" and NAMESPACES else [False] * 3)
    assert in_sandbox(SYSV, f"look({key})") == [False] * 3


def test_control_sysv_ipc_carries_state_between_processes():
    key = int.from_bytes(os.urandom(3), "big") + 1
    try:
        assert unsandboxed(SYSV, f"leave({key})") == [True] * 3
        assert unsandboxed(SYSV, f"look({key})") == [True] * 3
    finally:
        assert unsandboxed(SYSV, f"forget({key})") == [False] * 3


MQUEUE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def leave(name):
    return libc.syscall({mq_open}, name, os.O_CREAT | os.O_RDWR, 0o666, None) >= 0

def look(name):
    return libc.syscall({mq_open}, name, os.O_RDONLY, 0, None) >= 0

def forget(name):
    libc.syscall({mq_unlink}, name)
    return look(name)
"""


@needs_syscall_table
def test_posix_message_queues_keep_nothing_between_runs(mode):
    program, name = MQUEUE.format(**SYSCALLS), secret().encode()
    assert in_sandbox(program, f"leave({name!r})") is False
    assert in_sandbox(program, f"look({name!r})") is False


@needs_syscall_table
def test_control_posix_message_queues_carry_state_between_processes():
    program, name = MQUEUE.format(**SYSCALLS), secret().encode()
    try:
        assert unsandboxed(program, f"leave({name!r})") is True
        assert unsandboxed(program, f"look({name!r})") is True
    finally:
        assert unsandboxed(program, f"forget({name!r})") is False


ABSTRACT_SOCKETS = """
import _socket, os, time

def listen(name, seconds):
    try:
        server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        server.bind(b"\\0" + name)
        server.listen(1)
    except OSError as error:
        return "refused"
    server.settimeout(seconds)
    try:
        server._accept()
        return "contacted"
    except OSError:
        return "alone"

def listen_after_the_run(name):
    if os.fork() == 0:
        try:
            os.setsid()  # out of the run's process group
        except OSError:
            pass
        listen(name, 30)
        os._exit(0)
    return "forked"

def call(name, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            client.connect(b"\\0" + name)
            return "contacted"
        except OSError:
            time.sleep(0.05)
    return "not reached"
"""


def test_abstract_unix_sockets_reach_no_later_run(mode):
    name = secret().encode()
    in_sandbox(ABSTRACT_SOCKETS, f"listen_after_the_run({name!r})")
    assert in_sandbox(ABSTRACT_SOCKETS, f"call({name!r}, 1)") == "not reached"


def test_abstract_unix_sockets_reach_no_concurrent_run(mode):
    name = secret().encode()
    listener, caller = judge_many(
        [
            request(ABSTRACT_SOCKETS, f"listen({name!r}, 3)"),
            request(ABSTRACT_SOCKETS, f"call({name!r}, 3)"),
        ],
        max_workers=2,
    )
    assert (value(listener), value(caller)) in {
        ("refused", "not reached"),
        ("alone", "not reached"),
    }


def test_control_abstract_unix_sockets_connect_processes():
    name = secret().encode()
    server = subprocess.Popen(
        [sys.executable, "-c", f"{ABSTRACT_SOCKETS}\nprint(listen({name!r}, 20))"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert unsandboxed(ABSTRACT_SOCKETS, f"call({name!r}, 20)") == "contacted"
    finally:
        assert server.communicate(timeout=30)[0] == "contacted\n"


FILES = """
import os

def leave(paths):
    written = []
    for path in paths:
        try:
            with open(path, "w") as file:
                file.write("1")
            written.append(path)
        except OSError:
            pass
    return written

def look(paths):
    return [path for path in paths if os.path.exists(path)]
"""


def test_files_keep_nothing_between_runs(mode):
    name = secret()
    places = ["/tmp/sandbox", "/tmp", "/var/tmp", "/dev/shm", tempfile.gettempdir()]
    paths = [os.path.join(place, name) for place in places]
    try:
        in_sandbox(FILES, f"leave({paths!r})")
        assert in_sandbox(FILES, f"look({paths!r})") == []
        assert [path for path in paths if os.path.exists(path)] == []
    finally:
        for path in paths:
            Path(path).unlink(missing_ok=True)


PROCESSES = """
import ctypes, os, time

def leave(name):
    if os.fork() == 0:
        try:
            os.setsid()
        except OSError:
            pass
        ctypes.CDLL(None).prctl(15, name)  # PR_SET_NAME
        time.sleep(60)
        os._exit(0)
    return "forked"

def look(name):  # live processes of that name (a zombie holds nothing)
    found = []
    try:
        pids = [pid for pid in os.listdir("/proc") if pid.isdigit()]
    except OSError:  # no /proc to list: nothing seen
        pids = []
    for pid in pids:
        try:
            stat = open(f"/proc/{pid}/stat", "rb").read()
        except OSError:
            continue
        end = stat.rindex(b")")
        if stat[stat.index(b"(") + 1 : end] == name and stat[end + 2 : end + 3] != b"Z":
            found.append(pid)
    return found
"""


def test_processes_do_not_outlive_their_run(mode):
    name = secret().encode()[:15]
    assert in_sandbox(PROCESSES, f"leave({name!r})") == "forked"
    assert in_sandbox(PROCESSES, f"look({name!r})") == []
    assert unsandboxed(PROCESSES, f"look({name!r})") == []


# --------------------------------------------------------------------- the host
WORLD_WRITABLE = [
    place for place in (tempfile.gettempdir(), "/run/lock", "/dev/shm") if os.path.isdir(place)
]


@pytest.fixture
def host_directories():
    """A fresh world-writable directory in each world-writable host directory."""
    made = [Path(tempfile.mkdtemp(prefix="delib-host-", dir=place)) for place in WORLD_WRITABLE]
    for directory in made:
        directory.chmod(0o777)
    yield made
    for directory in made:
        shutil.rmtree(directory)


CONNECT = """
import _socket

def connect(paths):
    reached = []
    for path in paths:
        try:
            client = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            client.settimeout(1)
            client.connect(path)
            reached.append(path)
        except OSError:
            pass
    return reached
"""


def test_host_unix_sockets_are_out_of_reach(mode, host_directories):
    listeners, paths = [], []
    for directory in host_directories:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(directory / "service.sock"))
        listener.listen(8)
        listener.setblocking(False)
        os.chmod(directory / "service.sock", 0o777)
        listeners.append(listener)
        paths.append(str(directory / "service.sock"))
    try:
        assert in_sandbox(CONNECT, f"connect({paths!r})") == []
        for listener in listeners:
            with pytest.raises(BlockingIOError):
                listener.accept()  # nobody knocked
        assert unsandboxed(CONNECT, f"connect({paths!r})") == paths  # the control
    finally:
        for listener in listeners:
            listener.close()


FIFOS = """
import os

def reach(inbound, outbound):
    reached = []
    for path in inbound:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, b"leak")
            reached.append(path)
        except OSError:
            pass
    for path in outbound:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            if os.read(fd, 100):
                reached.append(path)
        except OSError:
            pass
    return reached
"""


def test_host_fifos_are_out_of_reach(mode, host_directories):
    inbound, outbound, held = [], [], []
    for directory in host_directories:
        for name, into in (("in.fifo", inbound), ("out.fifo", outbound)):
            path = directory / name
            os.mkfifo(path)
            path.chmod(0o666)
            into.append(str(path))
    for path in inbound:
        held.append(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    for path in outbound:
        held.append(os.open(path, os.O_RDWR | os.O_NONBLOCK))
        os.write(held[-1], b"host data\n" * len(host_directories) * 4)
    try:
        assert in_sandbox(FIFOS, f"reach({inbound!r}, {outbound!r})") == []
        for fd in held[: len(inbound)]:
            assert os.read(fd, 100) == b""  # nothing came (and no writer is left)
        assert unsandboxed(FIFOS, f"reach({inbound!r}, {outbound!r})") == inbound + outbound
    finally:
        for fd in held:
            os.close(fd)


MARK = """
import os, resource, signal

def mark(pid):
    marked = []
    for name, change in (
        ("nice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)),
        ("nice of the uid", lambda: os.setpriority(os.PRIO_USER, 0, 19)),
        ("rlimit", lambda: resource.prlimit(pid, resource.RLIMIT_CORE, (7, 7))),
        ("affinity", lambda: os.sched_setaffinity(pid, {0})),
        ("scheduler", lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))),
        ("stop", lambda: os.kill(pid, signal.SIGSTOP)),
    ):
        try:
            change()
            marked.append(name)
        except OSError:
            pass
    return marked
"""


def test_the_hosts_processes_cannot_be_marked_or_signalled(mode):
    """A host process's nice value, limits, affinity or scheduler would carry state from
    one run to the next; a signal would reach the host."""
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ours = os.getpriority(os.PRIO_PROCESS, os.getpid())
    try:
        before = Path(f"/proc/{target.pid}/stat").read_text().split()
        marked = in_sandbox(MARK, f"mark({target.pid})")
        after = Path(f"/proc/{target.pid}/stat").read_text().split()
        assert set(marked) <= {"nice of the uid"}, marked  # with its own uid: its own processes
        assert after[2] != "T"  # not stopped
        assert (after[18], after[40]) == (before[18], before[40])  # nice, scheduling policy
        assert "7" not in Path(f"/proc/{target.pid}/limits").read_text().split("Max core")[1][:40]
        assert os.sched_getaffinity(target.pid) == os.sched_getaffinity(0)
        assert os.getpriority(os.PRIO_PROCESS, os.getpid()) == ours
    finally:
        target.kill()
        target.wait()


READ = """
import os

def read(paths):
    seen = {}
    for path in paths:
        try:
            seen[path] = len(os.listdir(path)) if os.path.isdir(path) else len(open(path).read())
        except OSError as error:
            seen[path] = type(error).__name__
    return seen
"""


def test_the_hosts_files_and_the_envs_process_cannot_be_read(mode):
    env = f"/proc/{os.getpid()}"
    paths = [__file__, str(Path(__file__).parent), f"{env}/environ", f"{env}/fd", f"{env}/mem"]
    seen = in_sandbox(READ, f"read({paths!r})")
    assert set(seen.values()) <= {"PermissionError", "FileNotFoundError"}, seen


def test_the_interpreters_own_files_stay_readable(mode):
    paths = [colorsys.__file__, str(Path(email.__file__).parent), "/etc/passwd"]
    seen = in_sandbox(READ, f"read({paths!r})")
    assert all(isinstance(size, int) and size > 0 for size in seen.values()), seen


def test_hidden_paths_are_hidden_in_both_modes(mode):
    hidden_file, hidden_dir = colorsys.__file__, Path(email.__file__).parent
    program = READ + "import json\n"  # the rest of the library still imports
    seen = value(
        judge_python(
            request(program, f"read({[hidden_file, str(hidden_dir / '__init__.py')]!r})"),
            hidden_paths=[hidden_file, hidden_dir],
        )
    )
    assert set(seen.values()) <= {0, "PermissionError", "FileNotFoundError"}, seen


# ------------------------------------------------------------------ the memory bound
SHM_HOG = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p

def hog(total, chunk):
    held = 0
    while held < total:
        shm = libc.shmget(0, chunk, 0o1600)  # IPC_PRIVATE, IPC_CREAT: kept after detaching
        if shm < 0:
            break
        address = libc.shmat(shm, None, 0)
        if address is None or address == ctypes.c_void_p(-1).value:
            break
        ctypes.memset(address, 1, chunk)
        libc.shmdt(ctypes.c_void_p(address))
        held += chunk
    return held
"""

MSG_HOG = """
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)

def hog(total, size):
    held, message = 0, ctypes.create_string_buffer(struct.pack("l", 1) + b"x" * size)
    while held < total:
        queue = libc.msgget(0, 0o1600)
        if queue < 0:
            break
        sent = 0
        while libc.msgsnd(queue, message, size, 0o4000) == 0:  # IPC_NOWAIT
            sent += size
        if not sent:
            break
        held += sent
    return held
"""

MEMFD_HOG = """
import os

def hog(total, chunk):
    held, block, fds = 0, b"x" * chunk, []
    while held < total:
        try:
            fds.append(os.memfd_create("hog"))
            os.write(fds[-1], block)
        except OSError:
            break
        held += chunk
    return held
"""

TMPFS_HOG = """
import os

def hog(total, chunk):
    held, block, n = 0, b"x" * chunk, 0
    places = ["/dev/shm", "/tmp", "/var/tmp"]
    while held < total and places:
        place = places[n % len(places)]
        try:
            with open(f"{place}/hog-{n}", "wb") as file:
                file.write(block)
            held += chunk
        except OSError:
            places.remove(place)
        n += 1
    return held
"""


@pytest.mark.parametrize(
    ("program", "chunk"),
    [(SHM_HOG, 32 * MiB), (MSG_HOG, 8192), (MEMFD_HOG, 8 * MiB), (TMPFS_HOG, 8 * MiB)],
    ids=["sysv shared memory", "sysv message queues", "memfd", "tmpfs"],
)
def test_memory_outside_the_address_space_stays_within_the_bound(mode, program, chunk):
    """512 MiB asked for under a 160 MiB bound, by routes that no RLIMIT_AS counts."""
    held = in_sandbox(program, f"hog({512 * MiB}, {chunk})", memory_mb=160, timeout_s=30)
    assert held <= 160 * MiB


# ---------------------------------------------------------------------- the verdict
@pytest.mark.parametrize(
    "answer",
    ["'x' * (4 * 2**20)", "list(range(300_000))", "{str(i): [i] * 3 for i in range(50_000)}"],
    ids=["4 MiB string", "300k ints", "50k dict items"],
)
def test_a_correct_program_with_a_large_result_passes(mode, answer):
    program = f"def big():\n    return {answer}\n"
    tests = (
        "def check(candidate):\n    value = candidate()\n"
        f"    assert value == {answer}\n    return value\n"
    )
    verdict = judge_python(JudgeRequest(program, tests, "big"), timeout_s=30)
    assert (verdict.passed, verdict.reason) == (True, "passed"), verdict.detail
    assert verdict.returned == eval(answer)


MAP_TESTS = {
    "all(map(...))": "    assert all(map(lambda x: candidate(x) == 2 * x, range(5)))\n",
    "zip(map(...), expected)": (
        "    for got, want in zip(map(candidate, range(5)), [0, 2, 4, 6, 8]):\n"
        "        assert got == want\n"
    ),
    "filter(...)": "    assert not list(filter(lambda x: candidate(x) != 2 * x, range(5)))\n",
    "next(..., default)": "    assert next(map(candidate, [3]), 6) == 6\n",
}
STOPPERS = {
    "StopIteration": "def double(x):\n    raise StopIteration\n",
    "StopAsyncIteration": "def double(x):\n    raise StopAsyncIteration\n",
    "a subclass of StopIteration": (
        "class Done(StopIteration):\n    pass\ndef double(x):\n    raise Done\n"
    ),
    "StopIteration for odd numbers": (
        "def double(x):\n    if x % 2:\n        raise StopIteration\n    return 2 * x\n"
    ),
}


@pytest.mark.parametrize("tests", MAP_TESTS.values(), ids=MAP_TESTS.keys())
@pytest.mark.parametrize("program", STOPPERS.values(), ids=STOPPERS.keys())
def test_stop_iteration_from_the_candidate_is_its_failure(program, tests):
    verdict = judge_python(JudgeRequest(program, "def check(candidate):\n" + tests, "double"))
    assert (verdict.passed, verdict.reason) == (False, "failed"), verdict
    assert "Stop" in verdict.detail or "Done" in verdict.detail


@pytest.mark.parametrize("tests", MAP_TESTS.values(), ids=MAP_TESTS.keys())
def test_control_the_map_tests_pass_a_correct_candidate(tests):
    program = "def double(x):\n    return 2 * x\n"
    verdict = judge_python(JudgeRequest(program, "def check(candidate):\n" + tests, "double"))
    assert verdict.passed, verdict


def test_an_exception_the_tests_expect_still_reaches_them_as_itself():
    tests = (
        "def check(candidate):\n    try:\n        candidate(-1)\n    except ValueError:\n"
        "        return 'caught'\n    raise AssertionError('no ValueError')\n"
    )
    program = "def root(x):\n    raise ValueError('negative')\n"
    verdict = judge_python(JudgeRequest(program, tests, "root"))
    assert (verdict.passed, verdict.returned) == (True, "caught")


# ------------------------------------------------------------------- the filter itself
REFUSED = """
import _socket, ctypes, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

def code_of(call):
    ctypes.set_errno(0)
    try:
        result = call()
    except OSError as error:
        return error.errno
    if result == -1:
        return ctypes.get_errno()
    if result == 0 and call is CALLS["clone(CLONE_NEWUSER)"]:
        os._exit(0)  # the child of a clone that went through
    return 0

page = mmap.mmap(-1, mmap.PAGESIZE)
CALLS = {{
    "add_key": lambda: libc.syscall({add_key}, b"user", b"k", b"v", 1, -4),
    "keyctl": lambda: libc.syscall({keyctl}, 0, -4, 0),
    "mq_open": lambda: libc.syscall({mq_open}, b"q", os.O_CREAT | os.O_RDWR, 0o600, None),
    "memfd_create": lambda: os.memfd_create("m"),
    "socketpair": lambda: _socket.socketpair(),
    "socket(AF_UNIX)": lambda: _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM),
    "socket(AF_NETLINK)": lambda: _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW, 0),
    "unshare(CLONE_NEWUSER)": lambda: libc.unshare(0x10000000),
    "clone(CLONE_NEWUSER)": lambda: libc.syscall({clone}, 0x10000000 | 17, 0, 0, 0, 0),
    "setsid": lambda: os.setsid(),
    "ptrace": lambda: libc.ptrace(0, 0, 0, 0),
    "mincore": lambda: libc.mincore(
        ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(page))),
        mmap.PAGESIZE, ctypes.create_string_buffer(1)),
}}

def refused():
    return {{name: code_of(call) for name, call in CALLS.items()}}
"""


@needs_syscall_table
def test_calls_that_reach_beyond_the_run_are_refused(mode):
    codes = in_sandbox(REFUSED.format(**SYSCALLS), "refused()")
    assert codes == dict.fromkeys(codes, errno.EPERM), codes


def test_ip_sockets_open_only_where_the_network_is_empty(mode):
    program = (
        "import _socket\ndef open_ip():\n    try:\n        _socket.socket()\n"
        "        return 'opened'\n    except OSError as error:\n        return error.errno\n"
    )
    opened = in_sandbox(program, "open_ip()")
    assert opened == ("opened" if mode == "default" and NAMESPACES else errno.EPERM)


BLOCK_LANDLOCK = """
import ctypes, struct
def insn(code, k, jt=0, jf=0):
    return struct.pack("=HBBI", code, jt, jf, k)
program = b"".join([insn(0x20, 0), insn(0x15, 444, 0, 1), insn(0x06, 0x00050000 | 38),
                    insn(0x06, 0x7FFF0000)])  # landlock_create_ruleset: ENOSYS
buffer = ctypes.create_string_buffer(program, len(program))
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(38, 1, 0, 0, 0)
fprog = Program(len(program) // 8, ctypes.addressof(buffer))
assert libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0  # PR_SET_SECCOMP, filter mode
from deliberation_env.sandbox import JudgeRequest, SandboxUnavailable, judge_python, run_python
trivial = JudgeRequest("def f():\\n    pass\\n", "def check(f):\\n    f()\\n", "f")
for attempt in (lambda: run_python("print(1)"), lambda: judge_python(trivial)):
    try:
        print("ran:", attempt())
    except SandboxUnavailable as error:
        print("refused:", error)
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the blocking filter is x86_64's")
def test_without_landlock_the_sandbox_refuses_to_run():
    environment = {**os.environ, "PYTHONPATH": str(Path(sandbox.__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_LANDLOCK],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("refused:") for line in lines), done
    assert "Landlock" in lines[0]


def test_the_scratch_directories_share_one_bound(mode):
    """Files in /tmp, /var/tmp and /dev/shm together stay within the scratch budget."""
    held = in_sandbox(TMPFS_HOG, f"hog({64 * MiB}, {4 * MiB})", max_file_mb=4)
    assert held <= 16 * MiB


def test_a_world_writable_host_directory_gets_no_file(mode, host_directories):
    paths = [str(directory / "planted") for directory in host_directories]
    in_sandbox(FILES, f"leave({paths!r})")
    assert [path for path in paths if os.path.exists(path)] == []
    for directory in host_directories:
        assert stat.S_IMODE(directory.stat().st_mode) == 0o777  # unchanged
