"""Tool schemas: admission problems (with reasons) and argument validation with jsonschema."""

from __future__ import annotations

from typing import Any

from spade_async.envs.tool_calls import CallError, ToolCall
from spade_async.envs.tool_schemas import ToolBox, schema_problems, tool_problems


def tool(name: str, params: Any = None, description: str = "Does a thing.") -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name, "description": description}
    if params is not None:
        fn["parameters"] = params
    return {"type": "function", "function": fn}


PAY = tool(
    "pay",
    {
        "type": "object",
        "properties": {
            "payee": {"type": "string"},
            "amount": {"type": "integer", "minimum": 1},
            "memo": {"type": "string", "maxLength": 5},
        },
        "required": ["payee", "amount"],
        "additionalProperties": False,
    },
)


def test_good_tools_have_no_problems() -> None:
    assert (
        schema_problems([PAY, tool("ping"), {"name": "bare", "description": "x", "parameters": {"type": "object"}}])
        == []
    )


def test_each_problem_has_a_reason() -> None:
    assert schema_problems([]) == ["tools must be a non-empty list of function schemas"]
    assert schema_problems("x") == ["tools must be a non-empty list of function schemas"]
    assert "must be a Python identifier" in tool_problems(tool("send money"))[0]
    assert "taken by the ToolUseEnv base class" in tool_problems(tool("step"))[0]
    assert "has no description" in tool_problems(tool("f", description=""))[0]
    assert 'parameters must be a JSON Schema with "type": "object"' in tool_problems(tool("f", {"type": "string"}))[0]
    assert (
        "not valid JSON Schema"
        in tool_problems(tool("f", {"type": "object", "properties": {"x": {"type": "strin"}}}))[0]
    )
    assert (
        "'pattern'"
        in tool_problems(tool("f", {"type": "object", "properties": {"x": {"type": "string", "pattern": "(a+)+$"}}}))[0]
    )
    assert "'$ref'" in tool_problems(tool("f", {"type": "object", "properties": {"x": {"$ref": "#"}}}))[0]
    assert (
        "required names ['y']" in tool_problems(tool("f", {"type": "object", "properties": {}, "required": ["y"]}))[0]
    )
    assert schema_problems([tool("f"), tool("f")]) == ["tool 'f' is declared twice"]
    assert schema_problems([tool(f"t{i}") for i in range(13)]) == ["13 tools declared; keep to at most 12"]
    assert "not JSON data" in tool_problems({"function": {"name": "f", "description": object()}})[0]


def test_toolbox_validates_arguments_against_the_schema() -> None:
    box = ToolBox([PAY, tool("ping")])
    assert box.names == ["pay", "ping"]
    assert box.check(ToolCall("pay", {"payee": "Ann", "amount": 3})) is None
    assert box.check(ToolCall("ping")) is None
    assert box.check(ToolCall("pay", {"payee": "Ann"})) == "invalid arguments for pay: 'amount' is a required property"
    assert (
        box.check(ToolCall("pay", {"payee": "Ann", "amount": "3"}))
        == "invalid arguments for pay: amount: '3' is not of type 'integer'"
    )
    assert box.check(ToolCall("pay", {"payee": "Ann", "amount": 0})).startswith(
        "invalid arguments for pay: amount: 0 is less than"
    )  # type: ignore[union-attr]
    assert "Additional properties are not allowed" in box.check(ToolCall("pay", {"payee": "A", "amount": 1, "x": 1}))  # type: ignore[operator]
    assert box.check(ToolCall("mul")) == "unknown tool 'mul'; the tools are: pay, ping"
    assert box.check(CallError("bad json")) == "bad json"


def test_toolbox_refuses_unsupported_schemas_at_play_time() -> None:
    risky = tool("grep", {"type": "object", "properties": {"q": {"type": "string", "pattern": "(a+)+$"}}})
    box = ToolBox.from_info({"tools": [risky, "junk"]})
    assert box.names == ["grep"]
    assert (
        box.check(ToolCall("grep", {"q": "a" * 40 + "!"}))
        == "the tool 'grep' has an unsupported schema and cannot be called"
    )
    assert ToolBox.from_info({}).names == []


def test_openai_tools_shape() -> None:
    shaped = ToolBox([{"name": "ping", "description": "d"}]).openai_tools()
    assert shaped == [
        {
            "type": "function",
            "function": {"name": "ping", "description": "d", "parameters": {"type": "object", "properties": {}}},
        }
    ]


def test_example_call_is_a_valid_call_of_the_first_tool() -> None:
    from spade_async.envs.tool_calls import parse_tool_calls

    box = ToolBox([PAY, tool("ping")])
    example = box.example_call()
    assert example == '{"name": "pay", "arguments": {"payee": "text", "amount": 1}}'
    assert box.check(parse_tool_calls(example)[0]) is None
    lights = ToolBox([tool("turn_on", {"type": "object", "properties": {"room": {"enum": ["attic", "hall"]}}})])
    assert lights.example_call() == '{"name": "turn_on", "arguments": {"room": "attic"}}'
    assert ToolBox([]).example_call() == '{"name": "<tool>", "arguments": {}}'
