"""Pause, resume and stop for a running pipeline, and who tells it so (the TUI, signals).

Why its own object: the producer, the consumer, the adapter publisher (its probe may stop the
run) and the evaluations beside the two stages all wait on "not paused" or ask for a stop;
handing each the pipeline for that made each depend on all of it. They get this instead.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import anyio

from spade_async.memory.store import Store

HEARTBEAT_EVERY_S = 10.0
"""How often a running pipeline stamps ``runs.heartbeat_at`` (the TUI flags a stale one)."""


class RunControl:
    """Whether the run may go on (not paused) and whether a stop was asked for."""

    def __init__(self) -> None:
        self._running = anyio.Event()
        self._running.set()  # set = running
        self.stop_requested = False

    def pause(self) -> None:
        self._running = anyio.Event()

    def resume(self) -> None:
        self._running.set()

    def request_stop(self) -> None:
        self.stop_requested = True
        self._running.set()

    async def wait(self) -> None:
        """Return while the run is not paused (at once, or when it is resumed or stopped)."""
        await self._running.wait()


async def heartbeat(store: Store) -> None:
    """Tell watchers this process still owns the run (see ``Store.heartbeat``)."""
    while True:
        if store.run_id is not None:
            await store.heartbeat()
        await anyio.sleep(HEARTBEAT_EVERY_S)


async def watch_signals(control: RunControl, scope: anyio.CancelScope, report: Callable[[str], None]) -> None:
    """Ctrl-C / SIGTERM: stop after the step in flight (its checkpoint is written)."""
    try:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _sig in signals:
                if control.stop_requested:
                    scope.cancel()  # second Ctrl-C: stop now; the last checkpoint stands
                    return
                # async mode: the producer's step in flight is finished and trained too (nothing wasted)
                report(
                    "stopping after the current step, and the next one if its rollouts are under way "
                    "(Ctrl-C again to stop now)"
                )
                control.request_stop()
    except (NotImplementedError, ValueError, RuntimeError):  # not the main thread (tests, TUI worker)
        await anyio.sleep_forever()
