"""Run model-written Python in a sandbox: a fresh, limited process, never the env's.

>>> result = run_python("print(6 * 7)", timeout_s=10)
>>> result.passed, result.reason, result.stdout
(True, 'passed', '42\\n')

Every call starts a fresh interpreter (``python -I -S``: no ``PYTHON*`` variables, no
user site-packages, and the env's site-packages on ``sys.path`` without running their
``.pth`` files) with the code on stdin, and waits for it at most ``timeout_s`` seconds of
wall-clock time. :func:`run_many` runs many programs concurrently (threads
that each wait on one process), which is how HumanEval checks stay fast.

What is isolated, and how (the *isolation* of a result says which mode ran):

* **Always** (``"rlimits"`` mode and up):

  - Hard resource limits, set before the code runs: CPU time (``RLIMIT_CPU``, one
    second above ``timeout_s``), address space (``RLIMIT_AS``: ``memory_mb``), processes
    and threads (``RLIMIT_NPROC``: ``max_processes``, see below for how exact), size of
    any file written, stdout and stderr included (``RLIMIT_FSIZE``), open files
    (``RLIMIT_NOFILE``), no core dumps.
  - Wall clock: after ``timeout_s`` the sandbox is killed. After every run, whatever
    the code started is killed too: in namespace mode by the kernel, as root by killing
    every process of the run's uid, otherwise by killing its process group (processes
    that left the group with ``setsid`` then survive until their CPU-time limit, or
    forever if they only sleep).
  - A scrubbed environment: only ``PATH``, ``LANG``, ``HOME``/``TMPDIR`` (the temporary
    working directory) and single-thread settings for numeric libraries. The parent's
    variables are never passed.
  - A temporary working directory, removed afterwards.
  - The code's parent is a supervisor process, not the env: ``os.kill(os.getppid(), 9)``
    cannot reach the env (in namespace mode it fails; otherwise it ends the sandbox).
  - ``socket.socket`` is replaced by a class that refuses to open: a guard against
    accidents only; code can still reach ``_socket`` or ``ctypes``.
  - Standard streams: stdin is empty; stdout and stderr are kept up to
    ``MAX_OUTPUT_CHARS`` characters each.

* **When the env runs as root and the kernel allows namespaces** (``"namespaces"`` mode,
  the case in the project's containers):

  - The code runs as a dedicated, unprivileged uid (a fresh one per run, with no
    account): it cannot write anything that is not world-writable, cannot read the env's
    ``/proc/<pid>/environ`` or any file readable only by its owner, and cannot signal
    processes of other users. ``RLIMIT_NPROC`` then counts only this run's processes and
    threads, so a fork bomb stops at ``max_processes``.
  - New PID namespace: the code's supervisor is PID 1; when it exits or is killed, the
    kernel kills every process the code started.
  - New network namespace with no interfaces (not even loopback up): no network at all.
  - New mount namespace with private, size-limited tmpfs on ``/tmp``, ``/var/tmp`` and
    ``/dev/shm`` (the working directory is on it): files written there vanish with the
    run and never reach the host's disks. A directory others may not enter that holds
    the interpreter's libraries (pyenv under ``/root``) is covered by an empty tmpfs
    with only those libraries mounted back, so the rest of it stays invisible.

  As root without namespaces (a container without ``CAP_SYS_ADMIN``) the code still runs
  as a dedicated uid with its exact process limit, but in ``"rlimits"`` mode otherwise;
  modules it imports must then be readable by any user.

* **Not isolated in either mode**: the code can *read* every file that is world-readable
  (the package's sources, datasets, system files), see host process names in ``/proc``,
  use CPU and memory up to its limits (it competes with the env), and call any syscall
  (there is no seccomp filter). Without root (``"rlimits"`` mode) it also runs as the
  env's user: it can write wherever that user can, read that user's files and
  processes' environments, signal that user's processes, and open network connections
  (beyond the Python guard); its process limit counts the user's existing processes
  plus ``max_processes``. Untrusted code without root belongs in a container.
  Finally, the outcome is reported by the process that runs the code: code written to
  deceive (rather than buggy or careless code) could forge a pass.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

MAX_OUTPUT_CHARS = 100_000
"""Characters of stdout and of stderr kept in a :class:`SandboxResult`."""

REASONS = (
    "passed",  # the code ran to its end
    "exception",  # an uncaught exception (the traceback is in stderr)
    "exit",  # sys.exit or os._exit, whatever the status: the code did not run to its end
    "memory",  # MemoryError: the address-space limit
    "file_size",  # a write beyond the file-size limit
    "cpu_time",  # the CPU-time limit
    "timeout",  # the wall-clock limit
    "signal",  # killed by another signal (e.g. SIGSEGV from unbounded recursion)
)
"""Every ``SandboxResult.reason``, each with what it means."""

_CHILD = Path(__file__).with_name("_sandbox_child.py")
_UID_BASE = 2_000_000_000
_uids = itertools.count()
_TERMINATE_GRACE_S = 2.0


@dataclass(frozen=True)
class SandboxResult:
    """What happened to one program.

    Attributes:
        passed: The code ran to its end (an explicit exit, even ``sys.exit(0)``, does not).
        reason: One of :data:`REASONS`.
        stdout: Standard output, at most ``MAX_OUTPUT_CHARS`` characters.
        stderr: Standard error (tracebacks), at most ``MAX_OUTPUT_CHARS`` characters.
        duration: Wall-clock seconds, including the interpreter's start.
        detail: A short explanation: the exception, the exit status or the signal.
        isolation: ``"namespaces"`` or ``"rlimits"`` (see the module docstring).
    """

    passed: bool
    reason: str
    stdout: str
    stderr: str
    duration: float
    detail: str = ""
    isolation: str = "rlimits"


def run_python(
    code: str,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    *,
    max_processes: int = 32,
    max_file_mb: int = 16,
) -> SandboxResult:
    """Run ``code`` as a Python program in a fresh sandboxed process.

    Args:
        code: The program's source.
        timeout_s: Wall-clock limit; the CPU-time limit is one second more, rounded up.
        memory_mb: Address-space limit of the process, in MiB.
        max_processes: Processes and threads the code may have at once (see the module
            docstring for how exact this is).
        max_file_mb: Largest file the code may write, stdout and stderr included, in MiB.

    Returns:
        The outcome; a failing or hostile program is a result, never an exception here.

    Raises:
        ValueError: If a limit is not positive.
    """
    if timeout_s <= 0 or memory_mb <= 0 or max_processes <= 0 or max_file_mb <= 0:
        raise ValueError(
            f"sandbox limits must be positive; got timeout_s={timeout_s}, "
            f"memory_mb={memory_mb}, max_processes={max_processes}, max_file_mb={max_file_mb}"
        )
    start = time.perf_counter()
    uid = _UID_BASE + (os.getpid() % 10_000) * 100_000 + next(_uids) % 100_000
    with (
        tempfile.TemporaryDirectory(prefix="sandbox-") as workdir,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
        tempfile.TemporaryFile() as status,
    ):
        root = os.geteuid() == 0
        if root:
            os.chown(workdir, uid, uid)
        config = {
            "uid": uid if root else None,
            "cpu_s": _cpu_limit_s(timeout_s),
            "memory_mb": memory_mb,
            "file_mb": max_file_mb,
            "tmpfs_mb": 4 * max_file_mb,
            "processes": max_processes,
            "workdir": workdir,
            "site_packages": site.getsitepackages(),
            "status_fd": status.fileno(),
        }
        timed_out, returncode = _run(code, config, workdir, stdout, stderr, status, timeout_s)
        duration = time.perf_counter() - start
        isolation, outcome = _parse_status(_read(status))
        if root and isolation == "rlimits":
            _kill_uid(uid)  # what left the process group (in namespaces the kernel did it)
        reason, detail = _reason(timed_out, returncode, outcome, timeout_s)
        return SandboxResult(
            passed=reason == "passed",
            reason=reason,
            stdout=_read(stdout),
            stderr=_read(stderr),
            duration=duration,
            detail=detail,
            isolation=isolation,
        )


def run_many(
    codes: Iterable[str],
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    *,
    max_workers: int | None = None,
) -> list[SandboxResult]:
    """Run many programs, each in its own sandbox, several at a time.

    Args:
        codes: The programs.
        timeout_s: Wall-clock limit of each program.
        memory_mb: Address-space limit of each program, in MiB.
        max_workers: Programs running at once (default: twice the number of CPUs, since
            a sandbox spends part of its life starting and stopping; see BENCHMARKS.md).

    Returns:
        One result per program, in order.
    """
    with ThreadPoolExecutor(max_workers or 2 * (os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda code: run_python(code, timeout_s, memory_mb), codes))


def _run(code, config, workdir, stdout, stderr, status, timeout_s) -> tuple[bool, int]:
    """Start the child, feed it the code, enforce the wall clock; (timed out, exit status)."""
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", str(_CHILD), json.dumps(config)],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=stderr,
        pass_fds=(status.fileno(),),
        cwd=workdir,
        env=_scrubbed_environment(workdir),
        start_new_session=True,
    )
    timed_out = False
    try:
        process.communicate(code.encode(), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        process.terminate()  # the bootstrap kills the supervisor (and so the namespace)
        try:
            process.wait(_TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    finally:
        _kill_group(process.pid)
    return timed_out, process.returncode


def _kill_group(pgid: int) -> None:
    """Kill what is left of the sandbox's process group (``rlimits`` mode leftovers)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _kill_uid(uid: int) -> None:
    """Kill every live process of the run's dedicated uid, until none is left."""
    while pids := _live_processes(uid):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _live_processes(uid: int) -> list[int]:
    """Pids of the processes (zombies excepted) whose real uid is ``uid``, from ``/proc``."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:  # it ended meanwhile
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            pids.append(int(pid))
    return pids


def _scrubbed_environment(workdir: str) -> dict[str, str]:
    """The whole environment of the child: nothing is inherited from the env's."""
    single_thread = dict.fromkeys(
        ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"), "1"
    )
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": workdir,
        "TMPDIR": workdir,
        "PYTHONDONTWRITEBYTECODE": "1",
        **single_thread,
    }


def _cpu_limit_s(timeout_s: float) -> int:
    """The CPU-time limit: just above the wall clock, which normally acts first. It stops
    what the wall-clock kill cannot reach (``rlimits`` mode: processes that left the group)."""
    return math.ceil(timeout_s) + 1


def _parse_status(text: str) -> tuple[str, tuple[str, str] | None]:
    """The isolation mode and the code's (outcome, detail) from the status file.

    The code shares the process that writes the outcome and could write to the file
    itself: lines that are not the child's records are ignored.
    """
    isolation, outcome = "rlimits", None
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if record.get("isolation") in ("namespaces", "rlimits"):
            isolation = record["isolation"]
        if record.get("outcome") in REASONS:
            outcome = (record["outcome"], str(record.get("detail", "")))
    return isolation, outcome


def _reason(
    timed_out: bool, returncode: int, outcome: tuple[str, str] | None, timeout_s: float
) -> tuple[str, str]:
    """Classify a run: (reason, detail)."""
    if timed_out:
        return "timeout", f"wall-clock limit of {timeout_s:g} s"
    if outcome is not None and (outcome[0] != "passed" or returncode == 0):
        return outcome
    if returncode > 128:
        number = returncode - 128
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGXCPU:
            return "cpu_time", f"CPU-time limit of {_cpu_limit_s(timeout_s)} s ({name})"
        return "signal", f"killed by {name}"
    return "exit", f"exit status {returncode}"


def _read(file) -> str:
    """The first ``MAX_OUTPUT_CHARS`` characters of a temporary output file."""
    file.seek(0)
    return file.read(4 * MAX_OUTPUT_CHARS).decode("utf-8", errors="replace")[:MAX_OUTPUT_CHARS]
