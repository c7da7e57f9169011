"""vLLM backend on a real GPU: tempered logprobs match an HF forward pass; adapters swap.

Runs only where CUDA and vllm exist (``pytest -m gpu``); CPU CI deselects it by the marker.
GPUs are counted without initialising CUDA (the engine's process is forked after this).
The model is ``SPADE_GPU_MODEL`` (a local folder) or else the embedded SmolLM2: no download.
"""

from __future__ import annotations

import os

import pytest

from spade_async.hardware.gpu import cuda_device_count

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.anyio,
    pytest.mark.skipif(cuda_device_count() == 0, reason="needs a CUDA GPU"),
]


async def test_vllm_logprobs_match_forward(tmp_path) -> None:
    pytest.importorskip("vllm")
    from spade_async.config import Config
    from spade_async.engine.base import GenerationRequest, Sampling
    from spade_async.engine.embedded import model_dir
    from spade_async.engine.vllm import VLLMEngine
    from spade_async.hardware.placement import resolve_placement

    model = os.environ.get("SPADE_GPU_MODEL") or str(model_dir())
    cfg = Config.model_validate(
        {
            "run": {"device": "cuda"},
            "engine": {"backend": "vllm", "gpu_memory_utilization": 0.3, "max_model_len": 1024},
            "placement": {"gpus": [0]},
        }
    )
    engine = VLLMEngine(model, cfg, resolve_placement(cfg, cuda_device_count()))
    prompt = engine.chat_prompt([{"role": "user", "content": "Say hello."}])
    out = (await engine.generate([GenerationRequest(prompt, Sampling(temperature=0.7, max_new_tokens=8, seed=0))]))[0]
    from transformers import AutoModelForCausalLM

    ref = AutoModelForCausalLM.from_pretrained(model, dtype=torch.bfloat16).cuda()
    ids = torch.tensor([prompt + out.token_ids], device="cuda")
    with torch.no_grad():
        logp = torch.log_softmax(ref(ids).logits[0].float() / 0.7, -1)
    expected = [logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(out.token_ids)]
    assert max(abs(a - b) for a, b in zip(expected, out.logprobs, strict=True)) < 0.1  # bf16 kernels differ
    await engine.aclose()
