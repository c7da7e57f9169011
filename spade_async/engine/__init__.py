"""Generation behind one async Protocol (engine/base.py): the transformers engine (hf), vLLM,
the embedded model, and what they share (prefix cache, LoRA application, stop and loop rules)."""
