"""What the README and docs say exists is checked against the code: make targets, commands,
presets, benchmark and script files, extras, install commands, and the parts that were once "not built" and now are.

Why: the README kept saying engine replicas on other machines were not built a release after
they were, named an install command the install section had replaced, and quoted benchmark
figures two releases old. A sentence about what exists is a claim a test can hold; each check
is a function of the text, so a deliberately broken README shows it can fail.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import click
import pytest

from spade_async.cli import cli
from spade_async.cluster.engine import RemoteEngine
from spade_async.config import ClusterConfig

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
MAKE_TARGETS = set(re.findall(r"^([A-Za-z0-9_.-]+):(?!=)", (ROOT / "Makefile").read_text(), re.M))
PRESETS = {p.stem for p in (ROOT / "configs").glob("*.toml")}
BEGIN, END = "<!-- BEGIN measured", "<!-- END measured -->"

STALE = (
    # each was true once and is not now; the generated table (between the markers) is exempt
    "Engine replicas on other machines and multi-node learners are not built",
    "p50 4.5 ms",
    "96.8% of ideal",
    "pip install -e '.[ray]'",
    "| what | command | figure |",  # the hand-written measured table's header
)


def hand_written(text: str) -> str:
    """The text outside the table `make bench` generates."""
    if BEGIN in text and END in text:
        return text[: text.index(BEGIN)] + text[text.index(END) + len(END) :]
    return text


def command_problems(text: str) -> list[str]:
    """Every `spade-async CMD [SUB]` named is a command of the CLI (and SUB one of a group's)."""
    out = []
    for name, sub in re.findall(r"`(?:[\w./-]*/)?spade-async ([a-z][a-z-]*)(?: ([a-z][a-z-]*)(?=[\s`]))?", text):
        command = cli.commands.get(name)
        if command is None:
            out.append(f"`spade-async {name}` is not a command")
        elif isinstance(command, click.Group) and sub and sub not in command.commands:
            out.append(f"`spade-async {name} {sub}` is not a command")
    return out


def make_problems(text: str) -> list[str]:
    named = set(re.findall(r"`make ([a-z][a-z-]*)", text))
    return [f"`make {t}` is not a Makefile target" for t in sorted(named - MAKE_TARGETS)]


def preset_problems(text: str) -> list[str]:
    named = set(re.findall(r"configs/([a-z0-9_]+)\.toml", text))
    return [f"configs/{p}.toml does not exist" for p in sorted(named - PRESETS)]


def file_problems(text: str) -> list[str]:
    """Every benchmark and script named is a file of the checkout."""
    named = set(re.findall(r"\b((?:benchmarks|scripts)/[a-z0-9_]+\.(?:py|sh))\b", text))
    return [f"{path} does not exist" for path in sorted(named) if not (ROOT / path).is_file()]


def extra_problems(text: str) -> list[str]:
    named = set(re.findall(r"(?:spade-async|\.)\[([a-z-]+(?:,[a-z-]+)*)\]", text))
    return [f"extra [{e}] is not in pyproject.toml" for group in named for e in group.split(",") if e not in EXTRAS]


def install_problems(text: str) -> list[str]:
    """An extra is installed the way the install section does: on the checkout's path."""
    out = []
    for command in re.findall(r"pip install [^`\n]*\[[a-z,-]+\][^`\n]*", text):
        if "/path/to/spade-async[" not in command:
            out.append(f"`{command.strip()}` does not name the extra on the checkout's path")
    return out


def stale_problems(text: str) -> list[str]:
    flat = " ".join(hand_written(text).split())
    out = [f"stale: {phrase!r}" for phrase in STALE if phrase in flat]
    if re.search(r"[Ee]ngine replicas[^.]*\bnot (?:yet )?built", flat):
        out.append("a sentence calls engine replicas not built")
    return out


def readme_problems(text: str) -> list[str]:
    return [
        *command_problems(text),
        *make_problems(text),
        *preset_problems(text),
        *file_problems(text),
        *extra_problems(text),
        *install_problems(text),
        *stale_problems(text),
    ]


def test_the_readmes_claims_hold() -> None:
    assert re.findall(r"`spade-async [a-z]", README) and re.findall(r"`make [a-z]", README)
    assert readme_problems(README) == []


def test_a_broken_readme_fails_every_check() -> None:
    broken = """
    Run `spade-async trian tiny` or `spade-async config shw x`, then `make benchmark`.
    Edit configs/huge.toml, time it with `python benchmarks/speed.py`; install with `pip install -e '.[ray]'` or `pip install '/path/to/spade-async[gpu]'`.
    Engine replicas on other machines and multi-node learners are not built.
    | what | command | figure |
    | sandbox spawn | `python benchmarks/sandbox.py` | p50 4.5 ms |
    | async vs sequential loop | same | 1.76x (96.8% of ideal) |
    Engine replicas
    on Ray are not yet built.
    """
    found = readme_problems(broken)
    for expected in (
        "`spade-async trian` is not a command",
        "`spade-async config shw` is not a command",
        "`make benchmark` is not a Makefile target",
        "configs/huge.toml does not exist",
        "benchmarks/speed.py does not exist",
        "extra [gpu] is not in pyproject.toml",
        "`pip install -e '.[ray]'` does not name the extra on the checkout's path",
        "stale: 'p50 4.5 ms'",
        "stale: '96.8% of ideal'",
        "stale: '| what | command | figure |'",
        "stale: 'Engine replicas on other machines and multi-node learners are not built'",
        "a sentence calls engine replicas not built",
    ):
        assert expected in found, (expected, found)
    # the generated table may quote any figure: it is checked against the results instead
    assert stale_problems(f"{BEGIN} -->\n| x | p50 4.5 ms |\n{END}\n") == []


@pytest.mark.parametrize("name", sorted(DOCS))
def test_every_extra_command_and_file_the_docs_name_exists(name: str) -> None:
    text = DOCS[name]
    assert extra_problems(text) + command_problems(text) + make_problems(text) + file_problems(text) == []


def test_every_preset_is_in_the_readmes_table() -> None:
    named = set(re.findall(r"configs/([a-z0-9_]+)\.toml", README))
    assert PRESETS - named == set(), f"presets missing from the README's table: {sorted(PRESETS - named)}"


def test_what_is_built_is_not_called_unbuilt() -> None:
    """Engine replicas on a Ray cluster exist (the config field and the driver's engine): no page
    may say otherwise."""
    assert "engine_replicas" in ClusterConfig.model_fields and RemoteEngine.__module__ == "spade_async.cluster.engine"
    for name, text in {"README.md": README, **DOCS}.items():
        assert [p for p in stale_problems(text) if "replicas" in p] == [], name
