"""Messages between the controller, the zygote and env children (msgspec JSON).

Why msgspec structs: decoding straight into typed structs rejects malformed or forged
replies at the boundary (a wrong type is a protocol error, not a crash deeper in the
trainer), and msgspec is 5-10x faster than stdlib json on the 16 KB replies envs produce.
Env channel: one JSON object per line on a private socketpair. Zygote channel: one JSON
object per SOCK_SEQPACKET datagram, with fds passed by SCM_RIGHTS.
"""

from __future__ import annotations

from typing import Any

import msgspec

MAX_CONTROL_BYTES = 64 * 1024
"""Largest zygote control datagram."""


class ChildSpec(msgspec.Struct, frozen=True):
    """How the zygote must lock down one child (filled in by the controller and the zygote)."""

    memory_mib: int = 1024
    cpu_seconds: int = 60
    fsize_mib: int = 16
    nofile: int = 64
    nproc: int = 64
    output_cap: int = 8192
    max_reply_bytes: int = 1 << 20
    layers: tuple[str, ...] = ("rlimits", "priority", "uid", "landlock", "seccomp")
    require: tuple[str, ...] = ()
    disk_mib: int = 64
    disk_inodes: int = 4096
    uid: int = 0
    workdir: str = ""
    disk_quota: bool = False


class ZygoteRequest(msgspec.Struct, frozen=True):
    op: str  # "spawn" | "reap"
    spec: ChildSpec | None = None
    pid: int = 0
    warm: int = 0


class ZygoteReply(msgspec.Struct, frozen=True):
    ok: bool
    error: str = ""
    pid: int = 0
    uid: int = 0
    workdir: str = ""
    status: int | None = None
    netns: str = ""
    disk_quota: bool = False


class Request(msgspec.Struct, frozen=True, omit_defaults=True):
    id: int
    op: str  # "load" | "reset" | "step" | "solution" | "probe" | "inspect"
    source: str = ""
    seed: int | None = None
    action: str = ""
    canary: str = ""


class Reply(msgspec.Struct, omit_defaults=True):
    id: int
    ok: bool
    kind: str = ""
    error: str = ""
    output: str = ""
    obs: str = ""
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = msgspec.field(default_factory=dict)
    actions: list[str] | None = None
    class_name: str = ""
    has_solution: bool = False
    layers: dict[str, bool] = msgspec.field(default_factory=dict)
    notes: dict[str, str] = msgspec.field(default_factory=dict)
    static: dict[str, Any] = msgspec.field(default_factory=dict)


ERROR_KINDS = ("env_error", "bad_return", "too_large", "protocol")
"""``Reply.kind`` values: the env raised; returned the wrong shape/type; reply over the cap;
the request itself was malformed."""

encode = msgspec.json.Encoder().encode
decode_reply = msgspec.json.Decoder(Reply).decode
decode_request = msgspec.json.Decoder(Request).decode
decode_zygote_request = msgspec.json.Decoder(ZygoteRequest).decode
decode_zygote_reply = msgspec.json.Decoder(ZygoteReply).decode
