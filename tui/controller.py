"""The hook through which the TUI steers a run it started itself.

Why a protocol and not the orchestrator: the TUI must not import the training stack, and it
must also work attached to a run owned by another process (then it gets no controller and
only watches). Whoever starts a run and the TUI in one process passes an object with these
members to ``SpadeApp(controller=...)``.

Contract for implementers:

- Every method is called on the Textual event loop's thread and must return at once
  (set a flag or an ``anyio.Event``; never wait for the pipeline to drain here).
- ``pause()`` stops new work from starting (in-flight work may finish); ``resume()`` undoes it.
  ``paused`` reports the current state (the TUI shows it in the header).
- ``request_stop()`` asks the run to end cleanly (finish or abandon the current step, write
  what it must, mark the run row). The TUI quits right after calling it; the caller that
  started both decides how long to wait for the run.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class RunController(Protocol):
    @property
    def paused(self) -> bool: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def request_stop(self) -> None: ...
