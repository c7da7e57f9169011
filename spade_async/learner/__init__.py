"""The learner: the GRPO loss (grpo), micro-batching (batching), the LoRA/QLoRA trainer and the
training samples."""
