"""The run at the machine's limits: per-stage throughput of a real run beside the benchmarks.

Why (issue 54): the engine and learner benchmarks measure each stage alone on a fixed shape,
and a run came out 3-5x slower than both (generation 57-96 tok/s against the engine
benchmark's 289 at batch 16; learner 106-280 s a step for 2-4k tokens against 630 tok/s).
This benchmark runs the main job's own loop small (``spade-async run tiny --headless``,
designer on, ``--steps`` steps, in a temporary folder), or reads a finished run folder
(``--run DIR``), and reports per stage -- design, play, learn -- its tokens, seconds and
tokens/s; then, in the same invocation, a short engine benchmark at the run's own batch
size and a short learner benchmark (``benchmarks/engine.py``, ``benchmarks/learner.py``),
so it can print the two ratios the issue asks for (target >= 0.7 each):

- generation: the play stage's generated tokens / its seconds, over the engine benchmark's
  tokens/s at the run's median agent batch (the benchmark's shape: prompts <= 64, 64 new);
- learner: the run's forward tokens / its ``train_step`` seconds, over the learner
  benchmark's GRPO tokens/s (16 x 108 tokens; the learner built as the run builds it, its
  LoRA and micro-batch settings). The engine benchmark runs once more with the run's newest
  adapter loaded (the run decodes with one; ``engine.py`` never does).

What the run writes per step (``metrics.jsonl`` with ``log.backends`` holding ``jsonl``;
always the ``steps`` table of ``run.sqlite``, with ``created_at`` when the step was recorded
and ``wall_s`` from the end of its production to then): ``time_design_s``, ``time_play_s``,
``time_learn_s`` (the consumer's whole step: update and adapter publication),
``step_time_s`` (the learner's ``train_step``), ``tokens_per_s`` (the producer's generated
tokens over ``time_play_s``) and, on a step that trained, ``learner_tokens_per_s`` (the
learner's forward tokens/s). So from the metrics alone: play tokens = sum of ``tokens_per_s x
time_play_s``; learn tokens = sum of ``learner_tokens_per_s x step_time_s``; design tokens
unknown. (Runs from before the learner's rate had its own name stored it as ``tokens_per_s``
on the steps that trained, overwriting the generation rate: read so, their play tokens are
unknown.)

What a run started here adds (``--child``: the run in a subprocess of this script, with
hooks around the engine's batches, the learner's steps and the pipeline's stages, written
to ``run_level_trace.jsonl`` in the run folder; nothing in the package changes): every
engine batch (wall-clock start and end, rows, sampling temperature -- designer, agent or
hint by the run's ``[engine.*]`` temperatures --, prompt, prefix-cached and new tokens,
torch threads at its start and end, stages running), every ``train_step`` (its samples'
trimmed lengths and trained tokens, its micro-batches' rows x width, padded and real
tokens), and the spans of ``produce``, design (``regenerate``), play, ``consume``, the
adapter's publication, its load (from the call, which waits for the engine's lock, and the
load itself) and its probe. From those: design and play tokens, the engine's busy seconds
per role, agent-batch rows, the learner's padding, how many (design or play of one step,
learn of another) pairs overlapped and for how long, the agent batches' tokens/s while a
``train_step`` ran against while none did, and where the consumer's time after
``train_step`` went (the engine's lock, the load, the probe). Then the
learner replays each traced step's sample shapes alone (random tokens; the run's own
``[model]`` and ``[learner]`` settings), which separates the shape from the contention.
Without a trace (``--run DIR`` of another run), overlap comes from ``run.sqlite``'s
timestamps, approximately (the scoring after play is not timed, so play is taken to end
where production ends); ``metrics.jsonl`` alone has no timestamps and the table says so.

Usage: ``python benchmarks/run_level.py [--steps 4] [--config tiny] [--set KEY=VALUE ...]
[--keep DIR] | --run DIR  [--no-bench] [--engine-rounds 2] [--learner-rounds 2]
[--no-replay] [--json PATH]``. Every row of the table names the CPU model and its flags
(AVX-512, AVX-512 BF16, AMX). ``--json`` writes the file format of ``benchmarks/results.py``
(the machine, the load average at the start and the end, the commit): the headline figures
the README's measured table reads (``headline``: the run's and the benchmarks' tokens/s per
stage and their ratios) and under ``detail`` everything this script printed (stages, rows,
overlap, the benchmarks' columns); ``make bench`` runs it as ``--config tiny --steps 4``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TRACE_FILE = "run_level_trace.jsonl"
METRICS_FILE = "metrics.jsonl"
DB_FILE = "run.sqlite"
TARGET = 0.7
ROLES = ("designer", "agent", "hint")
DEFAULT_TEMPERATURES = {"designer": 0.5, "agent": 1.0, "hint": 0.3}
"""configs/tiny.toml's ``[engine.*]`` temperatures, used where a run folder has no config.toml."""

Interval = tuple[float, float]


# -- the run's own metrics ----------------------------------------------------------------


@dataclass
class StepRow:
    """One step as the run recorded it: ``step`` counted from 1 (as the console and
    ``metrics.jsonl``), its metrics, and from ``run.sqlite`` when it was recorded."""

    step: int
    metrics: dict[str, Any]
    created_at: float | None = None
    wall_s: float | None = None

    def num(self, key: str) -> float | None:
        v = self.metrics.get(key)
        return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def read_metrics_jsonl(path: Path) -> list[StepRow]:
    """``metrics.jsonl``: one object per line, ``step`` from 1; a torn last line is skipped."""
    rows = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        step = doc.pop("step", None)
        if isinstance(step, int):
            rows.append(StepRow(step, doc))
    return rows


def read_sqlite_steps(path: Path) -> list[StepRow]:
    """The ``steps`` table of the newest run in ``run.sqlite`` (read-only; step stored from 0)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        run_id = conn.execute("SELECT max(run_id) FROM steps").fetchone()[0]
        rows = conn.execute(
            "SELECT step, metrics, created_at, wall_s FROM steps WHERE run_id = ? ORDER BY step", (run_id,)
        ).fetchall()
    finally:
        conn.close()
    return [StepRow(int(s) + 1, json.loads(m), float(c), None if w is None else float(w)) for s, m, c, w in rows]


def read_steps(run_dir: Path) -> tuple[list[StepRow], str]:
    """The run's steps and where they came from: ``metrics.jsonl`` when present (timestamps
    joined from ``run.sqlite`` where it exists), else ``run.sqlite`` alone."""
    jsonl, db = run_dir / METRICS_FILE, run_dir / DB_FILE
    stamped = read_sqlite_steps(db) if db.is_file() else []
    if jsonl.is_file():
        rows = read_metrics_jsonl(jsonl)
        when = {r.step: r for r in stamped}
        for r in rows:
            if r.step in when:
                r.created_at, r.wall_s = when[r.step].created_at, when[r.step].wall_s
        return rows, METRICS_FILE + (f" + {DB_FILE} timestamps" if stamped else " (no timestamps)")
    if stamped:
        return stamped, DB_FILE
    raise SystemExit(f"{run_dir}: neither {METRICS_FILE} nor {DB_FILE}")


@dataclass
class Stage:
    """One stage summed over a run's steps; ``tokens`` None where the run did not record them."""

    name: str
    seconds: float
    tokens: float | None
    steps: int
    note: str = ""

    @property
    def tok_s(self) -> float | None:
        return self.tokens / self.seconds if self.tokens is not None and self.seconds > 0 else None


def trained(row: StepRow) -> bool:
    """Whether the step's metrics carry the learner's stats."""
    return row.num("step_time_s") is not None


def learner_rate(row: StepRow) -> float | None:
    """The learner's forward tokens/s of a trained step: ``learner_tokens_per_s`` (runs since the
    learner's rate got its own name); in an older run, ``tokens_per_s`` on a trained step."""
    if not trained(row):
        return None
    rate = row.num("learner_tokens_per_s")
    return rate if rate is not None else row.num("tokens_per_s")


def generation_rate(row: StepRow, renamed: bool) -> float | None:
    """The producer's generated tokens/s of a step; unknown on an older run's trained step
    (its ``tokens_per_s`` was overwritten by the learner's)."""
    return row.num("tokens_per_s") if renamed or not trained(row) else None


def stage_totals(rows: Sequence[StepRow]) -> dict[str, Stage]:
    """Design, play and learn from the metrics alone (module docstring: which tokens exist)."""
    design_steps = [r for r in rows if (r.num("time_design_s") or 0.0) > 0.01]
    design = Stage(
        "design",
        sum(r.num("time_design_s") or 0.0 for r in rows),
        None,
        len(design_steps),
        "design tokens are not in the run's metrics",
    )
    play_s = sum(r.num("time_play_s") or 0.0 for r in rows)
    renamed = any(r.num("learner_tokens_per_s") is not None for r in rows)
    rates = [generation_rate(r, renamed) for r in rows]
    play_tokens: float | None = None
    note = ""
    if all(rate is not None for rate in rates):
        play_tokens = sum((rate or 0.0) * (r.num("time_play_s") or 0.0) for r, rate in zip(rows, rates, strict=True))
    else:
        lost = sum(rate is None for rate in rates)
        note = (
            f"generated tokens lost on {lost} of {len(rows)} steps (an older run: tokens_per_s is the learner's there)"
        )
    play = Stage("play", play_s, play_tokens, len(rows), note)
    learned = [r for r in rows if trained(r)]
    learn = Stage(
        "learn",
        sum(r.num("step_time_s") or 0.0 for r in learned),
        sum((learner_rate(r) or 0.0) * (r.num("step_time_s") or 0.0) for r in learned),
        len(learned),
        f"forward tokens over train_step seconds; the consumer's steps took {sum(r.num('time_learn_s') or 0.0 for r in rows):.1f} s with publication",
    )
    return {"design": design, "play": play, "learn": learn}


# -- the trace a run started here writes ----------------------------------------------------


@dataclass
class GenBatch:
    t0: float
    t1: float
    rows: int
    temperature: float
    max_new: int
    prompt_tokens: int
    new_tokens: int
    steps: int
    threads: int = 0
    threads_end: int = 0
    running: int = 0
    cached_tokens: int = 0
    """Prompt tokens the prefix cache supplied (not prefilled again)."""
    role: str = "?"

    @property
    def seconds(self) -> float:
        return self.t1 - self.t0


@dataclass
class LearnCall:
    t0: float
    t1: float
    samples: list[list[Any]]
    """``[role, trimmed length, trained tokens, advantage != 0]`` per sample handed to ``train_step``."""
    micro: list[list[int]]
    """``[rows, width, real tokens, trained tokens]`` per micro-batch it cut."""
    threads: int = 0
    running: int = 0

    @property
    def seconds(self) -> float:
        return self.t1 - self.t0

    @property
    def forward_tokens(self) -> int:
        return sum(m[2] for m in self.micro)

    @property
    def padded_tokens(self) -> int:
        return sum(m[0] * m[1] for m in self.micro)


@dataclass
class Span:
    kind: str  # produce | design | play | consume
    step: int  # from 1
    t0: float
    t1: float


STEP_SPANS = ("produce", "design", "play", "consume", "publish", "probe")
"""Spans of a step's stages (``step`` counted from 1 once read)."""
ADAPTER_SPANS = ("load_call", "adapter_load")
"""``HFEngine.load_adapter`` from its call (waiting for the engine's lock included) and the load itself."""


@dataclass
class Trace:
    gens: list[GenBatch] = field(default_factory=list)
    learns: list[LearnCall] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)


def role_of(temperature: float, temperatures: dict[str, float]) -> str:
    """The role whose ``[engine.ROLE]`` temperature this is (``?`` when none or several match)."""
    matches = [r for r, t in temperatures.items() if abs(t - temperature) < 1e-6]
    return matches[0] if len(matches) == 1 else "?"


def read_trace(path: Path, temperatures: dict[str, float]) -> Trace:
    trace = Trace()
    for line in path.read_text().splitlines():
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = doc.pop("kind", None)
        if kind == "gen":
            g = GenBatch(**doc)
            g.role = role_of(g.temperature, temperatures)
            trace.gens.append(g)
        elif kind == "learn":
            trace.learns.append(LearnCall(**doc))
        elif kind in STEP_SPANS:
            trace.spans.append(Span(kind, int(doc["step"]) + 1, float(doc["t0"]), float(doc["t1"])))
        elif kind in ADAPTER_SPANS:  # ``step`` is the adapter version here
            trace.spans.append(Span(kind, int(doc["step"]), float(doc["t0"]), float(doc["t1"])))
    outside_stages(trace)
    return trace


STAGE_OF = {"designer": "design", "agent": "play", "hint": "play"}


def outside_stages(trace: Trace) -> None:
    """A batch of a role outside its stage's spans (over half of it) becomes ``other``: the
    adapter probe after a publication samples at the agent's temperature, one row, during
    ``consume``; an in-loop evaluation plays beside the stages."""
    if not trace.spans:
        return
    for g in trace.gens:
        stage = STAGE_OF.get(g.role)
        spans = [(s.t0, s.t1) for s in trace.spans if s.kind == stage]
        if stage is not None and covered((g.t0, g.t1), spans) <= 0.5 * max(g.seconds, 1e-9):
            g.role = "other"


def run_temperatures(run_dir: Path) -> dict[str, float]:
    """``[engine.designer|agent|hint].temperature`` from the run's config.toml (tiny's where absent)."""
    temps = dict(DEFAULT_TEMPERATURES)
    try:
        engine = tomllib.loads((run_dir / "config.toml").read_text()).get("engine", {})
    except (OSError, tomllib.TOMLDecodeError):
        return temps
    for role in ROLES:
        t = engine.get(role, {}).get("temperature")
        if isinstance(t, int | float):
            temps[role] = float(t)
    return temps


# -- overlap ------------------------------------------------------------------------------


def intersection(a: Interval, b: Interval) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def covered(interval: Interval, others: Iterable[Interval]) -> float:
    """Seconds of ``interval`` covered by the union of ``others``."""
    cuts = sorted((max(s, interval[0]), min(e, interval[1])) for s, e in others if e > interval[0] and s < interval[1])
    total, end = 0.0, interval[0]
    for s, e in cuts:
        if e > end:
            total += e - max(s, end)
            end = e
    return total


@dataclass
class Overlap:
    """Stage pairs (design or play of one step, learn of a step) that ran at the same time."""

    pairs: int
    """Pairs with any intersection."""
    seconds: float
    """Seconds of learn covered by design or play."""
    learn_seconds: float
    stages: int
    """Design and play spans in all."""
    source: str

    @property
    def fraction(self) -> float | None:
        return self.seconds / self.learn_seconds if self.learn_seconds > 0 else None


def overlap_of(gen_spans: Sequence[Interval], learn_spans: Sequence[Interval], source: str) -> Overlap:
    pairs = sum(1 for g in gen_spans for lr in learn_spans if intersection(g, lr) > 0)
    seconds = sum(covered(lr, gen_spans) for lr in learn_spans)
    return Overlap(pairs, seconds, sum(e - s for s, e in learn_spans), len(gen_spans), source)


def overlap_from_trace(trace: Trace) -> Overlap:
    gen = [(s.t0, s.t1) for s in trace.spans if s.kind in ("design", "play") and s.t1 - s.t0 > 0.01]
    learn = [(c.t0, c.t1) for c in trace.learns]
    return overlap_of(gen, learn, "trace (wall-clock spans of design, play and train_step)")


def overlap_from_steps(rows: Sequence[StepRow]) -> Overlap | None:
    """From ``run.sqlite``'s timestamps: learn ends at ``created_at`` and lasts ``time_learn_s``;
    production ends ``wall_s`` before; play and design are taken to end there (scoring untimed)."""
    if not rows or any(r.created_at is None or r.wall_s is None for r in rows):
        return None
    gen, learn = [], []
    for r in rows:
        assert r.created_at is not None and r.wall_s is not None
        learn.append((r.created_at - (r.num("time_learn_s") or 0.0), r.created_at))
        produced = r.created_at - r.wall_s
        play = r.num("time_play_s") or 0.0
        design = r.num("time_design_s") or 0.0
        gen.append((produced - play, produced))
        if design > 0.01:
            gen.append((produced - play - design, produced - play))
    return overlap_of(gen, learn, f"{DB_FILE} timestamps (approximate: the scoring after play is not timed)")


# -- what the trace says ----------------------------------------------------------------------


@dataclass
class GenSummary:
    role: str
    batches: int
    tokens: int
    engine_s: float
    rows: list[int]
    overlapped_tokens: int = 0
    overlapped_s: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    decode_steps: int = 0

    def shape(self) -> str:
        """Per row: prompt tokens, those prefilled (not from the prefix cache), new tokens; steps per batch."""
        n = sum(self.rows)
        if not n:
            return ""
        return (
            f"per row: prompt {self.prompt_tokens / n:.0f} ({(self.prompt_tokens - self.cached_tokens) / n:.0f} "
            f"prefilled), {self.tokens / n:.1f} new; {self.decode_steps / self.batches:.1f} steps a batch"
        )

    @property
    def tok_s(self) -> float | None:
        return self.tokens / self.engine_s if self.engine_s > 0 else None

    @property
    def median_rows(self) -> float:
        return statistics.median(self.rows) if self.rows else 0.0

    @property
    def alone_tok_s(self) -> float | None:
        s = self.engine_s - self.overlapped_s
        return (self.tokens - self.overlapped_tokens) / s if s > 0 else None

    @property
    def overlapped_tok_s(self) -> float | None:
        return self.overlapped_tokens / self.overlapped_s if self.overlapped_s > 0 else None


def summarize_gens(trace: Trace) -> dict[str, GenSummary]:
    """Per role: batches, tokens, engine seconds, rows; and the part that ran while a
    ``train_step`` did (a batch counts as overlapped when over half of it was)."""
    learn = [(c.t0, c.t1) for c in trace.learns]
    out: dict[str, GenSummary] = {}
    for g in trace.gens:
        s = out.setdefault(g.role, GenSummary(g.role, 0, 0, 0.0, []))
        s.batches += 1
        s.tokens += g.new_tokens
        s.engine_s += g.seconds
        s.rows.append(g.rows)
        s.prompt_tokens += g.prompt_tokens
        s.cached_tokens += g.cached_tokens
        s.decode_steps += g.steps
        if g.seconds > 0 and covered((g.t0, g.t1), learn) > 0.5 * g.seconds:
            s.overlapped_tokens += g.new_tokens
            s.overlapped_s += g.seconds
    return out


def learn_split(trace: Trace) -> dict[str, float]:
    """The learner's forward tokens and seconds alone and while an engine batch ran
    (a step counts as overlapped when over half of it was)."""
    gens = [(g.t0, g.t1) for g in trace.gens]
    out = {"alone_tokens": 0.0, "alone_s": 0.0, "overlapped_tokens": 0.0, "overlapped_s": 0.0}
    for c in trace.learns:
        key = "overlapped" if c.seconds > 0 and covered((c.t0, c.t1), gens) > 0.5 * c.seconds else "alone"
        out[f"{key}_tokens"] += c.forward_tokens
        out[f"{key}_s"] += c.seconds
    return out


def ratio(run: float | None, bench: float | None) -> float | None:
    """``run / bench`` (None when either is missing or the benchmark is 0)."""
    if run is None or bench is None or bench <= 0:
        return None
    return run / bench


# -- the table --------------------------------------------------------------------------------


@dataclass
class Row:
    what: str
    tokens: float | None
    seconds: float | None
    tok_s: float | None
    bench: str = ""
    bench_tok_s: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return ratio(self.tok_s, self.bench_tok_s)


def fmt(x: float | None, spec: str = ",.0f") -> str:
    return "-" if x is None or not math.isfinite(x) else format(x, spec)


def render(rows: Sequence[Row], cpu: str) -> str:
    out = [
        "| what | tokens | seconds | tok/s | benchmark | bench tok/s | run / bench | note | cpu |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        rt = r.ratio
        mark = "" if rt is None else (" (meets 0.7)" if rt >= TARGET else " (BELOW 0.7)")
        out.append(
            f"| {r.what} | {fmt(r.tokens)} | {fmt(r.seconds, ',.1f')} | {fmt(r.tok_s, ',.1f')} | {r.bench} | "
            f"{fmt(r.bench_tok_s, ',.1f')} | {fmt(rt, '.2f')}{mark} | {r.note} | {cpu} |"
        )
    return "\n".join(out)


def stage_rows(stages: dict[str, Stage], trace: Trace | None) -> tuple[list[Row], dict[str, GenSummary]]:
    """Design, play and learn rows (benchmark columns left empty), with the trace's tokens
    where there is one."""
    gens = summarize_gens(trace) if trace is not None else {}
    design, play, learn = stages["design"], stages["play"], stages["learn"]
    rows = []
    if gens:
        d = gens.get("designer")
        d_tokens = float(d.tokens) if d else 0.0
        rows.append(Row("design (stage wall)", d_tokens, design.seconds, ratio(d_tokens, design.seconds)))
        p_tokens = float(sum(gens[r].tokens for r in ("agent", "hint") if r in gens))
        rows.append(Row("play (stage wall)", p_tokens, play.seconds, ratio(p_tokens, play.seconds)))
        for role in ("designer", "agent", "hint", "other", "?"):
            if role in gens:
                g = gens[role]
                rows.append(
                    Row(
                        f"{role} engine batches ({g.batches}, median {g.median_rows:g} rows)",
                        g.tokens,
                        g.engine_s,
                        g.tok_s,
                        note=f"{g.shape()}; alone {fmt(g.alone_tok_s, ',.1f')} tok/s, beside a train_step "
                        f"{fmt(g.overlapped_tok_s, ',.1f')} tok/s",
                    )
                )
    else:
        rows.append(Row("design (stage wall)", design.tokens, design.seconds, design.tok_s, note=design.note))
        rows.append(Row("play (stage wall)", play.tokens, play.seconds, play.tok_s, note=play.note))
    rows.append(Row("learn (train_step)", learn.tokens, learn.seconds, learn.tok_s, note=learn.note))
    if trace is not None and trace.learns:
        split = learn_split(trace)
        rows.append(
            Row(
                "learn, alone / beside generation",
                split["alone_tokens"],
                split["alone_s"],
                ratio(split["alone_tokens"], split["alone_s"]),
                note=f"beside an engine batch: {fmt(split['overlapped_tokens'])} tokens in {fmt(split['overlapped_s'], ',.1f')} s = "
                f"{fmt(ratio(split['overlapped_tokens'], split['overlapped_s']), ',.1f')} tok/s",
            )
        )
    return rows, gens


def padding_line(trace: Trace) -> str:
    real = sum(c.forward_tokens for c in trace.learns)
    padded = sum(c.padded_tokens for c in trace.learns)
    widths = [m[1] for c in trace.learns for m in c.micro]
    designer = sum(1 for c in trace.learns for s in c.samples if s[0] == "designer")
    if not padded:
        return "learner: no train_step traced"
    return (
        f"learner: {len(trace.learns)} steps, {sum(len(c.micro) for c in trace.learns)} micro-batches, "
        f"{real:,} real of {padded:,} padded tokens ({1 - real / padded:.0%} padding), widths "
        f"{min(widths)}-{max(widths)}, {designer} designer samples"
    )


def threads_line(trace: Trace) -> str:
    starts = [g.threads for g in trace.gens]
    ends = [g.threads_end for g in trace.gens]
    if not starts:
        return "engine: no batch traced"
    one = sum(1 for a, b in zip(starts, ends, strict=True) if min(a, b) == 1)
    return (
        f"engine threads: {one} of {len(starts)} batches ran on 1 thread at their start or end "
        f"(the CPU share halves the team while a train_step runs: spade_async/hardware/cpu_share.py)"
    )


def publish_line(trace: Trace) -> str:
    """Where the consumer's time after ``train_step`` goes: publication, waiting for the engine's
    lock (``load_adapter`` holds it out while a generation drains its queue), the load, the probe."""
    pub = [sp for sp in trace.spans if sp.kind == "publish"]
    if not pub:
        return "publication: none traced"

    def total(kind: str) -> float:
        return sum(sp.t1 - sp.t0 for sp in trace.spans if sp.kind == kind)

    wait = total("load_call") - total("adapter_load")
    return (
        f"publication: {len(pub)} adapters, {total('publish'):.1f} s in all: waiting for the engine's lock "
        f"{wait:.1f} s, loading {total('adapter_load'):.1f} s, probing {total('probe'):.1f} s"
    )


def interleave_line(trace: Trace) -> str:
    """How often consecutive engine batches switch role (designer/agent/hint/other)."""
    roles = [g.role for g in sorted(trace.gens, key=lambda g: g.t0)]
    switches = sum(1 for a, b in itertools.pairwise(roles) if a != b)
    design = [(s.t0, s.t1) for s in trace.spans if s.kind == "design"]
    agent_in_design = sum(1 for g in trace.gens if g.role != "designer" and covered((g.t0, g.t1), design) > 0)
    return (
        f"engine batches in order: {len(roles)}, {switches} role switches; "
        f"{agent_in_design} agent/hint batches ran inside a design span"
    )


# -- the child: the run, with hooks ------------------------------------------------------------


class Tracer:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, **doc: Any) -> None:
        line = json.dumps(doc) + "\n"
        with self.lock, self.path.open("a") as fh:
            fh.write(line)


def install_hooks(tracer: Tracer) -> None:
    """Wrap the engine's batch, the learner's step and the pipeline's stages (this process only)."""
    import torch

    from spade_async.engine.hf import HFEngine
    from spade_async.hardware.cpu_share import CPU_SHARE
    from spade_async.learner.batching import trim
    from spade_async.learner.trainer import Trainer
    from spade_async.run.pipeline import Pipeline
    from spade_async.run.publisher import AdapterPublisher
    from spade_async.selfplay.generation import EnvGenerator

    generate_batch = HFEngine._generate_batch

    def traced_batch(self: HFEngine, requests: list[Any]) -> list[Any]:
        t0, threads, running = time.time(), torch.get_num_threads(), CPU_SHARE.running
        reused = self.prefix_cache.reused_tokens
        out = generate_batch(self, requests)
        lengths = [len(c.token_ids) for c in out]
        tracer.write(
            kind="gen",
            t0=t0,
            t1=time.time(),
            rows=len(requests),
            temperature=float(requests[0].sampling.temperature),
            max_new=max(int(r.sampling.max_new_tokens) for r in requests),
            prompt_tokens=sum(len(r.prompt_ids) for r in requests),
            new_tokens=sum(lengths),
            steps=max(lengths, default=0),
            threads=threads,
            threads_end=torch.get_num_threads(),
            running=running,
            cached_tokens=self.prefix_cache.reused_tokens - reused,
        )
        return out

    HFEngine._generate_batch = traced_batch  # type: ignore[method-assign]

    cut = Trainer._micro_batches
    local = threading.local()

    def traced_cut(self: Trainer, samples: list[Any], max_seq_len: int) -> list[Any]:
        out = cut(self, samples, max_seq_len)
        local.micro = [
            [int(mb.input_ids.shape[0]), int(mb.input_ids.shape[1]), mb.n_tokens, mb.n_trained] for mb in out
        ]
        return out

    Trainer._micro_batches = traced_cut  # type: ignore[method-assign]
    train_step = Trainer.train_step

    def traced_step(self: Trainer, samples: list[Any]) -> dict[str, float]:
        t0, threads, running = time.time(), torch.get_num_threads(), CPU_SHARE.running
        local.micro = []
        stats = train_step(self, samples)
        shapes = []
        for s in samples:
            ids, mask, _ = trim(s, self.cfg.max_seq_len)
            shapes.append([s.role, len(ids), int(sum(mask)), s.advantage != 0.0])
        tracer.write(
            kind="learn", t0=t0, t1=time.time(), samples=shapes, micro=local.micro, threads=threads, running=running
        )
        return stats

    Trainer.train_step = traced_step  # type: ignore[method-assign]

    def span(cls: Any, name: str, kind: str) -> None:
        inner = getattr(cls, name)

        async def traced(self: Any, arg: Any, *args: Any, **kwargs: Any) -> Any:
            t0 = time.time()
            try:
                return await inner(self, arg, *args, **kwargs)
            finally:
                tracer.write(kind=kind, step=int(getattr(arg, "step", arg)), t0=t0, t1=time.time())

        setattr(cls, name, traced)

    load_sync = HFEngine._load_adapter_sync

    def traced_load(self: HFEngine, version: int, path: str) -> None:
        t0 = time.time()
        load_sync(self, version, path)
        tracer.write(kind="adapter_load", step=version, t0=t0, t1=time.time())

    HFEngine._load_adapter_sync = traced_load  # type: ignore[method-assign]
    span(HFEngine, "load_adapter", "load_call")
    span(AdapterPublisher, "publish", "publish")
    span(AdapterPublisher, "_probe", "probe")
    span(Pipeline, "produce", "produce")
    span(Pipeline, "_play_all", "play")
    span(Pipeline, "consume", "consume")
    span(EnvGenerator, "regenerate", "design")


def child(trace: Path, cli_args: list[str]) -> None:
    from spade_async.hardware.allocator import tune_malloc
    from spade_async.util.quiet import quiet_libraries, verbose_requested

    quiet_libraries(verbose_requested())  # what the CLI does first, before the hooks import torch
    tune_malloc()
    install_hooks(Tracer(trace))
    from spade_async.cli import main as cli_main

    sys.argv = ["spade-async", *cli_args]
    cli_main()


# -- the benchmarks beside the run ---------------------------------------------------------------


def run_config(run_dir: Path) -> Any:
    from spade_async.config import load_config

    return load_config(run_dir / "config.toml")


def bench_engine(
    cfg: Any, run_dir: Path, batches: Sequence[int], rounds: int, threads: int
) -> dict[str, dict[int, float]]:
    """Our packed engine (as a run builds it) at each batch, the benchmark's shape (prompts <= 64,
    64 new), without and with the run's newest adapter: ``column -> batch -> tok/s``."""
    import functools

    import anyio
    import engine as eb  # benchmarks/engine.py
    import torch

    from spade_async.engine.embedded import resolve_model_path
    from spade_async.hardware.device import dtype_name

    torch.set_num_threads(threads)
    path = resolve_model_path(cfg.model.name)
    dtype = dtype_name(cfg.model.dtype, "cpu")
    e = eb.make_engine(path, "cpu", dtype, max(batches), packed=True)
    adapters = sorted(
        (p for p in (run_dir / "adapters").glob("v*") if p.name[1:].isdigit()), key=lambda p: int(p.name[1:])
    )
    out: dict[str, dict[int, float]] = {}

    async def go() -> None:
        vocab = int(e.model.config.vocab_size)
        for label in ["ours-" + dtype] + ([f"ours-{dtype}+adapter {adapters[-1].name}"] if adapters else []):
            if "+adapter" in label:
                await e.load_adapter(int(adapters[-1].name[1:]), str(adapters[-1]))
            runs: dict[str, eb.Runner] = {label: functools.partial(eb.run_ours, e, new=64)}
            for b in batches:
                r = await eb.bench_batch(runs, vocab, b, 64, rounds, cuda=False)
                out.setdefault(label, {})[b] = r[label]["tok_s"]
                print(f"  engine benchmark {label} batch {b}: {r[label]['tok_s']:.1f} tok/s (median of {rounds})")

    anyio.run(go)
    return out


def bench_learner(cfg: Any, trace: Trace | None, rounds: int, threads: int, replay: bool) -> dict[str, Any]:
    """The learner benchmark's GRPO step (16 x 108, the run's micro-batch settings and LoRA),
    then each traced step's shapes replayed once, alone."""
    import learner as lb  # benchmarks/learner.py
    import torch

    from spade_async.engine.embedded import resolve_model_path
    from spade_async.run.assemble import build_learner

    torch.set_num_threads(threads)
    path = resolve_model_path(cfg.model.name)
    trainer = build_learner(cfg, path)
    base: Any = trainer.model.get_base_model()
    vocab = int(base.config.vocab_size)
    samples = lb.make_samples(16, 60, 48, vocab, seed=0)
    times = lb.time_grpo(trainer, samples, rounds)
    tokens = lb.forward_tokens(trainer, samples)
    out: dict[str, Any] = {"bench_tok_s": tokens / statistics.median(times), "bench_tokens": tokens}
    print(f"  learner benchmark 16x108: {out['bench_tok_s']:.1f} tok/s (median of {rounds}, {tokens} tokens)")
    if replay and trace is not None and trace.learns:
        rtok = rsec = 0.0
        for i, call in enumerate(trace.learns):
            shapes = [(s[0], int(s[1]), int(s[2])) for s in call.samples if s[3] and s[2] > 0]
            if not shapes:
                continue
            replayed = lb.samples_like(shapes, vocab, seed=i)
            (dt,) = lb.time_grpo(trainer, replayed, 1, warmup=False)
            n = lb.forward_tokens(trainer, replayed)
            rtok, rsec = rtok + n, rsec + dt
            print(f"  replay of traced step {i + 1}: {n} tokens in {dt:.1f} s alone (run: {call.seconds:.1f} s)")
        out.update(replay_tokens=rtok, replay_s=rsec)
    return out


# -- main ---------------------------------------------------------------------------------------


def start_run(args: argparse.Namespace) -> Path:
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="run_level-"))
    base.mkdir(parents=True, exist_ok=True)
    run_dir = base / "run"
    trace = base / TRACE_FILE
    trace.unlink(missing_ok=True)
    sets = [
        f"run.max_steps={args.steps}",
        f'run.run_dir="{run_dir}"',
        'log.backends=["console", "jsonl"]',
        *args.set,
    ]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(trace), "--", "run", args.config, "--headless"]
    for s in sets:
        cmd += ["--set", s]
    log = base / "console.log"
    print(f"run: {' '.join(cmd[3:])} (console in {log})", flush=True)
    t0 = time.perf_counter()
    with log.open("w") as fh:
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, check=False).returncode
    print(f"run: exit {rc} after {time.perf_counter() - t0:.0f} s", flush=True)
    if rc != 0:
        print(log.read_text()[-4000:])
        raise SystemExit(f"the run failed (exit {rc})")
    if trace.is_file():
        (run_dir / TRACE_FILE).write_bytes(trace.read_bytes())
    return run_dir


HEADLINE_ROWS = {"play": "play (stage wall)", "agent": "agent engine batches", "learn": "learn (train_step)"}
"""The table rows whose run, benchmark and ratio figures the README's table quotes."""


def headline(rows: Sequence[Row], figures: dict[str, Any], steps: int) -> dict[str, float]:
    """The figures ``--json`` writes for the README's table: ``steps``, ``run_batch`` (the run's
    median agent batch, the engine benchmark's batch), and for play (the stage's wall), agent
    (the engine's agent batches) and learn (``train_step``): ``NAME_tok_s`` in the run,
    ``NAME_bench_tok_s`` of its benchmark and ``NAME_over_bench``; beside them the engine
    benchmark with the run's adapter (``engine_adapter_tok_s``) and the run's learner steps
    replayed alone (``replay_tok_s``). A figure the run or the benchmarks did not give is left out."""
    out: dict[str, float] = {"steps": float(steps), "run_batch": float(figures["run_batch"])}
    for key, prefix in HEADLINE_ROWS.items():
        row = next((r for r in rows if r.what.startswith(prefix)), None)
        if row is not None:
            for name, value in (("tok_s", row.tok_s), ("bench_tok_s", row.bench_tok_s), ("over_bench", row.ratio)):
                if value is not None and math.isfinite(value):
                    out[f"{key}_{name}"] = float(value)
    adapter = [v for k, v in figures.get("engine", {}).items() if "+adapter" in k]
    if adapter and figures["run_batch"] in adapter[0]:
        out["engine_adapter_tok_s"] = float(adapter[0][figures["run_batch"]])
    replayed = ratio(figures.get("learner", {}).get("replay_tokens"), figures.get("learner", {}).get("replay_s"))
    if replayed is not None:
        out["replay_tok_s"] = replayed
    return out


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> None:
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        rest = sys.argv[i + 2 :]
        child(Path(sys.argv[i + 1]), rest[1:] if rest[:1] == ["--"] else rest)
        return
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--run", metavar="DIR", help="read this finished run folder instead of running one")
    ap.add_argument("--steps", type=int, default=4, help="run.max_steps of the run started here")
    ap.add_argument("--config", default="tiny", help="config or preset of the run started here")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more overrides for that run")
    ap.add_argument("--keep", metavar="DIR", help="run in this folder (kept) instead of a temporary one")
    ap.add_argument("--no-bench", dest="bench", action="store_false", help="only read the run (no benchmarks)")
    ap.add_argument("--no-replay", dest="replay", action="store_false", help="skip replaying the traced learner steps")
    ap.add_argument("--engine-rounds", type=int, default=2)
    ap.add_argument("--learner-rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="benchmark threads (0: the cores this process may use)")
    ap.add_argument(
        "--json", metavar="PATH", help="also write the figures here (benchmarks/results.py; make bench's table)"
    )
    args = ap.parse_args()

    import os

    from results import Recorder, cpu_brief  # benchmarks/ is on sys.path: the scripts run as files

    rec = Recorder("run_level", args.json, {k: v for k, v in vars(args).items() if k != "json"})
    print(f"cpu: {cpu_brief()}; load average {load_average()}", flush=True)
    run_dir = Path(args.run) if args.run else start_run(args)
    if not args.run:
        print(f"load average after the run: {load_average()}", flush=True)
    steps, source = read_steps(run_dir)
    stages = stage_totals(steps)
    trace = read_trace(run_dir / TRACE_FILE, run_temperatures(run_dir)) if (run_dir / TRACE_FILE).is_file() else None
    rows, gens = stage_rows(stages, trace)
    overlap = overlap_from_trace(trace) if trace is not None and trace.spans else overlap_from_steps(steps)

    agent = gens.get("agent")
    run_batch = max(1, round(agent.median_rows)) if agent else 16
    figures: dict[str, Any] = {"run_batch": run_batch}
    if args.bench:
        cfg = run_config(run_dir)
        threads = args.threads or len(os.sched_getaffinity(0))
        eng = bench_engine(cfg, run_dir, sorted({run_batch, 16}), args.engine_rounds, threads)
        lrn = bench_learner(cfg, trace, args.learner_rounds, threads, args.replay)
        figures.update(engine=eng, learner=lrn)
        base = next(iter(eng.values()))
        with_adapter = [v for k, v in eng.items() if "+adapter" in k]
        label = f"engine.py ours, batch {run_batch}"
        for r in rows:
            if r.what.startswith(("play (stage wall)", "agent engine batches")):
                r.bench, r.bench_tok_s = label, base[run_batch]
                if with_adapter:
                    r.note = (r.note + "; " if r.note else "") + (
                        f"bench with the run's adapter {with_adapter[0][run_batch]:.1f} tok/s, at batch 16 {base[16]:.1f}"
                    )
            if r.what.startswith("learn (train_step)"):
                r.bench, r.bench_tok_s = "learner.py GRPO 16x108", lrn["bench_tok_s"]
                if "replay_s" in lrn:
                    replayed = ratio(lrn["replay_tokens"], lrn["replay_s"])
                    r.note = f"the run's own step shapes replayed alone: {fmt(replayed, ',.1f')} tok/s; {r.note}"
    cpu = cpu_brief()
    print(f"\nrun folder: {run_dir} (steps from {source}); load average {load_average()}\n")
    print(render(rows, cpu))
    print()
    if overlap is not None:
        print(
            f"overlap: {overlap.pairs} (design/play, learn) pairs of stages ran at the same time; "
            f"{overlap.seconds:.1f} of {overlap.learn_seconds:.1f} learn seconds beside design or play "
            f"({fmt(overlap.fraction, '.0%')}); {overlap.stages} design/play spans; from {overlap.source}"
        )
    else:
        print(f"overlap: unknown ({METRICS_FILE} has no timestamps and there is no {DB_FILE} or trace)")
    if trace is not None:
        print(padding_line(trace))
        print(threads_line(trace))
        print(interleave_line(trace))
        print(publish_line(trace))
        if agent:
            hist: dict[int, int] = {}
            for n in agent.rows:
                hist[n] = hist.get(n, 0) + 1
            print("agent batch rows (rows: batches): " + ", ".join(f"{k}: {v}" for k, v in sorted(hist.items())))
    rec.add(**headline(rows, figures, len(steps)))
    rec.detail = {
        "cpu": cpu,
        "run_dir": str(run_dir),
        "source": source,
        "stages": {k: asdict(v) for k, v in stages.items()},
        "rows": [{**asdict(r), "ratio": r.ratio} for r in rows],
        "overlap": None if overlap is None else {**asdict(overlap), "fraction": overlap.fraction},
        **figures,
    }
    rec.write()


if __name__ == "__main__":
    main()
