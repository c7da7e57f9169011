"""The failure summary: how the agent played a memory example or a mutation parent, in a few lines.

Why: the designer's verdict line says how hard a past environment was ("too easy (players won
80%)"), not how the agent failed it. A short, structured account of its plays (win rates with
and without the hint, turns used, how the lost plays ended, their commonest last moves, crashes)
tells a designer what to change: a game lost by running out of turns wants fewer probes, one
lost on the same wrong move wants a clearer clue ("From Trainee to Trainer", arXiv 2606.17682).

Pure text from :class:`spade_async.memory.play_stats.PlayStats`; ``selfplay.design.designer``
places it under its example or parent and drops it first when the prompt is too long.
"""

from __future__ import annotations

from spade_async.memory.play_stats import PlayStats

SUMMARY_TITLE = "How the agent played it"
"""The summary's first words (tests and docs find the summary by them)."""


def _share(wins: int, n: int, mean: float | None) -> str:
    partial = mean is not None and abs(mean * n - wins) > 1e-6  # partial credit (or penalties): say the mean
    score = f", mean score {mean:.2f}" if partial and mean is not None else ""
    return f"won {wins} of {n}{score}"


def _listed(pairs: tuple[tuple[str, int], ...]) -> str:
    return ", ".join(f"{name} x{count}" for name, count in pairs)


def failure_summary(stats: PlayStats, max_turns: int) -> str:
    """A few short lines on how the agent played (empty when it was never played).

    ``max_turns`` is the run's turn limit (``selfplay.max_turns``), what "turns used" is out of.
    """
    if stats.empty:
        return ""
    lines = [f"{SUMMARY_TITLE} ({stats.plain} plain plays, {stats.hinted} with the hint):"]
    arms = []
    if stats.plain:
        arms.append(_share(stats.plain_wins, stats.plain, stats.plain_mean) + " without the hint")
    if stats.hinted:
        arms.append(_share(stats.hinted_wins, stats.hinted, stats.hinted_mean) + " with it")
    if arms:
        lines.append("- " + "; ".join(arms))
    if stats.mean_turns is not None:
        lines.append(f"- turns used: {stats.mean_turns:.1f} on average, at most {stats.most_turns}, of {max_turns}")
    if stats.loss_endings:
        lines.append("- lost plays ended: " + _listed(stats.loss_endings))
    if stats.lost_actions:
        different = (
            f" ({stats.distinct_lost_actions} different)"
            if stats.distinct_lost_actions > len(stats.lost_actions)
            else ""
        )
        lines.append(f"- last moves of lost plays{different}: " + _listed(stats.lost_actions))
    if stats.play_errors:
        lines.append("- plays that crashed: " + _listed(stats.play_errors))
    return "\n".join(lines)
