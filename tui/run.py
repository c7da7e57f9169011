"""`spade-async run` with a terminal attached: the TUI and the pipeline on one event loop.

Why one loop: Textual, aiosqlite and anyio all run on asyncio, so the app and the run share
a loop and a process; the app still reads the run only through the SQLite file (like any
other watcher), and steers it through :class:`PipelineController`. Console progress lines
would tear the TUI, so in this mode they go to ``RUN_DIR/run.log``.

Quitting with ``q`` asks first, then requests a clean stop: the step in flight finishes and
is checkpointed before the process exits.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

from spade_async.config import Config
from spade_async.run.assemble import (
    DB_NAME,
    check_run_dir,
    innermost,
    preflight,
    report_crash,
    run_pipeline,
)
from spade_async.util.errors import UserError


class PipelineController:
    """:class:`tui.controller.RunController` over a pipeline that may not exist yet."""

    def __init__(self) -> None:
        self._pipeline: Any = None
        self._paused = False
        self._stop = False

    def attach(self, pipeline: Any) -> None:
        self._pipeline = pipeline
        if self._paused:
            pipeline.pause()
        if self._stop:
            pipeline.request_stop()

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        self._paused = True
        if self._pipeline is not None:
            self._pipeline.pause()

    def resume(self) -> None:
        self._paused = False
        if self._pipeline is not None:
            self._pipeline.resume()

    def request_stop(self) -> None:
        self._stop = True
        if self._pipeline is not None:
            self._pipeline.request_stop()

    @property
    def stopped(self) -> bool:
        return self._stop


def run_with_tui(cfg: Config, *, sync: bool, resume: bool, force: bool) -> int:
    """Run ``cfg`` under the TUI; returns the process exit status."""
    from .app import SpadeApp

    run_dir = Path(cfg.run.run_dir)
    try:  # as headless does: a config this machine cannot run, or a wrong folder, writes nothing
        preflight(cfg)
        check_run_dir(run_dir, resume)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    run_dir.mkdir(parents=True, exist_ok=True)
    log_path = run_dir / "run.log"
    controller = PipelineController()
    outcome: dict[str, Any] = {"status": 0, "error": None}

    async def main() -> None:
        app = SpadeApp(run_dir / DB_NAME, controller=controller)
        with log_path.open("a") as log:  # written from the loop thread only

            def report(line: str) -> None:
                log.write(line + "\n")
                log.flush()

            async def drive() -> None:
                try:
                    outcome["status"] = await run_pipeline(
                        cfg, sync=sync, resume=resume, force=force, report=report, on_ready=controller.attach
                    )
                    outcome["finished"] = True
                except Exception as group:  # shown after the app closes, never as a traceback
                    exc = innermost(group)
                    if not isinstance(exc, UserError):
                        report(f"traceback in {report_crash(run_dir, group)}")
                    outcome["status"], outcome["error"] = 1, f"{exc.__class__.__name__}: {exc}"
                    app.exit(1)

            async with anyio.create_task_group() as tg:
                tg.start_soon(drive)
                await app.run_async()
                controller.request_stop()  # the app is gone: finish the step in flight, checkpoint, exit

    print(f"spade-async: TUI attached; progress is logged to {log_path}", file=sys.stderr)
    anyio.run(main)
    if outcome["error"]:
        print(f"error: {outcome['error']}", file=sys.stderr)
    elif controller.stopped and not outcome.get("finished"):
        print(f"run stopped; resume with: spade-async resume {run_dir}", file=sys.stderr)
    return int(outcome["status"])
