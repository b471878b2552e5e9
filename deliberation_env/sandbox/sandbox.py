"""Run model-written Python in a sandbox, and judge it with tests it cannot reach.

>>> run_python("print(6 * 7)", timeout_s=10).stdout
'42\\n'
>>> request = JudgeRequest("def add(a, b):\\n    return a + b\\n", "def check(f):\\n    assert f(2, 3) == 5\\n", "add")
>>> verdict = judge_python(request)
>>> verdict.passed, verdict.reason
(True, 'passed')

Two APIs:

* :func:`run_python` / :func:`run_many` run a program; ``SandboxResult.passed`` means only
  that it *ran to its end*. The code shares the process that reports this, so a program
  written to deceive can fake it: it is **not a verdict**.
* :func:`judge_python` / :func:`judge_many` give the **verdict** on a candidate program
  from trusted tests (``check(candidate)``, HumanEval's form). One interpreter starts per
  check; its supervisor forks the candidate, then becomes the judge. The *candidate* runs the program and then only answers
  calls of its entry point: arguments in, the result (or the exception's type name) out,
  both as plain built-in values (``None``, ``bool``, ``int``, ``float``, ``complex``,
  ``str``, ``bytes``, ``list``, ``tuple``, ``dict``, ``set``, ``frozenset``; exact types, no
  pickle, depth and size limits: ``deliberation_env/sandbox/_sandbox_codec.py``). The *judge*
  runs the task's setup (the prompt's helpers and the reference solution), evaluates the
  probe expressions with the entry point's name bound to a proxy whose calls the candidate
  answers, calls ``check(proxy)`` (the name bound as the setup binds it: a test comparing
  with ``f(x)`` compares with the reference, not with the candidate itself) and
  alone writes the verdict to a socket the candidate never holds. Anything that is not a
  decodable answer (an object of the candidate's own class, an exit, a crash, silence
  until the timeout) fails; exit codes, output and files are never evidence of passing.
  The tests are read after the candidate is forked, so they are never in the
  candidate's memory, and the task's data files can be hidden from it (``hidden_paths``).

  A request may carry a second untrusted program, the *helper* (``JudgeRequest.helper``:
  the coding protocol's helper agent). Then a third process, forked before the candidate
  and confined as it is (its uid and limits, a Landlock domain and the seccomp filter of
  its own), runs the helper's program alone and answers the candidate's calls of
  ``helper_functions``: in the candidate each of those names is bound to a stub before
  the program runs. Arguments and results cross as codec values; lists, dicts and sets
  that a call changed in place come back and refill the caller's own objects (identity
  and nesting kept); the helper's exception comes back as its type's name and arguments,
  raised in the candidate as that built-in exception, else as ``HelperError``; a value
  that cannot cross raises ``TypeError`` in the call. Neither process ever holds an
  object of the other's program, so no reflection in one reaches the other's functions,
  globals or builtins; they share the uid, the process limit and the scratch (which the
  helper's calls only read), so one can make the other fail, not compute something
  else. A helper that does not load is the program's ``load_error``. Without a helper
  program no such process starts. Each call is answered by a process of its own, forked
  from one that never runs the helper's code, which loads the program afresh, writes no
  file and starts no process: no call finds what an earlier one left, so the helper
  cannot count its calls. A call costs about 1 ms, most of it the fork (BENCHMARKS.md,
  "The helper's process").

  How this differs from EvalPlus (``evalplus.eval.untrusted_check``): EvalPlus computes
  the expected outputs from the reference solution in the trusted parent, but the
  comparison ``out == expected`` runs inside the process that executes the candidate,
  which reports the outcome through shared memory (``multiprocessing.Value``/``Array``)
  it can write itself, and its ``reliability_guard`` (disabling ``os.kill``,
  ``shutil.rmtree``, ...) is a guard against accidents, not a boundary. Here the
  candidate's process decides nothing: the comparison runs in another process under
  another uid, on values decoded by the judge, and the candidate has no descriptor of
  the verdict channel.

What is guaranteed, and how (``isolation`` on every result says which mode ran):

* **Always** (``"rlimits"`` mode and up): hard resource limits set before the code runs
  (``RLIMIT_CPU`` one second above ``timeout_s``, ``RLIMIT_AS`` ``memory_mb`` *per
  process*, ``RLIMIT_NPROC`` ``max_processes``, ``RLIMIT_FSIZE`` on every file written,
  stdout and stderr included, 64 descriptors, no core dumps, not even to a host's
  ``core_pattern`` pipe); the wall clock (after ``timeout_s`` the sandbox is killed, and
  whatever the code started is killed after every run: by the kernel in namespace mode,
  as root by killing every process of the run's uids, otherwise by killing its process
  group, which the code cannot leave); a scrubbed environment (``PATH``, ``LANG``,
  ``HOME``/``TMPDIR``, single-thread settings for numeric libraries); a temporary working
  directory, removed afterwards; a supervisor between the code and the env; stdin empty;
  stdout and stderr kept up to ``MAX_OUTPUT_CHARS`` characters. The bootstrap,
  supervisor and judge are non-dumpable (``PR_SET_DUMPABLE`` 0): a process of the same
  uid can neither ptrace them nor open their ``/proc/<pid>/fd`` or ``mem``. The result
  channel is read while the sandbox runs, so a verdict of any size (up to the codec's
  limits) arrives. A candidate's exception always comes back as an exception of its call;
  ``StopIteration`` and ``StopAsyncIteration``, which the tests' ``map``/``filter``/
  ``zip`` would take for "no more items", come back as an error instead.

  **No state survives a run, and the host is out of reach.** The code's process (and all
  it starts) is confined by two kernel mechanisms that need no privilege:

  - *Landlock*: it reads only the system's and the interpreter's files (``/usr``,
    ``/lib*``, ``/bin``, ``/sbin``, ``/etc``, CPU topology, the interpreter's prefixes and
    library paths) and of ``/proc`` only its own memory map and memory
    (``/proc/self/maps``, ``mem``) and ``/proc/cpuinfo``: no counter of its own faults,
    I/O or memory, nor of the host's memory or page cache (``/proc/self/stat``, ``io``,
    ``smaps``, ``pagemap``, ``/proc/meminfo``, ``vmstat``, ``diskstats``, ...; ``/sys``
    only for the CPUs' topology). It lists ``/proc`` only in namespace mode, where that is a
    procfs of the run's own PID namespace showing only the candidate uid's processes
    (otherwise only its own ``/proc/self``), and writes only
    its scratch (the private tmpfs, or without namespaces the working directory) and
    ``/dev/null``, ``/dev/zero``, ``/dev/full``. The host's other files, FIFOs and unix
    sockets (the checkout, ``/run``, ``/tmp``, home directories) cannot be opened; ptrace
    and ``/proc/<pid>/mem`` stop at the domain's edge, and on Linux 6.12+ signals too.
  - *seccomp* (a deny-list, EPERM): kernel keyrings (``add_key``, ``request_key``,
    ``keyctl``: they live outside every namespace, per uid and per session), POSIX message
    queues, ``memfd_create``/``memfd_secret``, unix sockets (``socketpair``, and
    ``socket`` of any family but IPv4/IPv6 inside the network namespace without
    interfaces; none without namespaces), new namespaces, mounts and ``chroot``
    (``unshare``, ``setns``, ``clone`` with namespace flags; ``clone3`` answers ENOSYS so
    that the C library falls back to ``clone``), ``setsid``/``setpgid``, ``ptrace``,
    ``process_vm_*``, ``pidfd_getfd``, io_uring, ``bpf``, ``perf_event_open``,
    ``userfaultfd``, and what reads or sets which pages of a file are cached (``mincore``,
    ``cachestat``, ``posix_fadvise``, ``readahead``, Linux AIO, and
    ``preadv2``/``pwritev2`` with any flag, as ``RWF_NOWAIT`` answers EAGAIN for a page
    that is not cached; ``madvise`` only with advice that leaves file pages alone, not
    ``WILLNEED``, ``COLD``, ``PAGEOUT``, ``POPULATE_*``, ``REMOVE``, ``COLLAPSE``;
    ``move_pages``, which tells which pages a fault mapped, and a fault maps the cached
    pages around it), and what counts the page cache's work (``getrusage``, and ``wait4``
    and ``waitid`` with a rusage to fill: a run's major faults; ``sysinfo``: free memory,
    which drops as pages load; ``os.waitpid``, ``os.waitid``, ``subprocess`` and
    ``time.process_time`` still work, ``resource.getrusage`` and ``os.wait3``/``wait4``
    raise ``PermissionError``, and ``os.sysconf("SC_PHYS_PAGES")`` is meaningless, as the
    C library ignores the refused ``sysinfo``). ``statfs`` stays: free blocks on disk say
    nothing of the cache. Without namespaces also SysV IPC (the host's IPC namespace),
    changes of file metadata (``chmod``, ``chown``, xattrs, times, ``truncate``: Landlock
    does not govern them), and ``prlimit``/``setpriority``/``sched_set*``/``ioprio_set``
    on any process but itself. Another system-call ABI (x32, i386) kills the process.

  So no kernel object carries a bit from one run to the next: keyrings, SysV IPC and
  POSIX queues (refused, or in namespace mode the run's own IPC namespace), abstract
  unix sockets (refused; and per network namespace), pathname sockets and files (outside
  the scratch, which dies with the run), processes (killed, and unable to leave the
  run's session), and the attributes of the env's processes.

  **Memory.** ``memory_mb`` bounds the address space of each process. Outside any address
  space a run holds at most ``scratch_mb = min(memory_mb, 4 * max_file_mb)`` MiB of files
  (``/tmp``, ``/var/tmp`` and ``/dev/shm`` share one tmpfs) and, in namespace mode,
  ``scratch_mb`` MiB of SysV shared memory, 256 KiB of SysV message queues and 16 small
  semaphore sets (limits written into the run's IPC namespace); memfd and POSIX queues
  are refused. In all, a candidate may hold up to ``max_processes`` times ``memory_mb``
  (threads share one address space; a helper's process counts among them), the judge
  ``memory_mb`` more, and the scratch.

  **Fails closed.** Before any code runs the sandbox checks that the kernel offers
  seccomp filters and Landlock (Linux 5.13+ with ``landlock`` in the ``lsm=`` boot list;
  a container's own seccomp profile must allow the ``landlock_*`` calls) on a CPU whose
  system calls it knows (x86_64, aarch64); otherwise every call raises
  :class:`SandboxUnavailable` and nothing is judged. A process that cannot be confined
  exits before the code starts.

* **As root, with namespaces** (``"namespaces"`` mode, the project's containers and CI):
  the verdict is unforgeable by the candidate. The candidate and the judge each run as
  their own unprivileged uid, allocated without collision across processes (see
  :func:`_sandbox_uids`), so ``RLIMIT_NPROC`` is exact and the candidate can signal,
  ptrace or read the ``/proc`` entries of no other process, the judge included. New PID
  (the supervisor is PID 1: when it ends the kernel kills everything left), network (no
  interfaces), IPC (SysV shared memory, semaphores and queues die with the run, within
  the limits above) and UTS namespaces. A mount namespace in which every mount is
  read-only except the private, size-limited tmpfs for ``/tmp``, ``/var/tmp`` and
  ``/dev/shm`` (the working directory is there): nothing written reaches the host. The
  interpreter's library directories stay visible (bound back over the tmpfs, or over an
  empty tmpfs on a directory the sandbox uid may not enter, such as pyenv under
  ``/root``), and ``hidden_paths`` are covered (an empty tmpfs over a directory,
  ``/dev/null`` over a file). Needs Linux 5.12+ (``mount_setattr``).

* **Not guaranteed in either mode**: without a procfs of its own (``rlimits`` mode, or
  namespace mode on a kernel that refuses to mount one) the code lists no ``/proc`` but
  can still tell whether a host pid exists (``/proc/<pid>`` stats; in ``rlimits`` mode
  signal 0 too), so runs that overlap in time can count each other's processes there;
  with its own procfs a run sees no pid of another. Timing is a channel no sandbox
  closes: CPU contention between concurrent runs, and the page cache. A run can neither
  evict a page, nor ask whether one is cached, nor read a counter that tells (its own
  major faults or I/O, the host's cached or free memory), but every read loads a page,
  and a later run can tell a cached page from one on disk only by the time
  its read or page fault takes. That channel is not exact: each page that is cold when a
  run starts can carry one bit, once (the reading loads it); readahead loads its
  neighbours with it; the host's own reads and its memory pressure load and evict pages in
  between; and a read that the scheduler or a busy disk delays looks like a miss. So a
  reader guesses each bit, with an error rate the host's activity sets, not the code. No
  cgroup bounds the run's total memory (that needs cgroup v2 with the ``memory`` and
  ``pids`` controllers delegated to the env's cgroup, which this project's containers do
  not have; run the env in a container with a memory limit).

* **As root without namespaces** (a container without ``CAP_SYS_ADMIN``): the dedicated
  uids, their exact process limits and non-dumpable judge still hold, so the verdict
  stays the judge's, and Landlock and seccomp as above; files in the working directory
  count against no tmpfs (only each file's ``max_file_mb``).

* **Without root** (``"rlimits"`` mode as an ordinary user) the code runs as the env's
  user, under Landlock and seccomp: it writes only its working directory, reads only the
  system's and the interpreter's files (``hidden_paths`` inside them are carved out: their
  directories still list, their files do not open), cannot open a socket, and cannot
  reach the env's ``/proc`` entries, memory, descriptors, limits or priorities. Its
  process limit counts that user's processes too; a candidate and the judge share the
  uid (on Linux before 6.12 the candidate can signal the judge, which only fails the
  check); reading a host file may update its access time (``relatime``). For RL
  training, prefer root with namespaces.

Measured cost of the confinement (2-core Intel Xeon shared with other jobs, namespace
mode, 150 paired checks alternating with the same sandbox without Landlock, seccomp and
IPC limits): +0.8 ms median for a trivial check (40 ms), +0.1 ms for a canonical HumanEval
check (52 ms), within the noise; building the ruleset and the filter takes 0.15 ms. The
child loads from cached bytecode, which saves more than that (4 ms per check against
the sandbox before this confinement). ``benchmarks/sandbox_throughput.py`` and
BENCHMARKS.md have the throughput.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import keyword
import math
import os
import select
import signal
import site
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from deliberation_env.sandbox._sandbox_codec import MAX_MESSAGE_BYTES, decode

MAX_OUTPUT_CHARS = 100_000
"""Characters of stdout and of stderr kept in a result."""

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

VERDICT_REASONS = (
    "passed",  # check(candidate) returned and the candidate answered every call
    "failed",  # the tests raised (a failed assertion, an exception of a call), or
    #            check returned a value the codec cannot send
    "load_error",  # the program raised or exited before defining a callable entry point
    "bad_answer",  # an answer that is not a plain built-in value, or the candidate ended
    "timeout",  # the wall-clock limit (a candidate that stops answering ends here)
    "judge_error",  # the task's own setup or tests do not load: nothing was judged
    "no_verdict",  # the judge ended without writing a verdict (e.g. killed by a limit)
)
"""Every ``Verdict.reason``, each with what it means; only ``"passed"`` passes."""

_CHILD = Path(__file__).with_name("_sandbox_child.py")
_LAUNCH = (  # the child's module by its path, from cached bytecode: a script is compiled anew
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('_sandbox_child', sys.argv[1])\n"
    "child = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(child)\n"
    "child.main(sys.argv[2])\n"
)
_UID_BASE = 2_000_000_000
_UID_SLOTS = 10_000
_UID_LOCKS = Path("/run/deliberation_env/sandbox-uids")
_TERMINATE_GRACE_S = 2.0
_MAX_CHANNEL_BYTES = 4 * MAX_MESSAGE_BYTES  # a verdict quotes what check returned


class SandboxUnavailable(RuntimeError):
    """The kernel cannot confine code as the sandbox promises (no seccomp filters, no
    Landlock, an unknown architecture): nothing ran, and nothing is judged."""


@dataclass(frozen=True)
class SandboxResult:
    """What happened to one program (not a verdict: see the module docstring).

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


@dataclass(frozen=True)
class JudgeRequest:
    """A candidate program and the trusted code that judges it.

    Attributes:
        program: The candidate's source; it must define ``entry_point``.
        tests: Trusted source defining ``check(candidate)``, which raises if the candidate
            is wrong (HumanEval's ``test`` field).
        entry_point: The name of the candidate's function.
        setup: Trusted source run in the judge before ``tests`` (e.g. a HumanEval prompt
            and its canonical solution: the helper functions the tests use, and the
            reference that tests reading ``entry_point`` by name compare with). In
            ``check`` the name is what the setup binds (a ``NameError`` where it binds
            none): the candidate is only ``check``'s argument.
        probes: Trusted expressions evaluated in the judge with ``entry_point`` bound to
            the candidate (e.g. ``"add(1, 2)"``); their results make ``Verdict.behaviour``.
        helper: A second, untrusted program (the coding protocol's helper agent), run in
            its own confined process; ``""``: none, and no such process starts.
        helper_functions: The names of ``helper``'s functions that ``program`` may call:
            each is bound in the candidate, before ``program`` runs, to a stub that calls
            the function in the helper's process (module docstring).
        helper_answers: ``"returned"``: each call of a helper's function is answered with
            what it returned; ``"swapped"``: with what it returned to an earlier call, and
            what it changed in place as an earlier call left it (a counterfactual run: the
            coding protocol's check that the helper's results matter;
            ``_sandbox_child._Answers``).

    Raises:
        ValueError: If ``helper`` and ``helper_functions`` are not both given or both
            empty, or a name is not an identifier or is a dunder name.
    """

    program: str
    tests: str
    entry_point: str
    setup: str = ""
    probes: tuple[str, ...] = ()
    helper: str = ""
    helper_functions: tuple[str, ...] = ()
    helper_answers: str = "returned"

    def __post_init__(self) -> None:
        if self.helper_answers not in ("returned", "swapped"):
            raise ValueError(f"helper_answers must be 'returned' or 'swapped', got {self.helper_answers!r}")
        if bool(self.helper) != bool(self.helper_functions):
            raise ValueError(
                "a JudgeRequest's helper program and helper_functions go together: name the "
                f"helper's functions the program calls, or give neither (got "
                f"helper_functions={self.helper_functions!r} and {len(self.helper)} characters of helper)"
            )
        for name in self.helper_functions:
            if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
                raise ValueError(f"helper_functions must be identifiers, got {name!r}")
            if name.startswith("__"):
                raise ValueError(f"helper_functions may not bind a dunder name, got {name!r}")


@dataclass(frozen=True)
class Verdict:
    """The trusted verdict on a candidate program.

    Attributes:
        passed: ``check(candidate)`` returned and the candidate answered every call with a
            plain built-in value; decided by the judge process alone.
        reason: One of :data:`VERDICT_REASONS`.
        detail: A short explanation: the failed assertion and its line in the tests, the
            candidate's exception, or what was wrong with an answer.
        behaviour: For each probe, ``repr`` of its decoded result (a SHA-256 digest if
            longer than 1,000 characters) or ``"raised <ExceptionType>"``; ``None`` if the
            probes could not all run (the candidate did not load or broke the protocol).
        stdout: The candidate's standard output, at most ``MAX_OUTPUT_CHARS`` characters.
        stderr: The candidate's standard error, at most ``MAX_OUTPUT_CHARS`` characters.
        duration: Wall-clock seconds, including the interpreter's start.
        isolation: ``"namespaces"`` or ``"rlimits"`` (see the module docstring); ``"none"``
            where nothing ran (a program too large to send: ``load_error``).
        returned: What ``check(candidate)`` returned, as plain built-in values (the
            codec's: a tuple stays a tuple); ``None`` unless passed. Tests that count
            what passed (rather than raise at the first failure) return their count here.
    """

    passed: bool
    reason: str
    detail: str
    behaviour: tuple[str, ...] | None
    stdout: str
    stderr: str
    duration: float
    isolation: str
    returned: object = None


@dataclass(frozen=True)
class _Limits:
    timeout_s: float
    memory_mb: int
    max_processes: int
    max_file_mb: int

    def __post_init__(self) -> None:
        if min(self.timeout_s, self.memory_mb, self.max_processes, self.max_file_mb) <= 0:
            raise ValueError(
                f"sandbox limits must be positive; got timeout_s={self.timeout_s}, "
                f"memory_mb={self.memory_mb}, max_processes={self.max_processes}, "
                f"max_file_mb={self.max_file_mb}"
            )


@dataclass(frozen=True)
class _Run:
    """What the parent saw of one sandbox run."""

    timed_out: bool
    returncode: int
    records: list[dict]
    stdout: str
    stderr: str
    duration: float

    @property
    def isolation(self) -> str:
        return _run_isolation(self.records)


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
        memory_mb: Address-space limit of each process, in MiB.
        max_processes: Processes and threads the code may have at once (see the module
            docstring for how exact this is).
        max_file_mb: Largest file the code may write, stdout and stderr included, in MiB.

    Returns:
        The outcome; a failing or hostile program is a result, never an exception here.
        Its ``passed`` is not a verdict (see :func:`judge_python`).

    Raises:
        ValueError: If a limit is not positive.
    """
    limits = _Limits(timeout_s, memory_mb, max_processes, max_file_mb)
    run = _sandboxed("run", [{"code": code}], limits, hidden_paths=())
    outcomes = [r for r in run.records if r.get("outcome") in REASONS]
    outcome = (outcomes[-1]["outcome"], str(outcomes[-1].get("detail", ""))) if outcomes else None
    reason, detail = _reason(run.timed_out, run.returncode, outcome, timeout_s)
    return SandboxResult(
        passed=reason == "passed",
        reason=reason,
        stdout=run.stdout,
        stderr=run.stderr,
        duration=run.duration,
        detail=detail,
        isolation=run.isolation,
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
        memory_mb: Address-space limit of each process, in MiB.
        max_workers: Programs running at once (default: twice the number of CPUs, since
            a sandbox spends part of its life starting and stopping; see BENCHMARKS.md).

    Returns:
        One result per program, in order.
    """
    with ThreadPoolExecutor(max_workers or 2 * (os.cpu_count() or 1)) as pool:
        return list(pool.map(lambda code: run_python(code, timeout_s, memory_mb), codes))


def judge_python(
    request: JudgeRequest,
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    *,
    max_processes: int = 32,
    max_file_mb: int = 16,
    hidden_paths: Sequence[str | Path] = (),
) -> Verdict:
    """The trusted verdict on ``request.program`` (see the module docstring).

    Args:
        request: The candidate, its tests and probes.
        timeout_s: Wall-clock limit of the whole check; the CPU-time limit of each
            process is one second more, rounded up.
        memory_mb: Address-space limit of each process (candidate and judge), in MiB.
        max_processes: Processes and threads the candidate may have at once.
        max_file_mb: Largest file the candidate may write, its output included, in MiB.
        hidden_paths: Files and directories the candidate must not read (the tests'
            data files): covered inside the sandbox (namespace mode only).

    Returns:
        The verdict; a failing or hostile program is a verdict, never an exception here.

    Raises:
        ValueError: If a limit is not positive.
    """
    limits = _Limits(timeout_s, memory_mb, max_processes, max_file_mb)
    frames = [
        {
            "code": request.program,
            "entry_point": request.entry_point,
            "helper": request.helper,
            "helper_functions": list(request.helper_functions),
            "helper_answers": request.helper_answers,
        },
        {
            "setup": request.setup,
            "tests": request.tests,
            "entry_point": request.entry_point,
            "probes": list(request.probes),
        },
    ]
    size = len(json.dumps(frames[0]).encode("ascii"))
    if size > MAX_MESSAGE_BYTES:  # the candidate's frame is the agents' text: a verdict, not an exception
        detail = f"the program, its helper and their names are {size} bytes encoded; the sandbox takes at most {MAX_MESSAGE_BYTES}"
        return Verdict(passed=False, reason="load_error", detail=detail, behaviour=None, stdout="",
                       stderr="", duration=0.0, isolation="none", returned=None)  # fmt: skip
    run = _sandboxed("judge", frames, limits, hidden_paths=hidden_paths)
    verdicts = [r for r in run.records if r.get("reason") in VERDICT_REASONS]
    returned = None
    if verdicts:
        record = verdicts[-1]
        reason, detail, behaviour = record["reason"], record["detail"], record["behaviour"]
        if reason == "passed":
            returned = decode(record["returned"].encode("ascii"))
    elif run.timed_out:
        reason, detail, behaviour = "timeout", f"wall-clock limit of {timeout_s:g} s", None
    else:
        reason, behaviour = "no_verdict", None
        detail = f"the judge ended without a verdict (sandbox exit status {run.returncode})"
    return Verdict(
        passed=reason == "passed",
        reason=reason,
        detail=detail,
        behaviour=None if behaviour is None else tuple(behaviour),
        stdout=run.stdout,
        stderr=run.stderr,
        duration=run.duration,
        isolation=run.isolation,
        returned=returned,
    )


def judge_many(
    requests: Iterable[JudgeRequest],
    timeout_s: float = 10.0,
    memory_mb: int = 512,
    *,
    max_workers: int | None = None,
    hidden_paths: Sequence[str | Path] = (),
) -> list[Verdict]:
    """:func:`judge_python` for many requests, several at a time.

    Args:
        requests: The candidates to judge.
        timeout_s: Wall-clock limit of each check.
        memory_mb: Address-space limit of each process, in MiB.
        max_workers: Checks running at once (default: twice the number of CPUs).
        hidden_paths: Files and directories no candidate may read.

    Returns:
        One verdict per request, in order.
    """
    with ThreadPoolExecutor(max_workers or 2 * (os.cpu_count() or 1)) as pool:
        return list(
            pool.map(
                lambda r: judge_python(r, timeout_s, memory_mb, hidden_paths=hidden_paths),
                requests,
            )
        )


def _sandboxed(
    mode: str, frames: list[dict], limits: _Limits, hidden_paths: Sequence[str | Path]
) -> _Run:
    """Start the child in ``mode``, feed it ``frames``, collect its result channel while it
    runs, enforce the wall clock.

    Raises:
        SandboxUnavailable: If the kernel cannot confine the code (the child says so in its
            first record, before any code runs).
    """
    start = time.perf_counter()
    root = _privileged()
    payload = b"".join(_frame(frame) for frame in frames)
    with (
        _sandbox_uids() if root else contextlib.nullcontext((None, None)) as (uid, judge_uid),
        tempfile.TemporaryDirectory(prefix="sandbox-") as workdir,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
    ):
        channel, child_channel = os.pipe()
        try:
            if root:
                os.chown(workdir, uid, uid)
            config = {
                "mode": mode,
                "uid": uid,
                "judge_uid": judge_uid,
                "cpu_s": _cpu_limit_s(limits.timeout_s),
                "memory_mb": limits.memory_mb,
                "file_mb": limits.max_file_mb,
                "scratch_mb": _scratch_mb(limits),
                "processes": limits.max_processes,
                "workdir": workdir,
                "site_packages": site.getsitepackages(),
                "hidden": [os.path.abspath(p) for p in hidden_paths],
                "channel_fd": child_channel,
            }
            try:
                process = _start(config, workdir, stdout, stderr)
            finally:
                os.close(child_channel)
            timed_out, received = _feed_and_collect(process, payload, channel, limits.timeout_s)
        finally:
            os.close(channel)
        records = _records(received.decode("utf-8", errors="replace"))
        if root and _run_isolation(records) == "rlimits":
            for each in (uid, judge_uid):
                _kill_uid(each)  # what left the process group (in namespaces the kernel did it)
        if records and "unavailable" in records[0]:
            raise SandboxUnavailable(
                f"the sandbox cannot confine code on this machine: {records[0]['unavailable']}"
            )
        return _Run(
            timed_out=timed_out,
            returncode=process.returncode,
            records=records,
            stdout=_read(stdout),
            stderr=_read(stderr),
            duration=time.perf_counter() - start,
        )


def _scratch_mb(limits: _Limits) -> int:
    """MiB of the run's files in memory (its temporary directories), and of its SysV shared
    memory: ``4 * max_file_mb``, at most ``memory_mb``."""
    return min(limits.memory_mb, 4 * limits.max_file_mb)


def _start(config: dict, workdir: str, stdout, stderr) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _LAUNCH, str(_CHILD), json.dumps(config)],
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=stderr,
        pass_fds=(config["channel_fd"],),
        cwd=workdir,
        env=_scrubbed_environment(workdir),
        start_new_session=True,
    )


def _feed_and_collect(
    process: subprocess.Popen, payload: bytes, channel: int, timeout_s: float
) -> tuple[bool, bytes]:
    """Write ``payload`` to the child's stdin and read its result channel, both while it
    runs, until it ends or ``timeout_s`` passes: (whether it timed out, what it reported).

    The channel is read as it fills: a verdict larger than the pipe's buffer would
    otherwise block the judge until the timeout. The wait is on a pidfd, which wakes the
    moment the child ends. A child that ended without reading all of its stdin is not an
    error (its result says why).
    """
    deadline = time.monotonic() + timeout_s
    stdin, pidfd = process.stdin.fileno(), os.pidfd_open(process.pid)
    received, unsent = bytearray(), memoryview(payload)
    poller = select.poll()
    for fd, events in ((pidfd, select.POLLIN), (channel, select.POLLIN), (stdin, select.POLLOUT)):
        poller.register(fd, events)
    os.set_blocking(channel, False)
    os.set_blocking(stdin, False)
    try:
        while (left := deadline - time.monotonic()) > 0:
            ready = dict(poller.poll(math.ceil(left * 1000)))
            if channel in ready and not _receive(channel, received):
                poller.unregister(channel)  # every writer closed it
            if stdin in ready:
                unsent = _send(stdin, unsent)
                if not unsent:
                    poller.unregister(stdin)
                    _close_stdin(process)
            if pidfd in ready:
                process.wait()
                _drain(channel, received)
                return False, bytes(received)
        _close_stdin(process)
        process.terminate()  # the bootstrap kills the supervisor (and so the namespace)
        try:
            process.wait(_TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        _drain(channel, received)
        return True, bytes(received)
    finally:
        _close_stdin(process)
        os.close(pidfd)
        _kill_group(process.pid)


def _receive(channel: int, received: bytearray) -> bool:
    """Read one chunk of the result channel into ``received`` (beyond
    ``_MAX_CHANNEL_BYTES`` it is read and dropped); ``False`` once every writer closed it."""
    try:
        chunk = os.read(channel, 2**16)
    except BlockingIOError:
        return True
    if len(received) < _MAX_CHANNEL_BYTES:
        received += chunk
    return bool(chunk)


def _drain(channel: int, received: bytearray) -> None:
    """Read what is left on the result channel once the child ended, without waiting for
    more (a process that left the group may still hold it)."""
    while len(received) < _MAX_CHANNEL_BYTES:
        try:
            chunk = os.read(channel, 2**16)
        except BlockingIOError:
            return
        if not chunk:
            return
        received += chunk


def _send(stdin: int, unsent: memoryview) -> memoryview:
    """Write what the child's stdin takes now; what is left (nothing once it stopped reading)."""
    try:
        return unsent[os.write(stdin, unsent[: 2**16]) :]
    except BlockingIOError:
        return unsent
    except BrokenPipeError:
        return unsent[:0]


def _close_stdin(process: subprocess.Popen) -> None:
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()


def _frame(frame: dict) -> bytes:
    data = json.dumps(frame).encode("ascii")
    if len(data) > MAX_MESSAGE_BYTES:
        raise ValueError(f"sandbox request of {len(data)} bytes; the limit is {MAX_MESSAGE_BYTES}")
    return len(data).to_bytes(8, "big") + data


def _records(text: str) -> list[dict]:
    """The JSON-object lines of the result channel (others are ignored)."""
    records = []
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict):
                records.append(record)
    return records


def _run_isolation(records: list[dict]) -> str:
    modes = [r["isolation"] for r in records if r.get("isolation") in ("namespaces", "rlimits")]
    return modes[0] if modes else "rlimits"


def _privileged() -> bool:
    """Whether the env runs as root, which dedicated uids and namespaces need."""
    return os.geteuid() == 0


@contextlib.contextmanager
def _sandbox_uids() -> Iterator[tuple[int, int]]:
    """Two uids (candidate, judge) that no other run on this machine holds meanwhile.

    Slot ``i`` owns uids ``2_000_000_000 + 2i`` and ``+ 2i + 1``; a run holds an exclusive
    ``flock`` on ``/run/deliberation_env/sandbox-uids/<i>.lock`` until its processes are
    dead, and takes the lowest free slot. Chosen over random uids because a lock is a
    proof, not a probability; over a single counter because the kernel releases an
    ``flock`` when its holder dies, so a crashed env leaves no stale reservation, and the
    files are bounded by the largest number of concurrent runs.

    Raises:
        RuntimeError: If all slots are held.
    """
    _UID_LOCKS.mkdir(mode=0o700, parents=True, exist_ok=True)
    for slot in range(_UID_SLOTS):
        fd = os.open(_UID_LOCKS / f"{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield _UID_BASE + 2 * slot, _UID_BASE + 2 * slot + 1
        finally:
            os.close(fd)
        return
    raise RuntimeError(f"all {_UID_SLOTS} sandbox uid slots under {_UID_LOCKS} are in use")


def _kill_group(pgid: int) -> None:
    """Kill what is left of the sandbox's process group (``rlimits`` mode leftovers)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _kill_uid(uid: int) -> None:
    """Kill every live process of a run's dedicated uid, until none is left."""
    while pids := _live_processes(uid):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


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


def _reason(
    timed_out: bool, returncode: int, outcome: tuple[str, str] | None, timeout_s: float
) -> tuple[str, str]:
    """Classify a ``run_python`` run: (reason, detail)."""
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
