"""A dishonest environment in a real run ends only itself (issue 22 class 3): an environment
that behaves while admission calls it back to back and lets every action win once calls
come at an agent's pace is admitted, then retired by the play audit at its first step; its
plays are not trained on, it never comes back from memory, and its design is scored invalid.
The honest environment of the same generation plays on."""

from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path

import pytest

from spade_async.memory.lineage import END_EXPELLED, read_lineage
from spade_async.memory.readonly import open_readonly
from spade_async.memory.steering import SteerError, queue_action
from spade_async.run.assemble import open_run
from spade_async.testing import COIN_ENV, ScriptedEngine, ScriptedLearner
from tests.integration.test_pipeline import heads_if_hinted, make_config, rows
from tests.sandbox.conftest import hostile

pytestmark = pytest.mark.anyio


async def test_play_audit_retires_an_env_that_cheats_only_in_play(tmp_path: Path) -> None:
    cheat = hostile("dishonest_timing")
    # The honest design differs in code each time (else it is refused as a copy of its prompt's
    # mutation parent or of memory); the cheater is written verbatim each time.
    numbered = (f"{COIN_ENV}\nDESIGN_NO = {n}\n" for n in itertools.count())
    designs = itertools.cycle([cheat, None])

    def designer(prompt: str, rng: object) -> str:
        code = next(designs) or next(numbered)
        return f"```python\n{code}```"

    cfg = make_config(tmp_path, mode="spade", skills_per_regen=1, repair_turns=0, plays=3, hinted_plays=2)
    # An agent turn takes 0.5 s: play's calls come paused (> the cheat's 0.2 s), admission's do not.
    engine = ScriptedEngine(latency_s=0.5, policies={"designer": designer, "agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    db = tmp_path / "run" / "run.sqlite"
    ((cheat_id, status, valid),) = rows(
        db, "SELECT id, status, valid FROM environments WHERE code LIKE '%TimingTeller%'"
    )
    assert valid == 1 and status == "invalid"  # admitted, then retired; memory skips 'invalid'
    with pytest.raises(SteerError, match="retired by the play audit"):  # nor can a pin bring it back
        queue_action(db, "pin", {"env_id": cheat_id[:8]}, "test")
    retired = rows(db, "SELECT step, message FROM events WHERE message LIKE '%retired by the play audit%'")
    # at its first step; when the designer writes it again (step 2) it is a copy of memory, refused unplayed
    assert [s for s, _ in retired] == [0] and all("won in play" in m for _, m in retired), retired
    with contextlib.closing(open_readonly(db)) as conn:  # the lineage reads the expulsion back
        expelled = read_lineage(conn).nodes[cheat_id]
    assert (expelled.end, expelled.ended_step) == (END_EXPELLED, 0) and "won in play" in (expelled.end_reason or "")
    again = rows(db, "SELECT step, message FROM events WHERE kind = 'rejected'")  # the only refusal of the run
    assert [s for s, _ in again] == [2] and "copy of an environment" in again[0][1], again
    assert rows(db, f"SELECT count(*) FROM episodes WHERE env_id = '{cheat_id}'")[0][0] == 0  # never trained on
    scored = rows(
        db, "SELECT message FROM events WHERE message LIKE '%scored as an invalid design: it failed the play audit%'"
    )
    assert len(scored) == 1 and cheat_id[:12] in scored[0][0]
    # The honest design of each generation (DESIGN_NO 0 at step 0, 1 at step 2) was admitted and played.
    coin = rows(
        db,
        "SELECT id, status, created_step FROM environments WHERE code LIKE '%WeightedCoin%' AND origin != 'seed' "
        "ORDER BY created_step",
    )
    assert [(st != "invalid", created) for _, st, created in coin] == [(True, 0), (True, 2)], coin
    for coin_id, _, created in coin:  # played through its generation (memory may bring it back later)
        played = rows(db, f"SELECT DISTINCT step FROM episodes WHERE env_id = '{coin_id}' ORDER BY step")
        assert played[:2] == [(created,), (created + 1,)], played
    metrics = rows(db, "SELECT metrics FROM steps WHERE step = 3")[0][0]
    assert json.loads(metrics)["audit_retired"] == 1.0, metrics  # cumulative, like stale_dropped: the one catch


async def test_the_users_own_environments_are_not_audited(tmp_path: Path) -> None:
    """A fixed pool is the user's code: the same cheater there (to the audit, a game any action
    wins once calls come paced) is played and trained on, never expelled. Seed games of chance
    (a lottery whose outcome the seed decides) must stay playable for the same reason."""
    cfg = make_config(tmp_path, mode="fixed", plays=3, hinted_plays=0)
    (Path(cfg.selfplay.fixed_pool or "") / "cheat.py").write_text(hostile("dishonest_timing"))
    engine = ScriptedEngine(latency_s=0.5, policies={"agent": heads_if_hinted})
    async with open_run(cfg, engine=engine, learner=ScriptedLearner(), report=lambda s: None) as pipeline:
        assert await pipeline.run(sync=True) == 4
    db = tmp_path / "run" / "run.sqlite"
    assert not rows(db, "SELECT message FROM events WHERE message LIKE '%play audit%'")
    ((cheat_id,),) = rows(db, "SELECT id FROM environments WHERE code LIKE '%TimingTeller%'")
    assert rows(db, f"SELECT count(*) FROM episodes WHERE env_id = '{cheat_id}'")[0][0] > 0
    assert all(m["audit_retired"] == 0.0 for m in (json.loads(t) for (t,) in rows(db, "SELECT metrics FROM steps")))
