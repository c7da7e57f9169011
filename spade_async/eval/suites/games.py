"""Games suites: environment files played as multi-turn episodes on held-out seeds.

Why these seeds are held out: training draws every episode seed as
``(run.seed * 1_000_003 + step * 10_007 + env_index * 101 + play) % 2**31`` and admission
checks use seeds 0 and 1, so every seed training or validation ever uses lies in
``[0, 2**31)``. Evaluation seeds start at :data:`HELDOUT_SEED_BASE` ``= 2**31``: the
``test`` split uses ``2**31 + j`` and the ``dev`` split (for tuning a recipe without
touching the test seeds) ``2**31 + 2**20 + j``, for episode ``j`` of each environment.
A test checks the training formula never reaches them.

The episode is played by the training code itself (:func:`play_episode`: same prompt, same
sampling section, same turn limit and action prefill as the run's config, and the same
transcript bound, ``min(selfplay.max_context_tokens, engine.max_model_len)``, so no request
exceeds the engine's limit), through the real sandbox. ``score`` is the episode outcome the agent is trained on (the terminating step's
reward, 0 when truncated, the no-action penalty when it never acted); ``solved`` is
``outcome >= win_threshold`` (default 1.0: the game's full reward).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from spade_async.engine.base import Sampling
from spade_async.envs.seeds import SeedEnv, load_env_folder, load_seeds
from spade_async.eval.suites.registry import (
    EvalContext,
    EvalItem,
    ItemScore,
    SuiteError,
    register_suite,
)
from spade_async.memory.records import env_id_for
from spade_async.selfplay.play.agent import agent_context_budget, play_episode

HELDOUT_SEED_BASE = 2**31
"""First evaluation seed; training and admission seeds are all below it."""
DEV_SEED_OFFSET = 2**20
"""The ``dev`` split starts this far above the ``test`` split."""
SPLITS = ("test", "dev")


def heldout_seed(j: int, split: str = "test") -> int:
    """Seed of episode ``j`` (per environment) in ``split``."""
    if split not in SPLITS:
        raise SuiteError(f"unknown split {split!r}; choose from {SPLITS}")
    if not 0 <= j < DEV_SEED_OFFSET:
        raise SuiteError(f"episode index {j} out of range [0, {DEV_SEED_OFFSET})")
    return HELDOUT_SEED_BASE + (DEV_SEED_OFFSET if split == "dev" else 0) + j


class GamesSuite:
    """Play each environment ``episodes`` times (hint-free) on held-out seeds."""

    metrics = ("return", "win_rate")
    needs_sandbox = True

    def __init__(
        self, name: str, envs: list[SeedEnv], *, episodes: int = 16, split: str = "test", win_threshold: float = 1.0
    ) -> None:
        if not envs:
            raise SuiteError(f"suite {name}: no environments to play")
        if episodes < 1:
            raise SuiteError(f"suite {name}: episodes must be at least 1 (got {episodes})")
        heldout_seed(episodes - 1, split)  # validates split and range
        self.name, self.envs, self.episodes, self.split, self.win_threshold = name, envs, episodes, split, win_threshold

    def cache_fingerprint(self) -> dict[str, Any]:
        """What a base score depends on beyond the item keys (see ``eval.base_cache``)."""
        sources = hashlib.sha256("\0".join(f"{env.name}\0{env.source}" for env in self.envs).encode()).hexdigest()
        return {"sources": sources, "win_threshold": self.win_threshold}

    def items(self) -> list[EvalItem]:
        return [
            EvalItem(env.name, f"{env.name}#{heldout_seed(j, self.split)}", (env, heldout_seed(j, self.split)))
            for env in self.envs
            for j in range(self.episodes)
        ]

    async def score(self, ctx: EvalContext, item: EvalItem) -> ItemScore:
        env, seed = item.payload
        if ctx.pool is None:
            raise SuiteError(f"suite {self.name} needs the sandbox")
        sp = ctx.cfg.selfplay
        # The run's own transcript bound: never past the engine's limit (a longer prompt is refused).
        budget = agent_context_budget(sp.max_context_tokens, ctx.engine.max_model_len)
        episode = await play_episode(
            ctx.engine,
            ctx.pool,
            env_id=env_id_for(env.source),
            source=env.source,
            seed=seed,
            hint=None,
            sampling=Sampling.from_config(ctx.cfg.engine.agent),
            max_turns=sp.max_turns,
            max_context_tokens=budget,
            no_action_penalty=sp.no_action_penalty,
            action_prefill=sp.action_prefill,
        )
        detail = {"turns": episode.turns, "actions": episode.n_actions, "truncated": episode.truncated}
        return ItemScore(episode.outcome, episode.outcome >= self.win_threshold, episode.error, detail)


def _games_options(options: dict[str, Any]) -> dict[str, Any]:
    return {k: options[k] for k in ("episodes", "split", "win_threshold") if k in options}


@register_suite("games")
def games_suite(arg: str | None, options: dict[str, Any]) -> GamesSuite:
    """The built-in seed games; ``games:easy`` / ``games:standard`` picks a tier (default: both)."""
    tier = arg or options.get("tier", "all")
    try:
        envs = load_seeds(tier)
    except ValueError as exc:
        raise SuiteError(f"suite games: {exc}") from None
    return GamesSuite("games" if tier == "all" else f"games:{tier}", envs, **_games_options(options))


@register_suite("envs")
def env_folder_suite(arg: str | None, options: dict[str, Any]) -> GamesSuite:
    """Every environment file in a folder: ``envs:PATH``."""
    if not arg:
        raise SuiteError("suite envs needs a folder: --suite envs:PATH")
    try:
        envs = load_env_folder(Path(arg))
    except (FileNotFoundError, ValueError) as exc:
        raise SuiteError(f"suite envs: {exc}") from None
    return GamesSuite(f"envs:{Path(arg).name}", envs, **_games_options(options))
