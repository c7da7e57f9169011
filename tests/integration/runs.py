"""Run folders for the output tests: one written by the real pipeline (scripted engine and
learner, real sandbox and SQLite), one holding a real LoRA adapter of the tiny model."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import anyio

from spade_async.memory.store import Store
from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import alternating_designer, make_config


def pipeline_run(tmp_path: Path, steps: int = 4, **selfplay: object) -> Path:
    """A 4-step SPADE run (coin designs admitted, broken ones rejected); returns its folder.
    ``selfplay``: more settings of the selfplay section."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, **selfplay)
    cfg.run.max_steps = steps

    async def go() -> None:
        engine = ScriptedEngine(policies={"designer": alternating_designer()})
        async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
            await pipeline.run(sync=True)

    anyio.run(go)
    return Path(cfg.run.run_dir)


def tiny_adapter_run(tmp_path: Path, model_dir: Path, step: int = 2) -> Path:
    """A run folder (config, database, checkpoints/step_N/adapter) whose adapter is a real,
    non-zero LoRA on the tiny model."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.toml").write_text(
        f'[run]\ndevice = "cpu"\nrun_dir = "{run}"\n[model]\nname = "{model_dir}"\n'
        '[engine]\nmax_model_len = 2048\n[engine.agent]\nmax_new_tokens = 8\nstop = ["}"]\n'
        "[selfplay]\nmax_turns = 2\nmax_context_tokens = 1024\naction_prefill = true\n"
        '[log]\nbackends = ["console", "tensorboard"]\n'
    )

    async def init_db() -> None:
        async with await Store.open(run / "run.sqlite") as store:
            await store.start_run("tiny", "", None)

    anyio.run(init_db)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    lora = get_peft_model(
        model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    )
    lora.save_pretrained(str(run / "checkpoints" / f"step_{step}" / "adapter"))
    return run


def stored_links(run: Path) -> set[tuple[str, str]]:
    """(parent, child) mutation links as the run's store holds them: what every lineage view must show."""
    with contextlib.closing(sqlite3.connect(run / "run.sqlite")) as conn:
        return {(p, c) for c, p in conn.execute("SELECT id, parent_id FROM environments WHERE parent_id IS NOT NULL")}
