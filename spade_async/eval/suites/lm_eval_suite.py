"""``lm_eval:TASKS``: lm-evaluation-harness tasks, base model vs adapter, paired per item.

Why lm-eval: the paper's yardstick (competition math, GPQA-Diamond, MMLU-Pro, ...) is what
the field runs through lm-evaluation-harness, whose tasks hold the prompts, the few-shot
examples, the answer filters and the scorers. Nothing here formats a prompt or judges an
answer: each task is lm-eval's own, run by lm-eval's own ``evaluate``.

How a model is scored: lm-eval's ``HFLM`` wraps the torch model the eval engine already holds
(``engine.model``, :class:`TorchEngine`): the base model first, then the same weights with the
checkpoint's adapter applied by ``engine.load_adapter``, exactly as the trainer serves it. So
nothing is loaded twice and "the adapter" is the adapter the run trained. Both models get the
same items (an item is one document of one task, ``task#doc_id``; lm-eval's ``samples`` asks
for exactly those), the same few-shot examples (``fewshot_seed``), the same generation
settings (the task's ``generation_kwargs``, greedy unless the task says otherwise) and the
same seeds for python, numpy and torch before each model, as ``simple_evaluate`` sets them.

Per item: ``score`` is the value of the task's first metric on that document (lm-eval's
headline, e.g. ``exact_match`` or ``acc``), under the task's first filter; ``solved`` is
``score >= 1``. A task whose headline is not a mean of per-item values (perplexity, corpus
BLEU) is refused when the suite is built: it has no per-item difference to pair. The runner
then pairs base and adapter item by item and bootstraps the 95% interval (``eval.stats``),
and the database, the report, the tracking sinks and the base cache take the rows as they
take every suite's.

The model runs through transformers (``engine.backend = "hf"``), on the CPU or a GPU; an
engine that holds no torch model (vLLM) is refused with a line saying so (docs/lm_eval.md).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from typing import Any, Protocol, runtime_checkable

import anyio

from spade_async.eval.suites.lm_eval_tasks import (
    load_tasks,
    primary_metric,
    quiet_lm_eval,
    require_lm_eval,
    task_fingerprint,
)
from spade_async.eval.suites.registry import EvalContext, EvalItem, ItemScore, SuiteError, register_suite
from spade_async.util.quiet import verbose_requested

SEED = 1234
"""lm-eval's own default seed for numpy, torch and the few-shot sampler (python's is 0)."""


@runtime_checkable
class TorchEngine(Protocol):
    """An engine that holds its transformers model and tokenizer (the HF engine does)."""

    model: Any
    tokenizer: Any


class LmEvalSuite:
    """Every document of every task (or the first ``limit`` of each), scored by lm-eval."""

    needs_sandbox = False

    def __init__(self, spec: str, *, limit: int | None = None, chat_template: bool = True) -> None:
        if limit is not None and limit < 1:
            raise SuiteError(f"suite lm_eval:{spec}: the limit must be at least 1 (got {limit})")
        self.version = require_lm_eval(spec)
        loaded = load_tasks(spec)
        self.tasks = loaded.tasks
        self.name = "lm_eval:" + spec if "/" not in spec else "lm_eval:" + ",".join(loaded.names)
        self.limit = limit
        self.chat_template = chat_template
        self.metric = {name: primary_metric(name, task) for name, task in self.tasks.items()}
        shared = set(self.metric.values())
        self.metrics: tuple[str, str] = (shared.pop() if len(shared) == 1 else "score", "solved")
        self.doc_ids = {
            name: list(range(len(task.eval_docs) if limit is None else min(limit, len(task.eval_docs))))
            for name, task in self.tasks.items()
        }

    def items(self) -> list[EvalItem]:
        return [EvalItem(name, f"{name}#{i}", (name, i)) for name, ids in self.doc_ids.items() for i in ids]

    def cache_fingerprint(self) -> dict[str, Any]:
        """What a base score depends on beyond the item keys (see ``eval.base_cache``)."""
        return {
            "lm_eval": self.version,
            "chat_template": self.chat_template,
            "tasks": {name: task_fingerprint(task, self.doc_ids[name]) for name, task in self.tasks.items()},
        }

    async def score(self, ctx: EvalContext, item: EvalItem) -> ItemScore:
        """One item on its own (the runner scores the whole list at once: :meth:`score_items`)."""
        return (await self.score_items(ctx, [item]))[0]

    async def score_items(self, ctx: EvalContext, items: list[EvalItem]) -> list[ItemScore]:
        """Every item in one lm-eval run (lm-eval batches and sorts requests itself)."""
        engine = ctx.engine
        if not isinstance(engine, TorchEngine):
            raise SuiteError(
                f'suite {self.name} needs the transformers engine\'s model (engine.backend = "hf"); '
                f"this engine ({type(engine).__name__}) holds none"
            )
        wanted: dict[str, list[int]] = defaultdict(list)
        for item in items:
            task, doc_id = item.payload
            wanted[task].append(doc_id)
        # Sorted: lm-eval 0.4.13 runs a task's ``samples`` in data-set order but labels the results
        # with the list's order (``indices[position]``), so an unsorted list mislabels documents.
        ordered = {task: sorted(set(ids)) for task, ids in wanted.items()}
        max_length = ctx.engine.max_model_len
        samples = await anyio.to_thread.run_sync(
            lambda: self._run(engine, ordered, max_length, ctx.cfg.engine.batch_size)
        )
        return [self._item_score(samples, item) for item in items]

    def _run(
        self, engine: TorchEngine, wanted: dict[str, list[int]], max_length: int | None, batch_size: int
    ) -> dict[str, list[dict[str, Any]]]:
        """lm-eval's ``evaluate`` on the documents ``wanted`` with the model the engine holds now."""
        import numpy as np
        import torch
        from lm_eval.evaluator import evaluate

        random.seed(0)  # simple_evaluate's seeds, set before each model: both see the same draws
        np.random.seed(SEED)
        torch.manual_seed(SEED)
        tasks = {name: self.tasks[name] for name in wanted}
        for task in tasks.values():
            if task.get_config("num_fewshot") is None:
                task.set_config(key="num_fewshot", value=0)
            task.set_fewshot_seed(seed=SEED)
        chat = self.chat_template and getattr(engine.tokenizer, "chat_template", None) is not None
        with quiet_lm_eval(), torch.inference_mode():
            lm = hflm_class()(
                pretrained=engine.model, tokenizer=engine.tokenizer, batch_size=batch_size, max_length=max_length
            )
            result = evaluate(
                lm=lm,
                task_dict={"tasks": tasks, "groups": {}, "group_map": {}},
                samples=wanted,
                bootstrap_iters=0,  # the paired interval is ours; lm-eval's stderr is not used
                log_samples=True,
                apply_chat_template=chat,
            )
        return dict((result or {}).get("samples") or {})

    def _item_score(self, samples: dict[str, list[dict[str, Any]]], item: EvalItem) -> ItemScore:
        task, doc_id = item.payload
        records = [r for r in samples.get(task, []) if r.get("doc_id") == doc_id]
        if not records:
            return ItemScore(math.nan, False, f"lm-eval returned no sample for {item.key}")
        record = records[0]  # the first filter's (lm-eval logs one record per filter, in filter order)
        metric = self.metric[task]
        try:
            value = float(record[metric])
        except (KeyError, TypeError, ValueError) as exc:
            return ItemScore(math.nan, False, f"lm-eval sample of {item.key} has no number for {metric}: {exc!r}")
        detail = {
            "doc_id": doc_id,
            "filter": record.get("filter"),
            "metric": metric,
            "response": str(record.get("filtered_resps"))[:200],
            "target": str(record.get("target"))[:100],
            "doc_hash": record.get("doc_hash"),
        }
        return ItemScore(value, value >= 1.0, None, detail)


def hflm_class() -> type[Any]:
    """lm-eval's ``HFLM``, its request progress bars off unless ``--verbose`` (lm-eval's
    ``evaluate`` passes no switch for them; each request method takes ``disable_tqdm``)."""
    from lm_eval.models.huggingface import HFLM

    if verbose_requested():
        return HFLM

    class QuietHFLM(HFLM):
        def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
            return super().loglikelihood(requests, disable_tqdm=True)

        def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
            return super().loglikelihood_rolling(requests, disable_tqdm=True)

        def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
            return super().generate_until(requests, disable_tqdm=True)

    return QuietHFLM


@register_suite("lm_eval")
def lm_eval_suite(arg: str | None, options: dict[str, Any]) -> LmEvalSuite:
    """``lm_eval:TASK[,TASK]``, ``lm_eval:PATH`` (a task YAML or a folder of them), ``lm_eval:paper``."""
    if not arg:
        raise SuiteError("suite lm_eval needs tasks: --suite lm_eval:TASK[,TASK] (or lm_eval:paper, lm_eval:PATH)")
    limit = options.get("lm_eval_limit")
    return LmEvalSuite(arg, limit=None if limit is None else int(limit))
