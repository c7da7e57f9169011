"""One step numbering for everything a user reads or types: the console's, counted from 1.

Why: inside the pipeline and the database a step is an index counted from 0 (``steps.step``,
``events.step``, ``checkpoints.step``, a checkpoint's ``state.json``); users saw "step 2" on the
console while the checkpoint folder and the eval label read ``step_1``, and typed the wrong
``--step``. So the index stays internal, and every boundary a user sees (console, folder
names, ``--step``, events, TUI, report, metrics.jsonl, tracking sinks) converts here.

Checkpoint folders are ``checkpoints/step_N`` with N the step it was taken after, counted
from 1. Runs written before this numbering named them by the index (their ``step_0`` is
step 1); they keep loading: the database's ``checkpoints`` rows say which index each folder
holds (a row whose folder is named after its own index is an old one), so ``--step 1`` finds
``step_0`` there. A folder without a row (a hand-made one, a run without its database) is
read with the current numbering. That lookup reads the database, so it lives in the memory
layer: :func:`spade_async.memory.queries.checkpoint_folders` (this module imports nothing of
the package).

Evaluation rows (the ``evals`` table) of such runs name steps the old way too: ``spade-async
eval --step`` labelled the model ``step_i`` and in-loop evaluations had ``eval_id``
``loop-step-i``, with ``i`` the index, which is also in the row's ``step`` column. Every
reader of the table (``Store.evals``, the report, the TUI) passes rows through
:func:`shown_eval_row`, which relabels them ``step_{i+1}`` / ``loop-step-{i+1}`` when reading.
Reading, not a migration: the report and the TUI open a run's database read-only (the TUI
while the run writes to it), so a migration would leave exactly those views of an old run
wrong. The row itself says which numbering wrote it: an old label's number equals its own
``step`` column, a new one's is always one more.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from typing import Any

PREFIX = "step_"
DB_NAME = "run.sqlite"
ADAPTER_DIR = "adapter"
"""The subfolder of a checkpoint folder that holds its PEFT adapter (written by ``run.checkpoint``,
looked for by ``eval.models``)."""
_MODEL_LABEL = re.compile(r"step_(\d+)(#\d+)?")
"""An eval row's model label from ``--step``: ``step_N``, ``#i`` added when two models shared it."""
_LOOP_EVAL_ID = re.compile(r"loop-step-(\d+)")
"""An in-loop evaluation's ``eval_id`` (``memory.store.LOOP_EVAL_PREFIX`` + the step)."""


def shown(index: int) -> int:
    """The step number a user reads for the internal (0-based) step ``index``."""
    return index + 1


def checkpoint_name(index: int) -> str:
    """Folder name of the checkpoint taken after internal step ``index``: ``step_{index + 1}``."""
    return f"{PREFIX}{shown(index)}"


def folder_number(name: str) -> int | None:
    """N of a checkpoint folder named ``step_N`` (None for any other name)."""
    tail = name.removeprefix(PREFIX)
    return int(tail) if name.startswith(PREFIX) and tail.isdigit() else None


def shown_eval_row(row: Mapping[str, Any] | sqlite3.Row) -> dict[str, Any]:
    """An ``evals`` row with its step labels in this numbering (a copy): a row written before
    it (its ``model`` ``step_i`` or ``eval_id`` ``loop-step-i`` naming its own ``step`` column
    ``i``) is relabelled ``step_{i+1}`` / ``loop-step-{i+1}``; every other row, and every row
    without a ``step`` (the base model, ``--adapter PATH``), is returned as written."""
    out = dict(row)
    step = out.get("step")
    if not isinstance(step, int):
        return out
    model = _MODEL_LABEL.fullmatch(str(out.get("model") or ""))
    if model is not None and int(model[1]) == step:
        out["model"] = f"{PREFIX}{shown(step)}{model[2] or ''}"
    eval_id = _LOOP_EVAL_ID.fullmatch(str(out.get("eval_id") or ""))
    if eval_id is not None and int(eval_id[1]) == step:
        out["eval_id"] = f"loop-step-{shown(step)}"
    return out
