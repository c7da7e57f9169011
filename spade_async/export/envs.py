"""Export a run's admitted environments as a folder: one file each, plus gymnasium registration.

Why this layout: each environment is written exactly as the designer wrote it (the format
``load_env_folder`` reads, so the folder is another run's ``selfplay.fixed_pool``), with a
``manifest.json`` of what the run measured (skill, win rate, regret, plays), and an
``__init__.py`` that registers every file with gymnasium as ``spade/<name>-v0``. The
registered envs run through :class:`spade_async.export.gym.SandboxedGymEnv`, so generated code
still only ever runs in the sandbox. ``__init__.py`` starts with ``_``, so the fixed-pool
loader skips it.

The database is read through a read-only connection: exporting from a live run does not
block or disturb it.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spade_async.export.atomic import ExportError, check_out, folder_written_whole
from spade_async.memory.queries import admitted_envs
from spade_async.memory.readonly import open_readonly
from spade_async.memory.run_dir import CONFIG_NAME
from spade_async.selfplay.design.status import designer_verdict, read_tally
from spade_async.util.steps import DB_NAME, shown

MANIFEST = "manifest.json"
SORT_KEYS = ("regret", "designer_reward", "learnable", "plays", "newest")
REGISTER_MODULE = '''"""Registers the environments of this folder with gymnasium (exported by spade-async).

    import sys; sys.path.insert(0, "<parent of this folder>")
    import {package}                      # registers spade/<name>-v0 for each file
    env = gymnasium.make("spade/<name>-v0")

or, without touching sys.path by hand: ``gymnasium.make("{package}:spade/<name>-v0")`` with the
parent folder on PYTHONPATH. Each environment runs in spade-async's sandbox.
"""

from pathlib import Path

from spade_async.export.gym_registry import register_folder

ENV_IDS = register_folder(Path(__file__).resolve().parent)
'''


@dataclass(frozen=True)
class EnvFilters:
    top: int | None = None
    sort: str = "regret"
    skills: tuple[str, ...] = ()
    min_win_rate: float | None = None
    max_win_rate: float | None = None
    min_plays: int = 0
    include_seeds: bool = False


def env_name(skill: str | None, env_id: str, origin: str, title: str | None) -> str:
    """A gymnasium-safe name: the seed's file name, else ``<skill>_<id prefix>``."""
    base = title if origin == "seed" and title else (skill or "env")
    slug = re.sub(r"[^a-z0-9]+", "_", base.lower()).strip("_") or "env"
    return slug if origin == "seed" else f"{slug}_{env_id[:8]}"


def _sort_key(sort: str, row: dict[str, Any]) -> float:
    def num(v: Any) -> float:
        return -math.inf if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    if sort == "learnable":  # closest to a 0.5 win rate first
        return -abs(num(row["win_rate"]) - 0.5) if row["win_rate"] is not None else -math.inf
    if sort == "plays":
        return num(row["n_plays"])
    if sort == "newest":
        return num(row["created_step"])
    return num(row[sort])


def select_envs(db: Path, filters: EnvFilters) -> list[dict[str, Any]]:
    """Admitted environments of the run database ``db`` that pass ``filters``, best first."""
    if filters.sort not in SORT_KEYS:
        raise ExportError(f"unknown sort key {filters.sort!r}; choose from {', '.join(SORT_KEYS)}")
    try:
        conn = open_readonly(db)
    except FileNotFoundError:
        raise ExportError(f"{db.parent} is not a run folder (no {db.name})") from None
    try:
        rows = admitted_envs(conn)
    finally:
        conn.close()
    out = []
    for r in rows:
        if r["origin"] == "seed" and not filters.include_seeds:
            continue
        if filters.skills and r["skill"] not in filters.skills:
            continue
        w = r["win_rate"]
        if filters.min_win_rate is not None and (w is None or w < filters.min_win_rate):
            continue
        if filters.max_win_rate is not None and (w is None or w > filters.max_win_rate):
            continue
        if (r["n_plays"] or 0) < filters.min_plays:
            continue
        out.append(r)
    out.sort(key=lambda r: (_sort_key(filters.sort, r), r["id"]), reverse=True)
    return out[: filters.top] if filters.top is not None else out


def nothing_to_export(run_dir: Path, filters: EnvFilters) -> str:
    """Why no environment of ``run_dir`` was selected, in words a user can act on: a fixed-pool
    run has no designer, a designer whose designs all failed validation is explained (with the
    reasons, and what a model this small can do), and otherwise the filters are to blame."""
    seeds = "" if filters.include_seeds else " --include-seeds exports the seed games the run played."
    try:
        cfg = tomllib.loads((run_dir / CONFIG_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, RecursionError, tomllib.TOMLDecodeError):
        cfg = {}
    model = cfg.get("model", {}).get("name")
    if cfg.get("selfplay", {}).get("mode") == "fixed":
        return f"nothing to export from {run_dir}: it is a fixed-pool run (no designer, so no designed environments).{seeds}"
    conn = open_readonly(run_dir / DB_NAME)
    try:
        t = read_tally(conn)
    finally:
        conn.close()
    if t.designed == 0:
        return f"nothing to export from {run_dir}: the designer has not written an environment yet.{seeds}"
    if t.admitted == 0:
        verdict = designer_verdict(t, model if isinstance(model, str) else None) or ""
        return f"nothing to export from {run_dir}. {verdict}{seeds}"
    return (
        f"no admitted environment in {run_dir} passes the filters ({t.admitted} of {t.designed} designs were admitted)"
        + ("" if filters.include_seeds else "; seed environments are left out (--include-seeds adds them)")
    )


def export_envs(run_dir: Path, out: Path, filters: EnvFilters, *, force: bool = False) -> list[dict[str, Any]]:
    """Write the selected environments, ``manifest.json`` and ``__init__.py`` to ``out``."""
    check_out(out, run_dir, force=force, marker=MANIFEST)
    chosen = select_envs(run_dir / DB_NAME, filters)
    if not chosen:
        raise ExportError(nothing_to_export(run_dir, filters))
    if not out.name.isidentifier():
        raise ExportError(
            f"{out.name!r} is not a Python package name (the folder is imported to register the envs); "
            "use letters, digits and underscores, e.g. my_envs"
        )
    with folder_written_whole(out) as tmp:
        manifest = _write_envs(run_dir, chosen, tmp, out.name)
    return manifest


def _write_envs(run_dir: Path, chosen: list[Any], out: Path, package: str) -> list[dict[str, Any]]:
    manifest = []
    used: set[str] = set()
    for r in chosen:
        name = env_name(r["skill"], r["id"], r["origin"], r["doc_title"])
        while name in used:
            name += "_"
        used.add(name)
        (out / f"{name}.py").write_text(r["code"], encoding="utf-8")
        manifest.append(
            {
                "name": name,
                "file": f"{name}.py",
                "gym_id": f"spade/{name}-v0",
                "env_id": r["id"],
                "skill": r["skill"],
                "origin": r["origin"],
                "hint": r["hint"],
                "win_rate": r["win_rate"],
                "hint_win_rate": r["hint_win_rate"],
                "regret": r["regret"],
                "designer_reward": r["designer_reward"],
                "n_plays": r["n_plays"],
                "created_step": shown(r["created_step"]),
            }
        )  # counted from 1, as the TUI shows it
    (out / MANIFEST).write_text(json.dumps({"run_dir": str(run_dir.resolve()), "envs": manifest}, indent=1))
    (out / "__init__.py").write_text(REGISTER_MODULE.format(package=package))
    return manifest
