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


def test_the_benchmark_counts_a_passing_near_copy_as_not_admitted() -> None:
    """``measure`` validates the design in the real sandbox, then applies the rules: a shipped
    game with one message reworded passes every check and is counted a near-copy under the
    run's 0.95, and admitted with the rule off."""
    import anyio
    from designs import measure

    from spade_async.config import load_config
    from spade_async.config.presets import resolve_config
    from spade_async.testing import ScriptedEngine
    from spade_async.warmstart.library import load_library

    name, shipped = next((n, c) for n, c in shipped_files("games") if '"Right step!"' in c)
    edited = shipped.replace('"Right step!"', '"Right step, well done!"')
    engine = ScriptedEngine(policies={"designer": lambda prompt, rng: f"```python\n{edited}```\n"})
    for limit, admitted, near_copies in ((0.95, 0, 1), (1.0, 1, 0)):
        overrides = [f"selfplay.max_library_similarity={limit}", "engine.max_model_len=8192"]
        # the scripted engine's tokens are characters
        cfg = load_config(resolve_config("tiny"), [*overrides, "engine.designer.max_new_tokens=4096"])
        library = load_library(cfg.warmstart.library, cfg.selfplay.domain)
        tally = anyio.run(measure, "scripted", engine, cfg, library, 1)
        assert (tally.admitted, tally.near_copies) == (admitted, near_copies), (name, tally.designs[0].reasons)
        assert tally.by_prompt == {0: bool(admitted)}  # what `paired` compares settings by


def test_two_settings_are_compared_prompt_by_prompt() -> None:
    """``paired`` matches the two settings' designs by prompt, not by count: the same admitted
    fraction from different prompts is four discordant pairs, not a tie."""
    from designs import Tally, paired

    a = Tally("warm", by_prompt={0: True, 1: True, 2: False, 3: False, 4: True})
    b = Tally("adapter=v16", by_prompt={0: False, 1: False, 2: True, 3: True, 4: True})
    line = paired(a, b)
    assert "both admitted 1, only warm 2, only adapter=v16 2, neither 0" in line
    assert "McNemar p 1.000" in line
    c = Tally("after", by_prompt={i: True for i in range(5)})
    assert "only after 2, neither 0; McNemar p 0.500" in paired(a, c)
