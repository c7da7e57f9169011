"""The events table and the steering queue (``steer_actions``): what happened during the run,
and the actions the TUI or CLI queued for it (settling one logs its event in the same
transaction)."""

from __future__ import annotations

import time
from typing import Any

from spade_async.memory.records import EventRecord
from spade_async.memory.store_base import StoreBase, _loads


class EventRecords(StoreBase):
    """The current run's events, and its queued steering actions (spade_async.selfplay.steering)."""

    async def record_event(self, step: int | None, kind: str, message: str) -> None:
        run_id = self._need_run()
        async with self._tx() as conn:
            await conn.execute(
                "INSERT INTO events (run_id, step, kind, message, created_at) VALUES (?, ?, ?, ?, ?)",
                (run_id, step, kind, message, time.time()),
            )

    async def events(self, kind: str | None = None) -> list[EventRecord]:
        """Events of the current run in order, optionally of one kind."""
        sql = "SELECT * FROM events WHERE run_id = ?"
        params: list[Any] = [self._need_run()]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        rows = await self._fetchall(sql + " ORDER BY id", params)
        return [
            EventRecord(step=r["step"], kind=r["kind"], message=r["message"], created_at=r["created_at"]) for r in rows
        ]

    # ---------------------------------------------------------------- steering (spade_async.selfplay.steering)

    async def queued_steer_actions(self) -> list[dict[str, Any]]:
        """The current run's steering actions still waiting, oldest first (``args`` decoded)."""
        rows = await self._fetchall(
            "SELECT id, created_at, who, kind, args FROM steer_actions WHERE run_id = ? AND status = 'queued' ORDER BY id",
            (self._need_run(),),
        )
        return [{**dict(r), "args": _loads(r["args"]) or {}} for r in rows]

    async def settle_steer_action(self, action_id: int, status: str, step: int, message: str, event: str) -> bool:
        """Mark a queued action applied or rejected at ``step`` and log ``event``, in one transaction.

        Returns False (and changes nothing) when the row is no longer queued.
        """
        run_id = self._need_run()
        async with self._tx() as conn:
            cur = await conn.execute(
                "UPDATE steer_actions SET status = ?, step = ?, settled_at = ?, message = ? WHERE id = ? AND status = 'queued'",
                (status, step, time.time(), message, action_id),
            )
            if cur.rowcount == 0:
                return False
            await conn.execute(
                "INSERT INTO events (run_id, step, kind, message, created_at) VALUES (?, ?, 'steer', ?, ?)",
                (run_id, step, event, time.time()),
            )
        return True
