"""Where a step's metrics go besides the database: the console line, ``metrics.jsonl`` and the
tracking sinks (TensorBoard, trackio, W&B), each every ``log.every`` steps.

Why its own owner: the sinks are opened when the run starts, read by the evaluations beside
the two stages (they log their own scores to the same sinks) and closed when the run ends;
the pipeline only hands over each step's metrics. ``log`` is the one config section it reads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from spade_async.config import LogConfig
from spade_async.tracking.names import namespaced
from spade_async.tracking.sinks import Sink
from spade_async.util.steps import shown

METRICS_FILE = "metrics.jsonl"


class StepLog:
    """The per-step log of one run (console, jsonl, tracking sinks)."""

    def __init__(
        self, log: LogConfig, *, run_dir: Path, sinks: Sequence[Sink], report: Callable[[str], None], learning: bool
    ) -> None:
        self.log = log
        self.file = run_dir / METRICS_FILE
        self.sinks: list[Sink] = list(sinks)
        """TensorBoard / trackio / W&B sinks selected in log.backends (console and jsonl are here)."""
        self.report = report
        self.learning = learning
        """Whether the run trains (the console line shows the loss, or "learner off")."""

    async def write(self, step: int, metrics: dict[str, float]) -> None:
        """Log internal step ``step``'s metrics where ``log.backends`` says, every ``log.every`` steps."""
        if (step + 1) % self.log.every != 0:
            return
        if "console" in self.log.backends:
            self.report(format_step_line(step, metrics, self.learning))
        if "jsonl" in self.log.backends:
            async with await anyio.open_file(self.file, "a") as fh:
                await fh.write(metrics_json_line(step, metrics))
        tracked = namespaced(metrics)
        for sink in self.sinks:
            await anyio.to_thread.run_sync(sink.log, shown(step), tracked)

    def close(self) -> None:
        """Flush and close the tracking sinks (idempotent)."""
        sinks, self.sinks = self.sinks, []
        for sink in sinks:
            sink.close()


def metrics_json_line(step: int, metrics: dict[str, float]) -> str:
    """One JSON object per line, ``step`` counted from 1 as on the console (``step`` is the
    internal 0-based index); NaN (not measured) becomes null, as in the database."""
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()}
    return json.dumps({"step": shown(step), **clean}) + "\n"


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def format_step_line(step: int, m: dict[str, float], learning: bool) -> str:
    """One console line per step."""
    learn = f"loss {_fmt(m.get('loss'), '.4f')} v{int(m.get('adapter_version', 0))}" if learning else "learner off"
    return (
        f"step {shown(step):>4} | valid {_fmt(m.get('valid_fraction'))} | envs {int(m.get('n_envs', 0))} "
        f"| win {_fmt(m.get('plain_return_mean'))} hint {_fmt(m.get('hint_return_mean'))} "
        f"| regret {_fmt(m.get('regret_mean'))} | learnable {_fmt(m.get('learnable_fraction'))} "
        f"| {learn} | gen {_fmt(m.get('tokens_per_s'), '.0f')} tok/s "
        f"| design {_fmt(m.get('time_design_s'), '.0f')}s play {_fmt(m.get('time_play_s'), '.0f')}s learn {_fmt(m.get('time_learn_s'), '.0f')}s "
        f"| stale {int(m.get('stale_dropped', 0))}"
    )
