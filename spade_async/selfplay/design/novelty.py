"""Is a design new? Exact copies (up to comments and layout) of known environments are not.

Why its own module: the designer is rewarded for *new* environments (docs/rewards.md). A
design that reproduces an environment already in the run's memory (a seed, an earlier
design, the parent or an example shown in its own prompt) did no work, so it must not earn
the reward of the environment it copied. This module decides "same code" and keeps the set
of codes the run has already seen; ``generation`` applies the rule.

Same code means the same :func:`code_key`: the code's Python tokens with comments, blank
lines and spacing inside a line removed (indentation is kept as INDENT/DEDENT tokens, so
the structure still counts; string literals, docstrings included, count verbatim). Code the
tokenizer cannot read falls back to its whitespace-collapsed text. The key is computed
with the standard library's ``tokenize`` (a pure-Python lexer): nothing is compiled or run
in the trainer process. Near-copies (one constant or one line changed) are *not* copies:
they are admitted and scored on how they play like any other design.
"""

from __future__ import annotations

import hashlib
import io
import tokenize
from collections.abc import Iterable

_DROPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}


def normalised(code: str) -> str:
    """The code's tokens without comments and layout (see the module docstring).

    >>> normalised("x  =  1   # one\\n\\n\\ny = 2\\n") == normalised("x = 1\\ny = 2")
    True
    >>> normalised("x = 1") == normalised("x = 2")
    False
    """
    try:
        parts = []
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in _DROPPED:
                continue
            if tok.type == tokenize.NEWLINE:
                parts.append("\n")
            elif tok.type == tokenize.INDENT:
                parts.append("<INDENT>")
            elif tok.type == tokenize.DEDENT:
                parts.append("<DEDENT>")
            else:
                parts.append(tok.string)
        return " ".join(parts)
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError):  # IndentationError is a SyntaxError
        return " ".join(code.split())


def code_key(code: str) -> str:
    """sha256 hex of :func:`normalised` code: equal keys mean the same environment."""
    return hashlib.sha256(normalised(code).encode("utf-8")).hexdigest()


class KnownCodes:
    """The keys of every environment the run has recorded (any status), kept in step with the store.

    ``refresh`` takes the store's ``(id, code)`` rows; a key is computed once per id, so a long
    run tokenizes each stored environment once.
    """

    def __init__(self) -> None:
        self._by_id: dict[str, str] = {}

    def refresh(self, rows: Iterable[tuple[str, str]]) -> None:
        """Keep exactly the environments in ``rows`` (a resume may have dropped some)."""
        fresh: dict[str, str] = {}
        for env_id, code in rows:
            fresh[env_id] = self._by_id.get(env_id) or code_key(code)
        self._by_id = fresh

    def keys(self) -> set[str]:
        return set(self._by_id.values())


def copy_reason(
    code: str, *, shown: Iterable[str], known: set[str], library: frozenset[str] = frozenset()
) -> str | None:
    """Why ``code`` is not new (None when it is): a copy of code shown in its prompt, of memory,
    or of a file of the warm-start library the policy was trained on (``library``: their keys)."""
    key = code_key(code)
    if any(code_key(s) == key for s in shown):
        return "copy of an environment shown in its prompt (the designer is rewarded for new environments)"
    if key in known:
        return "copy of an environment already in memory (the designer is rewarded for new environments)"
    if key in library:
        return "copy of a warm-start library file (the designer is rewarded for new environments)"
    return None
