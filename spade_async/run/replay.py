"""Warm-start pairs trained beside the run's GRPO updates (``warmstart.replay``, a switch).

Why: the designer and the agent share one LoRA adapter. In ``make run`` the agent's updates
(32 plays a step at lr 1e-3) move that adapter far more than the designer's few samples do,
and the writing the warm start taught wears away: the admitted fraction fell from the first
third of the run to the last in every run measured (docs/designs.md). InstructGPT's PPO-ptx
mixes its pretraining data into the RL updates for the same reason. Here, after each update
the learner takes one supervised step on ``warmstart.replay`` pairs rendered exactly as the
warm start renders them (training families only: held-out families stay unseen), at
``warmstart.lr``, inside the same version (the adapter published is the one both made).

The pairs of step ``s`` are a function of the warm start's seed and ``s`` (their RNG, and the
corpus documents that decorate their prompts, taken from the position ``s x replay``), so a
resumed run trains the same pairs at the same step as the uninterrupted run.
"""

from __future__ import annotations

import random

from spade_async.config import Config
from spade_async.engine.base import Engine
from spade_async.learner.samples import TrainSample
from spade_async.selfplay.design.corpus import Corpus
from spade_async.warmstart.library import load_library, split_library
from spade_async.warmstart.pairs import design_pair


class WarmStartReplay:
    """``pairs(step)``: the warm-start pairs trained after the update of ``step``."""

    def __init__(self, cfg: Config, engine: Engine) -> None:
        ws = cfg.warmstart
        self.ws = ws
        self.domain = cfg.selfplay.domain
        self.engine = engine
        self.train, _ = split_library(load_library(ws.library, self.domain), ws.held_out)
        self.corpus = Corpus.from_config(cfg.corpus, seed=ws.seed)
        self.max_seq_len = cfg.engine.max_model_len
        """The warm start's own bound: a design prompt with its whole file."""

    def pairs(self, step: int) -> list[TrainSample]:
        rng = random.Random(f"warm-start replay {self.ws.seed} {step}")
        first = step * self.ws.replay  # the documents too are a function of the step
        state = self.corpus.state()
        self.corpus.load_state({**state, "epoch": first // len(self.corpus), "position": first % len(self.corpus)})
        return [
            design_pair(
                self.engine,
                rng.choice(self.train),
                self.train,
                self.corpus,
                rng,
                mutation=rng.random() < self.ws.mutation_fraction,
                domain=self.domain,
                mutation_targets=self.ws.mutation_targets,
            )
            for _ in range(self.ws.replay)
        ]
