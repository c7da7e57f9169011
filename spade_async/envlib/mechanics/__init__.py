"""Game families: one mechanic each, written as a code template plus axes to compose.

Why templates with axes: a family fixes what the player must work out (the hidden state, the
commands, the feedback rule); the axes vary everything a memorising model would latch onto
instead: the theme (names, items, story words), the observation style (how state and feedback
are phrased), the reward shaping (win-only, or partial credit 0-0.9 on a loss) and the
parameters (ranges, sizes, max_turns). A variant is one choice per axis, substituted into the
template with ``string.Template`` (``$name``; the games' code never uses ``$``).
"""

from __future__ import annotations

import importlib
import itertools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from string import Template

MATH = "Mathematical Reasoning"
LOGIC = "Logical Deduction"
SPATIAL = "Spatial Reasoning"
PATTERN = "Pattern Recognition"
OPTIM = "Optimization"
CAUSAL = "Causal Inference"
SKILL_MODULES = ("math_games", "logic", "spatial", "pattern", "optimization", "causal")
"""One module per skill, each with a ``FAMILIES`` list."""


@dataclass(frozen=True)
class Family:
    """One mechanic: ``template`` with ``$slots``, and per axis a list of option dicts (each with
    a ``tag`` for the file name). Every combination of one option per axis is a candidate."""

    name: str
    skill: str
    template: str
    axes: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def candidates(self) -> list[tuple[str, str]]:
        """``(file name, code)`` for every combination (and every :data:`RETURN_STYLES` entry), in a
        fixed order drawn from the family's name."""
        names = sorted(self.axes)
        choices = list(itertools.product(*(self.axes[a] for a in names)))
        combos = [(combo, style) for combo in choices for style in sorted(RETURN_STYLES)]
        random.Random(self.name).shuffle(combos)
        out = []
        for combo, style in combos:
            slots: dict[str, str] = {"skill": self.skill}
            for option in combo:
                slots.update(option)
            tag = "_".join([*(option["tag"] for option in combo if option.get("tag")), style])
            out.append((f"{self.name}_{tag}", RETURN_STYLES[style](render(self.template, slots))))
        return out


def render(template: str, slots: dict[str, str]) -> str:
    """``template`` with its ``$slots`` filled; slot values may hold slots themselves (a hint
    naming the theme's item), so substitution repeats until nothing changes."""
    text = template
    for _ in range(4):
        filled = Template(text).safe_substitute(slots)
        if filled == text:
            break
        text = filled
    text = _PLAIN_F.sub(_unformat, text)
    if "$" in text:
        raise ValueError(f"unfilled slot in {text[text.index('$') : text.index('$') + 20]!r}")
    return text.strip() + "\n"


_PLAIN_F = re.compile(r'\bf("(?:[^"\\]|\\.)*")')


def _unformat(m: re.Match[str]) -> str:
    """An f-string without placeholders as a plain string (``{{`` and ``}}`` unescaped)."""
    body = m[1]
    if "{" in body.replace("{{", "").replace("}}", ""):
        return m[0]
    return body.replace("{{", "{").replace("}}", "}")


def all_families() -> list[Family]:
    """Every family of every skill, sorted by name."""
    found = [f for m in SKILL_MODULES for f in importlib.import_module(f"{__name__}.{m}").FAMILIES]
    return sorted(found, key=lambda f: f.name)


NUMBER_PARSE = [
    {
        "tag": "a",
        "parse": 'text = (self.parse_action(action) or "").strip()\n'
        "        if not text.isdigit() or len(text) > 4:\n"
        '            return "Send a whole number, like \\\\boxed{12}.", 0.0, False, self.turn >= self.max_turns, {}\n'
        "        guess = int(text)",
    },
    {
        "tag": "b",
        "parse": 'found = re.fullmatch(r"\\s*(\\d{1,4})\\s*", self.parse_action(action) or "")\n'
        "        if found is None:\n"
        '            return "Answer with digits only, e.g. \\\\boxed{7}.", 0.0, False, self.turn >= self.max_turns, {}\n'
        "        guess = int(found.group(1))",
    },
    {
        "tag": "c",
        "parse": "try:\n"
        '            guess = int((self.parse_action(action) or "").strip())\n'
        "        except ValueError:\n"
        '            return "That is not a number. Example: \\\\boxed{25}.", 0.0, False, self.turn >= self.max_turns, {}',
    },
]
"""Three ways to read a number command into ``guess``: the same rule, written differently."""

WORD_PARSE = [
    {"tag": "a", "parse": 'choice = (self.parse_action(action) or "").strip().lower()'},
    {"tag": "b", "parse": 'choice = " ".join((self.parse_action(action) or "").lower().split())'},
    {"tag": "c", "parse": 'raw = self.parse_action(action)\n        choice = raw.strip().lower() if raw else ""'},
]
"""Three ways to read a word command into ``choice``."""


_RETURN = re.compile(
    r'^(?P<pad> +)return (?P<obs>f?"(?:[^"\\]|\\.)*"), (?P<reward>.+), (?P<done>True|False), '
    r"(?P<cut>False|self\.turn >= self\.max_turns), \{\}$",
    re.MULTILINE,
)


def _helper_say(code: str) -> str:
    """Every step reply through one ``say`` helper (truncation computed there)."""

    def one(m: re.Match[str]) -> str:
        if m["done"] == "False":
            return f"{m['pad']}return self.say({m['obs']})"
        return f"{m['pad']}return self.say({m['obs']}, {m['reward']}, True)"

    helper = (
        "    def say(self, text, reward=0.0, done=False):\n"
        "        return text, reward, done, not done and self.turn >= self.max_turns, {}\n\n"
        "    def solution(self):"
    )
    return _RETURN.sub(one, code).replace("    def solution(self):", helper)


def _helper_reply_finish(code: str) -> str:
    """Replies that go on through ``reply``, replies that end the game through ``finish``."""

    def one(m: re.Match[str]) -> str:
        if m["done"] == "False":
            return f"{m['pad']}return self.reply({m['obs']})"
        return f"{m['pad']}return self.finish({m['obs']}, {m['reward']})"

    helper = (
        "    def reply(self, text):\n"
        "        return text, 0.0, False, self.turn >= self.max_turns, {}\n\n"
        "    def finish(self, text, reward):\n"
        "        return text, reward, True, False, {}\n\n"
        "    def solution(self):"
    )
    return _RETURN.sub(one, code).replace("    def solution(self):", helper)


RETURN_STYLES: dict[str, Callable[[str], str]] = {
    "r0": lambda code: code,
    "r1": _helper_say,
    "r2": _helper_reply_finish,
}
"""How a step's replies are written: plain 5-tuples, one ``say`` helper, or ``reply``/``finish``.
The same game either way (a reply that goes on is truncated exactly when the turn limit is
reached, as the plain tuples say); a different text to learn from."""
