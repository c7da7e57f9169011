"""Pulling the environment code, its hint and the agent's action out of free model text.

Why a module of its own, with structured results: a 135M-parameter designer writes fences
it never closes, hints in three different shapes and code with stray prose around it.
Every way of failing is a *reason* the designer is penalised for (and the repair prompt
shows), so the extraction reports why it failed instead of returning ``None``.
Everything here is pure string work: model text is never executed, compiled or even parsed as
Python in the trainer process (a hostile completion can make ``ast`` recurse or allocate
without bound); whatever needs the syntax tree asks a sandbox child.

Accepted forms
--------------
Code (:func:`extract_code`):

1. Fenced blocks opened by a line `````python`` (also ``py``, ``python3``, any case) and
   closed by a line `````. Of several, the last block that contains a ``class`` statement
   wins (models often add a usage block after the environment), else the last block.
2. Failing that, unlabelled ````` blocks, chosen the same way, if they contain a ``class``.
3. Failing that, a completion with no fence (or only a stray closing one) whose first line
   reads as Python (``import``, ``from``, ``class``, ``def``, ``@``, ``#``, a docstring or an
   ``UPPER_CASE =`` constant) and that has a ``class`` statement (a model that forgot the
   fences but wrote a clean file); whether it really parses is the sandbox's verdict.

An opening fence with no closing fence after it (output cut at the token limit) is
reported as :data:`REASON_CUT_OFF` when no complete block exists.

Hint (:func:`extract_hint`): a labelled section in the prose outside code blocks: a line
``HINT: ...`` or ``Hint - ...`` (case-insensitive; markdown like ``**Hint:**``, ``> Hint:``,
``- hint:`` and a heading ``## Hint`` allowed), taking the rest of that line and the following
lines up to a blank line, fence, heading or ``Label:`` line. The ``HINT = "..."`` constant in
the code is *not* read here: the sandbox child that inspects the code for admission returns its
module-level string constants (:meth:`SandboxPool.inspect`), and the designer prefers that one.

Empty hints and placeholders (``...``, ``TODO``, ``<hint>``) count as missing.

Thinking (:func:`strip_thinking`): a reasoning model (Qwen3) may open its reply with a
``<think>...</think>`` block; the roles render their prompts with thinking off, but a config
can turn it on. The block is plain text to everything above (code written while thinking
would be read as the design, a ``\\boxed{}`` pondered there as the action), so every parser
here drops it first. A block never closed (the completion was cut off while thinking) drops
the rest of the text: nothing after ``<think>`` was an answer. A ``</think>`` with no opening
tag before it (templates that open the block in the prompt) drops everything up to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spade_async.envs.contract import parse_boxed

REASON_NO_CODE = "no ```python code block found"
REASON_CUT_OFF = "cut off before closing fence"
REASON_EMPTY = "empty code block"

MAX_HINT_CHARS = 600
"""Hints are cut to this many characters: they are pasted into every hinted first turn."""

_OPEN_RE = re.compile(r"^[ \t]*```[ \t]*(?P<lang>[A-Za-z0-9_+-]*)[ \t]*$")
_CLOSE_RE = re.compile(r"^[ \t]*```[ \t]*$")
_PY_LANGS = frozenset({"python", "py", "python3"})
_CLASS_RE = re.compile(r"^class\s+\w+\s*[(:]", re.MULTILINE)
_HINT_LABEL_RE = re.compile(
    r"^[ \t>]*(?:[-*+][ \t]+)?(?:#{1,6}[ \t]*)?[*_]*hints?[*_]*[ \t]*"
    r"(?:[:\u2014-][*_]*[ \t]*(?P<rest>.*)|$)",
    re.IGNORECASE,
)
"""A hint label line: ``HINT: ...``, ``**Hint:** ...``, ``Hint - ...``, ``## Hint``, ``- hint: ...``."""
_HEADING_RE = re.compile(r"^[ \t]*(?:#{1,6}[ \t]|\*\*[^*]+\*\*[ \t]*:?[ \t]*$|[A-Z][A-Za-z ]{0,30}:)")
_CODE_START_RE = re.compile(
    r"""^(?:import\s|from\s|class\s|def\s|async\s+def\s|@|#|\"\"\"|'''|[A-Z_][A-Z0-9_]*\s*(?::[^=]+)?=)"""
)
"""First line of a file that reads as Python rather than prose."""
_PLACEHOLDERS = frozenset({"", "...", "…", "todo", "tbd", "<hint>", "hint", "none", "n/a"})


_THINK_RE = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL)


def strip_thinking(text: str) -> str:
    """``text`` without its ``<think>...</think>`` blocks (an unclosed one runs to the end).

    >>> strip_thinking("<think>```python\\nclass Draft: pass\\n```</think>The answer")
    'The answer'
    >>> strip_thinking("plain reply")
    'plain reply'
    """
    if "think>" not in text:
        return text
    head, closed, tail = text.partition("</think>")
    if closed and "<think>" not in head:  # the template opened the block in the prompt
        text = tail
    return _THINK_RE.sub("", text).lstrip("\n")


@dataclass(frozen=True)
class CodeExtraction:
    """Result of :func:`extract_code`: ``code`` when found, else a human-readable ``reason``.

    ``code`` is also filled (with the partial text) when the block was cut off, so a repair
    prompt or the TUI can show what was written; ``ok`` is False then.
    """

    code: str | None
    reason: str | None = None
    cut_off: bool = False

    @property
    def ok(self) -> bool:
        return self.reason is None and bool(self.code)


@dataclass(frozen=True)
class DesignerOutput:
    """Everything parsed out of one designer completion."""

    code: str | None
    hint: str | None
    """The hint written in the prose (a ``HINT`` constant in the code is read by the sandbox)."""
    reason: str | None
    cut_off: bool = False

    @property
    def ok(self) -> bool:
        return self.reason is None and bool(self.code)


@dataclass(frozen=True)
class _Block:
    lang: str
    body: str
    closed: bool


def _blocks(text: str) -> list[_Block]:
    """Fenced blocks in order; a final block without a closing fence has ``closed=False``."""
    blocks: list[_Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opened = _OPEN_RE.match(lines[i])
        if not opened:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not _CLOSE_RE.match(lines[j]):
            j += 1
        blocks.append(_Block(opened["lang"].lower(), "\n".join(lines[i + 1 : j]), j < len(lines)))
        i = j + 1
    return blocks


def _pick(bodies: list[str]) -> str:
    with_class = [b for b in bodies if _CLASS_RE.search(b)]
    return (with_class or bodies)[-1]


def _reads_as_a_file_with_class(text: str) -> bool:
    first = next((line for line in text.split("\n") if line.strip()), "")
    return bool(_CODE_START_RE.match(first)) and bool(_CLASS_RE.search(text))


def extract_code(completion: str) -> CodeExtraction:
    """The environment code in a designer completion (see the module docstring for the rules).

    >>> extract_code("Here:\\n```python\\nclass A(GameEnv):\\n    pass\\n```").code
    'class A(GameEnv):\\n    pass'
    >>> extract_code("```python\\nclass A(GameEnv):\\n").reason
    'cut off before closing fence'
    """
    text = (completion or "").replace("\r\n", "\n").replace("\r", "\n")
    blocks = _blocks(text)
    python = [b for b in blocks if b.lang in _PY_LANGS]
    closed_py = [b.body for b in python if b.closed]
    if closed_py:
        return _checked(_pick(closed_py))
    bare = [b.body for b in blocks if b.lang == "" and b.closed and _CLASS_RE.search(b.body)]
    if bare:
        return _checked(bare[-1])
    # An unclosed ```python block, or an unclosed bare one with text in it, was cut off; a
    # lone bare fence on the last line is a stray closing fence (opening one forgotten).
    open_tail = [b for b in blocks if not b.closed and (b.lang in _PY_LANGS or (b.lang == "" and b.body.strip()))]
    if open_tail:
        partial = open_tail[-1].body.strip("\n")
        return CodeExtraction(code=partial or None, reason=REASON_CUT_OFF, cut_off=True)
    if all(not b.closed and b.lang == "" for b in blocks):
        unfenced = "\n".join(line for line in text.split("\n") if not _OPEN_RE.match(line))
        if _reads_as_a_file_with_class(unfenced.strip()):
            return CodeExtraction(code=unfenced.strip("\n"))
    return CodeExtraction(code=None, reason=REASON_NO_CODE)


def _checked(body: str) -> CodeExtraction:
    body = body.strip("\n")
    if not body.strip():
        return CodeExtraction(code=None, reason=REASON_EMPTY)
    return CodeExtraction(code=body)


def clean_hint(text: str | None, max_chars: int = MAX_HINT_CHARS) -> str | None:
    """Normalise a hint: strip a leading ``Hint:`` label, quotes, fences and extra whitespace;
    cap its length at a word boundary; ``None`` for empty text or a placeholder.

    Also the parser for the separate hint call's reply (prompt ``hint.txt``).

    >>> clean_hint('  **Hint:** "Binary search   the range."  ')
    'Binary search the range.'
    >>> clean_hint("TODO") is None
    True
    """
    if text is None:
        return None
    lines = [line for line in strip_thinking(text).strip().split("\n") if not line.strip().startswith("```")]
    if lines:
        label = _HINT_LABEL_RE.match(lines[0])
        if label:
            lines[0] = label["rest"] or ""
    body = " ".join(" ".join(lines).split()).strip("*_ ")
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "\"'":
        body = body[1:-1].strip()
    if body.lower() in _PLACEHOLDERS or body.lower().strip(".") in _PLACEHOLDERS:
        return None
    if len(body) > max_chars:
        cut = body[:max_chars].rsplit(" ", 1)[0]
        body = (cut or body[:max_chars]).rstrip() + " ..."
    return body


def _hint_from_prose(text: str) -> str | None:
    """The first labelled hint section outside fenced blocks."""
    lines = text.split("\n")
    inside = False
    for i, line in enumerate(lines):
        if inside:
            inside = not _CLOSE_RE.match(line)
            continue
        if _OPEN_RE.match(line):
            inside = True
            continue
        label = _HINT_LABEL_RE.match(line)
        if not label:
            continue
        parts = [label["rest"] or ""]
        for follow in lines[i + 1 :]:
            if _OPEN_RE.match(follow) or _HEADING_RE.match(follow) or _HINT_LABEL_RE.match(follow):
                break
            if not follow.strip():
                if any(p.strip() for p in parts):
                    break
                continue
            parts.append(follow)
        hint = clean_hint("\n".join(parts))
        if hint:
            return hint
    return None


def extract_hint(completion: str) -> str | None:
    """The hint written in the prose of a designer completion, or ``None`` (see the accepted
    forms; the ``HINT`` constant in the code comes from the sandbox's inspection instead).

    >>> extract_hint("HINT: guess the middle.\\n\\nmore text")
    'guess the middle.'
    >>> extract_hint('```python\\nHINT = "Scan two corners."\\nclass A: pass\\n```') is None
    True
    """
    return _hint_from_prose((completion or "").replace("\r\n", "\n"))


def parse_designer(completion: str) -> DesignerOutput:
    """Code and prose hint of one designer completion (its thinking dropped), with a failure reason."""
    completion = strip_thinking(completion or "")
    extraction = extract_code(completion)
    return DesignerOutput(
        code=extraction.code,
        hint=extract_hint(completion),
        reason=extraction.reason,
        cut_off=extraction.cut_off,
    )


def parse_action(text: str) -> str | None:
    """The agent's command: the content of the last ``\\boxed{...}``, or ``None`` when there
    is none or it is empty. Same matcher as the environments' ``GameEnv.parse_action``, but
    without its bare-text fallback: an unboxed reply is "no action" for the agent reward.

    >>> parse_action("I will scan first. \\\\boxed{scan 0 0}")
    'scan 0 0'
    >>> parse_action("no box here") is None
    True
    """
    found = parse_boxed(strip_thinking(text or ""))
    return found or None
