"""Isolation levels and the start-up probe's report.

Why a probe instead of trusting the code path: on another host a layer can silently not exist
(no Landlock in the LSM list, libseccomp missing, not root so no uid drop needed, namespaces
blocked by AppArmor). A canary child tries the attacks on itself (socket, fork, reading and
writing outside its workdir, chmod, signalling its parent) and a layer only counts as active
when it was applied *and* the attacks it must stop were stopped. Below ``min_isolation`` the
pool refuses to run generated code and names the missing layers, why each is missing, and
the explicit config line that accepts the weaker host.

Why the default minimum is ``landlock``: with seccomp alone, env code can still read any file
its uid can (the trainer's ``/proc/<pid>/environ`` on a non-root host, the run database) and
write outside its workdir. Filesystem confinement is the layer that stops that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LEVELS: tuple[str, ...] = ("none", "process", "rlimits", "seccomp", "landlock", "full")
"""Isolation levels, weakest first; each needs the layers of the previous one."""

LEVEL_LAYERS: dict[str, tuple[str, ...]] = {
    "none": (),
    "process": ("process",),
    "rlimits": ("process", "rlimits"),
    "seccomp": ("process", "rlimits", "seccomp"),
    "landlock": ("process", "rlimits", "seccomp", "landlock"),
    "full": ("process", "rlimits", "seccomp", "landlock", "uid"),
}

ALL_LAYERS: tuple[str, ...] = (
    "process",
    "rlimits",
    "seccomp",
    "landlock",
    "uid",
    "landlock_net",
    "landlock_scope",
    "namespaces",
    "disk_quota",
    "priority",
)
"""Every layer reported; the last five are extras that no level requires."""

HINTS: dict[str, str] = {
    "process": "the canary child did not start (see the zygote log)",
    "rlimits": "setrlimit failed in the child",
    "seccomp": "no seccomp filter could be loaded (install libseccomp2 and pyseccomp) or it did not stop fork()/socket()",
    "landlock": "the kernel has no usable Landlock (Linux >= 5.13 with 'landlock' in the lsm= boot list)",
    "uid": "running as root but setuid() to an unprivileged uid failed",
    "landlock_net": "Landlock ABI < 4: TCP is only blocked by seccomp",
    "landlock_scope": "Landlock ABI < 6: signals are only blocked by seccomp and the uid",
    "namespaces": "PID/mount/network namespaces are unavailable (not root, or blocked here): optional",
    "disk_quota": "no private mount namespace, so no size-capped tmpfs workdir: only the per-file limit holds",
    "priority": "the child could not lower its own CPU priority",
}


@dataclass(frozen=True)
class IsolationReport:
    """Which layers are active in env children on this host, and the resulting level."""

    layers: dict[str, bool]
    checks: dict[str, bool] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    """Per layer that failed to apply: the error the child saw."""

    @property
    def level(self) -> str:
        achieved = "none"
        for name in LEVELS:
            if all(self.layers.get(layer, False) for layer in LEVEL_LAYERS[name]):
                achieved = name
        return achieved

    @property
    def active(self) -> list[str]:
        return [name for name in ALL_LAYERS if self.layers.get(name, False)]

    @property
    def missing(self) -> list[str]:
        return [name for name in ALL_LAYERS if not self.layers.get(name, False)]

    def missing_for(self, level: str) -> list[str]:
        return [name for name in LEVEL_LAYERS[level] if not self.layers.get(name, False)]

    def meets(self, level: str) -> bool:
        return LEVELS.index(self.level) >= LEVELS.index(level)

    def explain(self, wanted: str) -> str:
        """Why the achieved level is below ``wanted``, one clause per missing layer."""
        gaps = "; ".join(
            f"{name} ({HINTS[name]}" + (f"; error: {self.notes[name]}" if name in self.notes else "") + ")"
            for name in self.missing_for(wanted)
        )
        return (
            f"sandbox isolation on this host is {self.level!r}, below sandbox.min_isolation = {wanted!r}: "
            f"missing layer(s): {gaps}. Generated code will not be run. To accept this host anyway, "
            f'lower the minimum explicitly: min_isolation = "{self.level}" under [sandbox] in the config '
            "(docs/sandbox.md lists what each layer stops)."
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "layers": dict(self.layers),
            "missing": self.missing,
            "checks": dict(self.checks),
            "notes": dict(self.notes),
        }


def from_probe(
    applied: dict[str, bool], checks: dict[str, bool], namespaces: bool, notes: dict[str, str] | None = None
) -> IsolationReport:
    """Combine what the canary child applied with what its attacks showed (fail closed)."""
    layers = {name: bool(applied.get(name, False)) for name in ALL_LAYERS}
    layers["seccomp"] = layers["seccomp"] and all(
        checks.get(name, False) for name in ("fork_denied", "socket_denied", "sysv_ipc_denied", "pdeathsig_locked")
    )
    layers["landlock"] = (
        layers["landlock"] and checks.get("read_outside_denied", False) and checks.get("write_outside_denied", False)
    )
    layers["uid"] = layers["uid"] and checks.get("not_root", False)
    layers["namespaces"] = namespaces
    return IsolationReport(layers=layers, checks=dict(checks), notes=dict(notes or {}))
