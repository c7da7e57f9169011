"""(design prompt -> environment file) pairs, rendered with the designer's own templates.

Why the real templates: the warm start must teach the task the run asks, so each pair is a
``DesignJob`` rendered by ``selfplay.design.designer.design_prompt`` exactly as the run renders
it (system prompt, chat template, corpus document, examples or a parent with a change), and
the target is the file in the one ```` ```python ```` block the parser reads, then EOS.

- fresh: the target's skill, a corpus document, and as the example a library file of *another
  family* (another mechanic; of the target's skill when there is one), so the answer is shown
  nowhere in the prompt and the model learns to write a game, not to copy one;
- mutation, ``mutation_targets = "sibling"`` (default): the parent is another file of the
  target's family and the answer the target, with the run's own instruction that names their
  largest difference (``siblings``): a child that behaves differently, not one constant
  changed. A target without a sibling in the pool falls back to ``variant``;
- mutation, ``mutation_targets = "variant"``: the parent is the target's library
  file and the answer a rule-made mutation of it with the run's own instruction for that change
  (``variants``): ground truth a small model can learn, since it copies what it is shown;
- mutation, ``mutation_targets = "other_file"``: a parent from the library (of the target's
  skill when there is another), a change from ``prompts.MUTATIONS``, and the target a different
  file (no rule applies, or the switch says so: the nearest honest target without a rule).
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
from spade_async.warmstart.siblings import describe_change
from spade_async.warmstart.variants import rule_mutation


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
    """The job whose answer is ``target`` (see the module docstring; ``other_file`` mutations)."""
    others = (
        [e for e in library if e.family_name != target.family_name]
        or [e for e in library if e.key != target.key]
        or [target]
    )
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
    example = rng.choice([e for e in others if e.skill == target.skill] or others)
    return DesignJob(
        target.skill, corpus.next(), "fresh", examples=[Example(_record(example, domain), "model")], domain=domain
    )


def target_ids(engine: Engine, code: str) -> list[int]:
    """The completion the designer should write for ``code``: one python block, then EOS."""
    return [*engine.encode("```python\n" + code.strip("\n") + "\n```"), engine.eos_token_id]


def design_pair(
    engine: Engine,
    target: LibraryEnv,
    library: list[LibraryEnv],
    corpus: Corpus,
    rng: random.Random,
    *,
    mutation: bool,
    domain: str = "games",
    mutation_targets: str = "sibling",
) -> TrainSample:
    """One supervised sample: the rendered prompt (not trained on), then the target file."""
    siblings = [e for e in library if e.family and e.family == target.family and e.key != target.key]
    sibling = rng.choice(siblings) if mutation and mutation_targets == "sibling" and siblings else None
    variant = (
        rule_mutation(target.code, rng)
        if mutation and sibling is None and mutation_targets in ("variant", "sibling")
        else None
    )
    if sibling is not None:
        job = DesignJob(
            target.skill,
            corpus.next(),
            "mutation",
            parent=_record(sibling, domain),
            change=describe_change(sibling.code, target.code),
            domain=domain,
        )
        code = target.code
    elif variant is not None:
        job = DesignJob(
            target.skill,
            corpus.next(),
            "mutation",
            parent=_record(target, domain),
            change=variant.change,
            domain=domain,
        )
        code = variant.code
    else:
        job = design_job(target, library, corpus, rng, mutation=mutation, domain=domain)
        code = target.code
    prompt = design_prompt(engine, job)
    answer = target_ids(engine, code)
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
