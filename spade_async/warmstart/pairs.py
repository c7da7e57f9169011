"""(design prompt -> environment file) pairs, rendered with the designer's own templates.

Why the real templates: the warm start must teach the task the run asks, so each pair is a
``DesignJob`` rendered by ``selfplay.design.designer.design_prompt`` exactly as the run renders
it (system prompt, chat template, corpus document, examples or a parent with a change), and
the target is the file in the one ```` ```python ```` block the parser reads, then EOS.

- fresh: the target's skill, a corpus document, one *other* library file as the example
  (so the model learns to write a new file, not to copy the one it is shown);
- mutation: a parent from the library (of the target's skill when there is another), a change
  from ``prompts.MUTATIONS``, and the target a different file (the library has no ground-truth
  mutations; a different file of the same skill is the nearest honest target).
"""

from __future__ import annotations

import random

from spade_async.engine.base import Engine
from spade_async.learner.samples import TrainSample
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.selfplay.design.corpus import Corpus
from spade_async.selfplay.design.designer import DesignJob, design_prompt
from spade_async.selfplay.prompts import MUTATIONS, TOOL_USE_MUTATIONS
from spade_async.warmstart.library import LibraryEnv


def _record(env: LibraryEnv, domain: str) -> EnvRecord:
    return EnvRecord(code=env.code, domain=domain, skill=env.skill, origin="seed", created_step=0, doc_title=env.name)


def design_job(
    target: LibraryEnv,
    library: list[LibraryEnv],
    corpus: Corpus,
    rng: random.Random,
    *,
    mutation: bool,
    domain: str = "games",
) -> DesignJob:
    """The job whose answer is ``target`` (see the module docstring)."""
    others = [e for e in library if e.key != target.key] or [target]
    if mutation:
        parent = rng.choice([e for e in others if e.skill == target.skill] or others)
        changes = TOOL_USE_MUTATIONS if domain == "tool_use" else MUTATIONS
        return DesignJob(
            target.skill,
            corpus.next(),
            "mutation",
            parent=_record(parent, domain),
            change=rng.choice(changes),
            domain=domain,
        )
    example = rng.choice(others)
    return DesignJob(
        target.skill, corpus.next(), "fresh", examples=[Example(_record(example, domain), "model")], domain=domain
    )


def target_ids(engine: Engine, env: LibraryEnv) -> list[int]:
    """The completion the designer should write for ``env``: one python block, then EOS."""
    return [*engine.encode("```python\n" + env.code.strip("\n") + "\n```"), engine.eos_token_id]


def design_pair(
    engine: Engine,
    target: LibraryEnv,
    library: list[LibraryEnv],
    corpus: Corpus,
    rng: random.Random,
    *,
    mutation: bool,
    domain: str = "games",
) -> TrainSample:
    """One supervised sample: the rendered prompt (not trained on), then the target file."""
    prompt = design_prompt(engine, design_job(target, library, corpus, rng, mutation=mutation, domain=domain))
    answer = target_ids(engine, target)
    return TrainSample(
        role="designer",
        input_ids=prompt + answer,
        loss_mask=[0] * len(prompt) + [1] * len(answer),
        behaviour_logprobs=[0.0] * (len(prompt) + len(answer)),
        advantage=1.0,
        adapter_version=0,
        temperature=1.0,
        reward=0.0,
        group=target.skill,
    )
