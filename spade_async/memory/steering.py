"""The steering queue: requests to a live run as rows of its database (``steer_actions``).

Why here, in the store's layer: whoever asks (the CLI, the TUI that owns the run, a TUI that
only watches it) writes one committed row after checking it against the database and the
run's config, so a person gets the message at once; the run applies the rows between steps
(:mod:`spade_async.selfplay.steering`). Writing a request needs nothing but SQLite, so the
TUI and the CLI import no sandbox or curriculum code to do it.
"""

from __future__ import annotations

import ast
import getpass
import json
import math
import socket
import sqlite3
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_async.memory.records import env_id_for
from spade_async.util.errors import UserError

KINDS: tuple[str, ...] = ("retire", "pin", "unpin", "inject", "band", "designer_share")
TABLE = "steer_actions"
DEFAULT_MAX_SOURCE_BYTES = 64_000
"""Used when the run's config cannot be read (the run applies its own ``sandbox.max_source_bytes``)."""


class SteerError(UserError):
    """A steering request that cannot be queued; the message says why (nothing was written)."""


def requester(role: str) -> str:
    """Who asks, as recorded on the row: ``role user@host``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "?"
    return f"{role} {user}@{socket.gethostname()}"


def check_band(low: float, high: float) -> None:
    if not (math.isfinite(low) and math.isfinite(high)) or not 0.0 <= low <= high <= 1.0:
        raise SteerError(f"band {low:g}-{high:g}: need 0 <= LOW <= HIGH <= 1")


def check_share(share: float) -> None:
    if not math.isfinite(share) or not 0.0 <= share <= 1.0:
        raise SteerError(f"designer share {share:g}: need a fraction in [0, 1] (0 pauses design)")


def describe(kind: str, args: dict[str, Any]) -> str:
    """One line saying what an action asks for."""
    if kind in ("retire", "pin", "unpin"):
        text = f"{kind} {str(args.get('env_id', '?'))[:12]}"
        return text + (f" ({args['reason']})" if args.get("reason") else "")
    if kind == "inject":
        extra = [f"skill {args['skill']}"] if args.get("skill") else []
        extra += ["pinned"] if args.get("pin") else []
        return f"inject {args.get('name') or 'code'}" + (f" ({', '.join(extra)})" if extra else "")
    if kind == "band":
        return f"target band {float(args.get('low', math.nan)):.2f}-{float(args.get('high', math.nan)):.2f}"
    if kind == "designer_share":
        return f"designer share {float(args.get('share', math.nan)):.2f}"
    return kind


# ---------------------------------------------------------------- request side (any process)


@dataclass(frozen=True)
class ActionRow:
    id: int
    created_at: float
    who: str
    kind: str
    args: dict[str, Any]
    status: str
    step: int | None
    message: str | None

    @property
    def summary(self) -> str:
        return describe(self.kind, self.args)


@dataclass(frozen=True)
class Queued:
    id: int
    summary: str
    run_status: str


def _connect(db: Path) -> sqlite3.Connection:
    if not db.is_file():
        raise SteerError(f"no run database at {db}; is this a spade-async run folder?")
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=rw", uri=True, timeout=10.0, isolation_level=None)
    conn.row_factory = sqlite3.Row
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchone() is None:
        conn.close()
        raise SteerError(f"{db} predates steering (no {TABLE} table); resume the run with this spade-async first")
    return conn


def _latest_run(conn: sqlite3.Connection) -> sqlite3.Row:
    run = conn.execute("SELECT id, status, config_toml FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    if run is None:
        raise SteerError("the run has not started yet (no run row); try again in a moment")
    return run


def resolve_env(conn: sqlite3.Connection, prefix: str) -> sqlite3.Row:
    """The environment whose id starts with ``prefix`` (the TUI shows 8 characters)."""
    key = prefix.strip().lower()
    if len(key) < 4 or any(c not in "0123456789abcdef" for c in key):
        raise SteerError(f"environment id {prefix!r}: give at least 4 hex characters of its id")
    rows = conn.execute(
        "SELECT id, status, valid, skill FROM environments WHERE id >= ? AND id < ? LIMIT 3", (key, key + "g")
    ).fetchall()
    if not rows:
        raise SteerError(f"no environment with id {key}... in this run")
    if len(rows) > 1:
        raise SteerError(
            f"environment id {key}... is ambiguous ({', '.join(r['id'][:12] for r in rows)}); give more of it"
        )
    return rows[0]


def pinned_ids(conn: sqlite3.Connection) -> set[str]:
    """Environments pinned by applied actions (and not unpinned or retired since)."""
    pinned: set[str] = set()
    for kind, text in conn.execute(f"SELECT kind, args FROM {TABLE} WHERE status = 'applied' ORDER BY step, id"):
        args = json.loads(text or "{}")
        env_id = args.get("env_id")
        if kind == "pin" or (kind == "inject" and args.get("pin")):
            pinned.add(env_id or env_id_for(args.get("code", "")))
        elif kind in ("unpin", "retire"):
            pinned.discard(env_id)
    return pinned


def _config_value(config_toml: str | None, section: str, key: str, default: Any) -> Any:
    try:
        return tomllib.loads(config_toml or "").get(section, {}).get(key, default)
    except tomllib.TOMLDecodeError:
        return default


def _check_parses(code: str, name: str) -> None:
    """Refuse source that does not parse as Python (parsed only, never compiled or run here)."""
    try:
        ast.parse(code)
    except SyntaxError as exc:
        raise SteerError(
            f"{name} is not valid Python (line {exc.lineno}: {exc.msg}); fix it and inject it again"
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise SteerError(f"{name} is not valid Python ({exc.__class__.__name__}); fix it and inject it again") from None


def _checked(conn: sqlite3.Connection, run: sqlite3.Row, kind: str, args: dict[str, Any]) -> dict[str, Any]:
    """The request's arguments, checked against the database and the run's config."""
    if kind not in KINDS:
        raise SteerError(f"unknown steering action {kind!r}; one of {', '.join(KINDS)}")
    if kind in ("retire", "pin", "unpin"):
        env = resolve_env(conn, str(args.get("env_id", "")))
        args = {**args, "env_id": env["id"]}
        # Only an invalid one is certainly not live: the status column of an environment refilled
        # from memory says 'retired' until its first plays are recorded, so the run checks the rest.
        if kind == "retire" and not env["valid"]:
            raise SteerError(f"environment {env['id'][:12]} failed validation: it was never live; nothing to retire")
        if kind == "pin" and not env["valid"]:
            raise SteerError(f"environment {env['id'][:12]} failed validation; only a valid environment can be pinned")
        if kind == "pin" and env["status"] == "invalid":  # valid, then expelled by the play audit
            raise SteerError(
                f"environment {env['id'][:12]} was retired by the play audit (it cheats in play); it cannot be pinned"
            )
        if kind == "pin" and env["id"] in pinned_ids(conn):
            raise SteerError(f"environment {env['id'][:12]} is already pinned")
        if kind == "unpin" and env["id"] not in pinned_ids(conn):
            raise SteerError(f"environment {env['id'][:12]} is not pinned")
    elif kind == "inject":
        code = args.get("code")
        limit = int(_config_value(run["config_toml"], "sandbox", "max_source_bytes", DEFAULT_MAX_SOURCE_BYTES))
        size = len(code.encode("utf-8")) if isinstance(code, str) else 0
        if not size or size > limit:
            raise SteerError(
                f"{args.get('name') or 'the file'} is {size} bytes; an environment must be non-empty and "
                f"at most {limit} bytes (sandbox.max_source_bytes)"
            )
        _check_parses(str(code), str(args.get("name") or "the file"))
    elif kind == "band":
        check_band(float(args["low"]), float(args["high"]))
    elif kind == "designer_share":
        check_share(float(args["share"]))
        mode = _config_value(run["config_toml"], "selfplay", "mode", "spade")
        if mode != "spade":
            raise SteerError(f"this run plays a fixed pool (selfplay.mode = {mode!r}): there is no designer to steer")
    return args


def queue_action(db: Path, kind: str, args: dict[str, Any], who: str, *, refuse_finished: bool = False) -> Queued:
    """Check a request and write it as a queued row of the newest run; ``SteerError`` if invalid.

    ``refuse_finished``: a finished run is refused (the CLI: a person who steers a finished run
    expects an effect that no step is left to give; a resume with a higher ``--max-steps``
    would apply a queued request, and callers that mean that leave it False)."""
    try:
        conn = _connect(Path(db))
    except sqlite3.Error as exc:
        raise SteerError(f"{db} cannot be read ({exc}); nothing was queued") from None
    try:
        run = _latest_run(conn)
        if refuse_finished and run["status"] == "finished":
            raise SteerError(
                "the run is finished: no step is left to apply the request; continue it with "
                "`spade-async resume RUN_DIR --max-steps N` and steer it while it runs"
            )
        args = _checked(conn, run, kind, args)
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute(
                f"INSERT INTO {TABLE} (run_id, created_at, who, kind, args) VALUES (?, ?, ?, ?, ?)",
                (run["id"], time.time(), who, kind, json.dumps(args)),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        assert cur.lastrowid is not None
        return Queued(int(cur.lastrowid), describe(kind, args), str(run["status"]))
    except sqlite3.Error as exc:
        raise SteerError(f"{db}: cannot write the request ({exc})") from None
    finally:
        conn.close()


def read_actions(conn: sqlite3.Connection, after_id: int = 0) -> list[ActionRow]:
    """Actions with ``id > after_id`` in id order ([] for a database without steering)."""
    try:
        rows = conn.execute(
            f"SELECT id, created_at, who, kind, args, status, step, message FROM {TABLE} WHERE id > ? ORDER BY id",
            (after_id,),
        ).fetchall()
    except sqlite3.OperationalError:
        return []
    return [
        ActionRow(int(i), float(t), str(w), str(k), json.loads(a or "{}"), str(st), s, m)
        for i, t, w, k, a, st, s, m in rows
    ]
