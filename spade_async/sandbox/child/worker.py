"""Env child side: compile and load the generated source, then serve reset/step calls.

Why the checks live here: the child is the only place where generated code may run, so the
source is parsed, compiled and executed here (a compile bomb only burns this child's spawn
timeout), and every return value is checked for shape, type, finiteness and size *before* it
is encoded (nesting included: a 1000-level ``info`` would make the controller's decoder
recurse). These checks run under the environment's control (a ``dict`` subclass can hide its
children from them), so the controller checks the decoded reply again
(:mod:`spade_async.sandbox.bounds`); the ones here only give an honest env a clear reason. A reply is one JSON line on the private socket; prints go to a capped buffer
returned with the reply, never to the protocol channel.

Why ``inspect`` is a separate op: admission's static checks (the import list) must come from
a process that never executed the candidate, since executed code can answer the protocol
itself. A child asked to ``inspect`` only parses the source with ``ast`` and never loads it.
"""

from __future__ import annotations

import ast
import ctypes
import importlib
import linecache
import math
import os
import socket
import sys
import traceback
import types
from typing import Any

from spade_async.envs.contract import ALLOWED_IMPORTS, INJECTED
from spade_async.sandbox.protocol import ChildSpec, Reply, Request, decode_request, encode

MODULE_NAME = "env"
FILENAME = "<env>"
MAX_REQUEST_BYTES = 8 << 20
EXIT_PROTOCOL = 122
MAX_NESTING = 32
"""Deepest nesting of lists/dicts accepted in ``info`` (JSON decoders recurse per level)."""
DYNAMIC_IMPORT_NAMES = frozenset(
    {"__import__", "__builtins__", "__subclasses__", "__globals__", "__loader__", "__spec__", "import_module"}
)
"""Names through which code reaches modules without an ``import`` statement."""


class BadReturn(Exception):
    """The env returned a value of the wrong shape or type."""


class CappedOutput:
    """A ``sys.stdout`` replacement keeping the first ``cap`` characters written per call."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[str] = []
        self.size = 0
        self.dropped = 0

    def write(self, text: str) -> int:
        text = str(text)
        room = max(self.cap - self.size, 0)
        if room:
            self.parts.append(text[:room])
            self.size += min(room, len(text))
        self.dropped += max(len(text) - room, 0)
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def take(self) -> str:
        text = "".join(self.parts)
        if self.dropped:
            text += f"\n[... {self.dropped} more characters dropped]"
        self.parts, self.size, self.dropped = [], 0, 0
        return text


def describe(exc: BaseException) -> str:
    """One line a person can act on: exception type, message and the env line that raised."""
    if isinstance(exc, SyntaxError) and exc.filename == FILENAME:
        return f"SyntaxError at line {exc.lineno}: {exc.msg}"
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable>"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
    where = f" (line {frames[-1].lineno}: {(frames[-1].line or '').strip()})" if frames else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return (text[:1500] + where)[:2000]


def imported_roots(tree: ast.AST) -> list[str]:
    """Top-level module names the source imports (relative imports reported as '.')."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module.split(".")[0] if node.module and not node.level else ".")
    return sorted(names)


def check_nesting(value: Any, what: str, limit: int = MAX_NESTING) -> None:
    """Raise BadReturn when ``value`` nests containers deeper than ``limit`` (iterative walk)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            raise BadReturn(f"{what} nests lists/dicts more than {limit} levels deep")
        seen += 1
        if seen > 100_000:
            raise BadReturn(f"{what} holds more than 100000 lists/dicts")
        stack.extend((child, depth + 1) for child in children)


def inspect_source(source: str) -> dict[str, Any]:
    """Static facts about ``source`` from its syntax tree alone; nothing is compiled or run."""
    try:
        tree = ast.parse(source, FILENAME)
    except SyntaxError as exc:
        return {"syntax_error": describe(exc)}
    except (RecursionError, MemoryError, ValueError) as exc:
        return {"syntax_error": f"{type(exc).__name__}: the source cannot be parsed (too deeply nested?)"}
    dynamic: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in DYNAMIC_IMPORT_NAMES:
            dynamic.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in DYNAMIC_IMPORT_NAMES:
            dynamic.add(node.attr)
    classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    strings: dict[str, str] = {}
    for node in tree.body:  # `HINT = "..."`, `HINT: str = "..."`, `A = B = "..."`
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        value = getattr(node, "value", None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            strings.update({t.id: value.value for t in targets if isinstance(t, ast.Name)})
    return {
        "imports": imported_roots(tree),
        "dynamic": sorted(dynamic),
        "classes": classes,
        "strings": {k: v[:4000] for k, v in strings.items() if k.isupper()},
    }


def find_env_class(module: types.ModuleType) -> type:
    """The single class defined in the source with callable ``reset`` and ``step``."""
    found = [
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and value.__module__ == MODULE_NAME
        and callable(getattr(value, "reset", None))
        and callable(getattr(value, "step", None))
    ]
    leaves = [c for c in found if not any(o is not c and issubclass(o, c) for o in found)]
    if not leaves:
        raise BadReturn("no class with reset() and step() is defined in the source")
    if len(leaves) > 1:
        names = ", ".join(sorted(c.__name__ for c in leaves))
        raise BadReturn(f"found {len(leaves)} env classes ({names}); define exactly one class with reset() and step()")
    return leaves[0]


def _check_reset(value: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(value, tuple) or len(value) != 2:
        raise BadReturn(f"reset() must return a tuple (observation: str, info: dict), got {type(value).__name__}")
    obs, info = value
    if not isinstance(obs, str):
        raise BadReturn(f"reset() observation must be a str, got {type(obs).__name__}")
    if not isinstance(info, dict):
        raise BadReturn(f"reset() info must be a dict, got {type(info).__name__}")
    check_nesting(info, "reset() info")
    return obs, info


def _check_step(value: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
    if not isinstance(value, tuple) or len(value) != 5:
        raise BadReturn(
            "step() must return a tuple (observation, reward, terminated, truncated, info), "
            f"got {type(value).__name__}{f' of length {len(value)}' if isinstance(value, tuple) else ''}"
        )
    obs, reward, terminated, truncated, info = value
    if not isinstance(obs, str):
        raise BadReturn(f"step() observation must be a str, got {type(obs).__name__}")
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        raise BadReturn(f"step() reward must be a float, got {type(reward).__name__}")
    if not math.isfinite(reward):
        raise BadReturn(f"step() reward must be finite, got {reward!r}")
    for name, flag in (("terminated", terminated), ("truncated", truncated)):
        if not isinstance(flag, bool):
            raise BadReturn(f"step() {name} must be a bool, got {type(flag).__name__}")
    if not isinstance(info, dict):
        raise BadReturn(f"step() info must be a dict, got {type(info).__name__}")
    check_nesting(info, "step() info")
    return obs, float(reward), terminated, truncated, info


def canary(path: str) -> dict[str, bool]:
    """Attacks the probe child tries on itself; True means the attack was denied."""

    def denied(attack: Any) -> bool:
        try:
            attack()
        except OSError:
            return True
        return False

    def try_fork() -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)

    def try_imports() -> None:
        for name in sorted(ALLOWED_IMPORTS):
            importlib.import_module(name)

    def try_sysv() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(29, 0, 4096, 0o1600) < 0:  # shmget(IPC_PRIVATE, ...) on x86_64
            raise OSError(ctypes.get_errno(), "shmget")

    def try_clear_pdeathsig() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, 0, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl")

    with open("probe.txt", "w") as handle:
        handle.write("x")
    return {
        "socket_denied": denied(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()),
        "fork_denied": denied(try_fork),
        "read_outside_denied": denied(lambda: open(path, "rb").close()),
        "write_outside_denied": denied(lambda: open(path + ".written", "wb").close()),
        "signal_parent_denied": denied(lambda: os.kill(os.getppid(), 0)),
        "chmod_denied": denied(lambda: os.chmod("probe.txt", 0o777)),
        "not_root": os.geteuid() != 0,
        "sysv_ipc_denied": os.uname().machine != "x86_64" or denied(try_sysv),
        "pdeathsig_locked": denied(try_clear_pdeathsig),
        "imports_ok": not denied(try_imports),
    }


class Session:
    """The loaded env of this child and the handlers of each request op."""

    def __init__(self, spec: ChildSpec, layers: dict[str, bool], notes: dict[str, str], output: CappedOutput) -> None:
        self.spec = spec
        self.layers = layers
        self.notes = notes
        self.output = output
        self.env: Any = None
        self.inspected = False

    def load(self, req: Request) -> Reply:
        if self.env is not None or self.inspected:
            return Reply(id=req.id, ok=False, kind="protocol", error="env already loaded or inspected")
        code = compile(req.source, FILENAME, "exec")
        linecache.cache[FILENAME] = (len(req.source), None, req.source.splitlines(True), FILENAME)
        module = types.ModuleType(MODULE_NAME)
        module.__dict__.update(INJECTED)
        sys.modules[MODULE_NAME] = module
        exec(code, module.__dict__)
        cls = find_env_class(module)
        try:
            self.env = cls()
        except Exception as exc:
            raise BadReturn(f"could not create {cls.__name__}(): {describe(exc)}") from None
        return Reply(
            id=req.id,
            ok=True,
            class_name=cls.__name__,
            has_solution=callable(getattr(self.env, "solution", None)),
            layers=self.layers,
        )

    def handle(self, req: Request) -> Reply:
        if req.op == "load":
            return self.load(req)
        if req.op == "probe":
            return Reply(id=req.id, ok=True, layers=self.layers, notes=self.notes, info=canary(req.canary))
        if req.op == "inspect":
            if self.env is not None:
                return Reply(id=req.id, ok=False, kind="protocol", error="inspect after load")
            self.inspected = True
            return Reply(id=req.id, ok=True, static=inspect_source(req.source))
        if self.env is None:
            return Reply(id=req.id, ok=False, kind="protocol", error=f"{req.op} before load")
        if req.op == "reset":
            obs, info = _check_reset(self.env.reset(seed=req.seed))
            return Reply(id=req.id, ok=True, obs=obs, info=info)
        if req.op == "step":
            obs, reward, terminated, truncated, info = _check_step(self.env.step(req.action))
            return Reply(
                id=req.id, ok=True, obs=obs, reward=reward, terminated=terminated, truncated=truncated, info=info
            )
        if req.op == "solution":
            method = getattr(self.env, "solution", None)
            if not callable(method):
                return Reply(id=req.id, ok=True, actions=None)
            actions = method()
            if not isinstance(actions, (list, tuple)) or not all(isinstance(a, str) for a in actions):
                raise BadReturn("solution() must return a list of action strings")
            return Reply(id=req.id, ok=True, actions=list(actions))
        return Reply(id=req.id, ok=False, kind="protocol", error=f"unknown op {req.op!r}")


def _encode(reply: Reply, output: CappedOutput, cap: int) -> bytes:
    reply.output = output.take()
    try:
        data = encode(reply)
    except Exception as exc:
        data = encode(
            Reply(
                id=reply.id,
                ok=False,
                kind="bad_return",
                output=reply.output,
                error=f"reply is not JSON-serialisable (check info): {describe(exc)}",
            )
        )
    if len(data) > cap:
        data = encode(
            Reply(
                id=reply.id,
                ok=False,
                kind="too_large",
                output=reply.output[:1024],
                error=f"reply of {len(data)} bytes exceeds the {cap}-byte cap",
            )
        )
    return data + b"\n"


_WARM_UP = "class _Warm:\n    def reset(self, seed=None):\n        return f'{seed}', {'k': [1]}\n"


def _prefault() -> None:
    """Run the load/reply path once on trusted code, so a warm child has already copied the
    pages it writes (copy-on-write faults) before a caller waits on it."""
    scratch: dict[str, Any] = dict(INJECTED)
    exec(compile(_WARM_UP, "<warm-up>", "exec"), scratch)
    obs, info = _check_reset(scratch["_Warm"]().reset(seed=1))
    encode(Reply(id=0, ok=True, obs=obs, info=info))
    decode_request(b'{"id":0,"op":"reset","seed":1}')


def serve(sock: socket.socket, spec: ChildSpec, layers: dict[str, bool], notes: dict[str, str]) -> None:
    """Answer requests until the controller closes the channel; never returns."""
    exit_now = os._exit
    readline = sock.makefile("rb", buffering=1 << 16).readline
    send = sock.sendall
    output = CappedOutput(spec.output_cap)
    sys.stdout = sys.stderr = output
    session = Session(spec, layers, notes, output)
    _prefault()
    while True:
        line = readline(MAX_REQUEST_BYTES)
        if not line.endswith(b"\n"):
            exit_now(0)
        try:
            req = decode_request(line)
        except Exception:
            exit_now(EXIT_PROTOCOL)
        try:
            reply = session.handle(req)
        except BadReturn as exc:
            reply = Reply(id=req.id, ok=False, kind="bad_return", error=str(exc))
        except BaseException as exc:  # the env's own failure, SystemExit included
            reply = Reply(id=req.id, ok=False, kind="env_error", error=describe(exc))
        send(_encode(reply, output, spec.max_reply_bytes))
