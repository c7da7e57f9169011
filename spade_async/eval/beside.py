"""The request side of a task that runs beside the pipeline's stages (the in-loop eval, the
archive re-evaluation).

Why one base class: both must never hold the learner. After each step the consumer calls
``request``, which never blocks: the zero-buffer stream takes a request only while the task is
waiting for one, so a request due while a round is still running is dropped and counted
(``skipped``). ``finish`` closes the stream, and with ``drain`` waits until the task has set
``done`` (after its last round, or at once when it is off).
"""

from __future__ import annotations

import anyio


class BesideTask:
    """Requests every ``every`` steps (0: off) to a task that serves them one at a time."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.enabled = every > 0
        """Off from the start (``every`` = 0) or switched off after the task failed."""
        self.skipped = 0
        """Due requests dropped because a round was still running."""
        self.done = anyio.Event()
        """Set by the task when it will serve no more requests."""
        self._send, self._receive = anyio.create_memory_object_stream[int](0)
        if not self.enabled:
            self.done.set()

    def due(self, step: int) -> bool:
        """A round is due after step ``step`` (subclasses add their own conditions)."""
        return self.enabled and (step + 1) % self.every == 0

    def request(self, step: int) -> None:
        """After step ``step`` trained: start a round if one is due and none is running."""
        if not self.due(step):
            return
        try:
            self._send.send_nowait(step)
        except anyio.WouldBlock:
            self.skipped += 1
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # switched off after a failure
            pass

    async def finish(self, *, drain: bool) -> None:
        """No more requests; with ``drain``, wait for a round in flight to finish."""
        self._send.close()
        if drain:
            await self.done.wait()
