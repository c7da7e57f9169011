"""Register an exported environment folder with gymnasium (``spade/<name>-v0``).

Why a library function and not code in the exported folder: the folder's ``__init__.py``
stays two lines, and registration logic (ids, the sandboxed entry point) is tested here.
Registering twice is harmless (the same id is skipped), so importing the folder in several
places works.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium

NAMESPACE = "spade"


def make_sandboxed(path: str, max_turns: int | None = None, **_: Any) -> gymnasium.Env[str, str]:
    """gymnasium entry point: the environment file at ``path``, run in a sandbox child."""
    from spade_async.export.gym import SandboxedGymEnv

    return SandboxedGymEnv(Path(path).read_text(encoding="utf-8"), max_turns=max_turns)


def register_folder(folder: Path, *, max_turns: int | None = 32) -> list[str]:
    """Register every environment listed in ``folder/manifest.json``; return the gym ids."""
    entries = json.loads((folder / "manifest.json").read_text())["envs"]
    ids = []
    for entry in entries:
        env_id = f"{NAMESPACE}/{entry['name']}-v0"
        if env_id not in gymnasium.registry:
            gymnasium.register(
                env_id,
                entry_point=partial(make_sandboxed, str(folder / entry["file"])),
                kwargs={"max_turns": max_turns},
            )
        ids.append(env_id)
    return ids
