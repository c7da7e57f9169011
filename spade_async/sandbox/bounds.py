"""Controller-side bounds on what an environment child sends, checked on the decoded reply.

Why here and not (only) in the child: the child runs the environment's code, so any check made
there is under the environment's control. A ``dict``/``list`` subclass can hide its children
from a walk while the encoder still writes them, and executed code can write a reply straight
onto its protocol socket. So the controller checks the data it actually decoded: nesting depth,
number of containers and items, the length of every string and of the top-level text fields.
Everything downstream (tool schemas shown to the prompt renderer, admission's reason lists, the
store) can then rely on data of bounded shape. The walk is iterative (no recursion a deep reply
could exhaust), stops at the first violation, and costs nothing for an empty ``info``.

The JSON decoder itself refuses nesting deeper than the interpreter's recursion limit (msgspec
raises ``RecursionError``, which the pool turns into the environment's failure), so the walk
below only ever sees data that decoded.
"""

from __future__ import annotations

from typing import Any

from spade_async.sandbox.protocol import Reply

MAX_DEPTH = 32
"""Deepest nesting of lists/dicts accepted in ``info``, ``static`` and ``actions``."""
MAX_CONTAINERS = 10_000
"""Most lists/dicts in one reply's structured fields."""
MAX_ITEMS = 100_000
"""Most values (containers, scalars and keys) in one reply's structured fields."""
MAX_STRING_CHARS = 65_536
"""Longest string (or key) inside ``info``, ``static`` or ``actions``."""
MAX_ERROR_CHARS = 4_000
"""Longest ``error`` text kept from a reply (the child's own messages stay below it); longer is cut."""
MAX_OUTPUT_CHARS = 16_384
"""Longest captured-output text kept from a reply (the child caps prints at ``output_cap``); longer is cut."""
MAX_NAME_CHARS = 256
"""Longest ``class_name`` and ``kind``."""


class ReplyOutOfBounds(ValueError):
    """A decoded reply is larger or deeper than the controller accepts."""


def check_value(value: Any, what: str) -> None:
    """Raise :class:`ReplyOutOfBounds` when ``value`` exceeds the depth, count or string limits.

    Iterative, linear in the size of ``value`` and stopped at the first violation. Only exact
    JSON types come out of the decoder; subclasses are walked through the base class methods,
    so whatever a subclass claims, its real children are counted.
    """
    if isinstance(value, str):
        if len(value) > MAX_STRING_CHARS:
            raise ReplyOutOfBounds(f"{what} holds a string of {len(value)} characters (limit {MAX_STRING_CHARS})")
        return
    if not isinstance(value, (dict, list, tuple)):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    containers = items = 0
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ReplyOutOfBounds(f"{what} nests lists/dicts more than {MAX_DEPTH} levels deep")
        containers += 1
        if containers > MAX_CONTAINERS:
            raise ReplyOutOfBounds(f"{what} holds more than {MAX_CONTAINERS} lists/dicts")
        if isinstance(item, dict):
            items += 2 * dict.__len__(item)
            for key in dict.keys(item):
                if isinstance(key, str) and len(key) > MAX_STRING_CHARS:
                    raise ReplyOutOfBounds(f"{what} holds a key of {len(key)} characters (limit {MAX_STRING_CHARS})")
            children: Any = dict.values(item)
        else:
            items += len(item)
            children = list.__iter__(item) if isinstance(item, list) else tuple.__iter__(item)
        if items > MAX_ITEMS:
            raise ReplyOutOfBounds(f"{what} holds more than {MAX_ITEMS} values")
        for child in children:
            if isinstance(child, str):
                if len(child) > MAX_STRING_CHARS:
                    raise ReplyOutOfBounds(
                        f"{what} holds a string of {len(child)} characters (limit {MAX_STRING_CHARS})"
                    )
            elif isinstance(child, (dict, list, tuple)):
                stack.append((child, depth + 1))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters not kept]"


def check_reply(reply: Reply) -> None:
    """Raise :class:`ReplyOutOfBounds` when a structured field of ``reply`` is out of bounds;
    cut its ``error`` and ``output`` texts to their limits (they are only ever shown).

    The common step reply (short texts, a small ``info``) takes the first lines only.
    """
    if len(reply.error) > MAX_ERROR_CHARS:
        reply.error = _cut(reply.error, MAX_ERROR_CHARS)
    if len(reply.output) > MAX_OUTPUT_CHARS:
        reply.output = _cut(reply.output, MAX_OUTPUT_CHARS)
    if reply.info:
        check_value(reply.info, "info")
    if reply.static or reply.actions or reply.notes or reply.layers or reply.class_name:
        _check_rare(reply)


def _check_rare(reply: Reply) -> None:
    """The fields only load, probe, inspect and solution replies carry."""
    if len(reply.class_name) > MAX_NAME_CHARS or len(reply.kind) > MAX_NAME_CHARS:
        raise ReplyOutOfBounds(f"class name or kind longer than {MAX_NAME_CHARS} characters")
    if reply.static:
        check_value(reply.static, "static facts")
    if reply.actions:
        check_value(reply.actions, "solution()")
    if len(reply.layers) > 64 or len(reply.notes) > 64:
        raise ReplyOutOfBounds("more than 64 layer entries")
    if any(len(note) > MAX_STRING_CHARS for note in reply.notes.values()):
        raise ReplyOutOfBounds("a layer note is too long")
