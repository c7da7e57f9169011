"""The dequantised NF4 base for real (bitsandbytes on the CPU): an unquantised learner loaded
from it scores tokens as the QLoRA learner does (the engine that serves it samples from the
learner's weights), far closer than the original base; and it is built once, then reused."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from spade_async.config import Config, LearnerConfig
from spade_async.learner.samples import TrainSample
from spade_async.learner.trainer import Trainer
from spade_async.served_base import engine_model_path
from spade_async.testing.tiny import build_tiny_model


def _samples(vocab: int) -> list[TrainSample]:
    g = torch.Generator().manual_seed(0)
    out = []
    for i in range(4):
        ids = torch.randint(3, vocab, (40,), generator=g).tolist()
        mask = [0] * 8 + [1] * 32
        out.append(TrainSample("agent", ids, mask, [0.0] * 40, 1.0 if i % 2 else -1.0, 0))
    return out


def _gap(a: list[torch.Tensor], b: list[torch.Tensor]) -> tuple[float, float]:
    diff = (torch.cat(a) - torch.cat(b)).abs()
    return float(diff.mean()), float(torch.quantile(diff, 0.99))


def test_the_dequantised_base_computes_what_the_qlora_learner_computes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPADE_ASYNC_CACHE", str(tmp_path / "cache"))
    model = str(build_tiny_model(tmp_path / "tiny"))
    cfg = Config.model_validate(
        {"run": {"device": "cpu"}, "model": {"qlora": True, "dtype": "bfloat16", "lora_rank": 8, "lora_alpha": 16}}
    )
    lines: list[str] = []
    served = engine_model_path(cfg, model, "cpu", report=lines.append)
    assert served != model and any("dequantised base ready" in line for line in lines), lines
    assert engine_model_path(cfg, model, "cpu", report=lines.append) == served and len(lines) == 2  # reused

    qlora = Trainer(model, cfg.model, LearnerConfig(), seed=0)
    plain = cfg.model.model_copy(update={"qlora": False})
    on_served = Trainer(served, plain, LearnerConfig(), seed=0)
    on_original = Trainer(model, plain, LearnerConfig(), seed=0)
    samples = _samples(int(qlora.model.get_base_model().config.vocab_size))
    nf4 = qlora.logprobs(samples)
    served_gap, original_gap = _gap(nf4, on_served.logprobs(samples)), _gap(nf4, on_original.logprobs(samples))
    print(f"QLoRA learner vs dequantised base {served_gap}, vs original base {original_gap} (mean, p99 nats)")
    assert served_gap[0] < 0.15 and served_gap[1] < 1.5
    assert served_gap[0] < original_gap[0] / 3, (served_gap, original_gap)


def test_serving_the_base_is_a_switch(tmp_path: Path) -> None:
    model = str(build_tiny_model(tmp_path / "tiny"))
    cfg = Config.model_validate({"run": {"device": "cpu"}, "model": {"qlora": True, "qlora_serve": "base"}})
    assert engine_model_path(cfg, model, "cpu") == model


pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
