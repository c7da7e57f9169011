"""The shipped preset configs: where they are, what each is for, and config names that mean them.

Why: a person who installed the wheel has no ``configs/`` folder, yet ``spade-async run tiny``
must work and ``spade-async init`` must give them an editable copy with its comments. The
repository's top-level ``configs/`` is the single source: the build maps it into the wheel as
``spade_async/configs/`` (``package-dir`` in pyproject.toml), and a checkout (editable install
or ``PYTHONPATH``) reads the top-level folder directly. Every ``*.toml`` there is a preset;
its name is the file stem and its one-line summary is the first sentence of its leading
comment block, so a new preset needs nothing but the file.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from spade_async.config import ConfigError

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@dataclass(frozen=True)
class Preset:
    """One shipped config file."""

    name: str
    path: Path

    @property
    def summary(self) -> str:
        return summary_of(self.path.read_text(encoding="utf-8"))


def presets_dir() -> Path:
    """The folder of shipped presets: inside the installed package, else the checkout's configs/."""
    installed = _PACKAGE_DIR / "configs"
    if installed.is_dir():
        return installed
    checkout = _PACKAGE_DIR.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "configs").is_dir():
        return checkout / "configs"
    raise ConfigError([f"no preset folder found next to {_PACKAGE_DIR}; reinstall spade-async"])


def list_presets() -> list[Preset]:
    """Every shipped preset, sorted by name."""
    return [Preset(p.stem, p) for p in sorted(presets_dir().glob("*.toml"))]


def find_preset(name: str) -> Preset | None:
    return next((p for p in list_presets() if p.name == name), None)


def summary_of(text: str) -> str:
    """First sentence of the leading ``#`` comment block ("" when the file has none)."""
    lines: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        lines.append(stripped.lstrip("#").strip())
    block = " ".join(part for part in lines if part)
    return _SENTENCE_END.split(block, maxsplit=1)[0] if block else ""


def unknown_preset(name: str) -> ConfigError:
    """The one-line error for a name that is neither a file nor a preset."""
    names = [p.name for p in list_presets()]
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    return ConfigError(
        [f"{name}: no such config file or preset; {hint}presets: {', '.join(names)} (spade-async config list)"]
    )


def resolve_config(name_or_path: str | Path) -> Path:
    """A config argument as a file: an existing path wins, then a preset name (``tiny``).

    Raises :class:`ConfigError` naming the presets when it is neither.
    """
    path = Path(name_or_path)
    if path.exists():
        return path
    preset = find_preset(str(name_or_path))
    if preset is not None:
        return preset.path
    if path.parent != Path(".") or path.suffix:  # clearly meant as a file path
        names = ", ".join(p.name for p in list_presets())
        raise ConfigError([f"{path}: no such config file (presets, usable by name: {names})"])
    raise unknown_preset(str(name_or_path))
