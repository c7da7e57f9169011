"""The base model the engine serves when the learner trains on a 4-bit one.

Why: a QLoRA learner computes with the NF4-quantised base; an engine serving the original
bf16 base samples from other weights, so every "on-policy" token is off-policy by the
quantisation error (measured on SmolLM2-135M: 0.68 nats mean, p99 4.47). So by default
(``model.qlora_serve = "dequantized"``) the engine serves the learner's own weights: the
NF4 base dequantised once by bitsandbytes and written as a plain safetensors model.
"""

from spade_async.served_base.resolve import engine_model_path, served_base_key

__all__ = ["engine_model_path", "served_base_key"]
