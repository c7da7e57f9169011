"""Environment generations: retire the live set (scoring its designs) and build the next one.

Why its own module: this is the designer's half of the producer. Every k steps it scores
the retiring environments' designs (delayed rewards), asks the policy for new designs
(fresh or mutations of memory environments, grounded on corpus documents), admits them
through the sandbox validator, records everything, and tops the live set up from memory
when too few designs pass. The orchestrator only decides *when* to regenerate.

Copies (``novelty``): a design whose code is the same (up to comments and layout) as an
environment already in the run's memory, or as the parent or an example shown in its prompt,
is scored as a failed design (the invalid penalty: the designer is rewarded for new
environments) and is neither recorded (the original's row is left as it was) nor played.

Duplicates: when several admitted designs of one generation have the same code, one
copy becomes the live environment and the others are scored as failed designs (the invalid
penalty: an exact copy adds nothing). Which copy is kept does not depend on the order in
which the concurrent design calls finish: a design admitted on its first attempt beats a
repaired one, and among equals the earlier design job (job order is drawn from the run's
seeded RNG) wins.
"""

from __future__ import annotations

import hashlib
import math
import random
import secrets
from collections.abc import Callable

import anyio

from spade_async.admission.validate import ADMISSION_TURN_LIMIT
from spade_async.config import Config
from spade_async.engine.base import Engine, Sampling
from spade_async.envs.seeds import SeedEnv
from spade_async.hardware.cpu_share import CPU_SHARE
from spade_async.learner.samples import TrainSample
from spade_async.memory.embed import TextEmbedder
from spade_async.memory.records import EnvRecord, env_id_for
from spade_async.memory.retrieval import pick_parent, prune_memory, select_examples
from spade_async.memory.store import Store
from spade_async.sandbox.interface import EnvPool
from spade_async.selfplay.curriculum import Curriculum, LiveEnv
from spade_async.selfplay.design.corpus import Corpus, Document
from spade_async.selfplay.design.designer import Design, DesignJob, design_environment
from spade_async.selfplay.design.failures import failure_summary
from spade_async.selfplay.design.library_pool import library_examples, library_parent, library_records
from spade_async.selfplay.design.novelty import KnownCodes, code_key, copy_reason
from spade_async.selfplay.design.origins import mutation_flags
from spade_async.selfplay.design.similarity import near_copy_reason, nearest, shipped_files
from spade_async.selfplay.design.status import GPU_DOC, is_small_model
from spade_async.selfplay.health import vendi_score
from spade_async.selfplay.prompts import pick_mutation
from spade_async.util.textsafe import terminal_safe

MEMORY_SCAN = 8
"""How many times ``memory.size`` newest environments ``prune_memory`` chooses from."""


def duplicate_keepers(designs: list[Design]) -> dict[str, int]:
    """For each admitted code, the index of the copy that is kept (see the module docstring).

    A first-attempt design beats a repaired one; among equals the lowest job index wins.
    """
    keepers: dict[str, int] = {}
    ranked = sorted(range(len(designs)), key=lambda i: (designs[i].attempts, i))
    for i in ranked:
        code = designs[i].code
        if designs[i].admitted and code:
            keepers.setdefault(code_key(code), i)
    return keepers


def reject_copies(designs: list[Design], known: set[str], library: frozenset[str] = frozenset()) -> None:
    """Mark every design that copies its prompt's code or ``known`` (memory) as a copy, not admitted.

    Rejected designs are checked too: their row would otherwise overwrite the original's.
    """
    for d in designs:
        if not d.code:
            continue
        shown = [ex.env.code for ex in d.job.examples] + ([d.job.parent.code] if d.job.parent else [])
        why = copy_reason(d.code, shown=shown, known=known, library=library)
        if why:
            d.admitted = False
            d.reasons.append(why)
            d.copied = True


def reject_near_copies(designs: list[Design], limit: float) -> None:
    """Mark every admitted design more alike than ``limit`` to its nearest shipped file as not
    admitted (``selfplay.max_library_similarity``); it keeps its ``nearest`` for the console."""
    for d in designs:
        why = near_copy_reason(d.nearest, limit) if d.admitted else None
        if why:
            d.admitted = False
            d.reasons.append(why)


def design_request_seed(run_seed: int, step: int, slot: int) -> int:
    """The sampling seed of a generation's ``slot``-th design request (and of its hint): a
    design's text depends on its prompt, the weights and this, not on what else the engine
    was batching at the time, so runs that differ in a setting are compared design by design.

    >>> design_request_seed(0, 2, 1) == design_request_seed(0, 2, 1) != design_request_seed(0, 2, 0)
    True
    """
    digest = hashlib.sha256(f"design request {run_seed} {step} {slot}".encode()).digest()
    return int.from_bytes(digest[:4], "little")


class EnvGenerator:
    """Builds each generation of live environments into ``curriculum.live``."""

    def __init__(
        self,
        cfg: Config,
        *,
        engine: Engine,
        pool: EnvPool,
        store: Store,
        corpus: Corpus,
        curriculum: Curriculum,
        seeds: list[SeedEnv],
        embedder: TextEmbedder | None = None,
        report: Callable[[str], None] | None = None,
        library_keys: frozenset[str] = frozenset(),
        on_retire: Callable[[int, list[LiveEnv]], None] | None = None,
    ) -> None:
        self.cfg = cfg
        self.on_retire = on_retire
        """Told, at each retirement, the environments that retired (not expelled, not pinned):
        the archive (spade_async.eval.archive) picks its fixed sample from them."""
        self.library_keys = library_keys
        """``code_key`` of every file the warm start trained on: re-emitting one is a copy."""
        self.report = report
        """Where each design's verdict is printed (the console); None prints nothing."""
        self._told_small = False
        self.sp = cfg.selfplay
        self.engine = engine
        self.pool = pool
        self.store = store
        self.corpus = corpus
        self.curriculum = curriculum
        self.seeds = seeds
        self.embedder = embedder
        self.admission_rng = random.Random(secrets.randbits(64))
        """Draws every admission check's seeds and probe actions (one per run, never from the run
        seed: validation must not be predictable, see spade_async.admission.validate)."""
        self.known = KnownCodes()
        """Keys of every environment in the store (the copy rule's memory), refreshed each generation."""

    async def write_stats(self, env: LiveEnv, step: int, status: str, designer_reward: float | None) -> None:
        """An environment's running stats into the store (the TUI and retrieval read them)."""
        await self.store.update_environment_stats(
            env.env_id,
            step=step,
            win_rate=env.win_rate(),
            hint_win_rate=env.hint_win_rate(),
            regret=env.regret(self.sp.regret_scale),
            designer_reward=designer_reward,
            n_plays=env.n_plays(),
            status=status,
        )

    async def regenerate(self, step: int) -> tuple[dict[str, float], list[TrainSample]]:
        """Retire the old generation (scoring its designs) and fill a new live set.

        Returns the generation's metrics and the retired designs' samples for the learner.
        """
        designer_samples = await self.retire_live(step) if self.curriculum.has_generation() else []
        if self.sp.mode == "fixed":
            picks = self.curriculum.rng.sample(self.seeds, min(len(self.seeds), self.sp.envs_per_step))
            for seed_env in picks:
                if (
                    env_id_for(seed_env.source) not in self.curriculum.pinned | self.curriculum.retired_by_hand
                ):  # steering
                    self.curriculum.live.append(self._live_from_seed(seed_env, step))
            return {"valid_fraction": math.nan, **await self._diversity()}, designer_samples
        designs = await self._run_designs(step)
        self.known.refresh(await self.store.environment_codes(self.sp.domain))
        reject_copies(designs, self.known.keys(), self.library_keys)
        keepers = duplicate_keepers(designs)
        await self._measure_similarity(designs)
        reject_near_copies(designs, self.sp.max_library_similarity)
        carried = {e.env_id for e in self.curriculum.live}  # pinned environments (selfplay.steering)
        for i, d in enumerate(designs):
            if d.admitted and d.code and (keepers[code_key(d.code)] != i or env_id_for(d.code) in carried):
                d.admitted = False  # an exact copy adds nothing; it is scored as a failed design
                d.reasons.append("duplicate of an environment already live this generation")
            elif not d.copied:  # a copy's row is the original's: left as it was
                await self._record_design(d, step)
            if d.admitted and d.code:
                self.curriculum.live.append(
                    LiveEnv(env_id_for(d.code), d.code, d.hint, d.job.skill, d.origin, step, design=d)
                )
                near = f", {d.nearest.describe()}" if d.nearest else ""
                await self.store.record_event(
                    step, "admitted", f"env {env_id_for(d.code)[:12]} {d.job.skill} ({d.origin}){near}"
                )
            else:
                self.curriculum.rejected.append(d)
                await self.store.record_event(
                    step, "rejected", f"{d.job.skill} ({d.origin}): {'; '.join(d.reasons)[:500]}"
                )
        filled = await self._fill_from_memory(step)
        admitted = sum(1 for d in designs if d.admitted)
        if self.report is not None:
            for line in design_lines(step, designs, filled, seeds_only=self.sp.fill_from == "seeds"):
                self.report(line)
            if designs and not admitted and is_small_model(self.cfg.model.name) and not self._told_small:
                self._told_small = True
                self.report(
                    "  (a model this small rarely writes a runnable environment: the agent learns on the seed "
                    f"games meanwhile; the designer half needs a bigger model, see {GPU_DOC})"
                )
        metrics = {"valid_fraction": admitted / len(designs) if designs else math.nan, **await self._diversity()}
        return metrics, designer_samples

    async def _measure_similarity(self, designs: list[Design]) -> None:
        """Each admitted design's nearest shipped environment file (``similarity``), in a worker thread."""
        files = shipped_files(self.sp.domain)

        def measure() -> None:
            for d in designs:
                if d.admitted and d.code:
                    d.nearest = nearest(d.code, files)

        await anyio.to_thread.run_sync(CPU_SHARE.staged(measure))

    async def retire_live(self, step: int) -> list[TrainSample]:
        """Retire the live generation: score its designs, store what each earned; its designer samples."""
        retired = self.curriculum.retire()
        gone: list[LiveEnv] = []
        for (
            env
        ) in retired.envs:  # expelled by the play audit: never back from memory (pinned or not); pinned: carried on
            status = "invalid" if env.expelled else "active" if env.env_id in self.curriculum.pinned else "retired"
            await self.write_stats(env, step, status, retired.designer_rewards.get(env.env_id))
            if status == "retired":
                gone.append(env)
        if self.on_retire is not None:
            self.on_retire(step, gone)
        for scored in retired.scored:
            if scored.why_invalid:
                await self.store.record_event(
                    step, "info", f"env {(scored.env_id or '')[:12]} scored as an invalid design: {scored.why_invalid}"
                )
        return retired.designer_samples

    async def score_last_generation(self, step: int) -> None:
        """At the end of a finished run: score the last generation's designs for the record (the
        store, the TUI, the memory of a run extended later). Their samples are not trained on:
        no learner step follows. A stopped run keeps its live set for the resume instead."""
        if not self.curriculum.has_generation() or self.sp.mode == "fixed":
            return
        samples = await self.retire_live(step)
        await self.store.record_event(
            step, "info", f"scored the last generation's {len(samples)} designs at the end of the run (not trained on)"
        )

    async def _memory(self, *, played_only: bool) -> list[EnvRecord]:
        """The designer's memory: at most ``memory.size`` environments, every skill's newest kept
        (``prune_memory``: plain recency would let the last few skills push the others out)."""
        recent = await self.store.memory_candidates(
            self.sp.domain, MEMORY_SCAN * self.cfg.memory.size, played_only=played_only
        )
        return prune_memory(recent, self.cfg.memory.size)

    async def _diversity(self) -> dict[str, float]:
        """Vendi score of the live environments' code (1 = all alike, n = all different)."""
        if self.embedder is None or not self.curriculum.live:
            return {}
        codes = [env.code for env in self.curriculum.live]
        vectors = await anyio.to_thread.run_sync(CPU_SHARE.staged(self.embedder.embed), codes)
        return {"env_diversity": vendi_score(vectors)}

    async def _run_designs(self, step: int) -> list[Design]:
        skills = self.curriculum.next_skills()
        candidates = await self._memory(played_only=True)
        parents = await self._memory(played_only=False)
        jobs: list[DesignJob] = []
        wanted = self.curriculum.designs_wanted(self.sp.envs_per_step)  # steering may lower it
        per_prompt = self.sp.design_samples
        prompts = math.ceil(wanted / per_prompt)
        # The prompts' own stream (curriculum module docstring), and one RNG per prompt drawn from
        # it: how much a prompt's draws take depends on the memory it draws from (the run's own
        # designs join it), and that must not move the next prompt's draws.
        mutate = mutation_flags(prompts, self.sp.mutation_fraction, self.curriculum.design_rng)
        for i in range(prompts):
            rng = random.Random(self.curriculum.design_rng.getrandbits(64))
            skill = skills[i % len(skills)]
            doc = self.corpus.next()
            if self.cfg.memory.design_pool == "library":
                jobs.append(self._library_job(skill, doc, parents, mutate=mutate[i], rng=rng))
                continue
            parent = None
            if mutate[i]:
                parent = pick_parent(
                    candidates, skill=skill, low=self.sp.plateau_low, high=self.sp.plateau_high, rng=rng
                )
                if parent is None:  # nothing in band yet: mutate any working environment of the skill
                    pool = [c for c in parents if c.skill == skill] or parents
                    parent = rng.choice(pool) if pool else None
            examples = select_examples(
                candidates,
                self.cfg.memory.examples_shown,
                skill=skill,
                low=self.sp.plateau_low,
                high=self.sp.plateau_high,
                rng=rng,
            )
            change = pick_mutation(rng, self.sp.domain) if parent else ""
            jobs.append(
                DesignJob(
                    skill,
                    doc,
                    "mutation" if parent else "fresh",
                    parent=parent,
                    examples=examples,
                    change=change,
                    domain=self.sp.domain,
                )
            )
        if self.cfg.memory.failure_summary:
            await self._attach_summaries(jobs)
        # Each prompt sampled ``per_prompt`` times: its completions are one GRPO group (1: the paper).
        runs = [(i, job) for i, job in enumerate(jobs) for _ in range(per_prompt)]
        results: list[Design | None] = [None] * len(runs)

        async def one(slot: int, prompt: int, job: DesignJob) -> None:
            seed = design_request_seed(self.cfg.run.seed, step, slot) if self.sp.seeded_sampling else None
            design = await design_environment(
                self.engine,
                self.pool,
                job,
                designer_sampling=Sampling.from_config(self.cfg.engine.designer, seed=seed),
                hint_sampling=Sampling.from_config(self.cfg.engine.hint, seed=seed),
                # The runner truncates play at selfplay.max_turns; admission only asks that an
                # environment ends its own episodes within a generous bound.
                max_turns=max(self.sp.max_turns, ADMISSION_TURN_LIMIT),
                repair_turns=self.sp.repair_turns,
                separate_hint_call=self.sp.separate_hint_call,
                band=(self.sp.plateau_low, self.sp.plateau_high, self.sp.plateau_ramp),
                max_model_len=self.engine.max_model_len,  # the engine's own limit
                rng=self.admission_rng,
            )
            if per_prompt > 1:
                design.group = f"step {step} prompt {prompt}"
            results[slot] = design

        async with anyio.create_task_group() as tg:
            for slot, (prompt, job) in enumerate(runs):
                tg.start_soon(one, slot, prompt, job)
        return [r for r in results if r is not None]

    def _library_job(
        self, skill: str, doc: Document, memory: list[EnvRecord], *, mutate: bool, rng: random.Random
    ) -> DesignJob:
        """A design job whose example or parent is a library file or a played design of the run
        (``memory.design_pool = "library"``, ``selfplay.design.library_pool``); a mutation
        when ``mutate`` and there is a parent to mutate; ``rng`` draws the parent or examples."""
        library = library_records(self.sp.domain)
        played = [e for e in memory if e.win_rate is not None]  # the run's designs once played
        if mutate:
            parent = library_parent(skill, library, played, rng)
            if parent is not None:
                change = pick_mutation(rng, self.sp.domain)
                return DesignJob(skill, doc, "mutation", parent=parent, change=change, domain=self.sp.domain)
        examples = library_examples(skill, self.cfg.memory.examples_shown, library, played, rng)
        return DesignJob(skill, doc, "fresh", examples=examples, domain=self.sp.domain)

    async def _attach_summaries(self, jobs: list[DesignJob]) -> None:
        """Give each job the failure summary of every environment its prompt shows (examples, parent)."""
        shown = {ex.env.id for job in jobs for ex in job.examples} | {job.parent.id for job in jobs if job.parent}
        stats = await self.store.play_stats(sorted(shown))
        text = {env_id: failure_summary(s, self.sp.max_turns) for env_id, s in stats.items()}
        for job in jobs:
            ids = [ex.env.id for ex in job.examples] + ([job.parent.id] if job.parent else [])
            job.summaries = {i: text[i] for i in ids if text.get(i)}

    async def _record_design(self, d: Design, step: int) -> None:
        code = d.code or d.completion.text
        await self.store.record_environment(
            EnvRecord(
                code=code,
                domain=self.sp.domain,
                skill=d.job.skill,
                origin=d.origin,
                created_step=step,
                hint=d.hint,
                doc_title=d.job.doc.title,
                doc_text=d.job.doc.text,
                valid=d.admitted,
                reasons=list(d.reasons),
                status="active" if d.admitted else "invalid",
                parent_id=d.job.parent.id if d.job.parent else None,
                updated_step=step,
            )
        )

    def _live_from_seed(self, seed_env: SeedEnv, step: int) -> LiveEnv:
        return LiveEnv(env_id_for(seed_env.source), seed_env.source, seed_env.hint, seed_env.skill, "seed", step)

    async def _fill_from_memory(self, step: int) -> int:
        """Top up the live set with valid memory environments when too few designs passed
        (with ``selfplay.fill_from = "seeds"`` only the seed environments, the least played in
        this run first); returns how many were added."""
        missing = self.sp.envs_per_step - len(self.curriculum.live)
        if missing <= 0:
            return 0
        live_ids = {e.env_id for e in self.curriculum.live}
        memory = await self._memory(played_only=False)
        if self.sp.fill_from == "seeds":
            memory = [c for c in memory if c.origin == "seed"]
        pool = [c for c in memory if c.id not in live_ids and c.hint and c.id not in self.curriculum.retired_by_hand]
        if self.sp.fill_from == "seeds":  # the least played first: every seed game takes its turn
            plays = await self.store.plain_play_counts([c.id for c in pool])
            self.curriculum.rng.shuffle(pool)  # ties in a random order
            picked = sorted(pool, key=lambda c: plays[c.id])[:missing]
        else:
            picked = self.curriculum.rng.sample(pool, min(missing, len(pool)))
        for rec in picked:
            self.curriculum.live.append(LiveEnv(rec.id, rec.code, rec.hint, rec.skill or "unknown", rec.origin, step))
        if missing > len(pool):
            await self.store.record_event(
                step, "info", f"only {len(self.curriculum.live)} environments live (wanted {self.sp.envs_per_step})"
            )
        return len(picked)


def design_lines(
    step: int, designs: list[Design], filled: int, *, seeds_only: bool = False, width: int = 160
) -> list[str]:
    """Console lines for one generation: each design's verdict (with its first rejection
    reason), then how many admitted and how many environments memory supplied (only seed games
    with ``seeds_only``: ``selfplay.fill_from``)."""
    lines = []
    for i, d in enumerate(designs, 1):
        verdict = "admitted" if d.admitted else "rejected: " + (d.reasons[0] if d.reasons else "no reason recorded")
        if d.admitted and d.nearest is not None:
            verdict += f", {d.nearest.describe()}"
        line = terminal_safe(f"  design {i}/{len(designs)} {d.job.skill} ({d.origin}): {verdict}").replace("\n", " ")
        lines.append(line if len(line) <= width else line[: width - 3] + "...")
    admitted = sum(1 for d in designs if d.admitted)
    summary = f"step {step + 1:>4} | designer: {admitted}/{len(designs)} designs admitted"
    if filled:
        source = "the seed games" if seeds_only else "memory (seed games or past designs)"
        summary += f"; {filled} environment(s) from {source} fill the live pool"
    return [summary, *lines]
