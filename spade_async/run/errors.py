"""The run layer's one error for a person: why a run cannot start or continue, and what to do.

Why its own module: the run folder's preparation, the checkpointer's restore and the launcher
all raise it, and the launcher turns it into one line (no traceback); none of them should
import another just for the class.
"""

from __future__ import annotations

from spade_async.util.errors import UserError


class RunError(UserError):
    """A run cannot start or continue; the message says why and what to do."""
