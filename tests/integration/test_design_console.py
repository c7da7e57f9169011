"""The console shows each design of a generation with its verdict and first rejection reason,
how many were admitted and how many environments memory supplied; with an embedded (135M)
model and nothing admitted it says once what such a model can and cannot do."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from spade_async.run.assemble import open_run
from spade_async.testing import BROKEN_ENV, ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import alternating_designer, heads_if_hinted, make_config

pytestmark = pytest.mark.anyio


async def run_lines(
    tmp_path: Path,
    designer: object,
    *,
    model: str | None = None,
    console: bool = True,
    max_library_similarity: float = 1.0,
) -> list[str]:
    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0)
    cfg.selfplay.max_library_similarity = max_library_similarity
    cfg.run.max_steps = 3  # generations at steps 1 and 3
    if model is not None:
        cfg.model.name = model
    if not console:
        cfg.log.backends = ["jsonl"]
    lines: list[str] = []
    engine = ScriptedEngine(policies={"designer": designer, "agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lines.append) as pipeline:
        assert await pipeline.run(sync=True) == 3
    return lines


async def test_each_design_and_its_verdict_is_on_the_console(tmp_path: Path) -> None:
    lines = await run_lines(tmp_path, alternating_designer())
    summaries = [ln for ln in lines if "designer:" in ln]
    assert summaries == [
        "step    1 | designer: 1/2 designs admitted; 1 environment(s) from memory (seed games "
        "or past designs) fill the live pool",
        "step    3 | designer: 1/2 designs admitted; 1 environment(s) from memory (seed games "
        "or past designs) fill the live pool",
    ]
    designs = [ln for ln in lines if ln.startswith("  design ")]
    assert len(designs) == 4
    admitted = [ln for ln in designs if ": admitted, nearest library file " in ln]
    assert len(admitted) == 2 and all(re.search(r"\(([01]\.\d\d)\)$", ln) for ln in admitted), admitted
    rejected = [ln for ln in designs if ": rejected: " in ln]
    assert len(rejected) == 2 and all(len(ln) <= 160 for ln in rejected)
    assert not any("a model this small" in ln for ln in lines)  # not the embedded model


async def test_an_admitted_design_names_its_nearest_shipped_file_on_the_console_and_in_its_event(
    tmp_path: Path,
) -> None:
    """The wire: the generator measures every admitted design against the shipped files; a design
    that is a library file with one word changed names that file, with a ratio near 1; so does
    the run's report."""
    from spade_async.envlib import load_envlib
    from spade_async.memory.readonly import open_readonly

    source = load_envlib()[0]
    edited = source.code.replace("class ", "class Edited", 1)

    def near_copy(prompt: str, rng: object) -> str:
        return f"```python\n{edited}```"

    lines = await run_lines(tmp_path, near_copy)
    designs = [ln for ln in lines if ln.startswith("  design ") and ": admitted" in ln]
    assert designs and all(ln.endswith(f"nearest library file {source.name} (1.00)") for ln in designs), designs
    conn = open_readonly(tmp_path / "run" / "run.sqlite")
    try:
        events = [m for (m,) in conn.execute("SELECT message FROM events WHERE kind = 'admitted'")]
    finally:
        conn.close()
    assert events and f"nearest library file {source.name} (1.00)" in events[0], events
    from spade_async.report.data import read_run
    from spade_async.report.markdown import summary

    report = summary(read_run(tmp_path / "run" / "run.sqlite"), tmp_path / "run")
    assert "- admitted at step 1: env " in report and f"nearest library file {source.name} (1.00)" in report


async def test_a_near_copy_of_a_shipped_file_is_rejected_when_the_switch_is_on(tmp_path: Path) -> None:
    """The wire: with ``selfplay.max_library_similarity`` below a design's ratio to its nearest
    shipped file, the run rejects it (console line, event) and records it as invalid; the
    identical designs after it are copies of that record."""
    from spade_async.envlib import load_envlib
    from spade_async.memory.readonly import open_readonly

    source = load_envlib()[0]
    edited = source.code.replace("class ", "class Edited", 1)

    def near_copy(prompt: str, rng: object) -> str:
        return f"```python\n{edited}```"

    lines = await run_lines(tmp_path, near_copy, max_library_similarity=0.95)
    designs = [ln for ln in lines if ln.startswith("  design ")]
    assert designs and not any(": admitted" in ln for ln in designs), designs
    assert f": rejected: near-copy of library file {source.name}" in designs[0], designs  # later ones copy it
    conn = open_readonly(tmp_path / "run" / "run.sqlite")
    try:
        events = conn.execute("SELECT kind, message FROM events WHERE kind IN ('admitted', 'rejected')").fetchall()
        rows = conn.execute("SELECT status FROM environments WHERE origin != 'seed'").fetchall()
    finally:
        conn.close()
    assert events and {kind for kind, _ in events} == {"rejected"}, events
    assert re.search(rf"near-copy of library file {source.name} \(0\.99\d > 0\.95\)", events[0][1]), events[0][1]
    assert [tuple(r) for r in rows] == [("invalid",)]


async def test_an_embedded_model_that_designs_nothing_is_told_apart_once(tmp_path: Path) -> None:
    def broken(prompt: str, rng: object, designs: itertools.cycle[str] = itertools.cycle([BROKEN_ENV])) -> str:
        return f"```python\n{next(designs)}```"

    lines = await run_lines(tmp_path, broken, model="embedded:smollm2-135m-instruct")
    assert next(ln.split("|")[1].strip() for ln in lines if "designer:" in ln).startswith(
        "designer: 0/2 designs admitted"
    )
    told = [ln for ln in lines if "a model this small" in ln]
    assert len(told) == 1 and "docs/gpu.md" in told[0]


async def test_no_design_lines_without_the_console_backend(tmp_path: Path) -> None:
    lines = await run_lines(tmp_path, alternating_designer(), console=False)
    assert not any("design" in ln for ln in lines)
