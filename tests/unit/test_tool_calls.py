"""Tool calls out of model text: both formats, several per turn, and every malformed shape."""

from __future__ import annotations

import pytest

from spade_async.envs.tool_calls import (
    MAX_CALLS_PER_TURN,
    CallError,
    ToolCall,
    format_result,
    parse_tool_calls,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Qwen3 / Hermes
        ('<tool_call>\n{"name": "pay", "arguments": {"amount": 5}}\n</tool_call>', [ToolCall("pay", {"amount": 5})]),
        ('Let me check.\n<tool_call>{"name": "list_items", "arguments": {}}</tool_call>', [ToolCall("list_items")]),
        (
            '<tool_call>{"name": "a"}</tool_call>\n<tool_call>{"name": "b", "arguments": {"x": [1]}}</tool_call>',
            [ToolCall("a"), ToolCall("b", {"x": [1]})],
        ),
        ('<tool_call>\n{"name": "a", "arguments": {"k": 1}}', [ToolCall("a", {"k": 1})]),  # cut before </tool_call>
        ('<tool_call>\n```json\n{"name": "a", "arguments": {}}\n```\n</tool_call>', [ToolCall("a")]),
        # OpenAI-style objects
        ('{"name": "pay", "arguments": {"amount": 5}}', [ToolCall("pay", {"amount": 5})]),
        (
            '{"type": "function", "function": {"name": "pay", "arguments": "{\\"amount\\": 5}"}}',
            [ToolCall("pay", {"amount": 5})],
        ),
        (
            '{"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},'
            ' {"function": {"name": "b", "arguments": {"y": true}}}]}',
            [ToolCall("a"), ToolCall("b", {"y": True})],
        ),
        ('I will call it.\n```json\n{"name": "get", "arguments": {"id": 3}}\n```', [ToolCall("get", {"id": 3})]),
        ('\\boxed{{"name": "f", "arguments": {"x": 1}}}', [ToolCall("f", {"x": 1})]),
        ('{"name": " spaced ", "parameters": {"q": "x"}}', [ToolCall("spaced", {"q": "x"})]),
        # No call attempted
        ("I think the task is done.", []),
        ('{"answer": 42}', []),
        ("", []),
    ],
)
def test_calls_are_parsed(text: str, expected: list[ToolCall]) -> None:
    assert parse_tool_calls(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('<tool_call>{"name": "pay", "arguments": {"amount": }</tool_call>', "the tool call is not valid JSON"),
        ("<tool_call>\n</tool_call>", "empty <tool_call> block"),
        ('<tool_call>{"arguments": {}}</tool_call>', 'the tool call has no "name"'),
        ('<tool_call>{"name": "", "arguments": {}}</tool_call>', 'the tool call has no "name"'),
        (
            '<tool_call>{"name": "pay", "arguments": [1, 2]}</tool_call>',
            "call to pay: arguments must be a JSON object, got list",
        ),
        ('{"name": "pay", "arguments": "{amount: 5}"}', "call to pay: the arguments string is not valid JSON"),
        ('<tool_call>"pay"</tool_call>', "a tool call must be a JSON object, got str"),
        ('{"name": "pay", "arguments": {"amount": 5}', "the tool call is not valid JSON"),
        ("<tool_call>" + "[" * 5000 + "</tool_call>", "the tool call is not valid JSON"),
    ],
)
def test_malformed_calls_become_error_messages(text: str, message: str) -> None:
    calls = parse_tool_calls(text)
    assert len(calls) == 1 and isinstance(calls[0], CallError)
    assert calls[0].message.startswith(message)


def test_too_many_calls_per_turn_are_cut_with_an_error() -> None:
    text = "".join(f'<tool_call>{{"name": "t{i}"}}</tool_call>' for i in range(MAX_CALLS_PER_TURN + 2))
    calls = parse_tool_calls(text)
    assert [c.name for c in calls[:-1] if isinstance(c, ToolCall)] == [f"t{i}" for i in range(MAX_CALLS_PER_TURN)]
    assert isinstance(calls[-1], CallError) and "2 ignored" in calls[-1].message


def test_never_raises_on_hostile_text() -> None:
    for text in [None, "\x00{", "{" * 10_000, '"name"' * 1000, "<tool_call>" * 50, '{"name": 1}']:
        parse_tool_calls(text)  # type: ignore[arg-type]


def test_canonical_json_round_trips() -> None:
    call = ToolCall("pay", {"payee": "Zoë", "amount": 5})
    assert parse_tool_calls(call.to_json()) == [call]


def test_results_are_text() -> None:
    assert format_result("plain") == "plain"
    assert format_result({"a": [1, 2]}) == '{"a": [1, 2]}'
    assert format_result({1, 2}).startswith("{1, 2}") or format_result({1, 2}).startswith('"{')
    assert format_result("x" * 50, limit=10) == "x" * 10 + " ... (truncated)"
