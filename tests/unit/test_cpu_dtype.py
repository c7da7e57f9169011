"""`model.dtype = "auto"` asks the CPU: bf16 with avx512_bf16 or amx_bf16 in every processor's
flags, float32 without; CUDA is always bf16; a named dtype is taken as it is; the start-up line
says which and why. The engine and the learner both follow the rule (a wire test each)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from spade_async.hardware import cpu
from spade_async.hardware.device import auto_dtype_name, describe_dtype, dtype_name, resolve_dtype

ROOT = Path(__file__).resolve().parents[2]
CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni
bugs\t\t: sysret_ss_attrs

processor\t: 1
vendor_id\t: AuthenticAMD
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16
"""


def test_flags_are_those_every_processor_has() -> None:
    flags = cpu.parse_cpu_flags(CPUINFO)
    assert "avx512_bf16" in flags and "avx2" in flags
    assert "avx512_vnni" not in flags  # only processor 0 lists it
    assert "sysret_ss_attrs" not in flags  # the `bugs` line is not flags
    assert cpu.parse_cpu_flags("processor : 0\n") == frozenset()


@pytest.mark.parametrize(
    ("flags", "device", "expected"),
    [
        ({"avx2", "avx512_bf16"}, "cpu", "bfloat16"),
        ({"avx2", "amx_bf16", "amx_tile"}, "cpu", "bfloat16"),
        ({"avx2", "avx512f"}, "cpu", "float32"),
        (set(), "cpu", "float32"),
        (set(), "cuda", "bfloat16"),
        (set(), "cuda:1", "bfloat16"),
    ],
)
def test_auto_follows_the_cpu_flags(flags: set[str], device: str, expected: str) -> None:
    assert auto_dtype_name(device, frozenset(flags)) == expected


def test_a_named_dtype_overrides_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    assert resolve_dtype("auto", "cpu") is torch.bfloat16
    assert resolve_dtype("float32", "cpu") is torch.float32
    assert dtype_name("float16", "cuda") == "float16"
    assert describe_dtype("float32", "cpu") == "dtype float32 (model.dtype)"


def test_the_start_up_line_says_why_and_how_to_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"avx2", "amx_bf16"}))
    line = describe_dtype("auto", "cpu")
    assert line.startswith("dtype bfloat16 (auto: this CPU has amx_bf16;") and 'model.dtype="float32"' in line
    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"avx2"}))
    line = describe_dtype("auto", "cpu")
    assert line.startswith("dtype float32 (auto: this CPU has neither avx512_bf16 nor amx_bf16;")
    assert 'model.dtype="bfloat16"' in line


def test_engine_and_learner_load_the_base_in_the_dtype_auto_picks(tiny_model_dir, monkeypatch) -> None:
    from spade_async.config import LearnerConfig, ModelConfig
    from spade_async.engine.hf import HFEngine
    from spade_async.learner.trainer import Trainer

    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    engine = HFEngine(tiny_model_dir)
    learner = Trainer(str(tiny_model_dir), ModelConfig(lora_rank=4, lora_alpha=8), LearnerConfig())
    assert engine.model.get_input_embeddings().weight.dtype is torch.bfloat16
    frozen = [p for p in learner.model.parameters() if not p.requires_grad]
    assert frozen and all(p.dtype is torch.bfloat16 for p in frozen)
    monkeypatch.setattr(cpu, "cpu_flags", frozenset)
    assert HFEngine(tiny_model_dir).model.get_input_embeddings().weight.dtype is torch.float32


@pytest.mark.anyio
async def test_the_launcher_reports_and_uses_the_dtype_auto_picked(tmp_path, tiny_model_dir, monkeypatch) -> None:
    from spade_async.config import load_config
    from spade_async.run.assemble import open_run
    from tests.e2e.test_kill_resume import LOTTERY, overrides

    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"avx512_bf16"}))
    pool = tmp_path / "pool"
    pool.mkdir()
    (pool / "lottery.py").write_text(LOTTERY)
    cfg = load_config(ROOT / "configs" / "tiny.toml", overrides(tmp_path / "run", pool, tiny_model_dir)[1::2])
    lines: list[str] = []
    async with open_run(cfg, report=lines.append) as pipeline:
        learner_base = [p for p in pipeline.learner.model.parameters() if not p.requires_grad]
        assert all(p.dtype is torch.bfloat16 for p in learner_base)
    assert any("dtype bfloat16 (auto: this CPU has avx512_bf16;" in line for line in lines), lines
