"""One base for every error meant to be read by a person.

Why one base: the CLI and the run's console catch :class:`UserError` once and print its
message as one line (``error: ...``); anything else is a bug and leaves a traceback in the
run folder. A new error a person should read subclasses it; nobody keeps a list by hand.
"""

from __future__ import annotations


class UserError(Exception):
    """Something a person can act on; the message says what is wrong and what to do.

    ``exit_code`` is the process status a command exits with when this reaches it: 1 for a
    run or command that could not finish, 2 for bad input (a config, a usage mistake).
    """

    exit_code: int = 1
