"""Child process for the kill -9 test: writes steps forever, printing each step once committed.

Each step is two transactions: a batch of episodes with bulky transcripts (so a kill often
lands inside a commit), then the step's metrics row. The parent SIGKILLs this process at a
random moment and checks that every printed step is in the database, whole.

Usage: python kill_writer.py DB_PATH
"""

from __future__ import annotations

import sys

import anyio

from spade_async.memory.records import EnvRecord, EpisodeRecord
from spade_async.memory.store import Store

EPISODES_PER_STEP = 5
TRANSCRIPT_CHARS = 20_000


async def main(path: str) -> None:
    store = await Store.open(path)
    await store.start_run("kill-test", "seed = 0\n", None)
    env_id = await store.record_environment(
        EnvRecord(code="class Env: pass", domain="games", skill=None, origin="seed", created_step=0)
    )
    step = 0
    while True:
        step += 1
        text = f"step {step} " * (TRANSCRIPT_CHARS // 10)
        await store.record_episodes(
            [
                EpisodeRecord(
                    step=step,
                    env_id=env_id,
                    adapter_version=step,
                    hinted=bool(i % 2),
                    outcome=1.0,
                    turns=i,
                    transcript=[{"role": "agent", "text": text}],
                )
                for i in range(EPISODES_PER_STEP)
            ]
        )
        await store.record_step(step, step, {"check": step * 2, "n": EPISODES_PER_STEP}, 0.01)
        print(step, flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
