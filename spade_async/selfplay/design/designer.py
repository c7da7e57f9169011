"""The Environment Designer: prompt, generate, parse, validate in the sandbox, hint, repair.

Why the aids: a 135M model rarely writes a valid 40-line environment from scratch. Three
honest aids raise the valid fraction without faking it: (1) *mutation* prompts that show a
working memory environment and ask for a variant (small models copy well), (2) the
contract's pre-bound modules and ``GameEnv`` base, so a forgotten import is not fatal, and
(3) optional *repair* turns that show the validator's reasons and ask for a fix. Only the
first attempt is trained on (its tokens and its behaviour logprobs are the designer
sample); a repaired environment is admitted with ``origin = "repair"`` and the designer's
reward still comes from how the environment plays.

Prompt length: every prompt must leave room for its completion inside
``engine.max_model_len`` (vLLM rejects a longer request, which would end the step).
:func:`fit_design_prompt` drops the failure summaries first (whole, the last example's
first; a mutation shows only its parent's), then memory examples (last first), then shortens the document,
then turns a mutation whose parent alone is too long into a fresh design; a repair prompt
lists fewer validator reasons, or is skipped; a hint prompt that cannot fit is skipped.

The hint: taken from the completion (``HINT = "..."`` or a HINT section); when missing and
``separate_hint_call`` is on, a second call by the same policy at the hint temperature
writes one from the code. The hint call is not trained on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from spade_async.admission.validate import ValidationResult, validate_source
from spade_async.engine.base import Completion, Engine, GenerationRequest, Sampling
from spade_async.engine.loops import LOOP
from spade_async.learner.samples import TrainSample
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.sandbox.interface import EnvPool
from spade_async.selfplay.design.corpus import Document, cut
from spade_async.selfplay.design.parsing import clean_hint, parse_designer
from spade_async.selfplay.design.progress import N_STAGES, REASON_LOOP, admission_stage
from spade_async.selfplay.design.similarity import Nearest
from spade_async.selfplay.health import win_rate_band
from spade_async.selfplay.prompts import contract_text, parent_play, render, render_example, template_for
from spade_async.util.errors import UserError

DESIGNER_SYSTEM = "You write small, correct, self-contained Python programs."


@dataclass
class DesignJob:
    """What to ask the designer for."""

    skill: str
    doc: Document
    origin: str
    """`fresh` or `mutation`."""
    parent: EnvRecord | None = None
    examples: list[Example] = field(default_factory=list)
    change: str = ""
    """For mutations: the one concrete change asked for (see ``prompts.MUTATIONS``)."""
    domain: str = "games"
    """`games` or `tool_use`: which templates, contract and admission checks apply."""
    summaries: dict[str, str] = field(default_factory=dict)
    """Failure summaries (``selfplay.design.failures``) by environment id, for the examples and
    the parent (``memory.failure_summary``); one missing or empty is not shown."""


@dataclass
class Design:
    """The outcome of one design job."""

    job: DesignJob
    prompt_ids: list[int]
    completion: Completion
    """The first attempt (the one trained on)."""
    code: str | None = None
    hint: str | None = None
    admitted: bool = False
    reasons: list[str] = field(default_factory=list)
    validation: ValidationResult | None = None
    attempts: int = 1
    origin: str = "fresh"
    copied: bool = False
    """Its code copies memory or its prompt (``novelty``): scored invalid, not recorded."""
    first_stage: int = 0
    """The admission stage the first attempt (the one trained on) stopped on; ``N_STAGES``
    when it was admitted (``selfplay.design.progress``)."""
    nearest: Nearest | None = None
    """For an admitted design: the shipped environment file most like it (``similarity``)."""
    group: str | None = None
    """The GRPO group its designer reward is centred in when the generation samples several
    completions of each prompt (``selfplay.design_samples`` > 1): one id per prompt. None: its
    skill's designs (the paper)."""

    def to_sample(self, advantage: float, temperature: float, reward: float) -> TrainSample:
        ids = self.prompt_ids + self.completion.token_ids
        return TrainSample(
            role="designer",
            input_ids=ids,
            loss_mask=[0] * len(self.prompt_ids) + [1] * len(self.completion.token_ids),
            behaviour_logprobs=[0.0] * len(self.prompt_ids) + list(self.completion.logprobs),
            advantage=advantage,
            adapter_version=self.completion.adapter_version,
            temperature=temperature,
            reward=reward,
            group=self.group or self.job.skill,
        )


def format_examples(
    examples: list[Example], low: float, high: float, ramp: float, summaries: dict[str, str] | None = None
) -> str:
    """Memory examples as prompt text, each with a verdict a small model can act on, and its
    failure summary from ``summaries`` (by environment id) when it has one."""
    parts = []
    for i, ex in enumerate(examples, start=1):
        rec = ex.env
        band = win_rate_band(rec.win_rate, rec.valid, low, high, ramp) if rec.win_rate is not None else None
        summary = (summaries or {}).get(rec.id, "")
        parts.append(render_example(rec.code, i, win_rate=rec.win_rate, regret=rec.regret, band=band, summary=summary))
    return "\n\n".join(parts)


def _drop_a_summary(job: DesignJob) -> DesignJob | None:
    """``job`` with one failure summary fewer (the last shown example's first; a mutation shows
    only its parent's), or None when it shows none: a summary is dropped whole, never cut."""
    mutation = job.origin == "mutation" and job.parent is not None
    shown = [job.parent.id] if mutation and job.parent is not None else [ex.env.id for ex in job.examples]
    for env_id in reversed(shown):
        if job.summaries.get(env_id):
            return replace(job, summaries={k: v for k, v in job.summaries.items() if k != env_id})
    return None


class PromptTooLong(UserError, ValueError):
    """Even the shortest designer prompt leaves no room for the completion."""


MIN_DOC_CHARS = 200
"""Shortest document the fitter keeps before it gives up on the document entirely."""


def design_prompt(
    engine: Engine,
    job: DesignJob,
    *,
    low: float = 0.4,
    high: float = 0.6,
    ramp: float = 0.25,
    enable_thinking: bool | None = None,
) -> list[int]:
    """Token ids of the designer prompt for ``job``."""
    if job.origin == "mutation" and job.parent is not None:
        user = render(
            template_for(job.domain, "mutation"),
            parent_code=job.parent.code.strip(),
            parent_play=parent_play(job.summaries.get(job.parent.id, "")),
            skill=job.skill,
            document=job.doc.text,
            change=job.change,
        )
    else:
        user = render(
            template_for(job.domain, "fresh"),
            skill=job.skill,
            document=job.doc.text,
            examples=format_examples(job.examples, low, high, ramp, job.summaries),
            contract=contract_text(job.domain),
        )
    return engine.chat_prompt(
        [{"role": "system", "content": DESIGNER_SYSTEM}, {"role": "user", "content": user}],
        enable_thinking=enable_thinking,
    )


def fit_design_prompt(
    engine: Engine,
    job: DesignJob,
    max_prompt_tokens: int | None,
    *,
    low: float = 0.4,
    high: float = 0.6,
    ramp: float = 0.25,
    enable_thinking: bool | None = None,
) -> tuple[list[int], DesignJob]:
    """The designer prompt for ``job`` cut to ``max_prompt_tokens``, and the job as shown.

    Drops the failure summaries first (the last example's first; a mutation shows only its
    parent's), then memory examples (last first), then halves the document down to
    ``MIN_DOC_CHARS`` and then drops it, then replaces a mutation by a fresh design. Raises
    :class:`PromptTooLong` (with the fix) when even the bare fresh prompt does not fit.
    """

    def render_ids(j: DesignJob) -> list[int]:
        return design_prompt(engine, j, low=low, high=high, ramp=ramp, enable_thinking=enable_thinking)

    ids = render_ids(job)
    while max_prompt_tokens is not None and len(ids) > max_prompt_tokens:
        fewer = _drop_a_summary(job)
        if fewer is not None:
            job = fewer
        elif job.examples:
            job = replace(job, examples=job.examples[:-1])
        elif job.doc.text:
            text = job.doc.text
            shorter = cut(text, len(text) // 2) if len(text) // 2 >= MIN_DOC_CHARS else ""
            job = replace(job, doc=replace(job.doc, text=shorter))
        elif job.origin == "mutation":
            job = replace(job, origin="fresh", parent=None, change="")
        else:
            raise PromptTooLong(
                f"the designer prompt needs {len(ids)} tokens but only {max_prompt_tokens} are left after "
                "engine.designer.max_new_tokens; raise engine.max_model_len or lower engine.designer.max_new_tokens"
            )
        ids = render_ids(job)
    return ids, job


def prompt_budget(max_model_len: int | None, sampling: Sampling) -> int | None:
    """Most prompt tokens that leave room for ``sampling.max_new_tokens`` (None: no limit)."""
    return None if max_model_len is None else max_model_len - sampling.max_new_tokens


async def _one(engine: Engine, prompt_ids: list[int], sampling: Sampling, role: str) -> Completion:
    return (await engine.generate([GenerationRequest(prompt_ids, sampling, role=role)]))[0]


async def write_hint(
    engine: Engine, code: str, sampling: Sampling, max_model_len: int | None = None, domain: str = "games"
) -> str | None:
    """Ask the policy for a privileged hint for ``code`` (not trained on); None when the
    prompt cannot fit in ``max_model_len`` with the hint's completion."""
    prompt = engine.chat_prompt(
        [{"role": "user", "content": render(template_for(domain, "hint"), code=code.strip())}],
        enable_thinking=sampling.enable_thinking,
    )
    budget = prompt_budget(max_model_len, sampling)
    if budget is not None and len(prompt) > budget:
        return None
    completion = await _one(engine, prompt, sampling, "hint")
    return clean_hint(completion.text)


async def design_environment(
    engine: Engine,
    pool: EnvPool,
    job: DesignJob,
    *,
    designer_sampling: Sampling,
    hint_sampling: Sampling,
    max_turns: int,
    repair_turns: int,
    separate_hint_call: bool,
    band: tuple[float, float, float] = (0.4, 0.6, 0.25),
    max_model_len: int | None = None,
    rng: random.Random | None = None,
) -> Design:
    """Run one design job to a verdict; never raises for bad generated code. Every prompt
    is fitted to ``max_model_len`` (the engine's limit) with room for its completion.
    ``rng`` (the run's admission RNG) draws each check's seeds and probe actions."""
    budget = prompt_budget(max_model_len, designer_sampling)
    prompt_ids, job = fit_design_prompt(
        engine, job, budget, low=band[0], high=band[1], ramp=band[2], enable_thinking=designer_sampling.enable_thinking
    )
    completion = await _one(engine, prompt_ids, designer_sampling, "designer")
    design = Design(job=job, prompt_ids=prompt_ids, completion=completion, origin=job.origin)
    text = completion.text
    finish = completion.finish_reason
    for attempt in range(repair_turns + 1):
        parsed = parse_designer(text)
        if parsed.ok and parsed.code:
            design.code = parsed.code
            result = await validate_source(pool, parsed.code, max_turns=max_turns, domain=job.domain, rng=rng)
            design.hint = clean_hint(result.constants.get("HINT")) or parsed.hint  # the code's HINT wins
            design.validation = result
            design.reasons = list(result.reasons)
            stage = N_STAGES if result.admitted else admission_stage(None, result.checks)
            design.admitted = result.admitted
        else:
            design.code = parsed.code
            reason = parsed.reason or "no code block found"
            design.reasons = [REASON_LOOP if finish == LOOP and parsed.code else reason]
            stage = admission_stage(design.reasons[0], None)
        if attempt == 0:
            design.first_stage = stage
        if design.admitted or attempt == repair_turns:
            break
        repair_prompt = _repair_prompt(
            engine, (design.code or text).strip(), design.reasons, budget, designer_sampling.enable_thinking, job.domain
        )
        if repair_prompt is None:
            break
        repaired = await _one(engine, repair_prompt, designer_sampling, "designer")
        text, finish = repaired.text, repaired.finish_reason
        design.attempts += 1
        design.origin = "repair"
    if design.admitted and not design.hint and separate_hint_call and design.code:
        design.hint = await write_hint(engine, design.code, hint_sampling, max_model_len, job.domain)
    if design.admitted and not design.hint:
        design.admitted = False
        design.reasons.append('no hint: write HINT = "..." with a strategy that helps the player')
        if design.attempts == 1:
            design.first_stage = N_STAGES - 1  # a later check: the hint
    return design


MAX_REPAIR_REASONS = 12
"""Most validator reasons a repair prompt lists (distinct ones, in order)."""
MAX_REPAIR_REASON_CHARS = 600
"""Longest reason shown in a repair prompt (longer ones are cut)."""


def _repair_prompt(
    engine: Engine,
    code: str,
    reasons: list[str],
    budget: int | None,
    enable_thinking: bool | None,
    domain: str = "games",
) -> list[int] | None:
    """The repair prompt with as many validator reasons as fit in ``budget`` (None: cannot fit).

    The reasons are de-duplicated, cut and capped first, and the number shown is found by
    bisection: a bounded number of renders, whatever the environment made the validator report.
    """
    distinct = [
        r if len(r) <= MAX_REPAIR_REASON_CHARS else r[: MAX_REPAIR_REASON_CHARS - 3] + "..."
        for r in dict.fromkeys(reasons)
    ][:MAX_REPAIR_REASONS]

    def render_ids(n: int) -> list[int]:
        shown = distinct[:n] or ["the environment did not pass validation"]
        repair = render(template_for(domain, "repair"), code=code, reasons="\n".join(f"- {r}" for r in shown))
        return engine.chat_prompt([{"role": "user", "content": repair}], enable_thinking=enable_thinking)

    ids = render_ids(len(distinct))
    if budget is None or len(ids) <= budget:
        return ids
    low, high = 0, len(distinct) - 1  # the largest n in [low, high] that fits, if any
    best: list[int] | None = None
    while low <= high:
        mid = (low + high) // 2
        ids = render_ids(mid)
        if len(ids) <= budget:
            best, low = ids, mid + 1
        else:
            high = mid - 1
    return best
