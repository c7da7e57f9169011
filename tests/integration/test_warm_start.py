"""The designer warm start: library, pairs from the real templates, the run starting from it,
the cache, and a real LoRA learner whose loss on the library falls."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest

from spade_async.config import Config, CorpusConfig
from spade_async.envs import seeds
from spade_async.run.assemble import open_run
from spade_async.selfplay.design.corpus import Corpus
from spade_async.selfplay.design.designer import design_prompt
from spade_async.selfplay.design.novelty import code_key
from spade_async.testing import ScriptedEngine, ScriptedLearner
from spade_async.warmstart import design_pair, load_library, split_library
from spade_async.warmstart.library import LibraryError
from spade_async.warmstart.pairs import design_job
from spade_async.warmstart.variants import FEWER, MORE, SMALLER
from tests.integration.test_pipeline import make_config

pytestmark = pytest.mark.anyio


def test_the_builtin_library_splits_the_same_way_every_time() -> None:
    library = load_library("builtin")
    train, held = split_library(library, 0.25)
    assert len(library) >= 200 and train and held  # the generated library (spade_async/envlib)
    assert {e.name for e in train} | {e.name for e in held} == {e.name for e in library}
    again_train, _ = split_library(list(reversed(library)), 0.25)
    assert {e.name for e in again_train} == {e.name for e in train}


def test_the_split_holds_out_whole_families_the_generated_librarys_own() -> None:
    from spade_async.envlib import held_out_families

    library = load_library("builtin")
    train, held = split_library(library, 0.25)
    assert not {e.family_name for e in train} & {e.family_name for e in held}
    assert held_out_families() <= {e.family for e in held}
    assert {e.skill for e in held if e.family} == {e.skill for e in library if e.family}  # every skill
    assert split_library(library, 0.0) == (library, [])


def test_a_fresh_pair_shows_another_family_and_a_sibling_pair_answers_a_sibling() -> None:
    """Fresh: the answer's family is nowhere in the prompt. Mutation: the parent is another file of
    the target's family, the answer is the target, and the change is one of the run's own."""
    from spade_async.selfplay.prompts import MUTATIONS

    engine = ScriptedEngine()
    library = load_library("builtin")
    corpus = Corpus.from_config(CorpusConfig(source="builtin", max_chars=300), seed=0)
    by_code = {e.code.strip(): e for e in library}
    rng = random.Random(5)
    for target in rng.sample(library, 12):
        job = design_job(target, library, corpus, rng, mutation=False)
        assert job.examples and by_code[job.examples[0].env.code.strip()].family != target.family
        sample = design_pair(engine, target, library, corpus, rng, mutation=True)
        split = sum(1 for m in sample.loss_mask if not m)
        prompt, answer = engine.decode(sample.input_ids[:split]), engine.decode(sample.input_ids[split:])
        assert answer.removeprefix("```python\n").removesuffix("```").strip() == target.code.strip()
        assert target.code.strip() not in prompt
        parents = [e for e in library if e.code.strip() in prompt]
        assert len(parents) == 1 and parents[0].family == target.family and parents[0].name != target.name
        assert sum(change in prompt for change in MUTATIONS) == 1


def test_a_jsonl_library_and_its_errors(tmp_path: Path) -> None:
    good = tmp_path / "pool.jsonl"
    code = 'SKILL = "Optimization"\nclass A:\n    pass\n'
    good.write_text(json.dumps({"code": code, "name": "a"}) + "\n\n" + json.dumps({"code": code + "#2"}) + "\n")
    envs = load_library(str(good))
    assert [e.name for e in envs] == ["a", "line3"] and envs[0].skill == "Optimization"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"code": "x"}\n{"text": 1}\n')
    with pytest.raises(LibraryError, match=r"bad.jsonl:2: expected a JSON object"):
        load_library(str(bad))
    with pytest.raises(LibraryError, match="not 'builtin'"):
        load_library(str(tmp_path / "missing"))


def test_a_pair_is_the_designers_own_prompt_then_the_file() -> None:
    engine = ScriptedEngine()
    library = load_library("builtin")
    target = library[0]
    corpus = Corpus.from_config(CorpusConfig(source="builtin", max_chars=300), seed=0)
    for mutation in (False, True):
        job = design_job(
            target,
            library,
            Corpus.from_config(CorpusConfig(source="builtin", max_chars=300), seed=0),
            random.Random(1),
            mutation=mutation,
        )
        sample = design_pair(
            engine, target, library, corpus, random.Random(1), mutation=mutation, mutation_targets="other_file"
        )
        corpus = Corpus.from_config(CorpusConfig(source="builtin", max_chars=300), seed=0)
        prompt = design_prompt(engine, job)
        assert sample.input_ids[: len(prompt)] == prompt and not any(sample.loss_mask[: len(prompt)])
        answer = engine.decode(sample.input_ids[len(prompt) :])
        assert answer.startswith("```python\n") and target.code.strip() in answer and answer.endswith("```")
        assert sample.input_ids[-1] == engine.eos_token_id and all(sample.loss_mask[len(prompt) :])
        shown = job.parent.code if job.parent else job.examples[0].env.code
        assert shown != target.code  # never trained to copy what it is shown


def test_a_variant_mutation_pair_shows_the_parent_and_answers_its_rule_made_child() -> None:
    engine = ScriptedEngine()
    library = load_library(str(Path(seeds.__file__).parent))  # the seeds: every one has a rule
    corpus = Corpus.from_config(CorpusConfig(source="builtin", max_chars=300), seed=0)
    for target in library:
        sample = design_pair(
            engine, target, library, corpus, random.Random(3), mutation=True, mutation_targets="variant"
        )
        text = engine.decode(sample.input_ids)
        split = sum(1 for m in sample.loss_mask if not m)
        prompt, answer = engine.decode(sample.input_ids[:split]), engine.decode(sample.input_ids[split:])
        assert target.code.strip() in prompt  # the parent is shown ...
        child = answer.removeprefix("```python\n").removesuffix("```")
        assert code_key(child) != code_key(target.code)  # ... and the answer is not a copy of it
        ast.parse(child)
        assert any(change in text for change in (MORE, FEWER, SMALLER))


def warm_config(tmp_path: Path, **warm: object) -> Config:
    cfg = make_config(tmp_path, mode="fixed", envs_per_step=1, plays=2, hinted_plays=0)
    data = cfg.model_dump()
    data["run"]["max_steps"] = 1
    data["warmstart"] = {"enabled": True, "steps": 3, "batch": 2, **warm}
    return Config.model_validate(data)


async def test_a_run_starts_from_the_warm_start_and_reuses_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPADE_ASYNC_CACHE", str(tmp_path / "cache"))
    lines: list[str] = []
    engine, learner = ScriptedEngine(), ScriptedLearner()
    async with open_run(warm_config(tmp_path), engine=engine, learner=learner, report=lines.append) as pipeline:
        run_dir = pipeline.run_dir
        assert learner.started_from == run_dir / "warmstart" / "adapter" and learner.version == 1
        assert engine.loaded == [(1, str(run_dir / "warmstart" / "adapter"))]  # live before the first design
        assert len(learner.batches) == 3 and all(len(b) == 2 for b in learner.batches)
        assert learner.sft_lrs == [warm_config(tmp_path).warmstart.lr] * 3  # the warm start's own rate
        assert await pipeline.run(sync=True) == 1
    manifest = json.loads((run_dir / "warmstart" / "warmstart.json").read_text())
    assert manifest["steps"] == 3 and manifest["held_out"] and manifest["losses"]
    assert any(line.startswith("warm start: 3 steps") for line in lines)


async def test_a_given_adapter_is_the_starting_point_without_training(tmp_path: Path) -> None:
    adapter = tmp_path / "given"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"weights")
    learner = ScriptedLearner()
    cfg = warm_config(tmp_path, adapter=str(adapter))
    async with open_run(cfg, engine=ScriptedEngine(), learner=learner, report=lambda s: None) as pipeline:
        assert learner.batches == [] and learner.version == 1
        assert (pipeline.run_dir / "warmstart" / "adapter" / "adapter_model.safetensors").read_bytes() == b"weights"


def test_a_real_lora_learns_the_library(tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny model's LoRA: three supervised steps lower the training loss, the result is
    written with a real adapter and is then read from the cache."""
    from spade_async.engine.hf import HFEngine
    from spade_async.learner.trainer import Trainer
    from spade_async.warmstart.train import read_result, run_warm_start

    cfg = Config.model_validate(
        {
            "model": {"name": str(tiny_model_dir), "lora_rank": 4},
            "engine": {"max_model_len": 3072},
            "learner": {"lr": 1e-2, "micro_batch": 2},
            "corpus": {"max_chars": 200},
            "warmstart": {"enabled": True, "steps": 4, "batch": 2, "lr": 1e-2},
        }
    )
    engine = HFEngine(tiny_model_dir, seed=0)
    learner = Trainer(str(tiny_model_dir), cfg.model, cfg.learner.model_copy(update={"lr": 1e-2}), seed=0)
    result = run_warm_start(cfg, engine=engine, learner=learner, out=tmp_path / "ws", report=lambda s: None)
    assert result.losses[-1] < result.losses[0]
    assert result.held_out_loss_after is not None and result.held_out_loss_before is not None
    assert read_result(tmp_path / "ws") == result


async def test_re_emitting_a_library_file_is_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The copy rule covers the files the policy was warm-started on (the wire: the run's generator has their keys)."""
    from spade_async.selfplay.design.novelty import code_key, copy_reason

    monkeypatch.setenv("SPADE_ASYNC_CACHE", str(tmp_path / "cache"))
    library = load_library("builtin")
    async with open_run(
        warm_config(tmp_path), engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None
    ) as pipeline:
        keys = pipeline.generator.library_keys
    assert keys == {code_key(e.code) for e in library}
    reformatted = "# a comment\n" + library[3].code.replace("\n\n", "\n")
    assert copy_reason(reformatted, shown=[], known=set(), library=keys) == (
        "copy of a warm-start library file (the designer is rewarded for new environments)"
    )
    assert (
        copy_reason(library[3].code.replace("max_turns", "max_turn_count"), shown=[], known=set(), library=keys) is None
    )


async def test_a_run_rejects_a_design_that_re_emits_a_library_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wire through the generator: a designer that writes a library file back is a copy."""
    from spade_async.envlib import load_envlib

    monkeypatch.setenv("SPADE_ASYNC_CACHE", str(tmp_path / "cache"))
    easy = load_envlib()[0].code  # in the library, not in this run's memory
    cfg = make_config(tmp_path, envs_per_step=4, plays=2, hinted_plays=0, fixed_pool=None)
    data = cfg.model_dump()
    data["run"]["max_steps"] = 1
    data["warmstart"] = {"enabled": True, "steps": 1, "batch": 1}
    engine = ScriptedEngine(policies={"designer": lambda p, r: f"```python\n{easy}```"})
    lines: list[str] = []
    async with open_run(
        Config.model_validate(data), engine=engine, learner=ScriptedLearner(), report=lines.append
    ) as pipeline:
        assert await pipeline.run(sync=True) == 1
    assert any("copy of a warm-start library file" in line for line in lines), lines[-12:]
