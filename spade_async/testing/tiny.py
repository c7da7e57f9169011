"""A tiny randomly initialised Llama with the real SmolLM2 tokenizer, for fast tests.

Why the real tokenizer: chat templates, EOS handling, ``\\boxed{}`` parsing and token
alignment bugs only show with the real vocabulary; the weights can be random. The model is
~6.5 M parameters (mostly the tied 49k x 128 embedding) and runs a generate step in
milliseconds on one core.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spade_async.engine.embedded import build_cached, cache_root, tokenizer_dir


def build_tiny_model(out_dir: Path | None = None, seed: int = 0) -> Path:
    """Build (once) and return the folder of the tiny model; default: in the cache."""
    target = Path(out_dir) if out_dir is not None else cache_root() / f"tiny-llama-seed{seed}"

    def build(tmp: Path) -> None:
        import torch
        from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

        tok = AutoTokenizer.from_pretrained(str(tokenizer_dir()))
        config = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=128,
            intermediate_size=256,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        model.save_pretrained(str(tmp), safe_serialization=True)
        tok.save_pretrained(str(tmp))

    return build_cached(target, build)


def tiny_llama(vocab_size: int = 300, seed: int = 0, dtype: Any = None) -> Any:
    """An in-memory tiny Llama (2 layers, hidden 64, grouped KV heads, tied head; no tokenizer,
    nothing written), in eval mode: for tests of layers and adapters that need no real text."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)  # the same weights on every call
    model = LlamaForCausalLM(config)
    return (model if dtype is None else model.to(dtype)).eval()
