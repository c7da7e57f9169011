"""Prompt templates: documented placeholders match, rendering is strict, sizes fit a small model."""

from __future__ import annotations

import random
import re
from importlib import resources

import pytest

from spade_async.envs.seeds import load_seeds
from spade_async.selfplay.design.parsing import extract_code
from spade_async.selfplay.prompts import (
    DOMAIN_TEMPLATES,
    MUTATIONS,
    TOOL_USE_MUTATIONS,
    PromptError,
    available_prompts,
    contract_text,
    example_verdict,
    load_prompt,
    pick_mutation,
    placeholders,
    render,
    render_example,
    template_for,
)

EXPECTED = {
    "designer_fresh": {"skill", "document", "examples", "contract"},
    "designer_mutation": {"skill", "document", "parent_code", "parent_play", "change"},
    "example": {"title", "verdict", "code"},
    "contract": set(),
    "hint": {"code"},
    "repair": {"code", "reasons"},
    "agent_system": set(),
    "agent_hint": {"hint", "observation"},
    "designer_tool_fresh": {"skill", "document", "examples", "contract"},
    "designer_tool_mutation": {"skill", "document", "parent_code", "parent_play", "change"},
    "contract_tool": set(),
    "hint_tool": {"code"},
    "repair_tool": {"code", "reasons"},
    "agent_tool_system": {"example"},
    "agent_tool_list": {"tools"},
    "agent_tool_hint": {"hint", "observation"},
    "agent_tool_no_call": {"instruction"},
}
CHARS_PER_TOKEN = 3.6
"""Measured for SmolLM2's tokenizer on these prompts (code-heavy English)."""


def dummy_fields(name: str) -> dict[str, str]:
    return {field: f"<{field.upper()}>" for field in placeholders(name)}


def test_every_template_is_known() -> None:
    assert set(available_prompts()) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_placeholders_match_and_are_documented(name: str) -> None:
    assert placeholders(name) == EXPECTED[name]
    raw = resources.files("spade_async.selfplay.prompts").joinpath(f"{name}.txt").read_text()
    header = raw.split("\n", 1)[0]
    assert header.startswith("# Placeholders:")
    documented = set(re.findall(r"\{(\w+)\}", header))
    assert EXPECTED[name] <= documented


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_render_fills_everything_and_strips_the_header(name: str) -> None:
    text = render(name, **dummy_fields(name))
    assert not text.startswith("#") and "Placeholders" not in text
    for field in EXPECTED[name]:
        assert f"<{field.upper()}>" in text
    assert "{{" not in text
    if "tool" not in name:  # tool templates show JSON objects, which end in "}}" legitimately
        assert "}}" not in text


def test_render_errors_are_specific() -> None:
    with pytest.raises(PromptError, match=r"missing field\(s\) document, examples"):
        render("designer_fresh", skill="x", contract="y")
    with pytest.raises(PromptError, match=r"unknown field 'cod' \(did you mean 'code'\?\)"):
        render("hint", code="x", cod="y")
    with pytest.raises(PromptError, match="no prompt template 'nope'; available: "):
        load_prompt("nope")


def test_values_with_braces_are_not_reinterpreted() -> None:
    code = "def f():\n    return {'a': 1}  # {not_a_field}"
    assert code in render("hint", code=code)


def test_boxed_syntax_comes_out_single_braced() -> None:
    assert "\\boxed{command}" in render("agent_system")
    assert "\\boxed{guess N}" in contract_text() and "(observation, {})" in contract_text()
    assert "\\boxed{command}" in render("designer_mutation", **dummy_fields("designer_mutation"))


def test_agent_hint_puts_hint_before_observation() -> None:
    text = render("agent_hint", hint="Use binary search.", observation="Guess 1-100.")
    assert text.index("Use binary search.") < text.index("Guess 1-100.")


def test_example_verdicts() -> None:
    assert example_verdict() == "a working game"
    assert "avoid" in example_verdict(0.5, 0.9, "invalid")
    assert "model to follow" in example_verdict(0.5, None, "in_band")
    assert "harder" in example_verdict(0.95, 0.0, "too_easy") and "better HINT" in example_verdict(
        0.95, 0.0, "too_easy"
    )
    assert "easier" in example_verdict(0.05, 0.8, "too_hard") and "helped a lot" in example_verdict(
        0.05, 0.8, "too_hard"
    )
    assert "won 50%" in example_verdict(0.5, None, "in_band")


def test_rendered_example_round_trips_through_the_code_parser() -> None:
    seed = load_seeds()[0]
    block = render_example(seed.source, 2, win_rate=0.5, regret=0.6, band="in_band")
    assert block.startswith("Example 2, good difficulty")
    assert extract_code(block).code == seed.source.strip("\n")


def test_mutations() -> None:
    assert len(set(MUTATIONS)) == len(MUTATIONS) >= 6
    assert pick_mutation(random.Random(3)) == pick_mutation(random.Random(3))
    assert {pick_mutation(random.Random(i)) for i in range(50)} == set(MUTATIONS)


def approx_tokens(text: str) -> float:
    return len(text) / CHARS_PER_TOKEN


def test_designer_prompts_fit_a_small_context() -> None:
    seeds = load_seeds()
    typical = sorted(seeds, key=lambda s: len(s.source))[len(seeds) // 2]
    longest = max(seeds, key=lambda s: len(s.source))
    document = "x" * 1500  # CorpusConfig.max_chars default
    for seed, budget in [(typical, 1500), (longest, 1700)]:
        fresh = render(
            "designer_fresh",
            skill="Optimization",
            document=document,
            examples=render_example(seed.source, win_rate=0.5, regret=0.6, band="in_band"),
            contract=contract_text(),
        )
        assert approx_tokens(fresh) <= budget, (seed.name, approx_tokens(fresh))
        mutation = render(
            "designer_mutation",
            skill="Optimization",
            document=document,
            parent_code=seed.source,
            parent_play="",
            change=MUTATIONS[0],
        )
        assert approx_tokens(mutation) <= budget
    assert approx_tokens(render("agent_system")) <= 100
    assert approx_tokens(contract_text()) <= 320


def test_tool_use_templates_per_domain() -> None:
    assert template_for("tool_use", "fresh") == "designer_tool_fresh" and template_for("games", "hint") == "hint"
    with pytest.raises(PromptError, match="no 'fresh' template for domain 'chess'"):
        template_for("chess", "fresh")
    for purposes in DOMAIN_TEMPLATES.values():
        assert set(purposes.values()) <= set(available_prompts())
    tool_contract = contract_text("tool_use")
    assert 'self.call("tool_name", argument=value)' in tool_contract and "{{" not in tool_contract
    assert '{"type": "function", "function": {"name": ...' in tool_contract
    system = render("agent_tool_system", example='{"name": "f", "arguments": {}}')
    assert '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>' in system
    assert '<tool_call>{"name": "f", "arguments": {}}</tool_call>' in system
    assert approx_tokens(tool_contract) <= 500 and approx_tokens(system) <= 130


def test_tool_use_mutations() -> None:
    assert len(set(TOOL_USE_MUTATIONS)) == len(TOOL_USE_MUTATIONS) >= 6
    assert not set(TOOL_USE_MUTATIONS) & set(MUTATIONS)
    assert {pick_mutation(random.Random(i), "tool_use") for i in range(60)} == set(TOOL_USE_MUTATIONS)


def test_tool_use_designer_prompts_fit_a_small_context() -> None:
    seeds = load_seeds("standard", "tool_use")
    longest = max(seeds, key=lambda s: len(s.source))
    fresh = render(
        "designer_tool_fresh",
        skill="Optimization",
        document="x" * 1500,
        examples=render_example(longest.source, win_rate=0.5, regret=0.6, band="in_band"),
        contract=contract_text("tool_use"),
    )
    assert approx_tokens(fresh) <= 2600, approx_tokens(fresh)
    easy = min(load_seeds("easy", "tool_use"), key=lambda s: len(s.source))
    small = render(
        "designer_tool_fresh",
        skill="Optimization",
        document="x" * 600,
        examples=render_example(easy.source),
        contract=contract_text("tool_use"),
    )
    assert approx_tokens(small) <= 1200, approx_tokens(small)  # what configs/tool_use_tiny.toml sends
