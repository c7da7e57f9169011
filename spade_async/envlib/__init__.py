"""The environment library: hundreds of short game files in families, for the designer's warm start.

Why a library this size: a warm start on the 13 seed files memorises them (mutation pairs reach
a loss near 0, fresh pairs stay near 1), so the only designs it gets admitted are a seed with a
number changed. Writing has to be learned, not recalled: here are >= 200 files over the six
skills, grouped in families (a family = one game mechanic: its hidden state, commands and
feedback rule), and whole families are held out so a warm start can be measured on mechanics it
never saw.

Why text: every file is in the designer's output format (``SKILL`` / ``HINT`` / ``DESCRIPTION``
then one class subclassing the injected ``GameEnv``), so, like designer output, it only ever runs
inside the sandbox; here files are read with ``importlib.resources`` and never imported.
The files are made by ``spade_async.envlib.generate`` from the templates in ``mechanics/`` (see docs/envlib.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from spade_async.envs.seeds import string_constants

HELD_OUT_PER_SKILL = 1
"""Families held out per skill (of 6 or so per skill: about 20% of the library)."""


@dataclass(frozen=True)
class LibraryFile:
    """One environment file of the library: its stem, family, declared skill and full source."""

    name: str
    family: str
    skill: str
    code: str


@cache
def _load() -> tuple[LibraryFile, ...]:
    root = resources.files(__name__) / "library"
    found = []
    for folder in root.iterdir():
        if not folder.is_dir() or folder.name.startswith(("_", ".")):
            continue
        for entry in folder.iterdir():
            if entry.is_file() and entry.name.endswith(".py") and not entry.name.startswith("_"):
                code = entry.read_text(encoding="utf-8")
                skill = string_constants(code).get("SKILL", "unknown")
                found.append(LibraryFile(entry.name[:-3], folder.name, skill, code))
    return tuple(sorted(found, key=lambda f: (f.family, f.name)))


def load_envlib() -> list[LibraryFile]:
    """Every library file, sorted by family then name (read as text, never run)."""
    return list(_load())


def families() -> dict[str, list[LibraryFile]]:
    """``{family: its files}``, families sorted by name."""
    out: dict[str, list[LibraryFile]] = {}
    for f in _load():
        out.setdefault(f.family, []).append(f)
    return out


def _rank(family: str) -> str:
    return hashlib.sha256(f"envlib-held-out:{family}".encode()).hexdigest()


def held_out_families() -> frozenset[str]:
    """The families a warm start must not train on: per skill, the :data:`HELD_OUT_PER_SKILL`
    families first by a hash of their names. Deterministic, the same on every machine, and a
    family keeps its side when other families are added (unless it is pushed out of the first
    places of its skill)."""
    by_skill: dict[str, list[str]] = {}
    for name, files in families().items():
        by_skill.setdefault(files[0].skill, []).append(name)
    return frozenset(n for names in by_skill.values() for n in sorted(names, key=_rank)[:HELD_OUT_PER_SKILL])


def split() -> tuple[list[LibraryFile], list[LibraryFile]]:
    """``(train, held_out)``: the library's files by whether their family is held out."""
    held = held_out_families()
    files = load_envlib()
    return [f for f in files if f.family not in held], [f for f in files if f.family in held]
