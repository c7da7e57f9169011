"""Exceptions of the sandbox; every message is meant to be shown to a person as is.

Why one base class: callers (rollouts, validation, the designer's penalty) treat any failure
of generated code the same way (discard the env, score the candidate), and only sometimes
care which kind it was.
"""

from __future__ import annotations

from spade_async.util.errors import UserError


class SandboxError(Exception):
    """Base of every sandbox failure. ``output`` holds the env's captured prints, if any."""

    def __init__(self, message: str, *, output: str = "") -> None:
        super().__init__(message)
        self.output = output


class EnvTimeout(SandboxError):
    """A call (or the spawn) did not answer within its time limit; the child was killed."""


class EnvCrashed(SandboxError):
    """The env code raised, or its process died; the child was killed."""


class EnvProtocolError(SandboxError):
    """The child answered with something invalid (wrong shape, non-finite, too large, forged)."""


class RewardOutOfRange(EnvProtocolError):
    """A step reward outside [0, 1]: an environment error, never clipped into a win."""


class IsolationTooLow(SandboxError, UserError):
    """The probed isolation level is below ``sandbox.min_isolation``; no generated code may run."""
