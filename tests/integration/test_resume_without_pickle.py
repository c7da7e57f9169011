"""Resuming from a data-format checkpoint never unpickles: with ``pickle`` and ``torch.load``
made to fail, an interrupted run (scripted engine and learner, real sandbox and SQLite)
resumes and finishes, and every checkpoint folder holds no pickle."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
import torch

from spade_async.run.assemble import innermost, open_run
from spade_async.testing import ScriptedLearner
from spade_async.util import failpoints
from spade_async.util.failpoints import InjectedFailure
from tests.integration.test_pipeline import rows
from tests.integration.test_resume import engine, spade_config

pytestmark = pytest.mark.anyio


async def test_a_data_checkpoint_resumes_with_pickle_forbidden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "b").mkdir()
    cfg = spade_config(tmp_path, "b")
    monkeypatch.setenv("SPADE_ASYNC_RAISE_AT", "learn:3")
    failpoints._hits.clear()
    with pytest.raises(BaseException) as raised:
        async with open_run(cfg, engine=engine(), learner=ScriptedLearner(), report=lambda s: None) as p:
            await p.run(sync=True)
    assert isinstance(innermost(raised.value), InjectedFailure)
    monkeypatch.delenv("SPADE_ASYNC_RAISE_AT")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("resuming from a data-format checkpoint must not unpickle")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    monkeypatch.setattr(torch, "load", refuse)
    async with open_run(cfg, resume=True, engine=engine(), learner=ScriptedLearner(), report=lambda s: None) as p:
        assert p.start_step == 2
        assert any(e.design is not None for e in p.curriculum.live)  # rebuilt from the data, designs pending
        assert await p.run(sync=True) == 2
    run_dir = tmp_path / "b" / "run"
    assert rows(run_dir / "run.sqlite", "SELECT step FROM checkpoints ORDER BY step") == [(0,), (1,), (2,), (3,)]
    for folder in (run_dir / "checkpoints").iterdir():
        names = {f.name for f in folder.iterdir()}
        assert {"state.json", "tensors.safetensors"} <= names and "state.pt" not in names
