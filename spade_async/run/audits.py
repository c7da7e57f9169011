"""The play audit's schedule in a step: which environments get one, when it starts, and what
happens to one that fails.

Why here and not in the play loop: what an audit play checks is
:mod:`spade_async.admission.audit`'s; *when* it runs is the step's business. Each model-written
live environment gets one audit per step, started after a real play of it has finished and
paced like that play's turns (so the environment cannot tell them apart), sharing the plays'
concurrency limit. An environment that fails is expelled after the step's plays, recorded as
an error event and written to memory as invalid. Its seeds, actions and pauses are drawn from
an unpredictable RNG, never from the run seed.
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterable, Mapping

import anyio
from anyio.abc import TaskGroup

from spade_async.admission.audit import audit_play, audited
from spade_async.config import SelfPlayConfig
from spade_async.memory.lineage import audit_event_message
from spade_async.memory.store import Store
from spade_async.sandbox.interface import EnvPool
from spade_async.selfplay.curriculum import Curriculum, LiveEnv
from spade_async.selfplay.steering import WriteStats


class PlayAudits:
    """One audit play per audited live environment per step (``selfplay.play_audit``)."""

    def __init__(
        self,
        sp: SelfPlayConfig,
        *,
        store: Store,
        curriculum: Curriculum,
        write_stats: WriteStats,
        limiter: anyio.CapacityLimiter,
    ) -> None:
        self.sp = sp
        self.store = store
        self.curriculum = curriculum
        self.write_stats = write_stats
        self.limiter = limiter
        """Shared with the real plays: an audit takes a play's place."""
        self.rng = random.Random(secrets.randbits(64))
        """Draws the play audit's seeds, actions and pauses: unpredictable, never from the run seed."""
        self.retired = 0
        """Environments expelled by an audit so far (a step metric: ``audit_retired``)."""

    def schedule(
        self,
        tg: TaskGroup,
        envs: Iterable[LiveEnv],
        pool: EnvPool,
        *,
        played_once: Mapping[str, anyio.Event],
        pace_s: Mapping[str, float],
    ) -> dict[str, str]:
        """Start, in ``tg``, the audits of ``envs`` (each once a real play of it is done, paced by
        ``pace_s``); returns the failures by env id, filled as the audits end."""
        failures: dict[str, str] = {}
        if not self.sp.play_audit:
            return failures
        for env in {env.env_id: env for env in envs}.values():
            if audited(env.origin):  # model-written code only (the user's own is trusted)
                tg.start_soon(self._audit, env, pool, played_once[env.env_id], pace_s, failures)
        return failures

    async def _audit(
        self,
        env: LiveEnv,
        pool: EnvPool,
        played: anyio.Event,
        pace_s: Mapping[str, float],
        failures: dict[str, str],
    ) -> None:
        """After a real play of ``env``, one audit play paced like it."""
        await played.wait()
        async with self.limiter:
            reason = await audit_play(
                pool,
                env.code,
                env.promise(),
                rng=self.rng,
                domain=self.sp.domain,
                pace_s=pace_s.get(env.env_id, 0.0),
            )
        if reason is not None:
            failures[env.env_id] = reason

    async def expel(self, step: int, failures: Mapping[str, str]) -> None:
        """Take each failed environment out of the live set; an error event and an invalid verdict."""
        for env_id, reason in failures.items():
            expelled = self.curriculum.expel(env_id, reason)
            self.retired += 1
            await self.store.record_event(step, "error", audit_event_message(env_id, reason))
            if expelled is not None:
                await self.write_stats(expelled, step, "invalid", None)
