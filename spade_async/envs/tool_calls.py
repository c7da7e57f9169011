"""Tool calls out of model text: Qwen3's ``<tool_call>`` JSON and OpenAI-style JSON objects.

Why one parser shared by both sides: the agent harness (trainer process) parses the model's
turn to validate arguments and render tool messages, and the sandboxed tool-use environment
parses the action it is sent (a canonical call, a ``solution()`` string, or garbage during
admission). Both must agree on what counts as a call, so they use this module. It is pure
standard library (the sandbox's fork-server imports it) and never raises on any input: every
way a call can be malformed comes back as a :class:`CallError` whose message is shown to the
agent as the tool's answer.

Accepted forms
--------------
1. Qwen3 / Hermes: ``<tool_call>{"name": "f", "arguments": {...}}</tool_call>``, several per
   turn allowed; a final block whose closing tag is missing (cut at the token limit, or the
   stop string) is still read.
2. OpenAI-style JSON objects anywhere in the text (also inside a ```json fence):
   ``{"name": "f", "arguments": {...}}``, ``{"type": "function", "function": {"name": "f",
   "arguments": "<JSON string>"}}`` (the API's form, arguments as a string), and an assistant
   message ``{"tool_calls": [...]}``.

``arguments`` may be an object or a string holding a JSON object; a missing ``arguments``
means ``{}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
MAX_CALLS_PER_TURN = 4
"""Calls read from one turn; more are answered with an error."""
MAX_CALL_CHARS = 8000
"""Longest call text looked at (a runaway completion is not parsed past this)."""

_DECODER = json.JSONDecoder()
_CALL_KEYS = ("name", "function", "tool_calls")


@dataclass(frozen=True)
class ToolCall:
    """One well-formed call: a tool name and its arguments object."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        """The canonical OpenAI-style object, as sent to the environment."""
        return json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)


@dataclass(frozen=True)
class CallError:
    """A call the model attempted but wrote wrongly; ``message`` is what the agent is told."""

    message: str


Parsed = ToolCall | CallError


def _arguments(raw: Any) -> dict[str, Any] | str:
    """The arguments object, or an error message."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return {}
        try:
            raw = json.loads(text)
        except (ValueError, RecursionError) as exc:
            return f"the arguments string is not valid JSON ({exc})"
    if not isinstance(raw, dict):
        return f"arguments must be a JSON object, got {type(raw).__name__}"
    return raw


def call_from_object(obj: Any) -> Parsed:
    """A call from one decoded JSON value in any accepted shape (never raises)."""
    if not isinstance(obj, dict):
        return CallError(f"a tool call must be a JSON object, got {type(obj).__name__}")
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return CallError('the tool call has no "name" (write {"name": "<tool>", "arguments": {...}})')
    args = _arguments(obj.get("arguments", obj.get("parameters")))
    if isinstance(args, str):
        return CallError(f"call to {name.strip()}: {args}")
    return ToolCall(name.strip(), args)


def _calls_from_value(value: Any) -> list[Parsed]:
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        return [call_from_object(item) for item in value["tool_calls"]]
    if isinstance(value, list):
        return [call_from_object(item) for item in value]
    return [call_from_object(value)]


def _tagged(text: str) -> list[Parsed]:
    """Calls in ``<tool_call>`` blocks (the last block may be unclosed)."""
    found: list[Parsed] = []
    start = text.find(OPEN_TAG)
    while start >= 0:
        body_start = start + len(OPEN_TAG)
        end = text.find(CLOSE_TAG, body_start)
        body = (text[body_start:end] if end >= 0 else text[body_start:]).strip()
        body = re.sub(r"^```(?:json)?\s*|\s*```$", "", body)
        if not body:
            found.append(CallError("empty <tool_call> block"))
        else:
            try:
                value, _ = _DECODER.raw_decode(body)
            except (ValueError, RecursionError) as exc:
                found.append(CallError(f"the tool call is not valid JSON ({exc})"))
            else:
                found.extend(_calls_from_value(value))
        if end < 0:
            break
        start = text.find(OPEN_TAG, end + len(CLOSE_TAG))
    return found


def _bare_objects(text: str) -> list[Parsed]:
    """OpenAI-style call objects anywhere in the text (first decodable object per position)."""
    found: list[Parsed] = []
    attempted_error: str | None = None
    i = text.find("{")
    while i >= 0:
        try:
            value, end = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError) as exc:
            if attempted_error is None and re.match(r'\{\s*"(?:name|function|tool_calls|type)"', text[i:]):
                attempted_error = f"the tool call is not valid JSON ({exc})"
            i = text.find("{", i + 1)
            continue
        if isinstance(value, dict) and any(key in value for key in _CALL_KEYS):
            found.extend(_calls_from_value(value))
            i = text.find("{", end)
        else:
            i = text.find("{", i + 1)
    if not found and attempted_error is not None:
        return [CallError(attempted_error)]
    return found


def parse_tool_calls(text: str | None) -> list[Parsed]:
    """Every call the text attempts, in order (empty when it attempts none); never raises.

    >>> parse_tool_calls('<tool_call>\\n{"name": "add", "arguments": {"x": 1}}\\n</tool_call>')
    [ToolCall(name='add', arguments={'x': 1})]
    >>> parse_tool_calls('{"type": "function", "function": {"name": "f", "arguments": "{}"}}')
    [ToolCall(name='f', arguments={})]
    >>> parse_tool_calls('<tool_call>{"name": "f", "arguments": {</tool_call>')[0].message[:31]
    'the tool call is not valid JSON'
    >>> parse_tool_calls("I am done.")
    []
    """
    if not isinstance(text, str):
        return []
    text = text[:MAX_CALL_CHARS]
    calls = _tagged(text) if OPEN_TAG in text else _bare_objects(text)
    if len(calls) > MAX_CALLS_PER_TURN:
        extra = len(calls) - MAX_CALLS_PER_TURN
        calls = [
            *calls[:MAX_CALLS_PER_TURN],
            CallError(f"at most {MAX_CALLS_PER_TURN} calls per turn; {extra} ignored"),
        ]
    return calls


def format_result(value: Any, limit: int = 2000) -> str:
    """A tool's return value as the text of its tool message (JSON for data), capped."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            text = repr(value)
    return text if len(text) <= limit else text[:limit] + " ... (truncated)"
