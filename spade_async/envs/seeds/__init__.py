"""The hand-written seed environments, read as text.

Why text and not modules: each ``*.py`` file here is written in exactly the format the
designer must produce (``SKILL`` / ``HINT`` / ``DESCRIPTION`` constants and one class
subclassing the injected ``GameEnv``, with no imports of it). So they double as prompt
examples, as the initial memory, and as the fixed-env baseline pool, and, like designer
output, they only ever run inside the sandbox. Here they are only read: the constants are
pulled out with ``ast``, nothing is imported or executed (the files would not even import
on their own: ``GameEnv`` is injected by the sandbox).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

UNKNOWN_SKILL = "unknown"


@dataclass(frozen=True)
class SeedEnv:
    """One environment file: its stem, declared constants and full source."""

    name: str
    skill: str
    hint: str
    description: str
    source: str


def string_constants(code: str) -> dict[str, str]:
    """Module-level ``NAME = "literal"`` assignments of an environment file (read with ``ast``,
    never run). Environment files on disk are the user's or ours; model output is never parsed
    in the trainer (the sandbox's inspection reads its constants).

    Adjacent literals (implicit concatenation) count as one string; f-strings, expressions
    and annotated assignments of non-strings are ignored. Raises ``SyntaxError`` when the
    code does not parse (also for null bytes or absurd nesting).

    >>> string_constants('SKILL = "Optimization"\\nX = 1\\nHINT = ("a" "b")')
    {'SKILL': 'Optimization', 'HINT': 'ab'}
    """
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as exc:
        if isinstance(exc, SyntaxError):
            raise
        raise SyntaxError(f"cannot parse: {exc.__class__.__name__}: {exc}") from None
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found[target.id] = value.value
    return found


def _from_source(name: str, source: str, where: str) -> SeedEnv:
    try:
        constants = string_constants(source)
    except SyntaxError as exc:
        raise ValueError(f"{where}: not valid Python (line {exc.lineno}: {exc.msg})") from None
    return SeedEnv(
        name=name,
        skill=constants.get("SKILL", "").strip() or UNKNOWN_SKILL,
        hint=constants.get("HINT", "").strip(),
        description=constants.get("DESCRIPTION", "").strip(),
        source=source,
    )


def _is_env_file(name: str) -> bool:
    return name.endswith(".py") and not name.startswith("_")


TIERS = ("standard", "easy", "all")
"""``standard``: the probing games (two per skill); ``easy``: one short game per skill that a
~100M-parameter model sometimes wins (a warm-up so small models get GRPO signal). For the
tool-use domain: six multi-tool environments, and three one-tool ones."""
DOMAINS = ("games", "tool_use")
"""Seed libraries: games at the top of this folder, tool-use environments in ``tool_use/``."""


def load_seeds(tier: str = "standard", domain: str = "games") -> list[SeedEnv]:
    """The built-in seed library of ``tier`` for ``domain``, sorted by name (wheel or source tree)."""
    if tier not in TIERS:
        raise ValueError(f"unknown seed tier {tier!r}; choose from {TIERS}")
    if domain not in DOMAINS:
        raise ValueError(f"unknown domain {domain!r}; choose from {DOMAINS}")
    root = resources.files(__name__)
    if domain == "tool_use":
        root = root / "tool_use"
    folders = {"standard": [root], "easy": [root / "easy"], "all": [root, root / "easy"]}[tier]
    seeds = [
        _from_source(entry.name[:-3], entry.read_text(encoding="utf-8"), f"seed {entry.name}")
        for folder in folders
        for entry in folder.iterdir()
        if entry.is_file() and _is_env_file(entry.name)
    ]
    return sorted(seeds, key=lambda seed: seed.name)


def load_env_folder(path: str | Path) -> list[SeedEnv]:
    """Every ``*.py`` file (not starting with ``_``) in ``path``, sorted by name.

    For the fixed-env baseline pool. Files without a ``SKILL`` constant get skill
    ``"unknown"``; missing ``HINT`` / ``DESCRIPTION`` become ``""``. Raises
    ``FileNotFoundError`` for a missing folder, ``ValueError`` for a folder without
    environment files or a file that is not valid Python (naming the file).
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"environment folder {folder} does not exist or is not a folder")
    files = sorted(p for p in folder.iterdir() if p.is_file() and _is_env_file(p.name))
    if not files:
        raise ValueError(f"environment folder {folder} holds no .py environment files")
    return [_from_source(p.stem, p.read_text(encoding="utf-8"), str(p)) for p in files]


def find_seed(name: str) -> tuple[SeedEnv, str] | None:
    """The built-in seed environment called ``name`` (a file stem, e.g. ``mastermind``) and its
    domain, or None. Lets ``spade-async env play mastermind`` work where the package is
    installed and no checkout's file path exists."""
    for domain in DOMAINS:
        for seed in load_seeds("all", domain):
            if seed.name == name:
                return seed, domain
    return None


def seed_names() -> list[str]:
    """Names of every built-in seed environment, games and tool use, sorted."""
    return sorted(seed.name for domain in DOMAINS for seed in load_seeds("all", domain))
