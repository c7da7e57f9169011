"""One step's plays: every live environment played ``selfplay.plays`` times (and hinted when
due), concurrently, each with a reproducible seed, beside the step's audits.

Why its own module: which plays a step makes (the hinted schedule), what seeds they get and how
they share the sandbox is the play round's, not the pipeline's; the pipeline asks for a step's
episodes and gets them. It reads ``selfplay`` (live: the curriculum adjusts it during a run),
``engine.agent`` (sampling) and the run seed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

import anyio

from spade_async.config import SamplingConfig, SelfPlayConfig
from spade_async.engine.base import Engine, Sampling
from spade_async.run.audits import PlayAudits
from spade_async.sandbox.interface import EnvPool
from spade_async.selfplay.curriculum import Curriculum, LiveEnv
from spade_async.selfplay.play.agent import Episode, agent_context_budget, play_episode
from spade_async.selfplay.play.tool_agent import play_tool_episode

Played = list[tuple[LiveEnv, Episode]]


def episode_seed(run_seed: int, step: int, env_index: int, play: int) -> int:
    """A hash of (run seed, step, env, play) over ``[0, 2**31)``: reproducible, and as spread
    as the seeds admission draws, so an environment cannot tell play from a check by its seed
    (small structured seeds were a tell)."""
    key = f"{run_seed}:{step}:{env_index}:{play}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % (2**31)


def sampling_seed(episode_seed: int, hinted: bool) -> int:
    """The agent's sampling seed for one play (the two arms of a matched pair draw apart)."""
    return (episode_seed * 2 + int(hinted)) % (2**31)


class PlayRound:
    """Plays the live environments of a step (and starts their audits)."""

    def __init__(
        self,
        sp: SelfPlayConfig,
        agent: SamplingConfig,
        *,
        run_seed: int,
        engine: Engine,
        curriculum: Curriculum,
        audits: PlayAudits,
        limiter: anyio.CapacityLimiter,
        gate: Callable[[], Awaitable[None]],
    ) -> None:
        self.sp = sp
        self.agent = agent
        self.run_seed = run_seed
        self.engine = engine
        self.curriculum = curriculum
        self.audits = audits
        self.limiter = limiter
        """At most ``sandbox.max_children`` plays (and audits) at once."""
        self.gate = gate
        """Awaited before each play: returns while the run is not paused."""

    def hinted_due(self, env: LiveEnv, step: int) -> bool:
        """Hinted plays: once, at the step the environment went live (default), or every step."""
        return self.sp.hinted_schedule == "every_step" or step == env.born_step

    def schedule(self, step: int) -> list[tuple[LiveEnv, int, bool]]:
        """The step's plays as ``(environment, episode seed, hinted)``; hinted ones on matched seeds."""
        plays: list[tuple[LiveEnv, int, bool]] = []
        for e_idx, env in enumerate(self.curriculum.live):
            for i in range(self.sp.plays):
                plays.append((env, episode_seed(self.run_seed, step, e_idx, i), False))
            for i in range(self.sp.hinted_plays if env.hint and self.hinted_due(env, step) else 0):
                plays.append((env, episode_seed(self.run_seed, step, e_idx, i), True))
        return plays

    async def play(self, step: int, pool: EnvPool) -> Played:
        """Play the step on ``pool``; the episodes of environments that passed their audit."""
        plays = self.schedule(step)
        results: list[tuple[LiveEnv, Episode] | None] = [None] * len(plays)
        played_once = {env.env_id: anyio.Event() for env, _, _ in plays}
        turn_s: dict[str, float] = {}

        async def one(i: int, env: LiveEnv, seed: int, hinted: bool) -> None:
            await self.gate()
            async with self.limiter:
                started = time.perf_counter()
                ep = await self._episode(pool, env, seed, hinted)
                turn_s.setdefault(env.env_id, (time.perf_counter() - started) / max(ep.turns, 1))
            results[i] = (env, ep)
            played_once[env.env_id].set()

        async with anyio.create_task_group() as tg:
            for i, (env, seed, hinted) in enumerate(plays):
                tg.start_soon(one, i, env, seed, hinted)
            failures = self.audits.schedule(
                tg, (env for env, _, _ in plays), pool, played_once=played_once, pace_s=turn_s
            )
        await self.audits.expel(step, failures)
        return [r for r in results if r is not None and r[0].env_id not in failures]

    async def _episode(self, pool: EnvPool, env: LiveEnv, seed: int, hinted: bool) -> Episode:
        sampling = Sampling.from_config(self.agent)
        play = play_tool_episode if self.sp.domain == "tool_use" else play_episode
        return await play(
            self.engine,
            pool,
            env_id=env.env_id,
            source=env.code,
            seed=seed,
            hint=env.hint if hinted else None,
            sampling=replace(sampling, seed=sampling_seed(seed, hinted)) if self.sp.seeded_sampling else sampling,
            max_turns=self.sp.max_turns,
            max_context_tokens=agent_context_budget(self.sp.max_context_tokens, self.engine.max_model_len),
            no_action_penalty=self.sp.no_action_penalty,
            action_prefill=self.sp.action_prefill,
        )
