"""Click's own usage errors in the project's one-line style.

Why: a mistyped option, a missing argument, a bad value or an unknown command made click
print its multi-line block (``Usage: ...``, ``Try '... --help' for help.``, ``Error: ...``)
while every other mistake prints ``error: <what, and what to do>`` (cli/errors.py).
The top-level group (``spade-async``, cli.py) routes every :class:`click.UsageError` raised
while parsing any of its commands through :func:`one_line_usage_errors`, so one handler
covers every command, present and future: ``error: no such option '--foo'; did you mean
'--force'? (spade-async run --help lists the options)``, exit status 2. ``--help`` and a
group called without a subcommand (click prints the help) are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import click

from spade_async.cli.errors import UsageProblem

_HELP_ERRORS: tuple[type[click.UsageError], ...] = tuple(
    getattr(click.exceptions, name) for name in ("NoArgsIsHelpError",) if hasattr(click.exceptions, name)
)
"""Usage errors that are really help (click >= 8.2 raises one for a group given no subcommand)."""


def _sentence(text: str) -> str:
    """Click's message as a clause of ours: one line, no final period, lower-case first
    letter (unless it starts an acronym), later sentences joined with ``;``."""
    text = " ".join(text.split()).rstrip(".")
    text = re.sub(r"\. (?=[A-Z][a-z])", "; ", text)
    text = re.sub(r"; ([A-Z])(?=[a-z])", lambda m: "; " + m.group(1).lower(), text)
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        text = text[0].lower() + text[1:]
    return text


def _suggestion(possibilities: Sequence[str]) -> str:
    quoted = [repr(p) for p in possibilities]
    return "did you mean " + (quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]) + "?"


def _failing_command(exc: click.UsageError, root: click.Context, argv: Sequence[str]) -> tuple[str, click.Command]:
    """The command path (``spade-async export adapter``) and command that was parsing when
    ``exc`` was raised: the exception's context when click attached one, else the deepest
    subcommand named by ``argv`` (click raises some option errors before it has a context)."""
    if exc.ctx is not None:
        return exc.ctx.command_path, exc.ctx.command
    path, command = [root.command_path], root.command
    for token in argv:
        if not isinstance(command, click.Group):
            break
        sub = command.get_command(root, token)
        if sub is None:
            break
        path.append(token)
        command = sub
    return " ".join(path), command


def one_line(exc: click.UsageError, root: click.Context, argv: Sequence[str]) -> UsageProblem:
    """``exc`` as one line in the project's style (exit status 2): click's message, its
    "did you mean" suggestion when it made one, and which ``--help`` to read."""
    possibilities = getattr(exc, "possibilities", None)  # NoSuchOption; NoSuchCommand (click >= 8.4)
    message = _sentence(exc.message if possibilities else exc.format_message())
    if possibilities:
        message += "; " + _suggestion(possibilities)
    path, command = _failing_command(exc, root, argv)
    if isinstance(exc, click.NoSuchOption | click.BadOptionUsage) or isinstance(
        getattr(exc, "param", None), click.Option
    ):
        what = "lists the options"
    elif isinstance(command, click.Group):
        what = "lists the commands"
    else:
        what = "shows the usage"
    return UsageProblem(f"{message} ({path} --help {what})")


@contextmanager
def one_line_usage_errors(root: click.Context, argv: Sequence[str]) -> Iterator[None]:
    """Re-raise a click usage error from the block as :func:`one_line`'s
    :class:`UsageProblem`; a bare group's help (click's ``NoArgsIsHelpError``) passes."""
    try:
        yield
    except click.UsageError as exc:
        if isinstance(exc, _HELP_ERRORS):
            raise  # `spade-async config`: click prints the group's help, as before
        raise one_line(exc, root, argv) from None
