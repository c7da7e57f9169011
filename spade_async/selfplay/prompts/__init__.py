"""Prompt templates as text files, and a strict renderer.

Why files and a strict ``render``: prompts are tuned by reading them, not by reading
Python string concatenation, and a prompt that silently lost a field (``{document}``
left empty) quietly ruins a run. Templates use ``str.format`` syntax (literal braces are
doubled: ``\\boxed{{command}}``); their first lines, starting with ``#``, document the
placeholders and are stripped by the loader. ``render`` refuses missing and unknown
fields. Always ``render`` a template, even one without fields, so doubled braces come out
single.

Templates: ``designer_fresh``, ``designer_mutation``, ``example``, ``contract``, ``hint``,
``repair``, ``agent_system``, ``agent_hint``; for the tool-use domain ``designer_tool_fresh``,
``designer_tool_mutation``, ``contract_tool``, ``hint_tool``, ``repair_tool``,
``agent_tool_system``, ``agent_tool_list``, ``agent_tool_hint``, ``agent_tool_no_call``.
"""

from __future__ import annotations

import difflib
import functools
import random
import string
from importlib import resources

from spade_async.util.errors import UserError

MUTATIONS: tuple[str, ...] = (
    "make the hidden state larger (more values, cells or items) and allow one or two more turns",
    "make the hidden state smaller so the game is easier",
    "add one new command that reveals a different kind of clue",
    "change what the player is told after each command",
    "change the story and names to fit the document, keeping the rules",
    "allow fewer turns, so the player must plan the probes",
    "replace the hidden rule with a different but similar rule",
    "change how a lost game is scored, keeping 1.0 only for a win",
)
"""Concrete changes for ``designer_mutation``'s ``{change}``: small models follow one
specific instruction far better than "write a variant"."""


TOOL_USE_MUTATIONS: tuple[str, ...] = (
    "add one new tool that looks something up, and an instruction that needs its answer",
    "add a fourth or fifth instruction that builds on the result of an earlier one",
    "replace the backend with a different one (a calendar, files, a shop, an account) keeping the shape of the tools",
    "make the backend state larger (more records), so the assistant must search it",
    "make one tool stricter: it raises ValueError for a wrong argument, and an instruction needs the right one",
    "change the story, tool names and data to fit the document, keeping the instructions working",
    "make an instruction depend on a value only a lookup tool reveals (a price, a balance, a free slot)",
    "remove one tool and rewrite the instructions so the others still reach every goal",
)
"""Concrete changes for ``designer_tool_mutation``: the tool-use domain's own mutations."""

DOMAIN_TEMPLATES: dict[str, dict[str, str]] = {
    "games": {
        "fresh": "designer_fresh",
        "mutation": "designer_mutation",
        "contract": "contract",
        "hint": "hint",
        "repair": "repair",
    },
    "tool_use": {
        "fresh": "designer_tool_fresh",
        "mutation": "designer_tool_mutation",
        "contract": "contract_tool",
        "hint": "hint_tool",
        "repair": "repair_tool",
    },
}
"""The designer's templates per domain (``selfplay.domain``)."""


def template_for(domain: str, purpose: str) -> str:
    """The template name for ``purpose`` (fresh, mutation, contract, hint, repair) in ``domain``."""
    try:
        return DOMAIN_TEMPLATES[domain][purpose]
    except KeyError:
        raise PromptError(
            f"no {purpose!r} template for domain {domain!r}; domains: {sorted(DOMAIN_TEMPLATES)}"
        ) from None


class PromptError(UserError, KeyError):
    """A template that does not exist, or a render with missing or unknown fields."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0])


@functools.cache
def load_prompt(name: str) -> str:
    """The template text of ``name`` (no ``.txt``), without its leading ``#`` comment lines."""
    resource = resources.files(__name__).joinpath(f"{name}.txt")
    if not resource.is_file():
        available = ", ".join(available_prompts())
        raise PromptError(f"no prompt template {name!r}; available: {available}")
    lines = resource.read_text(encoding="utf-8").split("\n")
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "\n".join(lines).strip("\n")


def available_prompts() -> list[str]:
    """Names of all packaged templates."""
    return sorted(entry.name[:-4] for entry in resources.files(__name__).iterdir() if entry.name.endswith(".txt"))


def placeholders(name: str) -> frozenset[str]:
    """The field names a template needs."""
    fields: set[str] = set()
    for _, field, _, _ in string.Formatter().parse(load_prompt(name)):
        if field is not None:
            if not field.isidentifier():
                raise PromptError(f"prompt {name!r} has a non-name placeholder {{{field}}}")
            fields.add(field)
    return frozenset(fields)


def render(name: str, **fields: object) -> str:
    """Fill template ``name``; raises :class:`PromptError` naming any missing or unknown field."""
    needed = placeholders(name)
    missing = sorted(needed - fields.keys())
    unknown = sorted(fields.keys() - needed)
    problems = []
    if missing:
        problems.append(f"missing field(s) {', '.join(missing)}")
    for field in unknown:
        close = difflib.get_close_matches(field, needed, n=1)
        problems.append(f"unknown field {field!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    if problems:
        raise PromptError(f"prompt {name!r}: " + "; ".join(problems) + f"; it takes {sorted(needed)}")
    return load_prompt(name).format(**fields)


def contract_text(domain: str = "games") -> str:
    """The environment rules, for ``designer_fresh``'s (or ``designer_tool_fresh``'s) ``{contract}``."""
    return render(template_for(domain, "contract"))


def example_verdict(win_rate: float | None = None, regret: float | None = None, band: str | None = None) -> str:
    """How a past environment played, in words a small model can act on.

    ``band`` is :func:`spade_async.selfplay.health.win_rate_band`'s answer for it (``None`` for a seed).
    """
    if band == "invalid":
        return "broken (it failed the checks): avoid its mistakes"
    if win_rate is None or band is None:
        return "a working game"
    played = f"players won {win_rate:.0%}"
    verdict = {
        "in_band": f"good difficulty ({played}): a model to follow",
        "too_easy": f"too easy ({played}): make yours harder",
        "too_hard": f"too hard ({played}): make yours easier",
    }.get(band, played)
    if regret is not None:
        verdict += "; its hint helped a lot" if regret >= 0.5 else "; its hint barely helped: write a better HINT"
    return verdict


def render_example(
    code: str,
    index: int = 1,
    *,
    win_rate: float | None = None,
    regret: float | None = None,
    band: str | None = None,
    summary: str = "",
) -> str:
    """One past environment for ``designer_fresh``'s ``{examples}`` (join several with blank lines).

    ``summary`` (``selfplay.design.failures``: how the agent played it) follows the code; empty,
    the block is what it was before summaries existed.
    """
    verdict = example_verdict(win_rate, regret, band)
    block = render("example", title=f"Example {index}", verdict=verdict, code=code.strip("\n"))
    return block + ("\n" + summary if summary else "")


def parent_play(summary: str) -> str:
    """``designer_mutation``'s ``{parent_play}``: empty, or a newline and the parent's failure summary
    (so a prompt without a summary is what it was before summaries existed)."""
    return "\n" + summary if summary else ""


def pick_mutation(rng: random.Random, domain: str = "games") -> str:
    """A random entry of :data:`MUTATIONS` (or :data:`TOOL_USE_MUTATIONS`) for the mutation's ``{change}``."""
    return rng.choice(TOOL_USE_MUTATIONS if domain == "tool_use" else MUTATIONS)
