"""Slash-namespaced metric names for tracking tools (``agent/return_mean``, ``eval/...``).

Why a mapping and not the raw keys: dashboards group charts by the prefix before ``/``, so
agent, designer, environment, learner and timing figures each get their own panel. Keys not
listed keep their name under ``misc/``; NaN values (not measured this step) are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

NAMES: dict[str, str] = {
    "agent_return_mean": "agent/return_mean",
    "plain_return_mean": "agent/plain_return_mean",
    "hint_return_mean": "agent/hint_return_mean",
    "episodes_failed": "agent/episodes_failed",
    "zero_variance_groups": "agent/zero_variance_groups",
    "regret_mean": "designer/regret_mean",
    "designer_reward_mean": "designer/reward_mean",
    "valid_fraction": "designer/valid_fraction",
    "n_envs": "envs/n",
    "learnable_fraction": "envs/learnable_frac",
    "band_too_easy": "envs/band_too_easy",
    "band_in_band": "envs/band_in_band",
    "band_too_hard": "envs/band_too_hard",
    "band_invalid": "envs/band_invalid",
    "env_diversity": "envs/vendi",
    "loss": "learner/loss",
    "clip_fraction": "learner/clip_fraction",
    "kl": "learner/kl",
    "grad_norm": "learner/grad_norm",
    "adapter_version": "learner/adapter_version",
    "stale_dropped": "learner/stale_dropped",
    "samples_offered": "learner/samples_offered",
    "probe_gap_mean": "engine/probe_gap_mean",
    "probe_gap_max": "engine/probe_gap_max",
    "probe_ok": "engine/probe_ok",
    "n_samples": "learner/n_samples",
    "tokens_per_s": "perf/tokens_per_s",
    "learner_tokens_per_s": "perf/learner_tokens_per_s",
    "replay_loss": "learner/replay_loss",
    "replay_tokens": "learner/replay_tokens",
    "replay_grad_norm": "learner/replay_grad_norm",
    "time_design_s": "perf/time_design_s",
    "time_play_s": "perf/time_play_s",
    "time_learn_s": "perf/time_learn_s",
}


def namespaced(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Step metrics under their tracking names; non-numeric and NaN values are dropped."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(float(value)):
            continue
        out[NAMES.get(key, key if "/" in key else f"misc/{key}")] = float(value)
    return out


def eval_metrics(rows: Iterable[Any]) -> dict[str, float]:
    """Whole-suite eval rows (``ResultRow`` or dicts) as ``eval/<model>/<suite>/<metric>[_delta|_low|_high]``."""
    out: dict[str, float] = {}
    for row in rows:
        r = row if isinstance(row, Mapping) else row.as_dict()
        if r["task"] != "*":
            continue
        prefix = f"eval/{r['model']}/{r['suite']}/{r['metric']}"
        for suffix, key in (("", "mean"), ("_delta", "delta"), ("_low", "low"), ("_high", "high")):
            value = r.get(key)
            if key == "low" and value is None:
                value = r.get("ci_low")
            if key == "high" and value is None:
                value = r.get("ci_high")
            if isinstance(value, int | float) and not math.isnan(float(value)):
                out[prefix + suffix] = float(value)
    return out


def loop_eval_metrics(rows: Iterable[Any]) -> dict[str, float]:
    """Whole-suite rows of one in-loop evaluation as ``eval/<metric>[_delta|_low|_high]`` plus
    ``eval/n`` and ``eval/n_errors`` (one suite per run, so no model or suite in the name)."""
    out: dict[str, float] = {}
    for row in rows:
        r = row if isinstance(row, Mapping) else row.as_dict()
        if r["task"] != "*":
            continue
        for suffix, key in (("", "mean"), ("_delta", "delta"), ("_low", "low"), ("_high", "high")):
            value = r.get(key)
            if isinstance(value, int | float) and not math.isnan(float(value)):
                out[f"eval/{r['metric']}{suffix}"] = float(value)
        out["eval/n"] = float(r["n"])
        out["eval/n_errors"] = float(r["n_errors"])
    return out
