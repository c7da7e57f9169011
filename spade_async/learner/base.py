"""The learner as the run sees it, as a Protocol.

Why here and not beside its caller: the pipeline trains through it and the checkpoint saves
and restores through it; defined at the learner's own layer (as ``engine.base.Engine`` is),
both import it downward and neither imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from spade_async.learner.samples import TrainSample


class Learner(Protocol):
    """What the run needs from a learner: train, publish, checkpoint (``learner.trainer.Trainer``
    and ``testing.ScriptedLearner`` satisfy it)."""

    version: int

    def train_step(self, samples: list[TrainSample]) -> dict[str, float]: ...

    def save_adapter(self, path: str | Path) -> None: ...

    def supervised_step(
        self,
        samples: list[TrainSample],
        max_seq_len: int | None = None,
        lr: float | None = None,
        *,
        new_version: bool = True,
    ) -> dict[str, float]:
        """One cross-entropy update on the samples' trained tokens (the warm start, or its
        replay beside a run's updates with ``new_version=False``: ``version`` stays);
        ``sft_loss`` in the result."""
        ...

    def sft_loss(self, samples: list[TrainSample], max_seq_len: int | None = None) -> float:
        """Mean negative logprob of the samples' trained tokens (no update)."""
        ...

    def start_from(self, adapter: str | Path) -> None:
        """Make the PEFT adapter folder ``adapter`` the run's starting point: its weights, a
        fresh optimizer, ``version`` 1 (a warm start, ``run/warm_start.py``)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """Everything a checkpoint needs to resume the learner exactly: plain data (None, bool,
        int, float, str) and torch tensors, nested in dicts (str or int keys), lists and tuples
        (``run.checkpoint`` stores the tensors in safetensors and the rest as JSON)."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state returned by ``state_dict`` (as read back from a checkpoint)."""
        ...
