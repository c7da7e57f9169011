"""The evals and archive_evals tables: held-out evaluation rows (``spade-async eval`` and the
in-loop evaluation) and the archive's rounds (spade_async.eval.archive)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from spade_async.memory.store_base import StoreBase
from spade_async.util.steps import shown_eval_row

LOOP_EVAL_PREFIX = "loop-step-"
"""``eval_id`` prefix of in-loop evaluation rows (``loop-step-N``); a resume deletes those after its step."""
LOOP_BASE_EVAL_ID = "loop-base"
"""``eval_id`` of the in-loop base-model rows: scored once per run, kept across resumes."""


class EvalRecords(StoreBase):
    """Evaluation rows of this file and the current run's archive rows."""

    EVAL_COLUMNS: tuple[str, ...] = (
        "eval_id",
        "step",
        "model",
        "adapter",
        "suite",
        "task",
        "metric",
        "n",
        "mean",
        "base_mean",
        "delta",
        "ci_low",
        "ci_high",
        "n_errors",
        "seconds",
    )

    async def record_evals(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert evaluation rows (keys: ``EVAL_COLUMNS``) in one transaction, attached to the
        current run, or to the newest run of the file when none is current (``spade-async eval``
        opens a run's database from outside the run)."""
        async with self._tx() as conn:
            run_id = self.run_id
            if run_id is None:
                row = await (await conn.execute("SELECT MAX(id) FROM runs")).fetchone()
                run_id = None if row is None or row[0] is None else int(row[0])
            now = time.time()
            cols = ", ".join(self.EVAL_COLUMNS)
            marks = ", ".join("?" for _ in self.EVAL_COLUMNS)
            await conn.executemany(
                f"INSERT INTO evals (run_id, created_at, {cols}) VALUES (?, ?, {marks})",
                [(run_id, now, *(r.get(c) for c in self.EVAL_COLUMNS)) for r in rows],
            )

    async def evals(self) -> list[dict[str, Any]]:
        """Every evaluation row of this file, oldest first, step labels as a user reads them
        (an old run's too: spade_async.util.steps.shown_eval_row)."""
        rows = await self._fetchall("SELECT * FROM evals ORDER BY id")
        return [shown_eval_row(r) for r in rows]

    # ---------------------------------------------------------------- archive (spade_async.eval.archive)

    ARCHIVE_COLUMNS: tuple[str, ...] = (
        "step",
        "env_id",
        "skill",
        "adapter",
        "retired_step",
        "return_then",
        "return_now",
        "n",
        "n_errors",
        "solved_then",
        "solved_now",
        "seconds",
    )

    async def record_archive(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert one archive round's rows (keys: ``ARCHIVE_COLUMNS``) in one transaction."""
        run_id = self._need_run()
        async with self._tx() as conn:
            now = time.time()
            cols = ", ".join(self.ARCHIVE_COLUMNS)
            marks = ", ".join("?" for _ in self.ARCHIVE_COLUMNS)
            await conn.executemany(
                f"INSERT INTO archive_evals (run_id, created_at, {cols}) VALUES (?, ?, {marks})",
                [(run_id, now, *(r.get(c) for c in self.ARCHIVE_COLUMNS)) for r in rows],
            )

    async def archive_rows(self) -> list[dict[str, Any]]:
        """The current run's archive rows, oldest first."""
        rows = await self._fetchall("SELECT * FROM archive_evals WHERE run_id = ? ORDER BY id", (self._need_run(),))
        return [dict(r) for r in rows]
