"""Environment libraries: the files a warm start learns from, and the part it keeps out.

A library is the built-in seeds of a domain, a folder of environment files, or a JSONL file
(one ``{"code": "..."}`` object per line; SPADE's published environment pools can be written
so). Files are read as text with ``ast`` (``envs.seeds.string_constants``): nothing is run.
The held-out part is chosen by a hash of each file's code, so it is the same on every machine
and does not move when files are added.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from spade_async.config import Config
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

    @property
    def key(self) -> str:
        return hashlib.sha256(self.code.encode("utf-8")).hexdigest()


def load_library(spec: str, domain: str = "games") -> list[LibraryEnv]:
    """The library ``spec`` names: ``builtin``, a folder, or a ``.jsonl`` file (sorted by name)."""
    if spec == "builtin":
        return [LibraryEnv(s.name, s.skill, s.source) for s in load_seeds("all", domain)]
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
        envs.append(LibraryEnv(str(row.get("name") or f"line{number}"), skill, code))
    if not envs:
        raise LibraryError(f"{path}: no environments in the file")
    return sorted(envs, key=lambda e: e.name)


def held_out(env: LibraryEnv, share: float) -> bool:
    """Whether ``env`` is in the held-out ``share`` of any library (by its code's hash)."""
    return int(env.key[:8], 16) / 0xFFFFFFFF < share


def split_library(envs: list[LibraryEnv], share: float) -> tuple[list[LibraryEnv], list[LibraryEnv]]:
    """(train, held out); at least one file stays in training."""
    train = [e for e in envs if not held_out(e, share)]
    out = [e for e in envs if held_out(e, share)]
    if not train:
        train, out = out[:1], out[1:]
    return train, out


def library_fingerprint(envs: list[LibraryEnv]) -> str:
    """sha256 over the library's files (order-independent)."""
    return hashlib.sha256("".join(sorted(e.key for e in envs)).encode()).hexdigest()


def warm_start_library_keys(cfg: Config) -> frozenset[str]:
    """The copy-rule keys (``selfplay.design.novelty.code_key``) of the library a run's warm
    start trains on; empty without a warm start (or when it starts from a given adapter)."""
    if not cfg.warmstart.enabled or cfg.warmstart.adapter is not None:
        return frozenset()
    return frozenset(code_key(e.code) for e in load_library(cfg.warmstart.library, cfg.selfplay.domain))
