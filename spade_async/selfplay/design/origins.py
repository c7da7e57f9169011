"""Which design prompts of a generation ask for a mutation and which for a fresh environment.

Why not a coin toss per prompt: with four prompts a generation and mutations admitted about
ten times as often as fresh designs (docs/designs.md), a toss per prompt made the mix, not the
designer, decide most of a generation's admitted fraction: 0 to 4 mutations, so the admitted
fraction between generations (and the designer-learning benchmark's thirds) moved with luck.
Here a generation of ``n`` prompts has ``floor(n x fraction)`` mutations plus one more with the
remainder as its chance: the same expected share, the least spread around it.
"""

from __future__ import annotations

import math
import random


def mutation_flags(n: int, fraction: float, rng: random.Random) -> list[bool]:
    """For ``n`` design prompts, whether each asks for a mutation, in a random order.

    >>> flags = mutation_flags(4, 0.5, random.Random(0))
    >>> sum(flags), len(flags)
    (2, 4)
    >>> mutation_flags(3, 0.0, random.Random(0))
    [False, False, False]
    """
    if n < 0:
        raise ValueError(f"a generation cannot have {n} design prompts")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"a mutation fraction must lie in [0, 1], got {fraction}")
    exact = n * fraction
    count = math.floor(exact)
    if rng.random() < exact - count:
        count += 1
    flags = [True] * count + [False] * (n - count)
    rng.shuffle(flags)
    return flags
