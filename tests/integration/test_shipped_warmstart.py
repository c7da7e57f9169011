"""The main job's warm start ships inside the package; a test recomputes its key, so a changed
library, template, pair rule or LoRA shape makes it stale here (`spade-async warmstart tiny --ship`
makes it again), and the main job starts from it without training."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from spade_async.config import Config, load_config
from spade_async.config.presets import list_presets, resolve_config
from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from spade_async.warmstart import train
from spade_async.warmstart.library import load_library

pytestmark = pytest.mark.anyio
REMAKE = "run `spade-async warmstart tiny --ship` and commit spade_async/warmstart/shipped/"


def tiny() -> Config:
    return load_config(resolve_config("tiny"))


def safetensors_shapes(path: Path) -> dict[str, list[int]]:
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    return {name: meta["shape"] for name, meta in header.items() if name != "__metadata__"}


def test_the_main_jobs_warm_start_is_shipped_and_current() -> None:
    cfg = tiny()
    assert cfg.warmstart.enabled and cfg.warmstart.adapter is None
    key = train.warm_start_key(cfg, load_library(cfg.warmstart.library, cfg.selfplay.domain))
    folder = train.shipped_folder(cfg)
    assert folder is not None, f"no shipped warm start for configs/tiny.toml's key {key}: {REMAKE}"
    result = train.read_result(folder)
    assert result is not None and result.key == key == folder.name
    shapes = safetensors_shapes(folder / train.ADAPTER / "adapter_model.safetensors")
    targets = {name.split(".")[-3] for name in shapes}
    assert targets == set(cfg.model.lora_targets)
    assert all(cfg.model.lora_rank in shape for shape in shapes.values())
    assert result.held_out_families and result.held_out_by_family  # held-out loss per family


def test_no_shipped_result_is_stale_or_unused() -> None:
    keys = set()
    for preset in list_presets():
        cfg = load_config(preset.path)
        if cfg.warmstart.enabled and cfg.warmstart.adapter is None:
            keys.add(train.warm_start_key(cfg, load_library(cfg.warmstart.library, cfg.selfplay.domain)))
    shipped = Path(train.__file__).parent / train.SHIPPED
    assert {p.name for p in shipped.iterdir() if p.is_dir()} <= keys, REMAKE


def test_the_key_covers_the_code_and_templates_that_render_the_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tiny()
    library = load_library(cfg.warmstart.library, cfg.selfplay.domain)
    before = train.warm_start_key(cfg, library)
    monkeypatch.setattr(train, "_TEMPLATES", (*train._TEMPLATES, "repair"))
    assert train.warm_start_key(cfg, library) != before
    monkeypatch.undo()
    assert train.warm_start_key(cfg, library[1:]) != before
    lora = cfg.model_copy(update={"model": cfg.model.model_copy(update={"lora_rank": 16})})
    assert train.warm_start_key(lora, library) != before


async def test_the_main_job_starts_from_the_shipped_adapter_without_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPADE_ASYNC_CACHE", str(tmp_path / "cache"))  # an empty cache: only the package has it
    cfg = tiny()
    cfg.run.run_dir = str(tmp_path / "run")
    learner, lines = ScriptedLearner(), []
    async with open_run(cfg, engine=ScriptedEngine(), learner=learner, report=lines.append) as pipeline:
        run_dir = pipeline.run_dir
        assert learner.batches == [] and learner.version == 1
        assert learner.started_from == run_dir / "warmstart" / "adapter"
    shipped = train.shipped_folder(cfg)
    assert shipped is not None
    copied = run_dir / "warmstart" / "adapter" / "adapter_model.safetensors"
    assert copied.read_bytes() == (shipped / "adapter" / "adapter_model.safetensors").read_bytes()
    assert any("shipped with the package" in line for line in lines), lines
