"""The top bar: which run, how far, how fast, and whether this TUI controls it.

Why its own widget: the header is the one panel people glance at from across the room;
it renders a single precomputed line set, so it never queries anything itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from spade_async.util.textsafe import terminal_safe

from ..reader import RunInfo, StepRow
from ..stats import elapsed_s, eta_s, fmt_duration, fmt_num, latest

_STATUS_STYLE = {
    "running": "bold green",
    "finished": "bold blue",
    "failed": "bold red",
    "interrupted": "bold yellow",
    "dead": "bold reverse red",  # status 'running' but its process is gone (kill -9): resume it
}


class RunHeader(Static):
    DEFAULT_CSS = """
    RunHeader { height: 2; background: $primary-background; padding: 0 1; }
    """

    def show(
        self,
        run: RunInfo | None,
        steps: Sequence[StepRow],
        now: float,
        *,
        owned: bool,
        paused: bool,
        waiting: str | None,
    ) -> None:
        self.update(render_header(run, steps, now, owned=owned, paused=paused, waiting=waiting))


def render_header(
    run: RunInfo | None,
    steps: Sequence[StepRow],
    now: float,
    *,
    owned: bool,
    paused: bool,
    waiting: str | None,
) -> Text:
    line1 = Text()
    line1.append("SPADE ", style="bold")
    if run is None:
        line1.append(terminal_safe(waiting or "waiting for the run"), style="italic")
        return line1
    line1.append(terminal_safe(run.name), style="bold cyan")
    line1.append("  ")
    line1.append(terminal_safe(run.status), style=_STATUS_STYLE.get(run.status, "bold"))
    if paused:
        line1.append("  PAUSED", style="bold reverse yellow")
    line1.append("  (owner)" if owned else "  (watching)", style="dim")
    last = steps[-1] if steps else None
    line1.append("   step ")
    line1.append("—" if last is None else str(last.step + 1), style="bold")  # 1-based, as on the console
    if run.max_steps is not None:
        line1.append(f"/{run.max_steps}", style="bold")
    line1.append("   adapter ")
    line1.append("—" if last is None else f"v{last.adapter_version}", style="bold")
    line1.append("   elapsed ")
    line1.append(fmt_duration(elapsed_s(run, steps, now)), style="bold")
    eta = eta_s(run, steps)
    if eta is not None:
        line1.append("   ETA ")
        line1.append(fmt_duration(eta), style="bold")
    line2 = Text()
    line2.append("throughput ")
    line2.append(fmt_num(latest(steps, "tokens_per_s"), 1), style="bold")
    line2.append(" tok/s   ")
    walls = [s.wall_s for s in steps[-10:] if s.wall_s is not None]
    line2.append(fmt_num(sum(walls) / len(walls) if walls else None, 1), style="bold")
    line2.append(" s/step   envs ")
    n_envs = latest(steps, "n_envs")
    line2.append("—" if n_envs is None else str(int(n_envs)), style="bold")
    line2.append("   valid ")
    valid = latest(steps, "valid_fraction")
    line2.append("—" if valid is None else f"{100 * valid:.0f}%", style="bold")
    line2.append("   stale dropped ")
    stale = latest(steps, "stale_dropped")
    line2.append("—" if stale is None else str(int(stale)), style="bold")
    probe_ok = latest(steps, "probe_ok")
    if probe_ok is not None and probe_ok < 1:  # the engine is not serving the adapter it reports
        gap = latest(steps, "probe_gap_mean")
        line2.append(f"   ADAPTER MISMATCH (probe gap {fmt_num(gap, 2)} nats; see events)", style="bold white on red")
    cluster, short = cluster_text(steps)
    if cluster:
        line2.append("   cluster: ")
        line2.append(cluster, style="bold red" if short else "bold")
    if waiting:
        line2.append(f"   ({terminal_safe(waiting)})", style="italic red")
    return Text("\n").join([line1, line2])


def cluster_text(steps: Sequence[StepRow]) -> tuple[str, bool]:
    """ "1/2 pools live" (and ", 2/2 replicas live") from a cluster run's newest metrics, and
    whether any is short; empty for a run on one box (it records no cluster metrics)."""
    parts, short = [], False
    for noun, live_key, total_key in (
        ("pools", "cluster_pools_live", "cluster_pools"),
        ("replicas", "cluster_replicas_live", "cluster_replicas"),
    ):
        live, total = latest(steps, live_key), latest(steps, total_key)
        if live is not None and total is not None:
            parts.append(f"{int(live)}/{int(total)} {noun} live")
            short = short or live < total
    return ", ".join(parts), short
