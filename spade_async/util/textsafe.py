"""Make text written by generated code safe to show on a terminal.

Why: environment observations, prints, errors, hints and source code are written by the
policy model. Raw, an ``ESC`` sequence in them can retitle the terminal, clear the screen,
move the cursor over earlier output, hide text, or (on some terminals) answer back into the
input; bidirectional-override characters can make shown code read differently from what
runs. Every place that shows environment text on a terminal passes it through
:func:`terminal_safe` first: control characters become visible escapes (``\\x1b``,
``\\u202e``), newlines and tabs stay, everything printable is untouched.
"""

from __future__ import annotations

import re
import unicodedata

_KEEP = "\n\t"
_BIDI_AND_INVISIBLE = (
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2060\u2061\u2062\u2063\u2064\u2066\u2067\u2068\u2069\ufeff"
)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _BIDI_AND_INVISIBLE + "\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: object) -> str:
    """``text`` as a string in which no character can act on a terminal (newline and tab kept).

    Carriage returns are escaped too: a bare ``\\r`` lets a line overwrite itself.
    """
    value = text if isinstance(text, str) else str(text)
    if value.isprintable():
        return value
    return _UNSAFE.sub(_escape, value)


def is_terminal_safe(text: str) -> bool:
    """True when ``text`` holds no character :func:`terminal_safe` would escape."""
    return _UNSAFE.search(text) is None and not any(unicodedata.category(ch) == "Cc" and ch not in _KEEP for ch in text)
