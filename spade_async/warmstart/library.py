"""Environment libraries: the files a warm start learns from, and the part it keeps out.

A library is the built-in one of a domain (games: the generated library of ``spade_async.envlib``,
hundreds of files in families of one mechanic each; tool use: its seeds), a folder of environment files, or a JSONL file (one ``{"code": "..."}`` object per line,
with an optional ``"family"``; SPADE's published environment pools can be written so). Files are
read as text with ``ast`` (``envs.seeds.string_constants``): nothing is run.

Why families: a warm start that holds out single files still shows the model a sibling of each
held-out file (same mechanic, other words), so its held-out loss measures recall, not writing.
Whole families are held out instead: the generated library's own held-out families
(``envlib.held_out_families``), elsewhere a family chosen by a hash of its name, so the split is the
same on every machine and does not move when files are added. A file without a family is a
family of its own.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from spade_async.config import Config
from spade_async.envlib import held_out_families, load_envlib
from spade_async.envs.seeds import load_env_folder, load_seeds, string_constants
from spade_async.selfplay.design.novelty import code_key
from spade_async.util.errors import UserError


class LibraryError(UserError):
    """An environment library that cannot be read; the message names the file and line."""

    exit_code = 2


@dataclass(frozen=True)
class LibraryEnv:
    """One environment file of a library."""

    name: str
    skill: str
    code: str
    family: str = ""
    """The game mechanic it shares with its siblings; empty: a family of its own."""

    @property
    def key(self) -> str:
        return hashlib.sha256(self.code.encode("utf-8")).hexdigest()

    @property
    def family_name(self) -> str:
        return self.family or self.name


def load_library(spec: str, domain: str = "games") -> list[LibraryEnv]:
    """The library ``spec`` names: ``builtin``, a folder, or a ``.jsonl`` file (sorted by name)."""
    if spec == "builtin":
        if domain != "games":
            return [LibraryEnv(s.name, s.skill, s.source) for s in load_seeds("all", domain)]
        return sorted((LibraryEnv(f.name, f.skill, f.code, f.family) for f in load_envlib()), key=lambda e: e.name)
    path = Path(spec).expanduser()
    if path.is_dir():
        try:
            return [LibraryEnv(s.name, s.skill, s.source) for s in load_env_folder(path)]
        except ValueError as exc:
            raise LibraryError(f"warmstart.library: {exc}") from None
    if path.is_file() and path.suffix == ".jsonl":
        return _from_jsonl(path)
    raise LibraryError(f"warmstart.library = {spec!r}: not 'builtin', a folder of environment files or a .jsonl file")


def _from_jsonl(path: Path) -> list[LibraryEnv]:
    envs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            code = row["code"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise LibraryError(f'{path}:{number}: expected a JSON object with a "code" string') from None
        if not isinstance(code, str) or not code.strip():
            raise LibraryError(f'{path}:{number}: "code" must be a non-empty string')
        skill = string_constants(code).get("SKILL") or str(row.get("skill") or "unknown")
        envs.append(LibraryEnv(str(row.get("name") or f"line{number}"), skill, code, str(row.get("family") or "")))
    if not envs:
        raise LibraryError(f"{path}: no environments in the file")
    return sorted(envs, key=lambda e: e.name)


def held_out(env: LibraryEnv, share: float) -> bool:
    """Whether ``env``'s family is held out: one of the generated library's held-out families
    (whatever ``share``, unless it is 0), else the ``share`` of families chosen by their name's hash."""
    if share <= 0.0:
        return False
    generated, held = _generated_families()
    if env.family in generated:
        return env.family in held
    digest = hashlib.sha256(env.family_name.encode("utf-8")).hexdigest()
    return int(digest[:8], 16) / 0xFFFFFFFF < share


@functools.cache
def _generated_families() -> tuple[frozenset[str], frozenset[str]]:
    """(every family of the generated library, its held-out ones)."""
    return frozenset(f.family for f in load_envlib()), frozenset(held_out_families())


def split_library(envs: list[LibraryEnv], share: float) -> tuple[list[LibraryEnv], list[LibraryEnv]]:
    """(train, held out), whole families at a time; at least one file stays in training."""
    train = [e for e in envs if not held_out(e, share)]
    out = [e for e in envs if held_out(e, share)]
    if not train:
        train, out = out[:1], out[1:]
    return train, out


def library_fingerprint(envs: list[LibraryEnv]) -> str:
    """sha256 over the library's files and their families (order-independent)."""
    return hashlib.sha256("".join(sorted(f"{e.key}:{e.family}\n" for e in envs)).encode()).hexdigest()


def warm_start_library_keys(cfg: Config) -> frozenset[str]:
    """The copy-rule keys (``selfplay.design.novelty.code_key``) of the library a run's warm
    start trains on; empty without a warm start (or when it starts from a given adapter)."""
    if not cfg.warmstart.enabled or cfg.warmstart.adapter is not None:
        return frozenset()
    return frozenset(code_key(e.code) for e in load_library(cfg.warmstart.library, cfg.selfplay.domain))
