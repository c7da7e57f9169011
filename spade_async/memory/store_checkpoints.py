"""The checkpoints table, and going back to a checkpoint: ``truncate_after`` forgets, in one
transaction, every row of every family written after the step a resume starts from."""

from __future__ import annotations

import time

from spade_async.memory.store_base import StoreBase
from spade_async.memory.store_evals import LOOP_EVAL_PREFIX


class CheckpointRecords(StoreBase):
    """Checkpoints of the current run, and the resume's truncation."""

    async def record_checkpoint(self, step: int, path: str) -> None:
        """Record a checkpoint; call only after its files are complete on disk."""
        run_id = self._need_run()
        async with self._tx() as conn:
            await conn.execute(
                "INSERT OR REPLACE INTO checkpoints (run_id, step, path, created_at) VALUES (?, ?, ?, ?)",
                (run_id, step, str(path), time.time()),
            )

    async def checkpoints(self) -> list[tuple[int, str]]:
        """All checkpoints of the current run (of any run if none is current), newest first."""
        if self.run_id is None:
            rows = await self._fetchall("SELECT step, path FROM checkpoints ORDER BY created_at DESC, step DESC")
        else:
            rows = await self._fetchall(
                "SELECT step, path FROM checkpoints WHERE run_id = ? ORDER BY step DESC",
                (self.run_id,),
            )
        return [(int(r["step"]), str(r["path"])) for r in rows]

    async def latest_checkpoint(self) -> tuple[int, str] | None:
        """``(step, path)`` of the newest checkpoint (see ``checkpoints``), or None."""
        found = await self.checkpoints()
        return found[0] if found else None

    async def truncate_after(self, step: int) -> None:
        """Forget the current run's work after ``step`` (resume from the checkpoint at ``step``).

        Deletes episodes, steps, events, checkpoints, in-loop eval and archive rows with step > ``step`` and environments
        this run created after it (unless another run's episodes still use them), and queues again
        the steering actions settled after it, in one transaction. Stats of older environments are restored by ``restore_environment_stats``.
        """
        run_id = self._need_run()
        async with self._tx() as conn:
            for table in ("episodes", "steps", "events", "checkpoints"):
                await conn.execute(f"DELETE FROM {table} WHERE run_id = ? AND step > ?", (run_id, step))
            await conn.execute(
                "DELETE FROM environments WHERE run_id = ? AND created_step > ? "
                "AND id NOT IN (SELECT env_id FROM episodes)",
                (run_id, step),
            )
            # Steering actions settled after the checkpoint happened in the discarded timeline:
            # queued again, so the resumed run applies each of them once (spade_async.selfplay.steering).
            await conn.execute(
                "UPDATE steer_actions SET status = 'queued', step = NULL, settled_at = NULL, message = NULL "
                "WHERE run_id = ? AND step > ?",
                (run_id, step),
            )
            # In-loop evaluations of the replayed steps (spade_async.eval.inloop); its base rows stay.
            await conn.execute(
                "DELETE FROM evals WHERE run_id = ? AND step > ? AND eval_id LIKE ?",
                (run_id, step, LOOP_EVAL_PREFIX + "%"),
            )
            # Archive rounds of the replayed steps (spade_async.eval.archive).
            await conn.execute("DELETE FROM archive_evals WHERE run_id = ? AND step > ?", (run_id, step))
