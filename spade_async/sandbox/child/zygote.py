"""The fork-server ("zygote"): a clean, exec'd interpreter that hands out locked-down children.

Why a zygote: a cold interpreter costs ~300 ms, a fork of a warm one a few ms. It is started
by exec (never forked from the trainer, which may hold CUDA state and secrets) with a scrubbed
environment, pre-imports every module an env may use (after the uid drop the interpreter's own
files may be unreadable), and never runs generated code itself: it only forks, passes the
child's socket, a pidfd (and a handle on its workdir) to the controller, and reaps.

Why namespaces when root: the zygote enters fresh PID, mount, network, IPC and UTS namespaces
and serves as PID 1 of its PID namespace, so when it dies (it dies with the trainer by the
parent-death signal) the kernel kills every env child, even one that cleared its own
parent-death signal or ignores end-of-file. The private mount namespace gives each child a
size- and inode-capped tmpfs as its workdir (a disk budget the kernel enforces; removing it is
one ``umount``, whatever the child built inside) and a /proc that shows only sandbox pids.

Why warm children: a spawn request is answered with a child forked (and hardened) ahead of
need, then a replacement is forked after the reply, off the caller's path. Why a janitor:
unmounting a tmpfs takes milliseconds and deleting a workdir a hostile env filled (no tmpfs
on this host) can take seconds; the zygote only passes the path to a forked janitor, so
reaping never delays a spawn and never outlasts a timeout.

Run as ``python -m spade_async.sandbox.child.zygote CONTROL_FD TRAINER_PID BASE_DIR UID_BASE NAMESPACES``.
"""

from __future__ import annotations

import array
import ctypes
import gc
import os
import select
import signal
import socket
import sys
import tempfile

import msgspec

from spade_async.sandbox.child import harden, seccomp, worker
from spade_async.sandbox.cleanup import remove_tree
from spade_async.sandbox.protocol import (
    MAX_CONTROL_BYTES,
    ChildSpec,
    ZygoteReply,
    decode_zygote_request,
    encode,
)

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
UID_SLOTS = 4096
"""Children run as uid_base + slot (one uid per live child) when the zygote is root."""
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)


def _preload() -> None:
    """Import everything a child may need; nothing may be loaded from disk after the fork."""
    import importlib

    from spade_async.envs.contract import ALLOWED_IMPORTS

    for name in [
        *sorted(ALLOWED_IMPORTS),
        "_strptime",
        "encodings.idna",
        "encodings.latin_1",
        "encodings.ascii",
        "encodings.utf_16",
        "encodings.utf_32",
        "unicodedata",
        "traceback",
        "linecache",
        "ast",
        "importlib",
        "resource",
        "threading",
    ]:
        importlib.import_module(name)
    try:
        seccomp.prepare()
    except Exception:
        pass  # children report the seccomp layer missing, with seccomp.prepare_error() as the reason


def _die_with_parent(parent_gone: int | None = None) -> None:
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent_gone is not None and select.select([parent_gone], [], [], 0)[0]:
        os._exit(1)  # the pipe's writer (our parent) is already gone


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    if (
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        )
        != 0
    ):
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _enter_namespaces(control_fd: int) -> tuple[bool, bool]:
    """Become PID 1 of fresh namespaces (root only): (entered, mounts are private). (False,
    False) where the host does not allow it; tmpfs workdirs need private mounts, or they
    would appear in the host's mount table.

    The process that called ``unshare`` stays outside as a plain parent: it waits for the
    namespace's init (us, after the fork) and exits with it; both die with their parent.
    """
    if os.geteuid() != 0:
        return False, False
    if _libc.unshare(CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) != 0:
        return False, False
    gone_r, gone_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(control_fd)
        os.close(gone_r)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    os.close(gone_w)
    _die_with_parent(gone_r)
    os.close(gone_r)
    try:
        _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    except OSError as exc:
        print(f"zygote: mounts are not private ({exc}); no tmpfs workdirs", file=sys.stderr)
        return True, False
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    except OSError as exc:
        print(f"zygote: no private /proc: {exc}", file=sys.stderr)
    return True, True


def _janitor() -> tuple[int, int]:
    """Fork the process that frees dead children's workdirs; returns (pid, fd to send paths to).

    It runs in the zygote's mount namespace (it can unmount the tmpfs workdirs) at the lowest
    priority, reads one path per line and deletes it, so a workdir holding 100k folders only
    costs background time, never a spawn or a reap.
    """
    paths_r, paths_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(paths_r)
        os.set_blocking(paths_w, False)
        return pid, paths_w
    try:
        os.closerange(3, paths_r)
        os.closerange(paths_r + 1, 1 << 16)
        _die_with_parent()
        os.nice(19)
        with os.fdopen(paths_r, "rb") as paths:
            for line in paths:
                _free_workdir(line.rstrip(b"\n").decode("utf-8", "surrogateescape"))
    finally:
        os._exit(0)


def _free_workdir(path: str) -> None:
    _libc.umount2(path.encode("utf-8", "surrogateescape"), MNT_DETACH)  # EINVAL when it is no mount point
    remove_tree(path)


class Warm:
    """A child forked ahead of need: hardened, waiting for its first request."""

    __slots__ = ("fds", "pid", "reply")

    def __init__(self, pid: int, reply: ZygoteReply, fds: list[int]) -> None:
        self.pid, self.reply, self.fds = pid, reply, fds


class Zygote:
    def __init__(self, control: socket.socket, base: str, uid_base: int, private_mounts: bool) -> None:
        self.control = control
        self.base = base
        self.uid_base = uid_base
        self.tmpfs = private_mounts  # a private mount namespace: one capped tmpfs per workdir
        self.children: dict[int, tuple[int, str]] = {}  # pid -> (uid slot, workdir)
        self.warm: list[Warm] = []
        self.warm_spec: ChildSpec | None = None
        self.netns = _netns()
        self.zygote_pid = os.getpid()
        self.janitor_pid, self.janitor_wake = _janitor()
        for name in os.listdir(base):  # workdirs of a fork-server that died before us
            if name.startswith("env-"):
                self._cleanup(os.path.join(base, name))

    def _free_slot(self) -> int:
        used = {slot for slot, _ in self.children.values()}
        return next(s for s in range(UID_SLOTS) if s not in used)

    def _workdir(self, spec: ChildSpec, uid: int) -> tuple[str, bool]:
        workdir = tempfile.mkdtemp(prefix="env-", dir=self.base)
        if os.geteuid() == 0:
            os.chown(workdir, uid, uid)
        if self.tmpfs and spec.disk_mib > 0:
            try:
                _mount(
                    "tmpfs",
                    workdir,
                    "tmpfs",
                    MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    f"size={spec.disk_mib}m,nr_inodes={spec.disk_inodes},mode=0700,uid={uid},gid={uid}",
                )
                return workdir, True
            except OSError as exc:
                print(f"zygote: no tmpfs workdir ({exc}); disk budget not enforced", file=sys.stderr)
                self.tmpfs = False
        return workdir, False

    def fork_child(self, spec: ChildSpec) -> tuple[ZygoteReply, list[int]]:
        slot = self._free_slot()
        uid = self.uid_base + slot if os.geteuid() == 0 else os.geteuid()
        workdir, quota = self._workdir(spec, uid)
        parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        spec = msgspec.structs.replace(spec, uid=uid, workdir=workdir, disk_quota=quota)
        pid = os.fork()
        if pid == 0:
            parent_end.close()
            self._child(spec, child_end)
        child_end.close()
        fds = [parent_end.detach(), os.pidfd_open(pid)]
        if quota:
            fds.append(os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        self.children[pid] = (slot, workdir)
        return ZygoteReply(ok=True, pid=pid, uid=uid, workdir=workdir, netns=self.netns, disk_quota=quota), fds

    def spawn(self, spec: ChildSpec) -> tuple[ZygoteReply, list[int]]:
        """A warm child forked for the same spec when one is ready and alive, else a fresh fork."""
        if spec != self.warm_spec:
            self.discard_warm()
            self.warm_spec = spec
        while self.warm:
            warm = self.warm.pop(0)
            if os.waitpid(warm.pid, os.WNOHANG)[0] == 0:
                return warm.reply, warm.fds
            self._forget(warm)  # it died while waiting (it could not harden): try the next one
        return self.fork_child(spec)

    def top_up(self, target: int) -> None:
        """Fork warm children until ``target`` wait (called after the reply is sent)."""
        while self.warm_spec is not None and len(self.warm) < target and len(self.children) < UID_SLOTS:
            reply, fds = self.fork_child(self.warm_spec)
            self.warm.append(Warm(reply.pid, reply, fds))

    def _forget(self, warm: Warm) -> None:
        for fd in warm.fds:
            os.close(fd)
        self.reap(warm.pid)

    def discard_warm(self) -> None:
        for warm in self.warm:
            try:
                os.kill(warm.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._forget(warm)
        self.warm = []

    def _child(self, spec: ChildSpec, sock: socket.socket) -> None:
        """Runs in the forked child: harden, then serve. Never returns."""
        code = harden.EXIT_HARDEN_FAILED
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            layers, notes = harden.harden(spec, sock.fileno(), self.zygote_pid)
            code = 0
            worker.serve(sock, spec, layers, notes)
        finally:
            os._exit(code)

    def _cleanup(self, workdir: str) -> None:
        """Hand a dead child's workdir to the janitor (inline only when its pipe is full)."""
        try:
            os.write(self.janitor_wake, workdir.encode("utf-8", "surrogateescape") + b"\n")
        except (BlockingIOError, BrokenPipeError):
            _free_workdir(workdir)

    def reap(self, pid: int) -> ZygoteReply:
        if pid not in self.children:
            return ZygoteReply(ok=False, error=f"unknown child {pid}")
        _, workdir = self.children.pop(pid)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            status = None
        self._cleanup(workdir)
        return ZygoteReply(ok=True, pid=pid, status=status)

    def sweep(self) -> None:
        """Reap dead processes that are not our direct, still-tracked children (adopted orphans)."""
        while True:
            try:
                info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if info is None or info.si_pid in self.children:
                return
            if info.si_pid == self.janitor_pid:
                os.waitpid(info.si_pid, 0)
                os.close(self.janitor_wake)
                self.janitor_pid, self.janitor_wake = _janitor()
                continue
            os.waitpid(info.si_pid, 0)

    def serve(self) -> None:
        self.control.sendall(encode(ZygoteReply(ok=True, pid=self.zygote_pid, netns=self.netns, disk_quota=self.tmpfs)))
        while True:
            data = self.control.recv(MAX_CONTROL_BYTES)
            if not data:
                return
            self.sweep()
            fds: list[int] = []
            reply: ZygoteReply
            warm_target = 0
            try:
                req = decode_zygote_request(data)
                if req.op == "spawn" and req.spec is not None:
                    reply, fds = self.spawn(req.spec)
                    warm_target = req.warm
                elif req.op == "warm" and req.spec is not None:
                    if req.spec != self.warm_spec:
                        self.discard_warm()
                        self.warm_spec = req.spec
                    reply, warm_target = ZygoteReply(ok=True), req.warm
                elif req.op == "reap":
                    reply = self.reap(req.pid)
                else:
                    reply = ZygoteReply(ok=False, error=f"bad request {req.op!r}")
            except Exception as exc:
                reply = ZygoteReply(ok=False, error=f"{type(exc).__name__}: {exc}")
            ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
            self.control.sendmsg([encode(reply)], ancillary)
            for fd in fds:
                os.close(fd)
            try:
                self.top_up(warm_target)
            except Exception as exc:  # a failed warm fork only costs the next caller a cold spawn
                print(f"zygote: warm fork failed: {exc!r}", file=sys.stderr)


def _netns() -> str:
    try:
        return os.readlink("/proc/self/ns/net")
    except OSError:
        return ""


def main(argv: list[str]) -> int:
    control_fd, trainer_pid, base = int(argv[1]), int(argv[2]), argv[3]
    uid_base, namespaces = int(argv[4]), argv[5] == "1"
    _die_with_parent()
    if os.getppid() != trainer_pid:
        return 1  # the trainer died before we armed the parent-death signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    _preload()
    in_namespaces, private_mounts = _enter_namespaces(control_fd) if namespaces else (False, False)
    if not in_namespaces:
        _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    control = socket.socket(fileno=control_fd)
    zygote = Zygote(control, base, uid_base, private_mounts)
    gc.collect()
    gc.freeze()
    try:
        zygote.serve()
    finally:
        zygote.discard_warm()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
