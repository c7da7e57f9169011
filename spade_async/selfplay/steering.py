"""Steering a live run: retire, pin or inject an environment, move the target band, change
the designer's share, while the run goes on.

Why rows in the run's database: whoever asks (the CLI, the TUI that owns the run, a TUI
that only watches it from another terminal) may be another process, and the run must stay
the only one that changes its curriculum. A request is one committed row in
``steer_actions`` (who, when, what); the run reads the queued rows at the start of each step
(between steps: a step is never half steered), applies them in id order, and settles each
row (``applied`` or ``rejected``, the step it took effect at, and a message) in the same
transaction as its event-log line. What it changed lives in the :class:`Curriculum`, so a
checkpoint carries it; a resume puts the rows settled after its checkpoint back in the
queue (``Store.truncate_after``), so a kill -9 at any moment neither loses a request nor
applies one twice in the run's history.

Checks happen twice: where the request is written (:func:`queue_action`: unknown
environment, band outside [0, 1], unreadable file), so a person gets the message at once,
and again in the run, because the state may have moved on (the environment retired
meanwhile) and a row may have been written by hand. An injected file is admitted by the
same sandbox validation as a designed environment, in the run; a rejection records the
validator's reasons on the row. An injected environment has no design, so it never earns
the designer a reward (docs/rewards.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from spade_async.admission.validate import ADMISSION_TURN_LIMIT, validate_source
from spade_async.config import Config
from spade_async.memory.records import EnvRecord, env_id_for
from spade_async.memory.steering import SteerError, check_band, check_share, describe
from spade_async.memory.store import Store
from spade_async.sandbox.errors import SandboxError
from spade_async.sandbox.interface import EnvPool
from spade_async.selfplay.curriculum import Curriculum, LiveEnv
from spade_async.selfplay.design.parsing import clean_hint
from spade_async.util.failpoints import failpoint


@dataclass
class Decision:
    status: str
    """applied | rejected"""
    message: str
    apply: Callable[[], None] | None = None
    """The change to the curriculum (synchronous: nothing can interleave with it)."""
    after: Callable[[], Awaitable[None]] | None = None
    """Database writes that follow the change (the environment's row, its status)."""


WriteStats = Callable[[LiveEnv, int, str, "float | None"], Awaitable[None]]


class Steering:
    """Applies the queued actions to the curriculum; ``apply_queued(step)`` before each step."""

    def __init__(
        self, cfg: Config, *, store: Store, pool: EnvPool, curriculum: Curriculum, write_stats: WriteStats
    ) -> None:
        self.cfg = cfg
        self.sp = cfg.selfplay
        self.store = store
        self.pool = pool
        self.curriculum = curriculum
        self.write_stats = write_stats

    async def apply_queued(self, step: int) -> int:
        """Settle every queued action in id order, effective at ``step``; returns how many applied."""
        applied = 0
        for row in await self.store.queued_steer_actions():
            decision = await self._decide(row["kind"], row["args"], step)
            failpoint("steer_apply")  # decided, nothing written yet
            event = f"{describe(row['kind'], row['args'])} by {row['who']}: {decision.message}"
            if decision.status == "rejected":
                event = "REJECTED " + event
            if not await self.store.settle_steer_action(row["id"], decision.status, step, decision.message, event):
                continue
            if decision.apply is not None:
                decision.apply()
            if decision.after is not None:
                await decision.after()
            applied += decision.status == "applied"
            failpoint("steer_applied")  # row settled and the curriculum changed; no checkpoint has it yet
        return applied

    def _pin(self, env_id: str) -> None:
        self.curriculum.pinned.add(env_id)
        self.curriculum.retired_by_hand.discard(env_id)  # a pin undoes a retirement by hand

    def _live(self, env_id: str) -> LiveEnv | None:
        return next((e for e in self.curriculum.live + self.curriculum.joining if e.env_id == env_id), None)

    async def _decide(self, kind: str, args: dict[str, Any], step: int) -> Decision:
        try:
            if kind in ("retire", "pin", "unpin"):
                return await self._env_action(kind, str(args["env_id"]), args, step)
            if kind == "inject":
                return await self._inject(args, step)
            if kind == "band":
                low, high = float(args["low"]), float(args["high"])
                check_band(low, high)
                before = f"{self.sp.plateau_low:.2f}-{self.sp.plateau_high:.2f}"
                return Decision(
                    "applied",
                    f"target band {before} -> {low:.2f}-{high:.2f} for the rest of the run",
                    apply=lambda: self.curriculum.set_band(low, high),
                )
            if kind == "designer_share":
                share = float(args["share"])
                check_share(share)
                if self.sp.mode != "spade":
                    return Decision("rejected", "this run plays a fixed pool: there is no designer to steer")
                n = self.curriculum.designs_wanted(self.sp.envs_per_step)

                def set_share() -> None:
                    self.curriculum.design_share = share

                what = (
                    "design paused: memory fills the live set"
                    if share == 0
                    else f"{round(self.sp.envs_per_step * share)} designs per generation (was {n})"
                )
                return Decision("applied", what, apply=set_share)
            return Decision("rejected", f"unknown steering action {kind!r}")
        except SteerError as exc:
            return Decision("rejected", str(exc))
        except (KeyError, TypeError, ValueError) as exc:
            return Decision("rejected", f"malformed request ({exc.__class__.__name__}: {exc})")

    async def _env_action(self, kind: str, env_id: str, args: dict[str, Any], step: int) -> Decision:
        live = self._live(env_id)
        short = env_id[:12]
        if kind == "retire":
            if live is None:
                return Decision("rejected", f"environment {short} is not in the live set")
            credit = "its design is scored with its generation" if live.design is not None else "no design to score"

            def retire() -> None:
                self.curriculum.retire_now(env_id)

            return Decision(
                "applied",
                f"retired; {credit}",
                apply=retire,
                after=lambda: self.write_stats(live, step, "retired", None),
            )
        if kind == "unpin":
            if env_id not in self.curriculum.pinned:
                return Decision("rejected", f"environment {short} is not pinned")
            return Decision(
                "applied",
                "unpinned: it leaves with its generation",
                apply=lambda: self.curriculum.pinned.discard(env_id),
            )
        if env_id in self.curriculum.pinned:
            return Decision("rejected", f"environment {short} is already pinned")
        if live is not None:
            return Decision(
                "applied", "pinned: it stays live in every next generation", apply=lambda: self._pin(env_id)
            )
        rec = await self.store.environment(env_id)
        if rec is None or not rec.valid or rec.domain != self.sp.domain:
            return Decision("rejected", f"environment {short} is unknown, invalid or of another domain")
        if rec.status == "invalid":  # valid, then expelled by the play audit: never back
            return Decision("rejected", f"environment {short} was retired by the play audit; it cannot be pinned")
        back = LiveEnv(rec.id, rec.code, rec.hint, rec.skill or "unknown", rec.origin, step)

        def bring_back() -> None:
            self.curriculum.join(back, step)
            self._pin(env_id)

        return Decision(
            "applied",
            "pinned: back in the live set, and in every next generation",
            apply=bring_back,
            after=lambda: self.write_stats(back, step, "active", None),
        )

    async def _inject(self, args: dict[str, Any], step: int) -> Decision:
        code = args["code"]
        if not isinstance(code, str):
            raise TypeError("code is not text")
        env_id = env_id_for(code)
        if self._live(env_id) is not None:
            return Decision("rejected", f"environment {env_id[:12]} is live already")
        try:
            result = await validate_source(
                self.pool, code, max_turns=max(self.sp.max_turns, ADMISSION_TURN_LIMIT), domain=self.sp.domain
            )
        except SandboxError as exc:
            return Decision("rejected", f"could not be validated: {exc}")
        if not result.admitted:
            return Decision("rejected", "failed validation: " + "; ".join(result.reasons)[:1000])
        hint = clean_hint(result.constants.get("HINT"))
        skill = str(args.get("skill") or result.constants.get("SKILL") or "unknown")
        env = LiveEnv(env_id, code, hint, skill, "injected", step)
        pin = bool(args.get("pin"))

        def go_live() -> None:
            self.curriculum.join(env, step)
            if pin:
                self.curriculum.pinned.add(env_id)

        async def record() -> None:
            await self.store.record_environment(
                EnvRecord(
                    code=code,
                    domain=self.sp.domain,
                    skill=skill,
                    origin="injected",
                    created_step=step,
                    hint=hint,
                    doc_title=args.get("name"),
                    valid=True,
                    reasons=list(result.reasons),
                    status="active",
                    updated_step=step,
                )
            )

        what = f"admitted as {env_id[:12]} ({skill}{', no hint: no hinted plays' if not hint else ''}); live from this step"
        return Decision(
            "applied", what + (", pinned" if pin else ", until its generation ends"), apply=go_live, after=record
        )
