"""The child side of :mod:`deliberation_env.sandbox`; never imported by the package.

The parent runs ``python -I -S _sandbox_child.py CONFIG_JSON`` and writes one or two
length-prefixed JSON frames on its stdin. Standard library only (and the codec module next
to this file, loaded by path), so that it starts fast and depends on nothing it could break.

Processes, each with one job:

1. *bootstrap* (the process the parent started, root when the parent is): marks itself
   non-dumpable, reads the first frame, tries to enter new mount, PID, network, IPC and
   UTS namespaces and to build the sandbox's view of the file system there (read-only
   root, private tmpfs, library paths bound back, hidden paths covered), reports the
   isolation mode on the result channel, forks the supervisor, waits for it and relays
   its exit status. On ``SIGTERM`` (the parent's wall-clock timeout) it kills the
   supervisor, which in namespace mode takes the whole namespace down with it.
2. *supervisor* (PID 1 of the new PID namespace in namespace mode): creates the working
   directory and forks the process below; in ``judge`` mode it then becomes the judge.
   It dies with the bootstrap, and in namespace mode everything dies with it.
3. ``run`` mode (:func:`deliberation_env.sandbox.run_python`): the *user process* sets
   the limits, drops to the sandbox uid, runs the code and writes its outcome to the
   result channel (moved above the code's descriptor limit, so that closing its own
   descriptors does not lose it). The code shares that process: this is not a verdict.
4. ``judge`` mode (:func:`deliberation_env.sandbox.judge_python`):

   - the *candidate* closes every descriptor but its standard streams and its two
     protocol pipes, sets the limits, drops to the candidate uid, runs the program and
     then serves calls: it reads an encoded argument tuple, calls the entry point and
     writes back the encoded result or the exception's type name. It is forked before
     the second frame (the tests) is read, so the tests are never in its memory.
   - the *judge* (the supervisor, trusted) reads nothing the candidate wrote but codec
     messages. It reads the tests, keeps only the verdict channel and its two protocol
     pipes, drops to its own uid, stays non-dumpable, runs the task's setup and tests
     with the entry point bound to a proxy whose calls the candidate answers, evaluates
     the probe expressions through the proxy, calls ``check(proxy)`` and alone writes the
     verdict to the result channel, which the candidate never holds.
"""

from __future__ import annotations

import builtins
import ctypes
import errno
import fcntl
import importlib.util
import json
import os
import resource
import signal
import socket
import stat
import sys


def _load_codec():
    """The codec next to this file, loaded by its path: the package's directory never goes
    on ``sys.path``, where its modules could shadow those the sandboxed code imports."""
    path = os.path.join(os.path.dirname(__file__), "_sandbox_codec.py")
    spec = importlib.util.spec_from_file_location("_sandbox_codec", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


codec = _load_codec()

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 1 << 12
_MS_REC = 1 << 14
_MS_PRIVATE = 1 << 18
_SYS_MOUNT_SETATTR = 442  # the same number on every architecture (Linux 5.12+)
_AT_FDCWD = -100
_AT_RECURSIVE = 0x8000
_MOUNT_ATTR_RDONLY = 1
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38
_PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_NOFILE = 64
_MAX_DETAIL_CHARS = 500
_MAX_SHOWN_CHARS = 1_000
_LIBC = ctypes.CDLL(None, use_errno=True)


class _MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clear", "propagation", "userns")]


def main() -> None:
    """Bootstrap: read the request, isolate, supervise, relay the exit status."""
    _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    config = json.loads(sys.argv[1])
    sys.path.extend(config["site_packages"])  # started with -S: no .pth files, a faster start
    request = _read_frame(0)
    namespaces = config["uid"] is not None and _unshare()
    if namespaces:
        _build_file_system(config)
    _record(config["channel_fd"], {"isolation": "namespaces" if namespaces else "rlimits"})
    supervisor = os.fork()
    if supervisor == 0:
        _supervise(request, config, namespaces)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(supervisor, signal.SIGKILL))
    os._exit(_wait_status(supervisor))


def _read_frame(fd: int) -> dict:
    """One JSON frame from the parent, read exactly: no byte of the next frame is buffered."""
    return json.loads(codec.read_message(fd))


def _unshare() -> bool:
    """Enter new mount, PID, network, IPC and UTS namespaces; ``False`` where refused."""
    flags = _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS
    if _LIBC.unshare(flags) != 0:
        return False
    _check(_LIBC.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    return True


# ------------------------------------------------------------------ the file system view
def _build_file_system(config: dict) -> None:
    """The sandbox's view: every mount read-only, private writable tmpfs on the temporary
    directories, the interpreter's library directories visible, hidden paths covered."""
    libraries = [path for path in sys.path if os.path.isdir(path)]
    covered = [path for path in _PRIVATE_DIRS if os.path.isdir(path)]
    unsearchable = {_unsearchable_ancestor(path) for path in libraries} - {None}
    covers = covered + _outermost(
        path for path in unsearchable if not any(_inside(path, cover) for cover in covered)
    )
    leaves = _outermost(path for path in libraries if any(_inside(path, c) for c in covers))
    attr = _MountAttr(set=_MOUNT_ATTR_RDONLY)
    _check(
        _LIBC.syscall(
            ctypes.c_long(_SYS_MOUNT_SETATTR),
            ctypes.c_int(_AT_FDCWD),
            b"/",
            ctypes.c_uint(_AT_RECURSIVE),
            ctypes.byref(attr),
            ctypes.c_size_t(ctypes.sizeof(attr)),
        ),
        "make / read-only",
    )
    handles = {leaf: os.open(leaf, os.O_PATH | os.O_DIRECTORY) for leaf in leaves}
    size = f"size={config['tmpfs_mb']}m".encode()
    for path in covers:
        options = size + (b",mode=1777" if path in covered else b",mode=0755")
        _check(
            _LIBC.mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options),
            f"mount tmpfs on {path}",
        )
    for leaf, handle in handles.items():
        os.makedirs(leaf, 0o755, exist_ok=True)
        _bind(f"/proc/self/fd/{handle}", leaf)
        os.close(handle)
    for path in config["hidden"]:
        _hide(path)


def _inside(path: str, directory: str) -> bool:
    """Whether ``path`` is strictly inside ``directory``."""
    return path.startswith(directory.rstrip("/") + "/")


def _outermost(paths) -> list[str]:
    """``paths`` without those inside another of them."""
    paths = set(paths)
    return sorted(p for p in paths if not any(_inside(p, other) for other in paths))


def _bind(source: str, target: str) -> None:
    _check(
        _LIBC.mount(source.encode(), target.encode(), None, _MS_BIND | _MS_REC, None),
        f"bind {target}",
    )


def _hide(path: str) -> None:
    """Cover ``path``: an empty read-only tmpfs over a directory, ``/dev/null`` over a file."""
    if os.path.isdir(path):
        flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
        _check(
            _LIBC.mount(b"tmpfs", path.encode(), b"tmpfs", flags, b"size=4k,mode=0"), f"hide {path}"
        )
    elif os.path.exists(path):
        _bind("/dev/null", path)


def _unsearchable_ancestor(path: str) -> str | None:
    """The first directory on the way to ``path`` (itself included) that others cannot enter."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current
    return None


# --------------------------------------------------------------------------- supervisor
def _supervise(request: dict, config: dict, namespaces: bool) -> None:
    """Supervisor: the working directory, then the run's processes; exit with the result's."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    workdir = config["workdir"]
    if namespaces:
        workdir = "/tmp/sandbox"
        os.mkdir(workdir, 0o700)
        os.chown(workdir, config["uid"], config["uid"])
    os.chdir(workdir)
    if config["mode"] == "run":
        user = os.fork()
        if user == 0:
            _run_user_code(request["code"], config, workdir)
        os._exit(_wait_status(user))
    calls, answers = os.pipe(), os.pipe()
    candidate = os.fork()
    if candidate == 0:
        mine = _above_descriptor_limit(calls[0]), _above_descriptor_limit(answers[1])
        _keep_descriptors(*mine)
        _serve_candidate(request, config, workdir, *mine)
    # The supervisor becomes the judge (one fork fewer). Its exit ends the candidate: as
    # PID 1 it takes the namespace down; otherwise the parent kills the process group.
    material = _read_frame(0)
    _keep_descriptors(config["channel_fd"], calls[1], answers[0], quiet=True)
    _judge(material, config, calls[1], answers[0])


def _keep_descriptors(*keep: int, quiet: bool = False) -> None:
    """Close every descriptor but the standard streams and ``keep``; stdin reads nothing.

    Args:
        keep: Descriptors to keep open.
        quiet: Also send stdout and stderr to ``/dev/null``.
    """
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    if quiet:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    os.close(devnull)
    start = 3
    for fd in sorted(keep):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def _confine(config: dict, uid: int | None, workdir: str) -> None:
    """Limits, an unprivileged uid, no new privileges, death with the supervisor."""
    _set_limits(config, uid)
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # cleared by setuid: set again
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir


# ------------------------------------------------------------------------ run mode
def _run_user_code(code: str, config: dict, workdir: str) -> None:
    """User process: limits, unprivileged uid, no sockets; run ``code``; report; exit."""
    channel = _above_descriptor_limit(config["channel_fd"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    _confine(config, config["uid"], workdir)
    _block_sockets()
    namespace = {"__name__": "__main__"}
    outcome, detail = "passed", ""
    try:
        exec(compile(code, "<sandbox>", "exec"), namespace)  # noqa: S102
        sys.stdout.flush()
    except SystemExit as exit_:
        outcome, detail = "exit", repr(exit_.code)
    except MemoryError:
        outcome = "memory"  # nothing that allocates here: the traceback still holds the memory
    except OSError as error:
        outcome = "file_size" if error.errno == errno.EFBIG else "exception"
        detail = _describe(error)
        _print_traceback(error)
    except BaseException as error:  # noqa: BLE001 - any failure of the code is its result
        outcome, detail = "exception", _describe(error)
        _print_traceback(error)
    namespace.clear()  # frees what the code held (after a MemoryError, for the report)
    if outcome == "memory":
        detail = f"MemoryError (address-space limit {config['memory_mb']} MiB)"
    _flush_streams()
    _record(channel, {"outcome": outcome, "detail": detail})
    os._exit(0 if outcome == "passed" else 1)


def _above_descriptor_limit(fd: int) -> int:
    """``fd`` moved above the code's descriptor limit: a program that closes every
    descriptor it could have opened (3 to 63) keeps it."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, _NOFILE)
    os.close(fd)
    return high


def _block_sockets() -> None:
    """A Python-level guard (not a security boundary): ``socket.socket`` refuses to open."""

    class _NoSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            raise PermissionError(errno.EACCES, "network access is disabled in the sandbox")

    socket.socket = _NoSocket
    socket.socketpair = socket.create_connection = _NoSocket


# ---------------------------------------------------------------------- judge mode
def _serve_candidate(request: dict, config: dict, workdir: str, calls: int, answers: int) -> None:
    """Candidate: run the program, then answer calls of its entry point until the judge stops."""
    _confine(config, config["uid"], workdir)
    _LIBC.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # its own /proc entries are its own: nothing to hide
    _block_sockets()
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(request["code"], "<candidate>", "exec"), namespace)  # noqa: S102
        function = namespace[request["entry_point"]]
        if not callable(function):
            raise TypeError(f"{request['entry_point']} is not callable")
    except BaseException as error:  # noqa: BLE001 - any failure of the program is its result
        _print_traceback(error)
        _answer(answers, ("load_error", _describe(error)))
        os._exit(1)
    _answer(answers, ("ready",))
    while True:
        try:
            _, args, kwargs = codec.decode(codec.read_message(calls))
        except EOFError:
            os._exit(0)
        try:
            reply = ("return", function(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - the call's outcome is its answer
            reply = ("raise", type(error).__name__, _describe(error))
        _answer(answers, reply)


def _answer(answers: int, reply: tuple) -> None:
    """Send a reply to the judge; a value the codec refuses is sent as ``unsendable``."""
    _flush_streams()
    try:
        message = codec.encode(reply)
    except codec.CodecError as error:
        message = codec.encode(("unsendable", str(error)))
    codec.write_message(answers, message)


class _CandidateFailure(BaseException):
    """The candidate broke the protocol: a BaseException, so tests' ``except Exception`` miss it."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class _CandidateError(Exception):
    """An exception the candidate raised whose type is not a built-in exception."""


class _Proxy:
    """The entry point as the tests see it: each call is answered by the candidate process.

    Only decoded built-in values come back. A broken answer (undecodable, unsendable, the
    candidate gone, an exit) is a :class:`_CandidateFailure` that also sticks: every later
    call raises it again and the verdict is ``bad_answer`` whatever the tests did with it.
    """

    def __init__(self, calls: int, answers: int) -> None:
        self.calls, self.answers = calls, answers
        self.failure: _CandidateFailure | None = None
        self.exceptions = {
            name: value
            for name, value in vars(builtins).items()
            if isinstance(value, type) and issubclass(value, Exception)
        }

    def ready(self) -> None:
        """Wait until the candidate has run its program; raise its load error if any."""
        reply = self._receive()
        if reply == ("ready",):
            return
        if len(reply) == 2 and reply[0] == "load_error" and type(reply[1]) is str:
            raise self._fail("load_error", reply[1])
        raise self._fail("load_error", f"unexpected first message {reply!r}"[:_MAX_DETAIL_CHARS])

    def __call__(self, *args, **kwargs):
        if self.failure is not None:
            raise self.failure
        try:
            message = codec.encode(("call", args, kwargs))
        except codec.CodecError as error:
            raise TypeError(f"the tests passed a value the sandbox cannot send: {error}") from None
        try:
            codec.write_message(self.calls, message)
        except OSError as error:
            raise self._fail(
                "bad_answer", f"the candidate stopped answering ({error.strerror})"
            ) from None
        return self._result(self._receive())

    def _receive(self) -> tuple:
        try:
            reply = codec.decode(codec.read_message(self.answers))
        except EOFError:
            raise self._fail(
                "bad_answer", "the candidate process ended without answering"
            ) from None
        except codec.CodecError as error:
            raise self._fail("bad_answer", f"undecodable answer: {error}") from None
        if type(reply) is not tuple or not reply:
            raise self._fail("bad_answer", "malformed answer")
        return reply

    def _result(self, reply: tuple):
        kind = reply[0]
        if kind == "return" and len(reply) == 2:
            return reply[1]
        if kind == "raise" and len(reply) == 3 and all(type(part) is str for part in reply[1:]):
            return self._raise(reply[1], reply[2])
        if kind == "unsendable" and len(reply) == 2 and type(reply[1]) is str:
            raise self._fail("bad_answer", f"the result is not a plain built-in value: {reply[1]}")
        raise self._fail("bad_answer", f"malformed answer {reply!r}"[:_MAX_DETAIL_CHARS])

    def _raise(self, name: str, detail: str):
        """Raise what the candidate raised: the built-in exception of that name if there is
        one, else :class:`_CandidateError`; an exit (``SystemExit``, ...) is a failure."""
        message = f"raised by the candidate: {detail}"
        if name in self.exceptions:
            try:
                error = self.exceptions[name](message)
            except TypeError:  # a constructor wanting more arguments (UnicodeDecodeError)
                error = _CandidateError(message)
            raise error
        if name in vars(builtins):  # SystemExit, KeyboardInterrupt, GeneratorExit
            raise self._fail("bad_answer", f"the candidate raised {name} during a call")
        raise _CandidateError(message)

    def _fail(self, reason: str, detail: str) -> _CandidateFailure:
        self.failure = self.failure or _CandidateFailure(reason, detail[:_MAX_DETAIL_CHARS])
        return self.failure


def _judge(material: dict, config: dict, calls: int, answers: int) -> None:
    """Judge: a verdict on the candidate from the task's own tests, written to the channel."""
    _set_limits(config, config["judge_uid"])
    if config["judge_uid"] is not None:
        os.setgroups([])
        os.setgid(config["judge_uid"])
        os.setuid(config["judge_uid"])
    _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # after setuid, which may reset it
    _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:
        verdict = _verdict(material, _Proxy(calls, answers))
    except MemoryError:
        verdict = {"reason": "bad_answer", "detail": "the judge ran out of memory"}
    _record(config["channel_fd"], {"behaviour": None, **verdict})
    os._exit(0)


def _verdict(material: dict, proxy: _Proxy) -> dict:
    """Run the setup, the tests, the probes and ``check(proxy)``: the verdict as a record."""
    namespace = {"__name__": "__main__"}
    try:
        exec(compile(material["setup"], "<setup>", "exec"), namespace)  # noqa: S102
        exec(compile(material["tests"], "<tests>", "exec"), namespace)  # noqa: S102
        check = namespace["check"]
    except Exception as error:  # noqa: BLE001 - the task's own code is broken
        return {
            "reason": "judge_error",
            "detail": f"the task's tests do not load: {_describe(error)}",
        }
    try:
        proxy.ready()
    except _CandidateFailure as failure:
        return {"reason": failure.reason, "detail": failure.detail}
    namespace[material["entry_point"]] = proxy
    behaviour = _probe(material["probes"], namespace)
    try:
        returned = check(proxy)
    except _CandidateFailure:
        pass  # recorded by the proxy
    except BaseException as error:  # noqa: BLE001 - whatever stops the tests fails them
        if proxy.failure is None:
            return {"reason": "failed", "detail": _where(error), "behaviour": behaviour}
    if proxy.failure is not None:
        return {"reason": proxy.failure.reason, "detail": proxy.failure.detail}
    try:
        message = codec.encode(returned).decode("ascii")
    except codec.CodecError as error:  # e.g. a huge answer of the candidate's, passed on
        return {"reason": "failed", "detail": f"check returned what cannot be sent: {error}"}
    return {"reason": "passed", "detail": "", "behaviour": behaviour, "returned": message}


def _probe(calls: list[str], namespace: dict) -> list[str] | None:
    """What each probe expression gives through the proxy, shown as text; ``None`` if the
    candidate broke the protocol on one of them."""
    shown = []
    for call in calls:
        try:
            shown.append(_show(eval(call, namespace)))  # the task's own examples
        except _CandidateFailure:
            return None
        except Exception as error:  # noqa: BLE001 - a raising call is a behaviour
            shown.append(f"raised {type(error).__name__}")
    return shown


def _show(value: object) -> str:
    """``repr`` of a decoded value; a digest when long; a placeholder when it has none."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond the interpreter's digit limit
        return f"<{type(value).__name__} too large to show>"
    if len(text) <= _MAX_SHOWN_CHARS:
        return text
    import hashlib  # here, not at the top: every sandbox would pay for its import

    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _where(error: BaseException) -> str:
    """The exception and the line of the tests it came from."""
    import traceback  # here, not at the top: a run that raises nothing never pays for it

    lines = [
        line
        for frame, line in traceback.walk_tb(error.__traceback__)
        if frame.f_code.co_filename == "<tests>"
    ]
    where = f" (tests line {lines[-1]})" if lines else ""
    return (_describe(error) + where)[:_MAX_DETAIL_CHARS]


# -------------------------------------------------------------------------- shared
def _set_limits(config: dict, uid: int | None) -> None:
    """Hard resource limits: CPU seconds, address space, processes, file size, files."""
    cpu = config["cpu_s"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = config["memory_mb"] * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    file_size = config["file_mb"] * 2**20
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_NOFILE, (_NOFILE, _NOFILE))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Counted per real uid: exact for a dedicated sandbox uid, approximate otherwise.
    processes = config["processes"] + (0 if uid is not None else _own_processes())
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))


def _own_processes() -> int:
    """Number of processes (threads included) of this real uid, from ``/proc``."""
    count = 0
    uid = f"Uid:\t{os.getuid()}\t"
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as status:
                text = status.read()
        except OSError:
            continue
        if uid in text:
            count += int(text.split("Threads:")[1].split()[0])
    return count


def _wait_status(pid: int) -> int:
    """Wait for ``pid``; its exit status, or 128 + signal if a signal ended it."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _record(fd: int, record: dict) -> None:
    """Append one JSON line to the result channel."""
    data = memoryview((json.dumps(record) + "\n").encode())
    while data:
        data = data[os.write(fd, data) :]


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a full output file: what fits is kept
            pass


def _print_traceback(error: BaseException) -> None:
    """Print the traceback of the code's exception, without this module's frame."""
    import traceback  # here, not at the top: a run that raises nothing never pays for it

    traceback.print_exception(error.with_traceback(error.__traceback__.tb_next))


def _describe(error: BaseException) -> str:
    """``"Type: message"`` of an exception, short."""
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable>"
    return f"{type(error).__name__}: {message}"[:_MAX_DETAIL_CHARS]


def _check(result: int, what: str) -> None:
    """Raise ``OSError`` if a libc call failed."""
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"sandbox could not {what}: {os.strerror(code)}")


if __name__ == "__main__":
    main()
