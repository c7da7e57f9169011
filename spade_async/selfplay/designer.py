"""The Environment Designer: prompt, generate, parse, validate in the sandbox, hint, repair.

Why the aids: a 135M model rarely writes a valid 40-line environment from scratch. Three
honest aids raise the valid fraction without faking it: (1) *mutation* prompts that show a
working memory environment and ask for a variant (small models copy well), (2) the
contract's pre-bound modules and ``GameEnv`` base, so a forgotten import is not fatal, and
(3) optional *repair* turns that show the validator's reasons and ask for a fix. Only the
first attempt is trained on (its tokens and its behaviour logprobs are the designer
sample); a repaired environment is admitted with ``origin = "repair"`` and the designer's
reward still comes from how the environment plays.

The hint: taken from the completion (``HINT = "..."`` or a HINT section); when missing and
``separate_hint_call`` is on, a second call by the same policy at the hint temperature
writes one from the code. The hint call is not trained on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spade_async.corpus import Document
from spade_async.engine.base import Completion, Engine, GenerationRequest, Sampling
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.metrics import win_rate_band
from spade_async.samples import TrainSample
from spade_async.sandbox.pool import SandboxPool
from spade_async.sandbox.validate import ValidationResult, validate_source
from spade_async.selfplay.parsing import clean_hint, parse_designer
from spade_async.selfplay.prompts import contract_text, render, render_example, template_for

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
            group=self.job.skill,
        )


def format_examples(examples: list[Example], low: float, high: float, ramp: float) -> str:
    """Memory examples as prompt text, each with a verdict a small model can act on."""
    parts = []
    for i, ex in enumerate(examples, start=1):
        rec = ex.env
        band = win_rate_band(rec.win_rate, rec.valid, low, high, ramp) if rec.win_rate is not None else None
        parts.append(render_example(rec.code, i, win_rate=rec.win_rate, regret=rec.regret, band=band))
    return "\n\n".join(parts)


def design_prompt(engine: Engine, job: DesignJob, *, low: float = 0.4, high: float = 0.6, ramp: float = 0.25) -> list[int]:
    """Token ids of the designer prompt for ``job``."""
    if job.origin == "mutation" and job.parent is not None:
        user = render(template_for(job.domain, "mutation"), parent_code=job.parent.code.strip(), skill=job.skill,
                      document=job.doc.text, change=job.change)
    else:
        user = render(
            template_for(job.domain, "fresh"),
            skill=job.skill,
            document=job.doc.text,
            examples=format_examples(job.examples, low, high, ramp),
            contract=contract_text(job.domain),
        )
    return engine.chat_prompt([{"role": "system", "content": DESIGNER_SYSTEM}, {"role": "user", "content": user}])


async def _one(engine: Engine, prompt_ids: list[int], sampling: Sampling, role: str) -> Completion:
    return (await engine.generate([GenerationRequest(prompt_ids, sampling, role=role)]))[0]


async def write_hint(engine: Engine, code: str, sampling: Sampling, domain: str = "games") -> str | None:
    """Ask the policy for a privileged hint for ``code`` (not trained on)."""
    prompt = engine.chat_prompt([{"role": "user", "content": render(template_for(domain, "hint"), code=code.strip())}])
    completion = await _one(engine, prompt, sampling, "hint")
    return clean_hint(completion.text)


async def design_environment(
    engine: Engine,
    pool: SandboxPool,
    job: DesignJob,
    *,
    designer_sampling: Sampling,
    hint_sampling: Sampling,
    max_turns: int,
    repair_turns: int,
    separate_hint_call: bool,
    band: tuple[float, float, float] = (0.4, 0.6, 0.25),
) -> Design:
    """Run one design job to a verdict; never raises for bad generated code."""
    prompt_ids = design_prompt(engine, job, low=band[0], high=band[1], ramp=band[2])
    completion = await _one(engine, prompt_ids, designer_sampling, "designer")
    design = Design(job=job, prompt_ids=prompt_ids, completion=completion, origin=job.origin)
    text = completion.text
    for attempt in range(repair_turns + 1):
        parsed = parse_designer(text)
        if parsed.ok and parsed.code:
            design.code = parsed.code
            design.hint = parsed.hint
            result = await validate_source(pool, parsed.code, max_turns=max_turns, domain=job.domain)
            design.validation = result
            design.reasons = list(result.reasons)
            if result.admitted:
                design.admitted = True
                break
        else:
            design.code = parsed.code
            design.reasons = [parsed.reason or "no code block found"]
        if attempt == repair_turns:
            break
        repair = render(template_for(job.domain, "repair"), code=(design.code or text).strip(), reasons="\n".join(f"- {r}" for r in design.reasons))
        repair_prompt = engine.chat_prompt([{"role": "user", "content": repair}])
        text = (await _one(engine, repair_prompt, designer_sampling, "designer")).text
        design.attempts += 1
        design.origin = "repair"
    if design.admitted and not design.hint and separate_hint_call and design.code:
        design.hint = await write_hint(engine, design.code, hint_sampling, job.domain)
    if design.admitted and not design.hint:
        design.admitted = False
        design.reasons.append("no hint: write HINT = \"...\" with a strategy that helps the player")
    return design
