"""Extraction of code, hint and action from model text, on the shapes small models really write."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spade_async.envs.contract import parse_boxed
from spade_async.selfplay.design import parsing
from spade_async.selfplay.design.parsing import (
    MAX_HINT_CHARS,
    REASON_CUT_OFF,
    REASON_EMPTY,
    REASON_NO_CODE,
    clean_hint,
    extract_code,
    extract_hint,
    parse_action,
    parse_designer,
)

ENV = """SKILL = "Optimization"
HINT = "Test 0, 15 and 30, then fit the parabola."
DESCRIPTION = "Tune a knob."


class Knob(GameEnv):
    max_turns = 6
"""


def fenced(body: str, lang: str = "python") -> str:
    return f"```{lang}\n{body}\n```"


def test_doctests() -> None:
    assert doctest.testmod(parsing).failed == 0


# --- extract_code ---


def test_single_block_with_prose_around() -> None:
    result = extract_code(f"Sure! Here is the environment:\n\n{fenced(ENV)}\n\nEnjoy.")
    assert result.ok and result.reason is None and not result.cut_off
    assert result.code == ENV.strip("\n")


@pytest.mark.parametrize("lang", ["python", "Python", "PYTHON", "py", "python3", " python "])
def test_language_tags(lang: str) -> None:
    assert extract_code(fenced(ENV, lang)).code == ENV.strip("\n")


def test_crlf_and_indented_fences() -> None:
    text = "intro\r\n  ```python\r\nclass A(GameEnv):\r\n    pass\r\n  ```\r\n"
    assert extract_code(text).code == "class A(GameEnv):\n    pass"


def test_prefers_last_block_with_a_class() -> None:
    usage = "env = Knob()\nprint(env.reset(0))"
    fixed = ENV.replace("max_turns = 6", "max_turns = 8")
    text = "\n".join([fenced(ENV), "Wait, fix:", fenced(fixed), "Usage:", fenced(usage)])
    assert extract_code(text).code == fixed.strip("\n")


def test_without_any_class_takes_the_last_python_block() -> None:
    assert extract_code(fenced("x = 1") + "\n" + fenced("y = 2")).code == "y = 2"


def test_python_block_beats_unlabelled_and_other_languages() -> None:
    text = fenced("class Bash: pass", "bash") + "\n" + fenced("class Plain: pass", "") + "\n" + fenced(ENV)
    assert extract_code(text).code == ENV.strip("\n")


def test_unlabelled_block_with_class_is_accepted() -> None:
    assert extract_code(fenced(ENV, "")).code == ENV.strip("\n")


def test_unlabelled_block_without_class_is_not_code() -> None:
    result = extract_code(fenced("just some text", ""))
    assert result.code is None and result.reason == REASON_NO_CODE


def test_other_language_only_is_no_code() -> None:
    assert extract_code(fenced("class X {}", "java")).reason == REASON_NO_CODE


def test_cut_off_block_is_reported_with_partial_code() -> None:
    text = "Here it is:\n```python\n" + ENV + "    def reset(self, seed=None):\n        self.seed_rn"
    result = extract_code(text)
    assert not result.ok and result.cut_off
    assert result.reason == REASON_CUT_OFF == "cut off before closing fence"
    assert result.code is not None and result.code.startswith('SKILL = "Optimization"')


def test_cut_off_right_after_the_fence() -> None:
    result = extract_code("```python")
    assert result.reason == REASON_CUT_OFF and result.code is None and result.cut_off


def test_complete_block_wins_over_a_cut_off_tail() -> None:
    text = fenced(ENV) + "\nAnd a test:\n```python\nenv = Kn"
    result = extract_code(text)
    assert result.ok and result.code == ENV.strip("\n")


def test_empty_block() -> None:
    result = extract_code("```python\n\n   \n```")
    assert result.reason == REASON_EMPTY and result.code is None and not result.ok


@pytest.mark.parametrize("text", ["", "I cannot do that.", "class but not code (", "``python\nclass A: pass\n``"])
def test_no_code(text: str) -> None:
    result = extract_code(text)
    assert result.code is None and result.reason == REASON_NO_CODE and not result.cut_off


def test_unfenced_clean_file_is_accepted() -> None:
    assert extract_code("\n" + ENV).code == ENV.strip("\n")


def test_stray_closing_fence_without_opening() -> None:
    assert extract_code(ENV + "```\n").code == ENV.strip("\n")
    assert extract_code("No code, sorry.\n```").reason == REASON_NO_CODE


def test_unclosed_bare_block_with_text_is_cut_off() -> None:
    result = extract_code("```\nclass A(GameEnv):\n    def st")
    assert result.reason == REASON_CUT_OFF and result.code == "class A(GameEnv):\n    def st"


@pytest.mark.parametrize("text", ["class A:\x00 pass", "(" * 5000, "HINT = " + "(" * 5000, "[" * 100_000])
def test_hostile_text_does_not_crash(text: str) -> None:
    # a null byte in a clean-looking file is passed on: the sandbox's parse rejects it
    assert extract_code(text).code in (None, text)
    assert extract_hint(text) is None


def test_model_text_is_never_parsed_as_python() -> None:
    """The trainer treats model text as text: no ``ast`` import, no parse, no compile."""
    import inspect as pyinspect
    import re

    source = pyinspect.getsource(parsing)
    assert "import ast" not in source and "literal_eval" not in source
    assert not re.search(r"(?<![.\w])(compile|eval|exec)\(", source)


def test_unfenced_text_that_starts_with_prose_is_rejected() -> None:
    assert extract_code("Here is my env:\n" + ENV).reason == REASON_NO_CODE
    assert extract_code("I think the class should be simple.").reason == REASON_NO_CODE


@pytest.mark.parametrize(
    "start", ["import random\n", "from math import sqrt\n", "# env\n", '"""Doc."""\n', "HINT: str = 'x'\n"]
)
def test_unfenced_file_may_start_with_any_python_line(start: str) -> None:
    code = start + "class A(GameEnv):\n    pass"
    assert extract_code(code).code == code


def test_inline_triple_backticks_in_prose_do_not_open_a_block() -> None:
    text = "Use ```python fences``` like this:\n" + fenced(ENV)
    assert extract_code(text).code == ENV.strip("\n")


@given(st.text(max_size=300))
def test_extract_code_never_raises(text: str) -> None:
    result = extract_code(text)
    assert (result.code is None) or isinstance(result.code, str)
    assert result.ok == (result.reason is None)


# --- hints ---


def test_hint_constant_in_code_is_left_to_the_sandbox() -> None:
    assert extract_hint(fenced(ENV)) is None  # read by SandboxPool.inspect, see tests/sandbox
    assert extract_hint("HINT: prose hint\n" + fenced(ENV)) == "prose hint"


@pytest.mark.parametrize(
    "prose",
    [
        "HINT: Guess the middle.",
        "Hint: Guess the middle.",
        "hint - Guess the middle.",
        "**Hint:** Guess the middle.",
        "**Hint**: Guess the middle.",
        "> Hint: Guess the middle.",
        "- hint: Guess the middle.",
        "## Hint\nGuess the middle.",
        "## Hint\n\nGuess the middle.",
        "Hint:\nGuess the middle.",
        "Hints: Guess the middle.",
        'HINT: "Guess the middle."',
    ],
)
def test_prose_hint_forms(prose: str) -> None:
    text = fenced("class A(GameEnv):\n    pass") + f"\n\n{prose}\n\nThat is all."
    assert extract_hint(text) == "Guess the middle."


def test_prose_hint_spans_lines_until_blank_or_heading() -> None:
    text = "HINT: Start low,\nthen double.\nDescription: a game\n"
    assert extract_hint(text) == "Start low, then double."
    assert extract_hint("Hint: a\nb\n\nc") == "a b"
    assert extract_hint("Hint: a\n```python\nclass A: pass\n```") == "a"


def test_hint_word_in_a_sentence_is_not_a_label() -> None:
    assert extract_hint("Hint the agent toward the corners.") is None
    assert extract_hint("This hint is useless") is None


def test_hint_label_inside_code_is_ignored_for_prose() -> None:
    code = "# HINT: secret comment\nclass A(GameEnv):\n    pass"
    assert extract_hint(fenced(code)) is None


def test_missing_hint() -> None:
    assert extract_hint(fenced("class A(GameEnv):\n    pass")) is None
    assert extract_hint("") is None


@pytest.mark.parametrize("text", [None, "", "   ", "...", "TODO", "Hint: ...", "<hint>", "Hint:", "```\n```"])
def test_clean_hint_placeholders(text: str | None) -> None:
    assert clean_hint(text) is None


def test_clean_hint_normalises() -> None:
    assert clean_hint('Hint: "Binary\n  search"') == "Binary search"
    assert clean_hint("```\nUse the corners.\n```") == "Use the corners."
    assert clean_hint("Think first.") == "Think first."


def test_clean_hint_caps_length_at_a_word() -> None:
    long = "word " * 500
    hint = clean_hint(long)
    assert hint is not None and len(hint) <= MAX_HINT_CHARS + 4 and hint.endswith(" ...")
    assert clean_hint("x" * 1000, max_chars=10) == "xxxxxxxxxx ..."


@given(st.text(max_size=300))
def test_hint_functions_never_raise(text: str) -> None:
    hint = extract_hint(text)
    assert hint is None or (hint.strip() == hint and hint)


# --- parse_designer ---


def test_parse_designer_full() -> None:
    out = parse_designer("Here:\n" + fenced(ENV) + "\nHint: scan first.")
    assert out.ok and out.hint == "scan first." and out.code == ENV.strip("\n")


def test_parse_designer_cut_off_and_broken() -> None:
    out = parse_designer("```python\nSKILL = 'Logical Deduction'\nclass A(GameEnv):\n    def x(")
    assert not out.ok and out.cut_off and out.reason == REASON_CUT_OFF
    none = parse_designer("no idea")
    assert none.code is None and none.reason == REASON_NO_CODE and none.hint is None


# --- parse_action ---


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\\boxed{guess 50}", "guess 50"),
        ("Think. \\boxed{scan 0 0} then \\boxed{ dig 1 2 }", "dig 1 2"),
        ('\\boxed{{"name": "f"}}', '{"name": "f"}'),
        ("\\boxed{}", None),
        ("\\boxed{   }", None),
        ("guess 50", None),
        ("", None),
        ("\\boxed{unclosed", None),
        ("boxed{no backslash}", None),
    ],
)
def test_parse_action(text: str, expected: str | None) -> None:
    assert parse_action(text) == expected


def test_parse_action_none_input() -> None:
    assert parse_action(None) is None  # type: ignore[arg-type]


@given(st.text(max_size=200))
def test_parse_action_agrees_with_contract(text: str) -> None:
    assert parse_action(text) == (parse_boxed(text) or None)
