"""The archive's fixed sample of retired environments, and what one round of it says.

Why a fixed sample chosen as environments retire: a curve of "still solved" means something
only if every point replays the same environments, so an environment joins once, when it
retires, while there is room (``eval.archive_size``), and stays for the run. The order among
one generation's retirees is a hash of (run seed, env id), not a draw from an RNG, so it is
reproducible and there is no RNG state to checkpoint; the members are the whole state
(:meth:`ArchiveSample.state`, versioned plain data in the pipeline's snapshot).

Who may join: an environment that retired with a plain return (it was played hint-free at
least once). One the play audit expelled is left out (its outcomes mean nothing), and so is
a pinned one (it is still live, not retired).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from spade_async.selfplay.curriculum import LiveEnv

STATE_VERSION = 1


@dataclass(frozen=True)
class Member:
    """One archived environment and what it scored when it retired."""

    env_id: str
    code: str
    skill: str
    retired_step: int
    """The step whose regeneration retired it (0-based, as in the database)."""
    return_then: float
    """Its mean plain return over its life, at retirement."""


def join_order(seed: int, env_id: str) -> int:
    """The seeded rank of a retiree among those retiring with it (lower joins first)."""
    return int.from_bytes(hashlib.blake2b(f"{seed}:archive:{env_id}".encode(), digest_size=8).digest(), "big")


def archive_seed(seed: int, env_id: str, play: int) -> int:
    """The episode seed of one archive play: the same every round, so rounds are paired."""
    key = f"{seed}:archive-play:{env_id}:{play}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % (2**31)


def eligible(env: LiveEnv) -> bool:
    """Whether a retiring environment may join (see the module docstring)."""
    return env.expelled is None and env.win_rate() is not None


class ArchiveSample:
    """The members, in the order they joined; at most ``size`` of them."""

    def __init__(self, size: int, seed: int) -> None:
        self.size, self.seed = size, seed
        self.members: list[Member] = []

    def offer(self, step: int, retiring: Iterable[LiveEnv]) -> list[Member]:
        """Environments retired at ``step``'s regeneration: the eligible ones join while there
        is room, in seeded order; returns those that joined."""
        known = {m.env_id for m in self.members}
        fresh = {e.env_id: e for e in retiring if eligible(e) and e.env_id not in known}
        ranked = sorted(fresh.values(), key=lambda e: join_order(self.seed, e.env_id))
        joined = []
        for env in ranked[: max(0, self.size - len(self.members))]:
            rate = env.win_rate()
            assert rate is not None  # eligible
            joined.append(Member(env.env_id, env.code, env.skill, step, rate))
        self.members += joined
        return joined

    def state(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "members": [asdict(m) for m in self.members]}

    def load_state(self, state: dict[str, Any] | None) -> None:
        """Restore :meth:`state` (None: a checkpoint from before the archive, which starts empty)."""
        if state is None:
            self.members = []
            return
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"archive state version {state.get('version')!r} is not {STATE_VERSION}")
        self.members = [
            Member(str(m["env_id"]), str(m["code"]), str(m["skill"]), int(m["retired_step"]), float(m["return_then"]))
            for m in state["members"]
        ]
