"""The episodes and steps tables: every episode played and each training step's metrics."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from spade_async.memory.records import EpisodeRecord, StepRecord
from spade_async.memory.store_base import StoreBase, _dumps, _loads


def _episode_from_row(row: sqlite3.Row) -> EpisodeRecord:
    return EpisodeRecord(
        step=row["step"],
        env_id=row["env_id"],
        adapter_version=row["adapter_version"],
        hinted=bool(row["hinted"]),
        outcome=row["outcome"],
        turns=row["turns"],
        truncated=bool(row["truncated"]),
        transcript=list(_loads(row["transcript"]) or []),
        id=row["id"],
    )


class EpisodeRecords(StoreBase):
    """Episodes of the current run and its steps' metric rows."""

    async def record_episodes(self, episodes: list[EpisodeRecord]) -> None:
        """Insert all episodes in one transaction (all or none)."""
        if not episodes:
            return
        run_id = self._need_run()
        rows = [
            (
                run_id,
                e.step,
                e.env_id,
                e.adapter_version,
                int(e.hinted),
                float(e.outcome),
                e.turns,
                int(e.truncated),
                _dumps(e.transcript),
            )
            for e in episodes
        ]
        async with self._tx() as conn:
            await conn.executemany(
                "INSERT INTO episodes (run_id, step, env_id, adapter_version, hinted, outcome, turns, "
                "truncated, transcript) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    async def episodes(self, *, env_id: str | None = None, step: int | None = None) -> list[EpisodeRecord]:
        """Episodes of the current run (all runs if none), optionally of one env and/or step."""
        where: list[str] = ["1"]
        params: list[Any] = []
        if self.run_id is not None:
            where.append("run_id = ?")
            params.append(self.run_id)
        if env_id is not None:
            where.append("env_id = ?")
            params.append(env_id)
        if step is not None:
            where.append("step = ?")
            params.append(step)
        rows = await self._fetchall(f"SELECT * FROM episodes WHERE {' AND '.join(where)} ORDER BY id", params)
        return [_episode_from_row(r) for r in rows]

    async def plain_play_counts(self, env_ids: Sequence[str]) -> dict[str, int]:
        """Plain (unhinted) plays of each of ``env_ids`` in the current run (0 for one never
        played): how often the agent has trained on it."""
        ids = list(dict.fromkeys(env_ids))
        if not ids:
            return {}
        rows = await self._fetchall(
            f"SELECT env_id, COUNT(*) AS n FROM episodes WHERE hinted = 0 AND run_id = ? "
            f"AND env_id IN ({', '.join('?' * len(ids))}) GROUP BY env_id",
            (self._need_run(), *ids),
        )
        counts = {r["env_id"]: int(r["n"]) for r in rows}
        return {i: counts.get(i, 0) for i in ids}

    async def record_step(self, step: int, adapter_version: int, metrics: dict[str, Any], wall_s: float) -> None:
        """Insert or replace the step's metrics row (NaN and inf are stored as JSON null)."""
        run_id = self._need_run()
        text = _dumps(metrics)
        async with self._tx() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO steps (run_id, step, adapter_version, wall_s, metrics, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, step, adapter_version, wall_s, text, time.time()),
            )

    async def steps(self) -> list[StepRecord]:
        """Metric rows of the current run, by step."""
        rows = await self._fetchall("SELECT * FROM steps WHERE run_id = ? ORDER BY step", (self._need_run(),))
        return [
            StepRecord(
                step=r["step"],
                adapter_version=r["adapter_version"],
                metrics=_loads(r["metrics"]),
                wall_s=r["wall_s"],
                created_at=r["created_at"],
            )
            for r in rows
        ]
