"""What the engine loads for a QLoRA learner: the dequantised NF4 base by default (built once,
cached by a key that names everything the weights depend on), the original base when asked or
when the learner is not 4-bit; and the launcher hands the engine that folder (wire test).
The real dequantisation needs bitsandbytes: tests_vllm_cpu/ runs it against vLLM."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from spade_async.config import Config
from spade_async.served_base import dequantize as dequantize_mod
from spade_async.served_base import engine_model_path, served_base_key


def qlora(serve: str = "dequantized", dtype: str = "bfloat16") -> Config:
    return Config.model_validate(
        {"run": {"device": "cpu"}, "model": {"qlora": True, "qlora_serve": serve, "dtype": dtype}}
    )


@pytest.fixture
def fake_dequantize(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Stand-in for bitsandbytes: the 'dequantised' folder is a copy of the model (records calls)."""
    calls: list[str] = []

    def write(model_path: str, load_dtype: object, device: str, out: Path) -> int:
        calls.append(f"{model_path} {load_dtype} {device}")
        for f in Path(model_path).iterdir():
            if f.is_file():
                shutil.copy2(f, out / f.name)
        return 1

    monkeypatch.setattr(dequantize_mod, "write_dequantized_base", write)
    monkeypatch.setenv("SPADE_ASYNC_CACHE", str(tmp_path / "cache"))
    return calls


def test_not_qlora_or_serving_the_base_uses_the_model_itself(tiny_model_dir: Path, fake_dequantize: list[str]) -> None:
    plain = Config.model_validate({"run": {"device": "cpu"}})
    assert engine_model_path(plain, str(tiny_model_dir), "cpu") == str(tiny_model_dir)
    assert engine_model_path(qlora("base"), str(tiny_model_dir), "cpu") == str(tiny_model_dir)
    assert fake_dequantize == []


def test_the_dequantised_base_is_built_once_and_reused(tiny_model_dir: Path, fake_dequantize: list[str]) -> None:
    lines: list[str] = []
    first = engine_model_path(qlora(), str(tiny_model_dir), "cpu", report=lines.append)
    again = engine_model_path(qlora(), str(tiny_model_dir), "cpu", report=lines.append)
    assert first == again != str(tiny_model_dir)
    assert (Path(first) / ".complete").exists() and (Path(first) / "config.json").exists()
    assert fake_dequantize == [f"{tiny_model_dir} torch.bfloat16 cpu"]
    assert len(lines) == 2 and "dequantising the NF4 base" in lines[0] and "MiB on disk" in lines[1]


def test_the_key_names_what_the_weights_depend_on(tiny_model_dir: Path, tmp_path: Path) -> None:
    key = served_base_key(qlora(), str(tiny_model_dir), "cpu")
    assert key == served_base_key(qlora(), str(tiny_model_dir), "cpu")
    assert key != served_base_key(qlora(dtype="float32"), str(tiny_model_dir), "cpu")
    assert key != served_base_key(qlora(), str(tiny_model_dir), "cuda:0")
    assert served_base_key(qlora(), str(tiny_model_dir), "cuda:0") == served_base_key(
        qlora(), str(tiny_model_dir), "cuda:1"
    )
    other = tmp_path / "model"
    shutil.copytree(tiny_model_dir, other)
    assert key != served_base_key(qlora(), str(other), "cpu")
    before = served_base_key(qlora(), str(other), "cpu")
    (other / "config.json").write_text((other / "config.json").read_text() + "\n")  # a changed file
    assert served_base_key(qlora(), str(other), "cpu") != before


@pytest.mark.anyio
async def test_the_launcher_starts_the_engine_on_the_dequantised_base(
    tiny_model_dir: Path, fake_dequantize: list[str]
) -> None:
    from spade_async.hardware.placement import resolve_placement
    from spade_async.run.assemble import start_engine

    cfg = qlora(dtype="float32")
    engine = await start_engine(cfg, str(tiny_model_dir), resolve_placement(cfg, 0), report=lambda s: None)
    served = engine_model_path(cfg, str(tiny_model_dir), "cpu")
    assert served != str(tiny_model_dir)
    assert Path(engine.model.config._name_or_path) == Path(served)  # type: ignore[attr-defined]
    assert len(fake_dequantize) == 1
    await engine.aclose()


def test_the_probe_bound_is_off_only_where_the_engine_serves_other_weights() -> None:
    from spade_async.run.assemble import adapter_probe
    from spade_async.testing import ScriptedEngine, ScriptedLearner

    def bound(**cfg: object) -> float | None:
        config = Config.model_validate({"run": {"device": "cpu"}, **cfg})
        return adapter_probe(config, ScriptedEngine(), ScriptedLearner()).max_gap  # type: ignore[arg-type]

    assert bound() == 0.15
    assert bound(model={"qlora": True}) == 0.15  # the dequantised base: the learner's own weights
    assert bound(model={"qlora": True, "qlora_serve": "base"}) is None
    assert bound(model={"qlora": True}, cluster={"enabled": True, "engine_replicas": 1}) is None
