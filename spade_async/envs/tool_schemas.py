"""Tool schemas as data: admission checks and argument validation, with the ``jsonschema`` library.

Why in the trainer and why a keyword allow-list: the schemas come from generated code, but
they are *data* (JSON returned by the sandboxed environment's reset), so checking them and
validating the agent's arguments against them happens here, in the agent harness, like an
OpenAI-style function-calling server does. Data from untrusted code still must not be able
to stall the trainer: ``pattern`` regexes could backtrack for minutes (Python's ``re`` has no
timeout) and ``$ref`` could point anywhere, so a tool schema may use only the keywords of
OpenAI function-calling schemas listed in :data:`SUPPORTED_KEYWORDS`; everything else is an
admission failure with its reason, and at play time a tool with such a schema answers every
call with an error instead of being validated.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from spade_async.envs.contract import RESERVED_NAMES, tool_schema
from spade_async.envs.tool_calls import CallError, Parsed, ToolCall

SUPPORTED_KEYWORDS: frozenset[str] = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "description",
        "title",
        "default",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "additionalProperties",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "examples",
        "minProperties",
        "maxProperties",
    }
)
"""JSON Schema keywords a tool's ``parameters`` may use (no ``pattern``, ``format``, ``$ref``)."""
MAX_SCHEMA_CHARS = 8000
"""Largest JSON text of one tool entry."""
MAX_DEPTH = 8
"""Deepest nesting of subschemas."""
MAX_TOOLS = 12
"""Most tools one environment may declare (they are all listed in every agent prompt)."""
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def _keyword_problems(schema: Any, where: str, depth: int = 0) -> list[str]:
    """Unsupported keywords or shapes anywhere in ``schema`` (subschemas walked by position)."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{where} must be a JSON Schema object, got {type(schema).__name__}"]
    if depth > MAX_DEPTH:
        return [f"{where} nests deeper than {MAX_DEPTH} levels"]
    problems = [
        f"{where} uses {key!r}, which tool schemas here do not support "
        f"(use only: {', '.join(sorted(SUPPORTED_KEYWORDS))})"
        for key in schema
        if key not in SUPPORTED_KEYWORDS
    ]
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            problems += _keyword_problems(sub, f"{where}.properties.{name}", depth + 1)
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), dict):
            problems += _keyword_problems(schema[key], f"{where}.{key}", depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                problems += _keyword_problems(sub, f"{where}.{key}[{i}]", depth + 1)
    return problems


def parameters_of(entry: Any) -> dict[str, Any]:
    """A tool's ``parameters`` schema (an empty object schema when it declares none)."""
    params = tool_schema(entry).get("parameters")
    return params if isinstance(params, dict) else {"type": "object", "properties": {}}


def tool_problems(entry: Any) -> list[str]:
    """Why one tool entry is not a usable function-calling schema (empty when it is)."""
    fn = tool_schema(entry)
    name = fn.get("name")
    label = f"tool {name!r}" if isinstance(name, str) else "a tool"
    try:
        size = len(json.dumps(entry))
    except (TypeError, ValueError, RecursionError):
        return [f"{label} is not JSON data"]
    if size > MAX_SCHEMA_CHARS:
        return [f"{label}'s schema is {size} characters; keep each tool under {MAX_SCHEMA_CHARS}"]
    if not fn:
        return [
            f'{label}: each tool must be {{"type": "function", "function": {{"name", "description", "parameters"}}}}'
        ]
    problems = []
    if not isinstance(name, str) or not _NAME_RE.match(name):
        problems.append(f"{label}: the name must be a Python identifier (letters, digits, _)")
    elif name in RESERVED_NAMES:
        problems.append(f"{label}: the name is taken by the ToolUseEnv base class; rename the tool and its method")
    if not isinstance(fn.get("description"), str) or not fn["description"].strip():
        problems.append(f"{label} has no description; say what it does and returns")
    params = fn.get("parameters", {"type": "object"})
    if not isinstance(params, dict) or params.get("type") != "object":
        problems.append(f'{label}: parameters must be a JSON Schema with "type": "object"')
        return problems
    keyword_problems = _keyword_problems(params, f"{label} parameters")
    if keyword_problems:
        return problems + keyword_problems
    try:
        Draft202012Validator.check_schema(params)
    except SchemaError as exc:
        problems.append(f"{label}: parameters is not valid JSON Schema: {exc.message}")
        return problems
    props = params.get("properties", {})
    missing = [r for r in params.get("required", []) if r not in props]
    if missing:
        problems.append(f"{label}: required names {missing} are not in its properties")
    return problems


def schema_problems(tools: Any) -> list[str]:
    """Why a tool list cannot be admitted (empty when every tool is a valid, supported schema)."""
    if not isinstance(tools, list) or not tools:
        return ["tools must be a non-empty list of function schemas"]
    if len(tools) > MAX_TOOLS:
        return [f"{len(tools)} tools declared; keep to at most {MAX_TOOLS}"]
    problems: list[str] = []
    seen: set[str] = set()
    for entry in tools:
        problems += tool_problems(entry)
        name = tool_schema(entry).get("name")
        if isinstance(name, str):
            if name in seen:
                problems.append(f"tool {name!r} is declared twice")
            seen.add(name)
    return problems


_PLACEHOLDERS: dict[str, Any] = {
    "string": "text",
    "integer": 1,
    "number": 1.5,
    "boolean": True,
    "array": [],
    "object": {},
    "null": None,
}


def _example_value(schema: Any) -> Any:
    """A value of the right shape for ``schema``: its first enum entry, const, or a placeholder."""
    if not isinstance(schema, dict):
        return "text"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    return _PLACEHOLDERS.get(kind, "text") if isinstance(kind, str) else "text"


@dataclass
class ToolBox:
    """The tools of one episode: names, schemas and a validator per usable tool."""

    tools: list[dict[str, Any]]

    def __post_init__(self) -> None:
        self.names: list[str] = []
        self._validators: dict[str, Draft202012Validator | None] = {}
        self.problems: list[str] = []
        """Why these tools break the contract (empty when every tool is usable); bounded work:
        more than :data:`MAX_TOOLS` tools are refused before any of them is looked at."""
        if len(self.tools) > MAX_TOOLS:
            self.problems.append(f"{len(self.tools)} tools declared; at most {MAX_TOOLS} are allowed")
            self.tools = []
            return
        for entry in self.tools:
            name = tool_schema(entry).get("name")
            if isinstance(name, str) and name not in self._validators:
                self.names.append(name)
                problems = tool_problems(entry)
                self.problems += problems
                self._validators[name] = None if problems else Draft202012Validator(parameters_of(entry))

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> ToolBox:
        tools = info.get("tools")
        if not isinstance(tools, list):
            return cls([])
        if len(tools) > MAX_TOOLS:  # refused whole: building validators for thousands would stall the loop
            return cls(tools)
        return cls([t for t in tools if isinstance(t, dict)])

    def check(self, call: Parsed) -> str | None:
        """Why ``call`` cannot be executed (``None`` when it is a valid call of a known tool)."""
        if isinstance(call, CallError):
            return call.message
        if call.name not in self._validators:
            return f"unknown tool {call.name!r}; the tools are: {', '.join(self.names) or 'none'}"
        validator = self._validators[call.name]
        if validator is None:
            return f"the tool {call.name!r} has an unsupported schema and cannot be called"
        try:
            error = best_match(validator.iter_errors(call.arguments))
        except RecursionError:
            return f"the arguments of {call.name} nest too deeply"
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"invalid arguments for {call.name}: {where + ': ' if where else ''}{error.message}"

    def example_call(self) -> str:
        """A well-formed call of the first tool, values taken from its schema (shown to the agent).

        Small models copy the shape of an example far better than they follow a description of
        it; the values (first enum entry, else a placeholder of the right type) are not a
        solution: an instruction usually needs other values.
        """
        if not self.tools:
            return '{"name": "<tool>", "arguments": {}}'
        fn = tool_schema(self.tools[0])
        params = parameters_of(self.tools[0])
        found = params.get("properties")
        props: dict[str, Any] = found if isinstance(found, dict) else {}
        required = [r for r in params.get("required", []) if isinstance(r, str) and r in props] or list(props)[:1]
        args = {name: _example_value(props[name]) for name in required[:4]}
        return json.dumps({"name": fn.get("name", "<tool>"), "arguments": args}, ensure_ascii=False)

    def openai_tools(self) -> list[dict[str, Any]]:
        """The tools in the OpenAI ``tools=`` shape (what chat templates expect)."""
        out = []
        for entry in self.tools:
            fn = tool_schema(entry)
            out.append(
                {
                    "type": "function",
                    "function": {
                        "name": fn.get("name"),
                        "description": fn.get("description", ""),
                        "parameters": parameters_of(entry),
                    },
                }
            )
        return out


__all__ = ["SUPPORTED_KEYWORDS", "ToolBox", "ToolCall", "schema_problems", "tool_problems"]
