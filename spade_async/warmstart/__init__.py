"""The designer warm start: supervised LoRA training on an environment library before a run.

Why: a small policy that has never written an admitted environment gets no learning signal
from admission (docs/rewards.md); a few supervised steps on (design prompt -> environment
file) pairs, rendered with the designer's own templates, teach it the file format it is
asked for. The run then starts from that adapter (``run/assemble.py``).
"""

from spade_async.warmstart.library import LibraryEnv, load_library, split_library
from spade_async.warmstart.pairs import design_pair
from spade_async.warmstart.train import WarmStartResult, run_warm_start, warm_start_key

__all__ = [
    "LibraryEnv",
    "WarmStartResult",
    "design_pair",
    "load_library",
    "run_warm_start",
    "split_library",
    "warm_start_key",
]
