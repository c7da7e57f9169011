"""The Environment Designer's side of self-play: prompts rendered into designs, parsing,
validation and repair, the hint, the novelty (copy) rule, the corpus draw and the designer's
per-generation status."""
