"""Landlock (Linux LSM) through raw syscalls: the child may read the Python install, and
read/write only its own workdir; TCP bind/connect and signals/abstract sockets leaving its
domain are denied where the kernel's ABI supports it.

Why raw ``ctypes`` syscalls: no extra dependency, and the rules must adapt to the ABI the
running kernel reports (1 on Ubuntu 22.04, 4 on 24.04, 7 here). Landlock only restricts the
calling thread and its future threads, so it is applied in the single-threaded forked child.
"""

from __future__ import annotations

import ctypes
import os

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FILE_RIGHTS_V1 = EXECUTE | WRITE_FILE | READ_FILE
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1, 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = (("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64))


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def abi_version() -> int:
    """The kernel's Landlock ABI (0 when Landlock is missing or disabled)."""
    version = _libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(version), 0)


def fs_rights(abi: int) -> int:
    """Every filesystem right the given ABI knows (all of them are handled, i.e. denied by default)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock {what}: {os.strerror(err)}")
    return result


def _add_path(ruleset_fd: int, path: str, rights: int, handled: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path this host does not have needs no rule
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS_V1 | TRUNCATE | IOCTL_DEV
        rule = _PathBeneath(rights & handled, fd)
        _check(_libc.syscall(SYS_ADD_RULE, ruleset_fd, RULE_PATH_BENEATH, ctypes.byref(rule), 0), f"add_rule({path})")
    finally:
        os.close(fd)


def restrict(read_only: list[str], read_write: list[str]) -> dict[str, bool]:
    """Restrict the calling thread; returns which Landlock features are now enforced.

    Raises ``OSError`` when Landlock exists but could not be applied (the caller decides).
    """
    abi = abi_version()
    if abi < 1:
        return {"landlock": False, "landlock_net": False, "landlock_scope": False}
    handled = fs_rights(abi)
    attr = _RulesetAttr(
        handled,
        NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
        SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if abi >= 6 else 0,
    )
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = _check(_libc.syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0), "create_ruleset")
    try:
        for path in read_only:
            _add_path(ruleset, path, EXECUTE | READ_FILE | READ_DIR, handled)
        for path in read_write:
            _add_path(ruleset, path, handled, handled)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(SYS_RESTRICT_SELF, ruleset, 0), "restrict_self")
    finally:
        os.close(ruleset)
    return {"landlock": True, "landlock_net": abi >= 4, "landlock_scope": abi >= 6}
