"""Seccomp deny-list for env children, built with ``pyseccomp`` (libseccomp).

Why a deny-list with ERRNO (not KILL): env code then gets an ordinary Python ``OSError`` and
the episode's failure is reported with a reason, while everything Python itself needs keeps
working. Why these syscalls: with socket creation, fork/exec, ptrace, namespaces, chmod/chown,
rlimit raising and foreign signals denied, the child cannot reach the network, start a
process that escapes ``killpg``, or change anything outside its own process (docs/sandbox.md).
Deny-lists rot when the kernel grows (``fchmodat2`` bypassed one), so every syscall number
above :data:`HIGHEST_REVIEWED` is answered ``ENOSYS``.

Why a BPF template: building the filter with libseccomp costs 1-5 ms per child; the zygote
builds it once with a placeholder pid, and each child patches its own pid into the exported
program and loads it with one ``prctl`` (tens of microseconds).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

import pyseccomp as sc

HIGHEST_REVIEWED = 462
"""Highest syscall number whose meaning was reviewed for this list (Linux 6.10: ``mseal``)."""

CLONE_THREAD = 0x00010000

DENIED: tuple[str, ...] = (
    # network and IPC endpoints (the protocol socket exists before the filter)
    "socket", "socketpair",
    # new programs and processes (threads stay allowed, see the clone rule)
    "execve", "execveat", "fork", "vfork",
    # other processes and the kernel
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp",
    "pidfd_open", "pidfd_getfd", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct",
    "quotactl", "syslog", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
    "sethostname", "setdomainname", "open_by_handle_at", "name_to_handle_at",
    "fanotify_init", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
    "mount_setattr",
    # permissions and ownership, every variant
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    # limits and identity
    "setrlimit", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
    "setfsuid", "setfsgid", "setgroups", "capset", "personality",
    # signals to other processes (the per-pid rules below allow signalling itself)
    "tkill", "pidfd_send_signal",
)
"""Syscalls answered with EPERM unconditionally."""

UNREVIEWED_NAMES = ("statmount", "listmount", "lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules")
"""Newer syscalls below the reviewed line that leak host information: ENOSYS."""


def _add(flt: sc.SyscallFilter, action: int, name: str | int, *args: sc.Arg) -> None:
    """Add a rule; names unknown to this libseccomp/arch are skipped (they cannot be called)."""
    try:
        flt.add_rule(action, name, *args)
    except (ValueError, OSError, RuntimeError):
        pass


def build_filter(own_pid: int) -> sc.SyscallFilter:
    """The filter for a child whose pid is ``own_pid`` (signals to any other pid are denied)."""
    eperm = sc.ERRNO(errno.EPERM)
    enosys = sc.ERRNO(errno.ENOSYS)
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED:
        _add(flt, eperm, name)
    for name in UNREVIEWED_NAMES:
        _add(flt, enosys, name)
    for number in range(HIGHEST_REVIEWED + 1, 512):
        _add(flt, enosys, number)
    # clone3 carries its flags in memory that BPF cannot read: ENOSYS makes glibc fall back to clone
    _add(flt, enosys, "clone3")
    _add(flt, eperm, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    _add(flt, eperm, "prlimit64", sc.Arg(2, sc.NE, 0))
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        _add(flt, eperm, name, sc.Arg(0, sc.NE, own_pid))
    return flt


PID_PLACEHOLDER = 0x5EC01D5A
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
_INSN = struct.Struct("HBBI")
_template: bytes | None = None


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def prepare() -> bytes:
    """Build the filter once (in the zygote) and keep its BPF program as the template."""
    global _template
    if _template is None:
        read_end, write_end = os.pipe()
        with os.fdopen(write_end, "wb") as sink:
            build_filter(PID_PLACEHOLDER).export_bpf(sink)
        with os.fdopen(read_end, "rb") as source:
            _template = source.read()
    return _template


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


def apply_filter(own_pid: int) -> None:
    """Load the filter into the calling (single-threaded) process; raises ``OSError`` on failure."""
    program = patched(prepare(), own_pid)
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // _INSN.size, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter: {os.strerror(err)}")
