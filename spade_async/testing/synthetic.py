"""Random-weight models with the exact shapes of real ones, built locally (no download).

Why: the GPU path has to be checked where no hub access exists (a device machine with no
network, CI). What speed, memory and vLLM's LoRA checks depend on is the architecture and
the shapes (layers, heads, projection names, vocabulary size), not the trained weights, so a
model with Qwen3-4B's config and random weights measures the same kernels and yields an
adapter with the same module names and tensor shapes as the real one.

The tokenizer is synthetic too: a word-level vocabulary (``t0``, ``t1``, ...) of the model's
size with Qwen's special tokens at their real ids and a ChatML template, so decoding,
EOS/pad handling and chat rendering work without the real tokenizer files. Text produced by
these models is meaningless; only throughput, memory and numerics are meaningful.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Shapes from the published config.json of each model (Qwen/Qwen3-4B, Qwen/Qwen3-8B).
QWEN3_SHAPES: dict[str, dict[str, Any]] = {
    "qwen3-4b": dict(
        hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True,
    ),
    "qwen3-8b": dict(
        hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=False,
    ),
    # Same architecture and vocabulary, small enough for a CPU test (a few MB of weights
    # besides the 151936-row embedding).
    "qwen3-tiny": dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, vocab_size=151936, tie_word_embeddings=True,
    ),
}  # fmt: skip

ENDOFTEXT, IM_START, IM_END = 151643, 151644, 151645
"""Qwen's special-token ids (``<|endoftext|>``, ``<|im_start|>``, ``<|im_end|>``)."""

SMOLLM2_135M: dict[str, Any] = dict(
    hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
    num_key_value_heads=3, head_dim=64, vocab_size=49152, tie_word_embeddings=True,
    max_position_embeddings=8192, rms_norm_eps=1e-5,
)  # fmt: skip
"""The embedded default model's shape (a Llama); its specials are 0/1/2 as in the real one."""

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def qwen3_config(shape: str, max_position_embeddings: int = 40960) -> Any:
    """A ``Qwen3Config`` with the named shape (see ``QWEN3_SHAPES``)."""
    from transformers import Qwen3Config

    if shape not in QWEN3_SHAPES:
        raise ValueError(f"unknown shape {shape!r}; choose one of {', '.join(QWEN3_SHAPES)}")
    return Qwen3Config(
        **QWEN3_SHAPES[shape],
        max_position_embeddings=max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0},
        rms_norm_eps=1e-6,
        bos_token_id=ENDOFTEXT,
        eos_token_id=IM_END,
        pad_token_id=ENDOFTEXT,
    )


def synthetic_tokenizer(
    vocab_size: int, endoftext: int = ENDOFTEXT, im_start: int = IM_START, im_end: int = IM_END
) -> Any:
    """A fast word-level tokenizer over ``vocab_size`` ids with ChatML special tokens at the
    given ids (Qwen's by default); the token at id 0 doubles as the unknown token."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = {0: "<unk>", endoftext: "<|endoftext|>", im_start: "<|im_start|>", im_end: "<|im_end|>"}
    vocab = {specials.get(i, f"t{i}"): i for i in range(vocab_size)}
    unk = specials[0]  # whatever sits at id 0 doubles as the unknown token
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=unk
    )
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    fast.chat_template = CHATML
    return fast


def smollm2_config() -> Any:
    """A ``LlamaConfig`` with the embedded SmolLM2-135M's shape and special-token ids."""
    from transformers import LlamaConfig

    return LlamaConfig(
        **SMOLLM2_135M,
        rope_parameters={"rope_type": "default", "rope_theta": 100_000.0},
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )


def write_config_only(out_dir: str | Path, shape: str) -> Path:
    """A model folder with config, generation config and tokenizer but no weights: enough
    for tools that read a model's configuration (vLLM's engine config, LoRA checks).
    ``shape``: a ``QWEN3_SHAPES`` key or ``smollm2-135m``."""
    from transformers import GenerationConfig

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if shape == "smollm2-135m":
        config, tok = smollm2_config(), synthetic_tokenizer(49152, endoftext=0, im_start=1, im_end=2)
        eos: list[int] = [2]
    else:
        config = qwen3_config(shape)
        tok, eos = synthetic_tokenizer(config.vocab_size), [IM_END, ENDOFTEXT]
    config.architectures = ["LlamaForCausalLM" if shape == "smollm2-135m" else "Qwen3ForCausalLM"]
    config.save_pretrained(str(out))
    GenerationConfig(
        bos_token_id=config.bos_token_id, eos_token_id=eos, pad_token_id=config.pad_token_id
    ).save_pretrained(str(out))
    tok.save_pretrained(str(out))
    return out


def build_qwen3(
    out_dir: str | Path,
    shape: str = "qwen3-tiny",
    *,
    dtype: str = "bfloat16",
    device: str = "cpu",
    seed: int = 0,
) -> Path:
    """Write a random-initialised Qwen3 model of ``shape`` (safetensors) and its tokenizer.

    ``device="cuda"`` initialises the weights on the GPU (seconds for 4B, where a CPU init
    takes minutes). Returns ``out_dir``.
    """
    import torch
    from transformers import AutoModelForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = qwen3_config(shape)
    torch_dtype = getattr(torch, dtype)
    torch.manual_seed(seed)
    if device.startswith("cuda"):
        torch.cuda.manual_seed_all(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch_dtype)
    model.generation_config.eos_token_id = [IM_END, ENDOFTEXT]
    model.generation_config.pad_token_id = ENDOFTEXT
    model.save_pretrained(str(out), safe_serialization=True)
    del model
    synthetic_tokenizer(config.vocab_size).save_pretrained(str(out))
    return out
