"""Is the engine serving the adapter it says it is? A probe after every adapter load.

Why: the most reported failure of LoRA RL trainers is an inference engine that silently keeps
serving a stale (or the base) adapter while every metric looks normal. Completions carry the
version that was asked for; this package checks what was served.
"""

from spade_async.adapter_check.probe import AdapterProbe, ProbeResult, Scorer

__all__ = ["AdapterProbe", "ProbeResult", "Scorer"]
