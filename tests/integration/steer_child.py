"""A scripted run in its own process, for the kill -9 steering test:
``python -m tests.integration.steer_child ROOT STEPS [--resume]`` (exit 0 when it finishes)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from spade_async.run.assemble import open_run
from spade_async.testing import ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import make_config
from tests.integration.test_steering import numbered_designer


def main(root: Path, steps: int, resume: bool) -> int:
    cfg = make_config(root, mode="spade", skills_per_regen=1, repair_turns=0, regen_every=3)
    cfg.run.max_steps = steps
    cfg.run.checkpoint_every = 1

    async def go() -> int:
        engine = ScriptedEngine(policies={"designer": numbered_designer()})
        async with open_run(
            cfg, resume=resume, force=True, engine=engine, learner=ScriptedLearner(), report=lambda s: None
        ) as pipeline:
            await pipeline.run(sync=True)
            await pipeline.store.set_run_status("finished")
        return 0

    return anyio.run(go)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]), "--resume" in sys.argv[3:]))
