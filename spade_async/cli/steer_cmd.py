"""``spade-async steer RUN_DIR ...``: ask a live run to retire, pin or inject an environment,
or to change its target band or the designer's share; ``list`` shows the requests.

Why a request and not a change: the run owns its curriculum. This command checks the request
(unknown environment, band outside [0, 1], unreadable file: one line, exit 2, nothing
written) and writes it as a queued row; the run applies it at the start of its next step and
records what it did (``steer RUN_DIR list``, the TUI's event log, the report). See
``spade_async.selfplay.steering``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from spade_async.memory.run_dir import RunDir
from spade_async.memory.steering import SteerError, queue_action, read_actions, requester
from spade_async.util.steps import DB_NAME
from spade_async.util.textsafe import terminal_safe

EXIT_INVALID = 2


def _queue(run_dir: str, kind: str, args: dict[str, Any]) -> None:
    try:
        queued = queue_action(Path(run_dir) / DB_NAME, kind, args, requester("cli"), refuse_finished=True)
    except SteerError as exc:
        click.echo(f"error: {terminal_safe(str(exc))}", err=True)
        sys.exit(EXIT_INVALID)
    click.echo(f"queued #{queued.id}: {terminal_safe(queued.summary)}")
    if queued.run_status == "running":
        click.echo(
            "the run applies it at the start of its next step (spade-async steer RUN_DIR list shows the outcome)"
        )
    else:
        click.echo(f"note: the run is {queued.run_status}; it applies the request when it is resumed")


@click.group("steer")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.pass_context
def steer(ctx: click.Context, run_dir: str) -> None:
    """Steer the run in RUN_DIR while it trains: the request is applied by the run between steps."""
    RunDir(Path(run_dir)).check_database()  # a damaged database: one line, nothing touched (none: fine)
    ctx.obj = run_dir


@steer.command("retire")
@click.argument("env_id")
@click.option("--reason", default="", help="Why (recorded with the action and shown in the event log).")
@click.pass_obj
def retire(run_dir: str, env_id: str, reason: str) -> None:
    """Take ENV_ID (an id prefix, as the TUI shows it) out of the live set now."""
    _queue(run_dir, "retire", {"env_id": env_id, "reason": reason})


@steer.command("pin")
@click.argument("env_id")
@click.pass_obj
def pin(run_dir: str, env_id: str) -> None:
    """Keep ENV_ID live in every next generation (a valid retired one comes back)."""
    _queue(run_dir, "pin", {"env_id": env_id})


@steer.command("unpin")
@click.argument("env_id")
@click.pass_obj
def unpin(run_dir: str, env_id: str) -> None:
    """Let a pinned ENV_ID leave with its generation."""
    _queue(run_dir, "unpin", {"env_id": env_id})


@steer.command("inject")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--skill", default="", help="Skill to file it under (default: its SKILL constant, else 'unknown').")
@click.option("--pin", "pinned", is_flag=True, help="Also pin it (else it leaves with the current generation).")
@click.pass_obj
def inject(run_dir: str, file: Path, skill: str, pinned: bool) -> None:
    """Add the environment in FILE to the live set, after the run's sandbox validation admits it."""
    try:
        code = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        click.echo(f"error: {file}: cannot read ({exc.__class__.__name__}: {exc})", err=True)
        sys.exit(EXIT_INVALID)
    _queue(run_dir, "inject", {"code": code, "name": file.name, "skill": skill, "pin": pinned})


@steer.command("band")
@click.argument("low", type=float)
@click.argument("high", type=float)
@click.pass_obj
def band(run_dir: str, low: float, high: float) -> None:
    """Set the target win-rate band to [LOW, HIGH] for the rest of the run."""
    _queue(run_dir, "band", {"low": low, "high": high})


@steer.command("designer-share")
@click.argument("share", type=float)
@click.pass_obj
def designer_share(run_dir: str, share: float) -> None:
    """Design SHARE of selfplay.envs_per_step per generation (0 pauses design: train the agent only)."""
    _queue(run_dir, "designer_share", {"share": share})


@steer.command("list")
@click.pass_obj
def list_actions(run_dir: str) -> None:
    """Every request: when, who, what, its status and the step it took effect at."""
    from spade_async.memory.readonly import open_readonly

    try:
        conn = open_readonly(Path(run_dir) / DB_NAME)
    except FileNotFoundError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    try:
        rows = read_actions(conn)
    finally:
        conn.close()
    if not rows:
        click.echo("no steering actions")
        return
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created_at))
        at = f" at step {r.step + 1}" if r.step is not None else ""
        line = f"#{r.id} {when} {r.who}: {r.summary} [{r.status}{at}]"
        click.echo(terminal_safe(line + (f" {r.message}" if r.message else "")))
