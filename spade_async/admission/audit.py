"""The play audit: play checks what admission promised, in play conditions.

Why: admission runs an environment for a few seconds, back to back, on its own; play runs it
for the rest of its life, with seconds between calls while the agent thinks. An environment
that tells the two apart (by timing, by anything validation cannot hide) can behave while it
is checked and let any action win afterwards, and every win then trains the agent on nothing.
So every step, beside the real plays of each live environment, one audit play opens it the
way a play does, replays the admission :class:`~spade_async.admission.validate.Promise` (the
same seed and meaningless first action; admission recorded the answers), and paces its calls
like the agent's turns: it starts when a real play of the same environment has finished and
waits about one agent turn between reset and step. The environment fails the audit when:

- a meaningless action wins (reward 1.0 on a terminating step), or
- its answers differ from what admission saw (reset observation, or the step's observation,
  reward and end flags): admission proved it deterministic, so a difference means it behaves
  differently in play.

Environments without a promise (designs taken back from memory) get the meaningless action
on a fresh seed. A sandbox error during the audit (timeout, crash) is not a verdict: the real
plays count those.

Only model-written code is audited (:func:`audited`): the audit protects the designer's credit
and the agent's signal from designs that lie. Code the user supplied (the built-in seed games,
a ``selfplay.fixed_pool`` folder, an environment injected with ``spade-async steer``) is the
user's choice: a game of chance whose outcome the seed decides (a "lottery") is legitimate
there, and the audit would expel it. The sandbox and the controller's bounds still hold for it.
"""

from __future__ import annotations

import random

import anyio

from spade_async.admission.validate import PLAY_SEEDS, Promise, meaningless_action, wins
from spade_async.sandbox.errors import SandboxError
from spade_async.sandbox.interface import EnvPool

USER_ORIGINS = frozenset({"seed", "injected"})
"""Origins of environments whose code the user supplied (never audited)."""


def audited(origin: str) -> bool:
    """Whether a live environment of this origin gets an audit play each step."""
    return origin not in USER_ORIGINS


async def audit_play(
    pool: EnvPool,
    source: str,
    promise: Promise | None,
    *,
    rng: random.Random,
    domain: str = "games",
    pace_s: float = 0.0,
) -> str | None:
    """One audit play of ``source``; the reason it fails the audit, or None (passed or errored)."""
    if promise is None:
        promise = Promise(rng.randrange(PLAY_SEEDS), (meaningless_action(rng, domain),), ())
    try:
        async with await pool.open(source) as env:
            obs, _ = await env.reset(promise.seed)
            if promise.answers and obs != promise.answers[0][0]:
                return (
                    f"reset(seed={promise.seed}) in play gave another observation than at admission "
                    f"({obs[:80]!r} instead of {promise.answers[0][0][:80]!r})"
                )
            for turn, action in enumerate(promise.actions, start=1):
                await anyio.sleep(pace_s * rng.uniform(0.5, 1.5))
                result = await env.step(action)
                if wins(result.reward, result.terminated):
                    return f"the meaningless action {action!r} won in play (reward {result.reward!r})"
                got = (result.obs, result.reward, result.terminated, result.truncated)
                if turn < len(promise.answers) and got != promise.answers[turn]:
                    return (
                        f"step({action!r}) after reset(seed={promise.seed}) answered differently in play "
                        f"than at admission ({got[0][:80]!r}, reward {got[1]!r} instead of "
                        f"{promise.answers[turn][0][:80]!r}, reward {promise.answers[turn][1]!r})"
                    )
                if result.terminated or result.truncated:
                    break
    except SandboxError:
        return None
    return None
