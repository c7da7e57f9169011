"""Hand a run's products to the ecosystem: its adapter (PEFT or merged) and its environments.

``adapter``: a trained adapter as a PEFT folder, or merged into the base weights with the
tokenizer beside them (a plain transformers model). ``envs``: the admitted environments as a
folder of files that gymnasium can make (``spade/<name>-v0``, played in the sandbox) and
that another run can use as its fixed pool.
"""
