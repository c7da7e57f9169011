"""benchmarks/designs.py applies the run's copy rules to every design it counts: the code its
prompt showed is not admitted, nor a near-copy of a shipped file (``selfplay.max_library_
similarity``), and a new file is. Designs built by hand from shipped files; no model."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))  # the benchmark scripts import their siblings by name

from designs import apply_copy_rules  # noqa: E402

from spade_async.engine.base import Completion  # noqa: E402
from spade_async.memory.records import EnvRecord  # noqa: E402
from spade_async.selfplay.design.corpus import Document  # noqa: E402
from spade_async.selfplay.design.designer import Design, DesignJob  # noqa: E402
from spade_async.selfplay.design.novelty import code_key  # noqa: E402
from spade_async.selfplay.design.similarity import shipped_files  # noqa: E402

NEW_GAME = "\n".join(f"class Tally{i}:\n    count = {i * 7}\n" for i in range(40))


def design(code: str, parent: str | None = None) -> Design:
    job = DesignJob(
        "Optimization",
        Document("d", "t", "x"),
        "mutation" if parent else "fresh",
        parent=EnvRecord(code=parent, domain="games", skill="Optimization", origin="seed", created_step=0)
        if parent
        else None,
    )
    return Design(
        job=job, prompt_ids=[1], completion=Completion([1], [2], [-0.1], code, "stop", 0), code=code, admitted=True
    )


def test_near_copies_and_copies_of_the_prompt_are_not_admitted_a_new_file_is() -> None:
    name, shipped = shipped_files("games")[0]
    edited = shipped.replace("1", "2", 1)  # one constant changed: a near-copy
    library_keys = frozenset({code_key(shipped)})

    near = design(edited)
    assert apply_copy_rules(near, library_keys, 0.95, "games") is True
    assert not near.admitted and f"near-copy of library file {name}" in near.reasons[-1]

    parent_copy = design(edited, parent=edited)
    assert apply_copy_rules(parent_copy, library_keys, 0.95, "games") is False  # rejected as a copy, not counted twice
    assert not parent_copy.admitted and parent_copy.copied

    new = design(NEW_GAME)
    assert apply_copy_rules(new, library_keys, 0.95, "games") is False
    assert new.admitted and new.nearest is not None and new.nearest.ratio < 0.95

    loose = design(edited)  # with the rule off (1.0) the edit stays admitted
    assert apply_copy_rules(loose, library_keys, 1.0, "games") is False and loose.admitted
