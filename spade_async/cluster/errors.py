"""Errors of the cluster layer, importable without Ray (the launcher lists them as known)."""

from __future__ import annotations

from spade_async.util.errors import UserError


class ClusterError(UserError):
    """The Ray cluster cannot be reached or cannot host the run; the message says what to do."""
