"""Seccomp deny-list for env children, by syscall *number*, built with ``pyseccomp`` (libseccomp).

Why a deny-list with ERRNO (not KILL): env code then gets an ordinary Python ``OSError`` and
the episode's failure is reported with a reason, while everything Python itself needs keeps
working. Why these syscalls: with socket creation, fork/exec, ptrace, namespaces, chmod/chown,
SysV IPC, rlimit raising, foreign signals and scheduling of other processes denied, the child
cannot reach the network, start a process that escapes ``killpg``, carry state into the next
child, or change anything outside its own process.

Why numbers, not names: a name the installed libseccomp does not know cannot be resolved and
used to be skipped silently (``statmount``, ``listmount``, the ``lsm_*`` calls on an older
libseccomp), so the filter rotted without a word. Rules are now keyed by the x86_64 syscall
number written down here, every rule must install or the filter is refused (the seccomp layer
is then reported missing with the reason, and the pool refuses to start below its minimum),
and every number above :data:`HIGHEST_REVIEWED` is answered ``ENOSYS``. On another
architecture the names are resolved by libseccomp and an unresolvable name is an error too.

Why not an allow-list (yet): Python, numpy and gymnasium touch ~120 distinct syscalls across
versions (``rseq``, ``getrandom``, ``statx``, ``futex_waitv`` ...); an allow-list that misses one breaks
legitimate environments in ways that look like env bugs. The deny-list is total for the
dangerous families, versioned by :data:`HIGHEST_REVIEWED`, default-deny above it, and tested
syscall by syscall (tests/sandbox/test_hostile_kernel.py).

Why a BPF template: building the filter with libseccomp costs 1-5 ms per child; the zygote
builds it once with a placeholder pid, and each child patches its own pid into the exported
program and loads it with one ``prctl`` (tens of microseconds).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

import pyseccomp as sc

HIGHEST_REVIEWED = 462
"""Highest syscall number whose meaning was reviewed for this list (Linux 6.10: ``mseal``)."""

CLONE_THREAD = 0x00010000
PR_SET_PDEATHSIG = 1

X86_64: dict[str, int] = {
    "socket": 41,
    "socketpair": 53,
    "execve": 59,
    "execveat": 322,
    "fork": 57,
    "vfork": 58,
    "clone": 56,
    "clone3": 435,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "process_madvise": 440,
    "kcmp": 312,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "quotactl": 179,
    "syslog": 103,
    "settimeofday": 164,
    "clock_settime": 227,
    "adjtimex": 159,
    "clock_adjtime": 305,
    "sethostname": 170,
    "setdomainname": 171,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "fanotify_init": 300,
    "move_mount": 429,
    "open_tree": 428,
    "fsopen": 430,
    "fsmount": 432,
    "fsconfig": 431,
    "fspick": 433,
    "mount_setattr": 442,
    "chmod": 90,
    "fchmod": 91,
    "fchmodat": 268,
    "fchmodat2": 452,
    "chown": 92,
    "fchown": 93,
    "lchown": 94,
    "fchownat": 260,
    "setxattr": 188,
    "lsetxattr": 189,
    "fsetxattr": 190,
    "removexattr": 197,
    "lremovexattr": 198,
    "fremovexattr": 199,
    "getxattr": 191,
    "lgetxattr": 192,
    "fgetxattr": 193,
    "listxattr": 194,
    "llistxattr": 195,
    "flistxattr": 196,
    "setrlimit": 160,
    "prlimit64": 302,
    "setuid": 105,
    "setgid": 106,
    "setreuid": 113,
    "setregid": 114,
    "setresuid": 117,
    "setresgid": 119,
    "setfsuid": 122,
    "setfsgid": 123,
    "setgroups": 116,
    "capset": 126,
    "personality": 135,
    "tkill": 200,
    "pidfd_send_signal": 424,
    "kill": 62,
    "tgkill": 234,
    "rt_sigqueueinfo": 129,
    "rt_tgsigqueueinfo": 297,
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "shmdt": 67,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "semtimedop": 220,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    "memfd_create": 319,
    "memfd_secret": 447,
    "modify_ldt": 154,
    "utime": 132,
    "utimes": 235,
    "utimensat": 280,
    "futimesat": 261,
    "sched_setaffinity": 203,
    "sched_setscheduler": 144,
    "sched_setparam": 142,
    "sched_setattr": 314,
    "setpriority": 141,
    "ioprio_set": 251,
    "migrate_pages": 256,
    "move_pages": 279,
    "prctl": 157,
    "uselib": 134,
    "vhangup": 153,
    "iopl": 172,
    "ioperm": 173,
    "lookup_dcookie": 212,
    "sysfs": 139,
    "ustat": 136,
    "statmount": 457,
    "listmount": 458,
    "lsm_get_self_attr": 459,
    "lsm_set_self_attr": 460,
    "lsm_list_modules": 461,
    "inotify_init": 253,
    "inotify_init1": 294,
    "inotify_add_watch": 254,
    "fanotify_mark": 301,
    "flock": 73,
    "fcntl": 72,
}
"""x86_64 numbers of every syscall a rule below names (arch/x86/entry/syscalls/syscall_64.tbl)."""

DENIED: tuple[str, ...] = (
    # network and IPC endpoints (the protocol socket exists before the filter)
    "socket",
    "socketpair",
    # new programs and processes (threads stay allowed, see the clone rule)
    "execve",
    "execveat",
    "fork",
    "vfork",
    # other processes and the kernel
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "kcmp",
    "pidfd_open",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    "sethostname",
    "setdomainname",
    "open_by_handle_at",
    "name_to_handle_at",
    "fanotify_init",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "modify_ldt",
    "uselib",
    "vhangup",
    "iopl",
    "ioperm",
    "lookup_dcookie",
    "sysfs",
    "ustat",
    "migrate_pages",
    "move_pages",
    # kernel objects that outlive the child or escape RLIMIT_AS: SysV and POSIX IPC, memfds
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    "memfd_create",
    "memfd_secret",
    # permissions, ownership and timestamps, every variant (Landlock does not cover them)
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    # limits and identity
    "setrlimit",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setfsuid",
    "setfsgid",
    "setgroups",
    "capset",
    "personality",
    # scheduling, affinity and I/O priority of any process: the child's own were set before the
    # filter (lowest priority) and a libseccomp rule cannot allow "0 or own pid" only
    "sched_setaffinity",
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "setpriority",
    "ioprio_set",
    # signals to other processes (the per-pid rules below allow signalling itself)
    "tkill",
    "pidfd_send_signal",
    # side channels: watching folders it cannot list (inotify/fanotify), and file locks, which
    # pass bits between concurrent children of different uids through any readable file
    # (``flock`` here, POSIX and OFD locks and dnotify by the ``fcntl`` rules below)
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "fanotify_mark",
    "flock",
)
"""Syscalls answered with EPERM unconditionally."""

NOT_SUPPORTED: tuple[str, ...] = ("getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr")
"""xattr reads (Landlock lets them through outside the workdir): EOPNOTSUPP, which shutil.copy2 tolerates."""

UNREVIEWED_NAMES = ("statmount", "listmount", "lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules")
"""Newer syscalls below the reviewed line that leak host information: ENOSYS."""

FCNTL_DENIED: tuple[int, ...] = (5, 6, 7, 36, 37, 38, 1026)
"""``fcntl`` commands answered EPERM: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK,
F_OFD_SETLKW (record locks: the same channel as ``flock``) and F_NOTIFY (dnotify: watching a
folder). Every other command (F_GETFL/F_SETFL, F_DUPFD, ...) stays allowed."""

SELF_ONLY: tuple[str, ...] = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
"""Signal syscalls allowed only with the child's own pid as the first argument."""


class SeccompRuleError(RuntimeError):
    """A rule could not be installed; the filter is refused as a whole."""


def syscall_number(name: str) -> int:
    """The number of ``name`` on the running architecture; raises when it cannot be resolved."""
    if platform.machine() == "x86_64":
        return X86_64[name]
    try:
        number = int(sc.resolve_syscall(sc.Arch.NATIVE, name))
    except Exception as exc:
        raise SeccompRuleError(f"libseccomp cannot resolve syscall {name!r} on {platform.machine()}: {exc}") from None
    if number < 0:
        raise SeccompRuleError(f"syscall {name!r} is unknown to libseccomp on {platform.machine()}")
    return number


def _add(flt: sc.SyscallFilter, action: int, name: str | int, *args: sc.Arg) -> None:
    """Add a rule by number; any failure refuses the whole filter."""
    number = name if isinstance(name, int) else syscall_number(name)
    try:
        flt.add_rule(action, number, *args)
    except Exception as exc:
        raise SeccompRuleError(f"seccomp rule for {name!r} (#{number}) could not be installed: {exc}") from None


def build_filter(own_pid: int) -> sc.SyscallFilter:
    """The filter for a child whose pid is ``own_pid`` (signals and scheduling of other pids denied)."""
    eperm = sc.ERRNO(errno.EPERM)
    enosys = sc.ERRNO(errno.ENOSYS)
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    try:  # a binary search over syscall numbers instead of a linear scan: cheaper on every syscall
        flt.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    except Exception:
        pass
    for name in DENIED:
        _add(flt, eperm, name)
    for name in NOT_SUPPORTED:
        _add(flt, sc.ERRNO(errno.EOPNOTSUPP), name)
    for name in UNREVIEWED_NAMES:
        _add(flt, enosys, name)
    for number in range(HIGHEST_REVIEWED + 1, 512):
        _add(flt, enosys, number)
    # clone3 carries its flags in memory that BPF cannot read: ENOSYS makes glibc fall back to clone
    _add(flt, enosys, "clone3")
    _add(flt, eperm, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    _add(flt, eperm, "prlimit64", sc.Arg(2, sc.NE, 0))
    # the parent-death signal is locked: a child may not clear it to outlive the zygote
    _add(flt, eperm, "prctl", sc.Arg(0, sc.EQ, PR_SET_PDEATHSIG))
    for command in FCNTL_DENIED:
        _add(flt, eperm, "fcntl", sc.Arg(1, sc.EQ, command))
    for name in SELF_ONLY:
        _add(flt, eperm, name, sc.Arg(0, sc.NE, own_pid))
    return flt


PID_PLACEHOLDER = 0x5EC01D5A
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_INSN = struct.Struct("HBBI")
_template: bytes | None = None
_error: str = ""


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def prepare() -> bytes:
    """Build the filter once (in the zygote) and keep its BPF program as the template.

    A failure is remembered (:func:`prepare_error`) so every child reports the same reason.
    """
    global _template, _error
    if _template is None:
        try:
            read_end, write_end = os.pipe()
            with os.fdopen(write_end, "wb") as sink:
                build_filter(PID_PLACEHOLDER).export_bpf(sink)
            with os.fdopen(read_end, "rb") as source:
                _template = source.read()
        except Exception as exc:
            _error = str(exc) or type(exc).__name__
            raise
    return _template


def prepare_error() -> str:
    """Why :func:`prepare` failed in this process ('' when it did not)."""
    return _error


def patched(template: bytes, own_pid: int) -> bytes:
    """The template with the placeholder pid replaced by ``own_pid`` in every comparison."""
    program = bytearray(template)
    hits = 0
    for offset in range(0, len(program), _INSN.size):
        code, jt, jf, k = _INSN.unpack_from(program, offset)
        if k == PID_PLACEHOLDER:
            _INSN.pack_into(program, offset, code, jt, jf, own_pid)
            hits += 1
    if not hits:
        raise RuntimeError("seccomp template has no pid placeholder")
    return bytes(program)


def apply_filter(own_pid: int) -> bool:
    """Load the filter into the calling (single-threaded) process; raises ``OSError`` on failure."""
    if _error:
        raise SeccompRuleError(_error)
    program = patched(prepare(), own_pid)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // _INSN.size, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if (
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
        or libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0
    ):
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter: {os.strerror(err)}")
    return True
