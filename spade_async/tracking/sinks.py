"""The sinks: each takes ``log(step, metrics)`` (already namespaced) and ``close()``.

- ``tensorboard``: event files in ``run_dir/tensorboard`` (torch's ``SummaryWriter``), flushed
  every step so a crash loses nothing already logged.
- ``trackio``: trackio's local store (``TRACKIO_DIR``, default ``~/.cache/huggingface/trackio``),
  project ``log.project`` (default: the run name), one trackio run per spade-async run;
  view with ``trackio show``. Its console banner is captured, not printed (it would scribble
  over the TUI).
- ``wandb``: Weights & Biases, only when installed; credentials and mode (online/offline)
  come from W&B's own configuration (``wandb login``, ``WANDB_MODE``).

A sink whose library is missing fails at start with one line naming the package to install.
Calls are synchronous; the orchestrator runs them in a worker thread.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from spade_async.util.errors import UserError

TRACKING_BACKENDS = ("tensorboard", "trackio", "wandb")
PACKAGES = {"tensorboard": "tensorboard", "trackio": "trackio", "wandb": "wandb"}


class TrackingError(UserError):
    """A sink that cannot start; the message names what to install or set."""


class Sink(Protocol):
    def log(self, step: int, metrics: dict[str, float]) -> None: ...

    def close(self) -> None: ...


class TensorBoardSink:
    def __init__(self, logdir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.logdir = logdir
        self.writer = SummaryWriter(log_dir=str(logdir))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for name, value in metrics.items():
            self.writer.add_scalar(name, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class TrackioSink:
    def __init__(self, project: str, name: str, config: dict[str, Any] | None = None) -> None:
        import trackio

        self._trackio = trackio
        with contextlib.redirect_stdout(io.StringIO()):
            self.run = trackio.init(
                project=project,
                name=name,
                config=config,
                embed=False,
                resume="allow",
                auto_log_cpu=False,
                auto_log_gpu=False,
            )

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=step)

    def close(self) -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            self.run.finish()


class WandbSink:
    """W&B with the training step as a logged x axis (``train/step``), not W&B's own ``step``.

    Why: W&B's ``step`` must only grow, and drops anything logged at an earlier one, but an
    in-loop evaluation reports step N after the pipeline has logged later steps. A custom x
    axis (``define_metric(..., step_metric=...)``) may be logged out of order.
    """

    STEP_KEY = "train/step"

    def __init__(self, project: str, name: str, run_dir: Path, config: dict[str, Any] | None = None) -> None:
        import wandb  # optional, not a dependency

        self.run = wandb.init(project=project, name=name, dir=str(run_dir), config=config, resume="allow")
        self.run.define_metric(self.STEP_KEY)
        self.run.define_metric("*", step_metric=self.STEP_KEY)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log({**metrics, self.STEP_KEY: step})

    def close(self) -> None:
        self.run.finish()


def check_installed(backends: Sequence[str]) -> None:
    """Raise :class:`TrackingError` for a selected backend whose package is missing."""
    for backend in backends:
        package = PACKAGES.get(backend)
        if package and importlib.util.find_spec(package) is None:
            raise TrackingError(
                f"log.backends includes {backend!r} but {package} is not installed; "
                f"pip install {package} (or remove it from log.backends)"
            )


def make_sinks(
    backends: Sequence[str], *, run_dir: Path, project: str, name: str, config: dict[str, Any] | None = None
) -> list[Sink]:
    """The tracking sinks selected in ``backends`` (console/jsonl are the orchestrator's own)."""
    check_installed(backends)
    sinks: list[Sink] = []
    for backend in backends:
        if backend == "tensorboard":
            sinks.append(TensorBoardSink(run_dir / "tensorboard"))
        elif backend == "trackio":
            sinks.append(TrackioSink(project, name, config))
        elif backend == "wandb":
            sinks.append(WandbSink(project, name, run_dir, config))
    return sinks
