"""The report's Markdown summary: headline figures, the eval table, and the plots embedded."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from spade_async.memory.lineage import ENDS, LineageNode
from spade_async.memory.queries import checkpoint_folders
from spade_async.report.data import RunData
from spade_async.report.plots import PLOTS, eval_headlines, regret_not_measured
from spade_async.selfplay.design.status import designer_verdict, top_reasons
from spade_async.util.steps import shown
from spade_async.util.textsafe import terminal_safe


def _f(v: float | None, signed: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _mean_of(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _checkpoints(data: RunData, run_dir: Path) -> str:
    """The checkpoints still on disk, by folder name (``run.keep_checkpoints`` prunes older folders;
    the table keeps them all). The table counts steps from 0, folders from 1: spade_async.util.steps."""
    folders = checkpoint_folders(run_dir)
    kept = [folders[shown(s)].name for s in data.checkpoints if shown(s) in folders]
    text = ", ".join(kept) or "none"
    pruned = len(data.checkpoints) - len(kept)
    return text + (f" ({pruned} older pruned)" if pruned else "")


LM_EVAL_PREFIX = "lm_eval:"
"""Suites run through lm-evaluation-harness (spade_async.eval.suites.lm_eval_suite)."""


def _lm_eval_tasks(data: RunData) -> list[str]:
    """Each lm-eval task on its own line (a benchmark of the paper's table is a task, not the
    suite's pooled mean): the newest row per model, suite, task and headline metric."""
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in data.evals:
        suite = str(row.get("suite") or "")
        if suite.startswith(LM_EVAL_PREFIX) and row["task"] != "*" and row["delta"] is not None:
            if row["metric"] != "solved":
                latest[(row["model"], suite, row["task"])] = row
    if not latest:
        return []
    lines = [
        "### lm-eval tasks",
        "",
        "Per task (lm-eval's own prompts and scorer; the metric is the task's first one), adapter against "
        "the base model on the same documents, paired 95% bootstrap interval.",
        "",
        "| model | suite | task | metric | n | base | model | delta | 95% interval |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in latest.values():
        interval = f"[{_f(r['ci_low'], True)}, {_f(r['ci_high'], True)}]"
        model, suite, task, metric = (_cell(terminal_safe(str(r[k]))) for k in ("model", "suite", "task", "metric"))
        lines.append(
            f"| {model} | {suite} | {task} | {metric} | {r['n']} | {_f(r['base_mean'])} | "
            f"{_f(r['mean'])} | {_f(r['delta'], True)} | {interval} |"
        )
    lines.append("")
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _steering(data: RunData) -> list[str]:
    """Every steering request and the step it took effect at (the plots mark those steps)."""
    if not data.steering:
        return []
    lines = ["## Steering", "", "| # | step | who | request | status | what the run did |", "|---|---|---|---|---|---|"]
    for a in data.steering:
        step = "-" if a.step is None else str(a.step + 1)
        lines.append(
            f"| {a.id} | {step} | {_cell(a.who)} | {_cell(a.summary)} | {a.status} | {_cell(a.message or '')} |"
        )
    return [*lines, ""]


def summary(data: RunData, run_dir: Path) -> str:
    lines = [
        f"# Run report: {terminal_safe(data.name)}",
        "",
        f"- folder: `{terminal_safe(run_dir)}`",
        f"- status: {terminal_safe(data.status)}",
        f"- steps recorded: {len(data.steps)}; episodes: {data.episodes}; checkpoints: {_checkpoints(data, run_dir)}",
        "",
    ]
    if data.steps:
        k = max(1, len(data.steps) // 4)
        lines += ["| metric | first quarter | last quarter |", "|---|---|---|"]
        for key, label in (
            ("agent_return_mean", "agent return"),
            ("regret_mean", "regret"),
            ("learnable_fraction", "learnable fraction"),
            ("valid_fraction", "valid fraction"),
        ):
            series = data.series(key)
            lines.append(f"| {label} | {_f(_mean_of(series[:k]))} | {_f(_mean_of(series[-k:]))} |")
        lines.append("")
    lines += _designer(data)
    rows = eval_headlines(data)
    lines += ["## Held-out evaluation", ""]
    if rows:
        lines += [
            "| model | suite | metric | n | base | model | delta | 95% interval |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            interval = f"[{_f(r['ci_low'], True)}, {_f(r['ci_high'], True)}]"
            model, suite, metric = (terminal_safe(r[key]) for key in ("model", "suite", "metric"))
            lines.append(
                f"| {model} | {suite} | {metric} | {r['n']} | {_f(r['base_mean'])} | "
                f"{_f(r['mean'])} | {_f(r['delta'], True)} | {interval} |"
            )
    else:
        lines.append(f"No evaluation recorded yet; run `spade-async eval {run_dir}`.")
    lines.append("")
    lines += _lm_eval_tasks(data)
    lines += _archive(data)
    lines += _steering(data)
    lines += _cluster(data)
    lines += _lineage(data)
    for name, (_draw, title) in PLOTS.items():
        lines += [f"## {title}", ""]
        why = regret_not_measured(data) if name == "regret.png" else None
        if why is not None:
            lines += [why[0].upper() + why[1:] + ".", ""]
        lines += [f"![{title}]({name})", ""]
    return "\n".join(lines)


def _archive(data: RunData) -> list[str]:
    """Every archive round: retired environments replayed by the live adapter (forgetting)."""
    if not data.archive:
        return []
    lines = [
        "## Archive re-evaluation",
        "",
        "Retired environments replayed, plain, by the adapter live at each round. *Still solved*: of the "
        "archived environments solved when they retired (return >= `eval.archive_solved`), the share "
        "still solved now.",
        "",
        "| step | adapter | envs | still solved | return now | return at retirement |",
        "|---|---|---|---|---|---|",
    ]
    for r in data.archive:
        still = f"{r.still_solved}/{r.solved_then}" + (f" ({r.fraction:.0%})" if r.solved_then else "")
        lines.append(
            f"| {r.step} | {_cell(terminal_safe(r.adapter))} | {r.envs} | {still} | {_f(r.return_now)} | "
            f"{_f(r.return_then)} |"
        )
    return [*lines, ""]


def _last(data: RunData, key: str) -> float | None:
    values = [v for v in data.series(key) if not math.isnan(v)]
    return values[-1] if values else None


def _cluster(data: RunData) -> list[str]:
    """A cluster run: pools (and replicas) live at the end, and every loss and restart."""
    lines = []
    for noun, key in (("remote sandbox pools", "cluster_pools"), ("remote engine replicas", "cluster_replicas")):
        live, total = _last(data, f"{key}_live"), _last(data, key)
        if live is not None and total is not None:
            lines.append(f"- {noun} live at the last step: {live:.0f} of {total:.0f}")
    if not lines and not data.cluster_events:
        return []
    lost = sum(" lost (" in m for _, m in data.cluster_events)
    restarted = sum(" restarted as " in m for _, m in data.cluster_events)
    lines.append(f"- losses: {lost}; restarts: {restarted}" if lost else "- losses: none")
    lines += [f"- step {'-' if step is None else step}: {terminal_safe(m)}" for step, m in data.cluster_events]
    return ["## Cluster", "", *lines, ""]


ADMITTED_ROWS = 40
"""At most this many admitted designs listed, each with its nearest shipped file and similarity."""


def _designer(data: RunData) -> list[str]:
    """What the designer did, and in plain words what that means for this run."""
    t = data.designer
    lines = ["## Designer", ""]
    if data.mode != "fixed":
        line = f"- designed: {t.designed}; admitted: {t.admitted}"
        if t.designed:
            line += f" ({100 * t.admitted / t.designed:.0f}%)"
        lines.append(line)
        if t.reasons:
            lines.append(f"- most common rejection reasons: {top_reasons(t, 5)}")
        lines += [
            f"- admitted at step {'-' if step is None else step}: {terminal_safe(message)}"
            for step, message in data.admitted_designs[:ADMITTED_ROWS]
        ]
        if len(data.admitted_designs) > ADMITTED_ROWS:
            lines.append(f"- ... and {len(data.admitted_designs) - ADMITTED_ROWS} more (the TUI's event log has all)")
        lines.append("")
    verdict = designer_verdict(t, data.model, fixed_pool=data.mode == "fixed")
    if verdict:
        lines += [verdict, ""]
    return lines


LINEAGE_ROWS = 80
"""At most this many lineage nodes in the report's table (``spade-async export lineage`` has all)."""


def _end_cell(n: LineageNode) -> str:
    text = n.end if n.ended_step is None else f"{n.end} at step {shown(n.ended_step)}"
    if n.end_reason:
        reason = n.end_reason if len(n.end_reason) <= 80 else n.end_reason[:77] + "..."
        text += f": {reason}"
    return _cell(terminal_safe(text))


def _lineage(data: RunData) -> list[str]:
    """The lines of mutations: every node under a root that was mutated, parents first, with
    how its win rate moved from its parent's and how it ended."""
    lineage = data.lineage
    if not lineage.nodes:
        return []
    edges = lineage.edges()
    lines = [
        "## Lineage",
        "",
        f"- {len(lineage.nodes)} environments; {len(edges)} mutation link(s) in "
        f"{len(lineage.branching_roots())} line(s); deepest generation {lineage.depth()}",
    ]
    counts = {end: sum(n.end == end for n in lineage.nodes.values()) for end in ENDS}
    lines.append("- how they stand: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
    if not edges:
        return [*lines, "- no environment was designed as a mutation of another", ""]
    lines += [
        "",
        "| environment | generation | parent | skill | born at step | win rate | win vs parent | regret | end |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    shown_nodes = list(lineage.walk(lineage.branching_roots()))
    for n in shown_nodes[:LINEAGE_ROWS]:
        parent = lineage.nodes[n.parent_id] if n.parent_id is not None else None
        moved = (
            n.win_rate - parent.win_rate
            if parent is not None and n.win_rate is not None and parent.win_rate is not None
            else None
        )
        indent = "&nbsp;&nbsp;" * n.generation + ("↳ " if n.generation else "")
        lines.append(
            f"| {indent}`{n.id[:8]}` | {n.generation} | {f'`{parent.id[:8]}`' if parent else '-'} | "
            f"{_cell(terminal_safe(n.skill or '-'))} | {shown(n.created_step)} | {_f(n.win_rate)} | "
            f"{_f(moved, True)} | {_f(n.regret)} | {_end_cell(n)} |"
        )
    if len(shown_nodes) > LINEAGE_ROWS:
        lines += ["", f"{len(shown_nodes) - LINEAGE_ROWS} more; all of them: `spade-async export lineage RUN_DIR`."]
    return [*lines, ""]
