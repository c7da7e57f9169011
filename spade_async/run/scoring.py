"""Scoring a step's plays: episodes recorded, outcomes given to the curriculum, memory's stats
written, GRPO groups turned into training samples, and the step's play metrics.

Why its own owner: what a step's plays mean for the curriculum, the database and the learner is
one decision, separate from how the plays were run (:mod:`spade_async.run.plays`) and from
driving the step (:mod:`spade_async.run.pipeline`). It reads ``selfplay`` (live: the curriculum
adjusts its band during a run) and the agent's sampling temperature.
"""

from __future__ import annotations

from spade_async.config import SamplingConfig, SelfPlayConfig
from spade_async.learner.samples import TrainSample
from spade_async.memory.play_stats import play_error_message
from spade_async.memory.records import EpisodeRecord
from spade_async.memory.store import Store
from spade_async.run.audits import PlayAudits
from spade_async.run.plays import Played
from spade_async.selfplay.curriculum import Curriculum
from spade_async.selfplay.health import step_play_metrics
from spade_async.selfplay.play.scoring import Play, agent_samples
from spade_async.selfplay.steering import WriteStats


class PlayScorer:
    """Turns a step's episodes into records, curriculum outcomes, samples and metrics."""

    def __init__(
        self,
        sp: SelfPlayConfig,
        agent: SamplingConfig,
        *,
        store: Store,
        curriculum: Curriculum,
        write_stats: WriteStats,
        audits: PlayAudits,
    ) -> None:
        self.sp = sp
        self.agent = agent
        self.store = store
        self.curriculum = curriculum
        self.write_stats = write_stats
        self.audits = audits
        """Its count of expelled environments is a step metric."""

    async def score(self, step: int, played: Played) -> tuple[list[TrainSample], dict[str, float]]:
        """Record the step's episodes; return the agent's samples and the play metrics."""
        ok = [(env, ep) for env, ep in played if ep.error is None]
        for env, ep in played:
            if ep.error is not None:
                self.curriculum.record_error(env.env_id)
                await self.store.record_event(step, "error", play_error_message(env.env_id, ep.error))
        for env, ep in ok:
            self.curriculum.record(step, env.env_id, ep.hinted, ep.outcome)
        await self.store.record_episodes(
            [
                EpisodeRecord(
                    step=step,
                    env_id=env.env_id,
                    adapter_version=ep.adapter_version,
                    hinted=ep.hinted,
                    outcome=ep.outcome,
                    turns=ep.turns,
                    truncated=ep.truncated,
                    transcript=ep.transcript,
                )
                for env, ep in ok
            ]
        )
        for env in self.curriculum.live:
            await self.write_stats(env, step, "active", None)
        samples, zero_variance = agent_samples([Play(env.env_id, ep) for env, ep in ok], self.agent.temperature)
        metrics = step_play_metrics(
            [(env.plain.get(step, []), env.hinted.get(step, [])) for env in self.curriculum.live],
            regret_scale=self.sp.regret_scale,
            low=self.sp.plateau_low,
            high=self.sp.plateau_high,
            ramp=self.sp.plateau_ramp,
        )
        metrics.update(
            audit_retired=float(self.audits.retired),
            band_invalid=float(len(self.curriculum.rejected)),
            episodes_failed=float(len(played) - len(ok)),
            zero_variance_groups=float(zero_variance),
        )
        return samples, metrics
