"""Errors of the cluster layer, importable without Ray (the launcher lists them as known)."""

from __future__ import annotations


class ClusterError(Exception):
    """The Ray cluster cannot be reached or cannot host the run; the message says what to do."""
