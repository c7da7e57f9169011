"""How the agent played each environment, read from the run database: the designer's failure summary.

Why: the designer sees a memory example's code and a one-line verdict ("too easy (players won
80%)"), never *what the agent did*. "From Trainee to Trainer" (arXiv 2606.17682) reports that a
policy designs better next environments when it reads a structured summary of the agent's
failures. :class:`PlayStats` is that summary's data, built from what the store already keeps:
the ``episodes`` rows (plain and hinted outcomes, turns, truncation, the last turns of each
transcript) and the ``error`` events of plays that crashed (those plays have no episode row).

Why this shape: the SQL (:data:`EPISODE_SQL`, :data:`ERROR_SQL`) and the pure aggregation
(:func:`aggregate`) live here, in the layer that owns every SQL statement; the run reads it
through ``Store.play_stats`` (its read-only connection), which never writes. Only the newest
:data:`RECENT_EPISODES` plays of each arm count, so the summary describes the environment as
the agent plays it now, and reading it stays cheap however long the run.

What a play "lost" means here: any plain play whose outcome is below 1.0 (reward 1.0 is a win
by the contract; partial credit is not a win). How a lost play ended, one class each:
``no action`` (its last reply had no ``\\boxed{}`` action), ``out of turns`` (truncated:
the turn or context limit, not the game, ended it) or ``lost move`` (the game ended it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from spade_async.envs.contract import parse_boxed

RECENT_EPISODES = 64
"""Newest plays of each arm (plain, hinted) of an environment that the statistics read."""
ACTION_CHARS = 24
"""Longest final action kept (longer ones are cut and end in ``...``)."""
TOP_ACTIONS = 3
"""Most distinct final actions of lost plays kept (the commonest)."""
PLAY_ERROR_MARK = " failed during play: "
"""The text between the environment id and the error in a play-error event (:func:`play_error_message`)."""

NO_ACTION = "no action"
OUT_OF_TURNS = "out of turns"
LOST_MOVE = "lost move"
LOSS_ENDINGS: tuple[str, ...] = (OUT_OF_TURNS, LOST_MOVE, NO_ACTION)
"""How a lost plain play ended (module docstring), in the order a summary lists them."""


def play_error_message(env_id: str, error: str) -> str:
    """The ``error`` event a crashed play records (the pipeline writes it, :func:`error_class` reads it)."""
    return f"env {env_id[:12]}{PLAY_ERROR_MARK}{error}"


def error_class(message: str) -> str:
    """The error class of a play-error event: the exception name its error starts with
    (``SandboxTimeout: ...`` gives ``SandboxTimeout``), or ``error`` when it names none."""
    _, _, error = message.partition(PLAY_ERROR_MARK)
    name = error.split(":", 1)[0].strip()
    return name if name.isidentifier() else "error"


@dataclass(frozen=True)
class PlayStats:
    """How the agent played one environment (its newest plays; see the module docstring)."""

    env_id: str
    plain: int
    """Plain (hint-free) plays counted."""
    plain_wins: int
    """Of those, plays with outcome 1.0 or more."""
    plain_mean: float | None
    """Mean plain outcome (what ``environments.win_rate`` averages over the whole life)."""
    hinted: int
    hinted_wins: int
    hinted_mean: float | None
    mean_turns: float | None
    """Mean agent turns of the plain plays."""
    most_turns: int
    """Most agent turns of any plain play."""
    lost_actions: tuple[tuple[str, int], ...] = ()
    """The commonest final actions of lost plain plays, cut to :data:`ACTION_CHARS`, with counts, commonest first."""
    distinct_lost_actions: int = 0
    """How many different final actions the lost plain plays ended on (all of them, not only the shown)."""
    loss_endings: tuple[tuple[str, int], ...] = ()
    """How the lost plain plays ended (:data:`LOSS_ENDINGS`), with counts, in that order."""
    play_errors: tuple[tuple[str, int], ...] = ()
    """Error classes of the plays that crashed (no episode row), with counts, commonest first."""

    @property
    def lost(self) -> int:
        return self.plain - self.plain_wins

    @property
    def empty(self) -> bool:
        """Nothing was played (no episode, no crash): there is nothing to summarise."""
        return self.plain == 0 and self.hinted == 0 and not self.play_errors


EPISODE_SQL = (
    "SELECT env_id, hinted, outcome, turns, truncated, role, text FROM ("
    "SELECT env_id, hinted, outcome, turns, truncated, "
    "json_extract(transcript, '$[#-2].role') AS role, json_extract(transcript, '$[#-2].text') AS text, "
    "ROW_NUMBER() OVER (PARTITION BY env_id, hinted ORDER BY step DESC, id DESC) AS newest "
    "FROM episodes WHERE env_id IN ({marks})) WHERE newest <= ?"
)
"""Newest :data:`RECENT_EPISODES` plays of each arm of the given environments, with the
second-to-last transcript turn: the agent's last reply (the last turn is the observation that
answered it). Format ``{marks}`` with one ``?`` per id."""

ERROR_SQL = "SELECT message FROM events WHERE kind = 'error' AND message LIKE ?"
"""Play-error events of one environment (the parameter: :func:`error_pattern`)."""


def error_pattern(env_id: str) -> str:
    """The ``LIKE`` pattern of :data:`ERROR_SQL` for ``env_id`` (ids are hex: nothing to escape)."""
    return play_error_message(env_id, "") + "%"


def final_action(role: str | None, text: str | None) -> str | None:
    """The action of an agent's last reply, cut to :data:`ACTION_CHARS`; None for no ``\\boxed{}``."""
    if role != "agent" or not text:
        return None
    text = text.rpartition("</think>")[2] if "</think>" in text else text
    action = parse_boxed(text)
    if action is None:
        return None
    action = " ".join(action.split())
    return action if len(action) <= ACTION_CHARS else action[: ACTION_CHARS - 3] + "..."


def _counted(
    counter: Counter[str], order: Sequence[str] | None = None, top: int | None = None
) -> tuple[tuple[str, int], ...]:
    if order is not None:
        return tuple((k, counter[k]) for k in order if counter[k])
    return tuple(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:top])


def aggregate(env_id: str, episodes: Iterable[Sequence[Any]], errors: Iterable[str] = ()) -> PlayStats:
    """:class:`PlayStats` of one environment from its :data:`EPISODE_SQL` rows (``env_id`` first
    or not, the columns after it in that order) and its play-error event messages."""
    plain: list[float] = []
    hinted: list[float] = []
    turns: list[int] = []
    actions: Counter[str] = Counter()
    endings: Counter[str] = Counter()
    for *_, is_hinted, outcome, n_turns, truncated, role, text in episodes:
        if is_hinted:
            hinted.append(float(outcome))
            continue
        plain.append(float(outcome))
        turns.append(int(n_turns))
        if outcome >= 1.0:
            continue
        action = final_action(role, text)
        if action is not None:
            actions[f"\\boxed{{{action}}}"] += 1
        endings[NO_ACTION if action is None else OUT_OF_TURNS if truncated else LOST_MOVE] += 1
    return PlayStats(
        env_id=env_id,
        plain=len(plain),
        plain_wins=sum(o >= 1.0 for o in plain),
        plain_mean=sum(plain) / len(plain) if plain else None,
        hinted=len(hinted),
        hinted_wins=sum(o >= 1.0 for o in hinted),
        hinted_mean=sum(hinted) / len(hinted) if hinted else None,
        mean_turns=sum(turns) / len(turns) if turns else None,
        most_turns=max(turns, default=0),
        lost_actions=_counted(actions, top=TOP_ACTIONS),
        distinct_lost_actions=len(actions),
        loss_endings=_counted(endings, order=LOSS_ENDINGS),
        play_errors=_counted(Counter(error_class(m) for m in errors)),
    )


def group_rows(env_ids: Sequence[str], rows: Iterable[Sequence[Any]]) -> dict[str, list[Sequence[Any]]]:
    """:data:`EPISODE_SQL` rows by environment id (every id present, maybe with no rows)."""
    grouped: dict[str, list[Sequence[Any]]] = {i: [] for i in env_ids}
    for row in rows:
        grouped.setdefault(row[0], []).append(row)
    return grouped
