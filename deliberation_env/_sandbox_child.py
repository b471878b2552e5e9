"""The child side of :mod:`deliberation_env.sandbox`; never imported by the package.

The parent runs ``python -I -S _sandbox_child.py CONFIG_JSON`` with the code on stdin.
Standard library only, so that it starts fast and depends on nothing it could break.

Three processes, each with one job:

1. *bootstrap* (the process the parent started, root when the parent is): tries to enter
   new mount, PID and network namespaces, forks the supervisor, waits for it, and
   relays its exit status. On ``SIGTERM`` (the parent's wall-clock timeout) it kills
   the supervisor, which in namespace mode takes the whole namespace down with it.
2. *supervisor* (PID 1 of the new PID namespace in namespace mode): mounts private
   tmpfs on ``/tmp``, ``/var/tmp`` and ``/dev/shm``, makes the interpreter's library
   directories reachable for the sandbox uid, forks the user process, waits for
   it and exits with its status. When it exits the kernel kills every process left in
   its namespace (forks, daemons). It dies with the bootstrap (parent-death signal).
3. *user process*: sets the resource limits, drops to the sandbox uid, blocks the
   ``socket`` module, runs the code and writes its outcome to the status file.

The status file receives JSON lines: ``{"isolation": ...}`` from the bootstrap, then
``{"outcome": ..., "detail": ...}`` from the user process if the code ran to an end it
could report (a signal or ``os._exit`` leaves only the exit status).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import signal
import socket
import stat
import sys
import traceback

_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_BIND = 1 << 12
_MS_MOVE = 1 << 13
_MS_REC = 1 << 14
_MS_PRIVATE = 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_LIBC = ctypes.CDLL(None, use_errno=True)


def main() -> None:
    """Bootstrap: read the request, isolate, supervise, relay the exit status."""
    config = json.loads(sys.argv[1])
    sys.path.extend(config["site_packages"])  # started with -S: no .pth files, a faster start
    code = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    namespaces = config["uid"] is not None and _unshare()
    _report(config, {"isolation": "namespaces" if namespaces else "rlimits"})
    supervisor = os.fork()
    if supervisor == 0:
        _supervise(code, config, namespaces)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(supervisor, signal.SIGKILL))
    os._exit(_wait_status(supervisor))


def _unshare() -> bool:
    """Enter new mount, PID and network namespaces; ``False`` where the kernel refuses."""
    if _LIBC.unshare(_CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET) != 0:
        return False
    _check(_LIBC.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    return True


def _supervise(code: str, config: dict, namespaces: bool) -> None:
    """Supervisor: private temporary directories, then run and wait for the user process."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    workdir = config["workdir"]
    if namespaces:
        size = f"size={config['tmpfs_mb']}m,mode=1777".encode()
        for path in _PRIVATE_DIRS:
            if os.path.isdir(path):
                _check(_LIBC.mount(b"tmpfs", path.encode(), b"tmpfs", 0, size), f"mount {path}")
        _expose_library_paths()
        workdir = "/tmp/sandbox"
        os.mkdir(workdir, 0o700)
        os.chown(workdir, config["uid"], config["uid"])
    os.chdir(workdir)
    user = os.fork()
    if user == 0:
        _run_user_code(code, config, workdir)
    os._exit(_wait_status(user))


def _expose_library_paths() -> None:
    """Let the sandbox uid import from the interpreter's directories, hiding their parents.

    An interpreter installed under a directory only its owner may enter (pyenv in
    ``/root``) would be unusable after dropping privileges. In this mount namespace each
    such directory is covered by an empty tmpfs in which only the library directories on
    ``sys.path`` are bind-mounted back; everything else in it stays invisible.
    """
    leaves = {}
    for path in sys.path:
        ancestor = _unsearchable_ancestor(path) if os.path.isdir(path) else None
        if ancestor is not None and ancestor != path:
            leaves[path] = ancestor
    leaves = {
        leaf: ancestor
        for leaf, ancestor in leaves.items()
        if not any(leaf.startswith(other + "/") for other in leaves)
    }
    staging = "/tmp/.sandbox-libraries"
    os.mkdir(staging, 0o700)
    for index, leaf in enumerate(leaves):
        os.mkdir(f"{staging}/{index}")
        _check(
            _LIBC.mount(
                leaf.encode(), f"{staging}/{index}".encode(), None, _MS_BIND | _MS_REC, None
            ),
            f"bind {leaf}",
        )
    for ancestor in set(leaves.values()):
        _check(
            _LIBC.mount(b"tmpfs", ancestor.encode(), b"tmpfs", 0, b"size=1m,mode=0755"),
            f"cover {ancestor}",
        )
    for index, leaf in enumerate(leaves):
        os.makedirs(leaf, 0o755)
        _check(
            _LIBC.mount(f"{staging}/{index}".encode(), leaf.encode(), None, _MS_MOVE, None),
            f"move {leaf}",
        )
        os.rmdir(f"{staging}/{index}")
    os.rmdir(staging)


def _unsearchable_ancestor(path: str) -> str | None:
    """The first directory on the way to ``path`` (itself included) that others cannot enter."""
    current = "/"
    for part in path.strip("/").split("/"):
        current = os.path.join(current, part)
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current
    return None


def _run_user_code(code: str, config: dict, workdir: str) -> None:
    """User process: limits, unprivileged uid, no sockets; run ``code``; report; exit."""
    _set_limits(config)
    if config["uid"] is not None:
        os.setgroups([])
        os.setgid(config["uid"])
        os.setuid(config["uid"])
    _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # cleared by setuid: set again
    _block_sockets()
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir
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
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:  # a full output file: what fits is kept
            pass
    _report(config, {"outcome": outcome, "detail": detail})
    os._exit(0 if outcome == "passed" else 1)


def _set_limits(config: dict) -> None:
    """Hard resource limits: CPU seconds, address space, processes, file size, files."""
    cpu = config["cpu_s"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = config["memory_mb"] * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    file_size = config["file_mb"] * 2**20
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Counted per real uid: exact for the dedicated sandbox uid, approximate otherwise.
    processes = config["processes"] + (0 if config["uid"] is not None else _own_processes())
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


def _block_sockets() -> None:
    """A Python-level guard (not a security boundary): ``socket.socket`` refuses to open."""

    class _NoSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            raise PermissionError(errno.EACCES, "network access is disabled in the sandbox")

    socket.socket = _NoSocket
    socket.socketpair = socket.create_connection = _NoSocket


def _wait_status(pid: int) -> int:
    """Wait for ``pid``; its exit status, or 128 + signal if a signal ended it."""
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _report(config: dict, record: dict) -> None:
    """Append one JSON line to the status file."""
    os.write(config["status_fd"], (json.dumps(record) + "\n").encode())


def _print_traceback(error: BaseException) -> None:
    """Print the traceback of the code's exception, without this module's frame."""
    traceback.print_exception(error.with_traceback(error.__traceback__.tb_next))


def _describe(error: BaseException) -> str:
    """``"Type: message"`` of an exception, short."""
    return f"{type(error).__name__}: {error}"[:500]


def _check(result: int, what: str) -> None:
    """Raise ``OSError`` if a libc call failed."""
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"sandbox could not {what}: {os.strerror(code)}")


if __name__ == "__main__":
    main()
