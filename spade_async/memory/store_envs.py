"""The environments table: what the designer wrote, its admission result and its play stats."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from spade_async.memory.play_stats import (
    EPISODE_SQL,
    ERROR_SQL,
    RECENT_EPISODES,
    PlayStats,
    aggregate,
    error_pattern,
    group_rows,
)
from spade_async.memory.records import ENV_ORIGINS, ENV_STATUSES, EnvRecord
from spade_async.memory.store_base import StoreBase, _dumps, _loads


def _env_from_row(row: sqlite3.Row) -> EnvRecord:
    return EnvRecord(
        code=row["code"],
        domain=row["domain"],
        skill=row["skill"],
        origin=row["origin"],
        created_step=row["created_step"],
        hint=row["hint"],
        doc_title=row["doc_title"],
        doc_text=row["doc_text"],
        valid=bool(row["valid"]),
        reasons=list(_loads(row["reasons"]) or []),
        status=row["status"],
        win_rate=row["win_rate"],
        hint_win_rate=row["hint_win_rate"],
        regret=row["regret"],
        designer_reward=row["designer_reward"],
        n_plays=row["n_plays"],
        parent_id=row["parent_id"],
        updated_step=row["updated_step"],
        run_id=row["run_id"],
    )


_STATS_FIELDS = (
    "win_rate",
    "hint_win_rate",
    "regret",
    "designer_reward",
    "n_plays",
    "status",
    "updated_step",
)


class EnvironmentRecords(StoreBase):
    """Environments: recorded (insert or update), their stats, the designer's memory lookups."""

    async def record_environment(self, env: EnvRecord) -> str:
        """Insert the environment, or update the mutable fields of the row with the same code.

        On a repeat, immutable fields (created_step, skill, doc, origin, parent) keep their first
        values; valid/reasons/status take the new ones; hint and stats take the new
        ones unless they are None; n_plays never goes down.
        """
        if env.origin not in ENV_ORIGINS:
            raise ValueError(f"environment origin {env.origin!r} not one of {ENV_ORIGINS}")
        if env.status not in ENV_STATUSES:
            raise ValueError(f"environment status {env.status!r} not one of {ENV_STATUSES}")
        env_id = env.id
        async with self._tx() as conn:
            await conn.execute(
                """
                INSERT INTO environments (
                    id, run_id, created_step, skill, domain, origin, parent_id, code, hint,
                    doc_title, doc_text, valid, reasons, status, win_rate, hint_win_rate, regret,
                    designer_reward, n_plays, updated_step)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET
                    hint = COALESCE(excluded.hint, hint),
                    valid = excluded.valid,
                    reasons = excluded.reasons,
                    status = excluded.status,
                    win_rate = COALESCE(excluded.win_rate, win_rate),
                    hint_win_rate = COALESCE(excluded.hint_win_rate, hint_win_rate),
                    regret = COALESCE(excluded.regret, regret),
                    designer_reward = COALESCE(excluded.designer_reward, designer_reward),
                    n_plays = MAX(excluded.n_plays, n_plays),
                    updated_step = COALESCE(excluded.updated_step, updated_step)
                """,
                (
                    env_id,
                    self.run_id,
                    env.created_step,
                    env.skill,
                    env.domain,
                    env.origin,
                    env.parent_id,
                    env.code,
                    env.hint,
                    env.doc_title,
                    env.doc_text,
                    int(env.valid),
                    _dumps(list(env.reasons)),
                    env.status,
                    env.win_rate,
                    env.hint_win_rate,
                    env.regret,
                    env.designer_reward,
                    env.n_plays,
                    env.updated_step,
                ),
            )
        return env_id

    async def update_environment_stats(
        self,
        env_id: str,
        *,
        step: int,
        win_rate: float | None,
        hint_win_rate: float | None,
        regret: float | None,
        designer_reward: float | None,
        n_plays: int,
        status: str | None = None,
    ) -> None:
        """Set the stats as given (None = not measured) and ``updated_step = step``.

        Exception: ``designer_reward=None`` keeps the stored value (an environment that is
        live again keeps the reward of its last scored design until it is scored again).
        """
        if status is not None and status not in ENV_STATUSES:
            raise ValueError(f"environment status {status!r} not one of {ENV_STATUSES}")
        async with self._tx() as conn:
            cur = await conn.execute(
                "UPDATE environments SET win_rate = ?, hint_win_rate = ?, regret = ?, designer_reward = COALESCE(?, designer_reward), "
                "n_plays = ?, updated_step = ?, status = COALESCE(?, status) WHERE id = ?",
                (win_rate, hint_win_rate, regret, designer_reward, n_plays, step, status, env_id),
            )
            if cur.rowcount == 0:
                raise KeyError(f"unknown environment {env_id}")

    async def environment(self, env_id: str) -> EnvRecord | None:
        rows = await self._fetchall("SELECT * FROM environments WHERE id = ?", (env_id,))
        return _env_from_row(rows[0]) if rows else None

    async def memory_candidates(self, domain: str, limit: int, *, played_only: bool = True) -> list[EnvRecord]:
        """Valid environments of ``domain``, newest first; by default only played ones (win rate
        known, what retrieval needs); ``played_only=False`` adds unplayed ones such as the seeds."""
        played = "AND win_rate IS NOT NULL " if played_only else ""
        rows = await self._fetchall(
            "SELECT * FROM environments WHERE domain = ? AND valid = 1 AND status != 'invalid' "
            f"{played}ORDER BY created_step DESC, rowid DESC LIMIT ?",
            (domain, limit),
        )
        return [_env_from_row(r) for r in rows]

    async def environment_codes(self, domain: str) -> list[tuple[str, str]]:
        """``(id, code)`` of every environment of ``domain``, any status (what the copy rule checks)."""
        rows = await self._fetchall("SELECT id, code FROM environments WHERE domain = ?", (domain,))
        return [(r["id"], r["code"]) for r in rows]

    async def environment_stats(self) -> dict[str, dict[str, Any]]:
        """Mutable stats of every environment, for a checkpoint (see ``restore_environment_stats``)."""
        rows = await self._fetchall(f"SELECT id, {', '.join(_STATS_FIELDS)} FROM environments")
        return {r["id"]: {f: r[f] for f in _STATS_FIELDS} for r in rows}

    async def restore_environment_stats(self, stats: dict[str, dict[str, Any]]) -> None:
        """Put back stats saved by ``environment_stats`` (after ``truncate_after``, on resume).

        Without it, environments created before the checkpoint keep stats updated after it.
        Ids that no longer exist are ignored.
        """
        params = [(*(s.get(f) for f in _STATS_FIELDS), env_id) for env_id, s in stats.items()]
        sets = ", ".join(f"{f} = ?" for f in _STATS_FIELDS)
        async with self._tx() as conn:
            await conn.executemany(f"UPDATE environments SET {sets} WHERE id = ?", params)

    async def play_stats(self, env_ids: Sequence[str]) -> dict[str, PlayStats]:
        """How the agent played each of ``env_ids`` (``memory.play_stats``: its newest plays of every
        run in this database, and its crashed plays), read on the read-only connection."""
        ids = list(dict.fromkeys(env_ids))
        if not ids:
            return {}
        rows = await self._fetchall(EPISODE_SQL.format(marks=", ".join("?" * len(ids))), (*ids, RECENT_EPISODES))
        grouped = group_rows(ids, [tuple(r) for r in rows])
        stats = {}
        for env_id in ids:
            errors = [r[0] for r in await self._fetchall(ERROR_SQL, (error_pattern(env_id),))]
            stats[env_id] = aggregate(env_id, grouped[env_id], errors)
        return stats
