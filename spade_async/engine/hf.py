"""transformers generation backend: the CPU default and the reference for tests.

Why a hand-written sampling loop instead of ``model.generate``: GRPO needs, for every
sampled token, its logprob under the *tempered* sampling distribution, and per-sequence
stop handling that never records a pad token as sampled. A 60-line loop over the KV cache
gives both exactly, with left padding and, for a request that names a seed, its own
``torch.Generator`` (its tokens do not depend on what it was batched with); requests
without a seed share the engine's generator. It stops at the same token ids as the vLLM
engine (tokenizer EOS plus the model's ``generation_config`` EOS ids).

Why rows prefill on their own on a CPU (``ragged_prefill``, `engine.cpu_ragged_prefill`): a
batch of fresh prompts of different lengths, prefilled together, is left-padded to the
longest, so every padding token is computed and the attention kernel, handed an explicit
mask, cannot skip the causal half. When padding would be more than :data:`RAGGED_PADDING`
of the batch's new tokens, each row with more than ``MAX_QUERY_TOKENS`` new tokens instead
runs all but its last token alone (no padding, causal); the batch then feeds one token per
row over those caches, exactly as it does after a prefix-cache hit. Measured (SmolLM2-135M,
bf16, adapter loaded, 2 cores): four design prompts of 496-992 tokens, prefill 4.9 -> 2.8-3.2
s; 16 rows of 150-450 tokens with 16 new, 8.0-8.9 -> 5.9-7.0 s a batch; 16 rows of 300 (no
padding) 5.3 s padded and 6.7 s row by row, hence the threshold.

Why decode steps leave transformers' forward on a CPU (`engine.cpu_lean_decode`,
engine/lean_decode.py): at 16 rows a step's tensors are tiny and half its time was
transformers' per-layer glue; the prefill still goes through ``model(...)``, and its cache
becomes a buffer the lean steps append to.

Why leader batching: the agent plays many episodes concurrently and each turn asks for one
completion. ``generate`` queues its requests, and whichever caller holds the model lock
drains the whole queue in batches (grouped by temperature/top_p) in a worker thread, so
concurrent single requests become one batched forward. No background task is needed.

Why batches are also grouped by side (designer and hint, or everyone else): an adapter folder
with a ``designer/`` subfolder (``learner.adapters = "per_role"``) holds the designer's own
LoRA weights, swapped in for a designer-side batch (a few ms: the deltas are set, nothing is
merged unless `engine.merge_lora`); each side then keeps its own prefix cache, since cached
activations belong to the weights that made them.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

from spade_async.engine.attention import MAX_QUERY_TOKENS, use_cpu_decode_attention
from spade_async.engine.base import Completion, GenerationRequest, stop_token_ids
from spade_async.engine.lean_decode import DecodeCache, LeanDecoder, lean_decode_refusal
from spade_async.engine.loops import LOOP, loop_guard
from spade_async.engine.lora import DESIGNER_ROLES, DESIGNER_SUBFOLDER, LoRAWeights, apply_lora, read_lora
from spade_async.engine.packed import pack_linears
from spade_async.engine.prefix_cache import Layers, PrefixCache, assemble, build_cache, cache_layers
from spade_async.engine.tokens import TokenizerHelpers
from spade_async.hardware.allocator import release_free_memory
from spade_async.hardware.cpu_share import CPU_SHARE
from spade_async.hardware.device import resolve_device, resolve_dtype
from spade_async.hardware.openmp import release_openmp_team
from spade_async.util.rng_data import torch_state_from_text, torch_state_to_text


@dataclass
class _Slot:
    request: GenerationRequest
    result: Completion | None = None


class HFEngine(TokenizerHelpers):
    """Batched, token-in/token-out generation with transformers and LoRA adapters (engine/lora.py)."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str = "cpu",
        dtype: str = "auto",
        batch_size: int = 16,
        max_model_len: int = 4096,
        seed: int = 0,
        prefix_cache_entries: int = 64,
        prefix_cache_bytes: int = 1 << 30,
        prepack: bool = False,
        decode_attention: bool = False,
        lean_decode: bool = False,
        ragged_prefill: bool = False,
        merge_lora: bool = False,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = resolve_device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_path))
        model: Any = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=resolve_dtype(dtype, self.device))
        self.model = model.to(self.device)
        self.model.eval()
        self.model.requires_grad_(False)  # the engine never trains (and only frozen weights are packed)
        self.packed_linears = pack_linears(self.model, rows_hint=batch_size) if prepack and self.device == "cpu" else 0
        """Linear layers decoding from a oneDNN-packed weight (0: none; `engine.cpu_prepack`)."""
        if decode_attention and self.device == "cpu":
            use_cpu_decode_attention(self.model)  # engine/attention.py (`engine.cpu_decode_attention`)
        self.lean_decoder = (
            LeanDecoder(self.model)
            if lean_decode and self.device == "cpu" and lean_decode_refusal(self.model) is None
            else None
        )
        """Runs decode steps when set (`engine.cpu_lean_decode`, engine/lean_decode.py); None: ``model(...)``."""
        self.ragged_prefill = ragged_prefill and self.device == "cpu"
        """Whether a batch's long new prompts are prefilled row by row (`engine.cpu_ragged_prefill`)."""
        release_openmp_team()  # batches decode in worker threads: this thread's team would slow them
        self.stop_ids = stop_token_ids(self.tokenizer, getattr(self.model, "generation_config", None))
        """Token ids that end a completion (the same set the vLLM engine stops at)."""
        # transformers 5 renamed `past_key_values` to `cache`; accept either.
        params = inspect.signature(type(self.model).forward).parameters
        self._cache_kwarg = "cache" if "cache" in params else "past_key_values"
        self.batch_size = batch_size
        self.max_model_len = max_model_len
        self.adapter_version = 0
        self.adapted_layers = 0
        """Linear layers the served adapter changes (0: the base model)."""
        self.merge_lora = merge_lora
        """Whether adapters are merged into the weights at load (`engine.merge_lora`, engine/lora.py)."""
        self._generator = torch.Generator(device="cpu").manual_seed(seed)
        self._pending: list[_Slot] = []
        self.prefix_cache = PrefixCache(max_entries=prefix_cache_entries, max_bytes=prefix_cache_bytes)
        self.designer_prefix_cache = PrefixCache(max_entries=prefix_cache_entries, max_bytes=prefix_cache_bytes)
        """The designer side's cache while the adapter gives it weights of its own."""
        self._lora: LoRAWeights | None = None
        self._designer_lora: LoRAWeights | None = None
        """The adapter's ``designer/`` weights (None: the one adapter serves both sides)."""
        self._serving_designer = False
        self._lock = anyio.Lock()
        self.generated_tokens = 0
        self.generate_seconds = 0.0

    # -- generation ------------------------------------------------------------
    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        for r in requests:
            if len(r.prompt_ids) + r.sampling.max_new_tokens > self.max_model_len:
                raise ValueError(
                    f"prompt of {len(r.prompt_ids)} tokens + max_new_tokens {r.sampling.max_new_tokens} "
                    f"exceeds engine.max_model_len {self.max_model_len}"
                )
        slots = [_Slot(r) for r in requests]
        self._pending.extend(slots)
        async with self._lock:
            while any(s.result is None for s in slots):
                await anyio.lowlevel.checkpoint()  # let concurrent callers enqueue before we batch
                batch = self._take_batch()
                results = await anyio.to_thread.run_sync(
                    CPU_SHARE.staged(self._generate_batch), [s.request for s in batch]
                )
                for slot, completion in zip(batch, results, strict=True):
                    slot.result = completion
        return [s.result for s in slots if s.result is not None]

    def _take_batch(self) -> list[_Slot]:
        def key(request: GenerationRequest) -> tuple[float, float, bool]:
            return (request.sampling.temperature, request.sampling.top_p, request.role in DESIGNER_ROLES)

        head = key(self._pending[0].request)
        batch = [s for s in self._pending if key(s.request) == head]
        batch = batch[: self.batch_size]
        taken = {id(s) for s in batch}
        self._pending = [s for s in self._pending if id(s) not in taken]
        return batch

    def _generate_batch(self, requests: list[GenerationRequest]) -> list[Completion]:
        import time

        import torch

        t0 = time.perf_counter()
        temperature = requests[0].sampling.temperature
        top_p = requests[0].sampling.top_p
        generators = [
            torch.Generator(device="cpu").manual_seed(r.sampling.seed) if r.sampling.seed is not None else None
            for r in requests
        ]
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.eos_token_id
        prompts = [list(r.prompt_ids) for r in requests]
        cache = self._serve(requests[0].role in DESIGNER_ROLES)
        hits = [cache.lookup(p) for p in prompts]
        if self.ragged_prefill and _mostly_padding(
            [len(p) - cached for p, (cached, _) in zip(prompts, hits, strict=True)]
        ):
            with torch.inference_mode():
                hits = [self._prefill_alone(p, hit) for p, hit in zip(prompts, hits, strict=True)]
        ids, mask, past, split = assemble(prompts, hits, pad)
        width = mask.shape[1]
        rows = _Rows.start(requests, set(self.stop_ids), self.tokenizer.decode)
        inputs = ids.to(self.device)
        attn = mask.to(self.device)
        positions = (attn.cumsum(-1) - 1).clamp(min=0)[:, split:]
        lean: DecodeCache | None = None  # after the prefill, when the lean decoder runs the steps
        with torch.inference_mode():
            for _ in range(max(rows.budget)):
                CPU_SHARE.fit_threads()  # the learner may have started or ended since the last step
                logits, past, lean = self._step_logits(inputs, positions, attn, past, lean)
                nxt, chosen = _sample_tokens(logits, temperature, top_p, generators, self._generator)
                rows.push(nxt.tolist(), chosen)
                if all(rows.done):
                    break
                feed = torch.where(torch.tensor(rows.done), torch.tensor(pad), nxt)
                inputs = feed[:, None].to(self.device)
                attn = torch.cat([attn, torch.ones((len(requests), 1), dtype=attn.dtype, device=self.device)], dim=1)
                positions = positions[:, -1:] + 1
        tokens = rows.tokens
        batch_layers = lean.layers() if lean is not None else cache_layers(past)
        for i, prompt in enumerate(prompts):  # keep each row's KV for the episode's next turn
            cache.store(prompt + tokens[i][:-1], batch_layers, i, width - len(prompt))
        self.generated_tokens += sum(len(t) for t in tokens)
        release_free_memory()  # the batch's freed KV and logits go back to the system
        self.generate_seconds += time.perf_counter() - t0
        return [
            Completion(
                prompt_ids=list(r.prompt_ids),
                token_ids=tokens[i],
                logprobs=rows.logprobs[i],
                text=_cut_at_stop(self.decode(tokens[i]), r.sampling.stop),
                finish_reason=rows.finish[i],
                adapter_version=self.adapter_version,
            )
            for i, r in enumerate(requests)
        ]

    def _step_logits(
        self, inputs: Any, positions: Any, attn: Any, past: Any, lean: DecodeCache | None
    ) -> tuple[Any, Any, DecodeCache | None]:
        """One forward: the prefill (or every step without the lean decoder) through
        ``model(...)``, then decode steps through the lean decoder over the prefill's cache.
        Returns the last position's logits, (B, vocab), and the caches to continue from."""
        if lean is not None and self.lean_decoder is not None:
            return self.lean_decoder.step(inputs, positions, attn, lean), past, lean
        out = self.model(
            input_ids=inputs,
            attention_mask=attn,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,  # never project prompt positions onto the 49k vocab
            **{self._cache_kwarg: past},
        )
        past = getattr(out, "cache", None) or out.past_key_values
        logits = out.logits[:, -1, :]
        if self.lean_decoder is not None:
            lean = DecodeCache(cache_layers(past))
            past = out = None  # the buffer holds the prompt's KV now: not twice once it grows
        return logits, past, lean

    def _prefill_alone(self, prompt: list[int], hit: tuple[int, Layers | None]) -> tuple[int, Layers | None]:
        """Run all of ``prompt`` but its last token through the model on its own (from its
        cached prefix, if any) when more than ``MAX_QUERY_TOKENS`` of it are new; returns the
        hit the batch then decodes from (the row's KV, not kept in the prefix cache)."""
        import torch

        cached, layers = hit
        end = len(prompt) - 1
        if end - cached <= MAX_QUERY_TOKENS:
            return hit
        past = None if layers is None else build_cache([(k[None], v[None]) for k, v in layers])
        CPU_SHARE.fit_threads()
        out = self.model(
            input_ids=torch.tensor([prompt[cached:end]], device=self.device),
            attention_mask=torch.ones((1, end), dtype=torch.long, device=self.device),
            position_ids=torch.arange(cached, end, device=self.device)[None],
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_kwarg: past},
        )
        cache = getattr(out, "cache", None) or out.past_key_values
        return end, [(k[0], v[0]) for k, v in cache_layers(cache)]

    # -- checkpointing -------------------------------------------------------------
    def rng_state(self) -> dict[str, Any] | None:
        """State of the shared sampling generator, as base64 text (restored on resume for identical sampling)."""
        return {"generator": torch_state_to_text(self._generator.get_state())}

    def set_rng_state(self, state: dict[str, Any]) -> None:
        self._generator.set_state(torch_state_from_text(state["generator"]))

    # -- adapters ------------------------------------------------------------------
    async def load_adapter(self, version: int, path: str) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(CPU_SHARE.staged(self._load_adapter_sync), version, path)

    def _load_adapter_sync(self, version: int, path: str) -> None:
        # engine/lora.py: not PEFT's layers; merged: W + B A from the kept base weights, repacked
        lora = read_lora(path)
        designer = Path(path) / DESIGNER_SUBFOLDER
        designer_lora = read_lora(designer) if designer.is_dir() else None
        self.adapted_layers = apply_lora(self.model, lora, merge=self.merge_lora)
        self._lora, self._designer_lora, self._serving_designer = lora, designer_lora, False
        self.adapter_version = version
        self.prefix_cache.clear()  # cached activations belong to the old weights
        self.designer_prefix_cache.clear()

    def _serve(self, designer_side: bool) -> PrefixCache:
        """Put the weights of a batch's side in the model; returns that side's prefix cache."""
        if self._designer_lora is None:
            return self.prefix_cache
        if designer_side != self._serving_designer:
            apply_lora(self.model, self._designer_lora if designer_side else self._lora, merge=self.merge_lora)
            self._serving_designer = designer_side
        return self.designer_prefix_cache if designer_side else self.prefix_cache

    async def aclose(self) -> None:
        self._pending.clear()


@dataclass
class _Rows:
    """What each row of a batch has sampled so far, and whether and why it ended."""

    requests: list[GenerationRequest]
    stop_ids: set[int]
    decode: Callable[[list[int]], Any]
    budget: list[int]
    guards: list[Any]
    tokens: list[list[int]]
    logprobs: list[list[float]]
    finish: list[str]
    done: list[bool]
    texts: list[str]

    @classmethod
    def start(cls, requests: list[GenerationRequest], stop_ids: set[int], decode: Callable[[list[int]], Any]) -> _Rows:
        n = len(requests)
        return cls(
            requests,
            stop_ids,
            decode,
            budget=[r.sampling.max_new_tokens for r in requests],
            guards=[loop_guard(r.sampling.loop_ngram, r.sampling.loop_repeats) for r in requests],
            tokens=[[] for _ in requests],
            logprobs=[[] for _ in requests],
            finish=["length"] * n,
            done=[False] * n,
            texts=[""] * n,
        )

    def push(self, sampled: list[int], chosen: Any) -> None:
        """Append each unfinished row's token and logprob; end it at a stop token, a stop
        string, a loop (``loop_guard``) or its token budget."""
        for i, tok in enumerate(sampled):
            if self.done[i]:
                continue
            self.tokens[i].append(tok)
            self.logprobs[i].append(float(chosen[i]))
            if tok in self.stop_ids:
                self.done[i], self.finish[i] = True, "stop"
                continue
            stops = self.requests[i].sampling.stop
            if stops:
                self.texts[i] += str(self.decode([tok]))
                if any(s in self.texts[i][-(len(s) + 32) :] for s in stops):
                    self.done[i], self.finish[i] = True, "stop"
                    continue
            guard = self.guards[i]
            if guard is not None and guard.push(tok):
                self.done[i], self.finish[i] = True, LOOP
                continue
            if len(self.tokens[i]) >= self.budget[i]:
                self.done[i] = True


def _sample_tokens(
    logits: Any, temperature: float, top_p: float, generators: list[Any], shared: Any
) -> tuple[Any, Any]:
    """One token per row from ``logits`` (B, vocab) at ``temperature`` and ``top_p``, each row
    drawn with its own generator or ``shared``: (the tokens, on the CPU; their logprobs under
    the distribution sampled from, on the CPU)."""
    weights, log_norm = _softmax_weights(logits, temperature)
    probs = weights if top_p >= 1.0 else _top_p_probs(weights / weights.sum(-1, keepdim=True), top_p)
    nxt = _sample(probs, generators, shared)  # on the CPU: (B,) token ids
    at = nxt[:, None].to(probs.device)  # gather on the device: no (B, vocab) copy
    if top_p < 1.0:  # logprob under the truncated, renormalised distribution
        chosen = probs.gather(-1, at).squeeze(-1).clamp_min(1e-30).log().cpu()
    else:  # log softmax(logits / T) at the chosen token, without a (B, vocab) log-softmax
        scaled = logits.gather(-1, at).float()
        if temperature != 1.0:
            scaled = scaled / temperature
        chosen = (scaled - log_norm).squeeze(-1).cpu()
    return nxt, chosen


def _softmax_weights(logits: Any, temperature: float) -> tuple[Any, Any]:
    """``exp(z - max z)`` for ``z = logits / temperature`` in float32 (unnormalised softmax
    weights, one new (B, vocab) tensor written in place) and ``logsumexp(z)`` per row, (B, 1).

    Why not ``log_softmax`` then ``exp``: those are two more full-vocabulary tensors and
    passes per decode step, and only the chosen token's logprob is needed
    (``z[token] - logsumexp(z)``); :func:`_draw` samples from unnormalised weights."""
    import torch

    z = logits.to(torch.float32, copy=True)  # a copy even for float32: the caller gathers from `logits`
    if temperature != 1.0:
        z.div_(temperature)
    top = z.amax(-1, keepdim=True)
    z.sub_(top).exp_()
    return z, top + z.sum(-1, keepdim=True).log()


RAGGED_PADDING = 0.25
"""Share of padding in a batch's new tokens above which long prompts prefill row by row."""


def _mostly_padding(new_tokens: list[int]) -> bool:
    """Whether left-padding these rows' new tokens to the longest would be more than
    :data:`RAGGED_PADDING` padding."""
    return len(new_tokens) > 1 and sum(new_tokens) < (1 - RAGGED_PADDING) * len(new_tokens) * max(new_tokens)


SAMPLING_BLOCK = 256
"""Vocabulary entries per block of the two-level inverse CDF in :func:`_draw`."""


def _draw(probs: Any, generator: Any) -> Any:
    """One token per row of ``probs`` by inverse-CDF sampling: a single uniform per row from
    the (CPU) ``generator``, found in two levels on ``probs``' own device: first the block of
    :data:`SAMPLING_BLOCK` entries whose cumulative mass holds it (block sums, a cumulative sum
    over the blocks, a binary search), then the entry inside that block (a cumulative sum over
    one block per row).

    Why not ``torch.multinomial``: it draws one random number per vocabulary entry, which on
    a CPU was ~60% of a whole decode step at batch 16 (cProfile, tiny model, 49k vocabulary;
    ``benchmarks/engine.py`` measures the result against ``model.generate``), and it needs the
    probabilities on the generator's device (a (batch, vocab) copy off the GPU every token).
    Why two levels: a float64 cumulative sum over the whole vocabulary took 8 ms of a 68 ms
    decode step (batch 16, SmolLM2 in bf16, ``torch.profiler``); block sums are a parallel
    reduction and the cumulative sums left are 192 + 256 entries long. The distribution is
    the same; the cumulative sums are float64, which keeps them exact enough over a 150k
    vocabulary, and a zero-probability token is never chosen (the search inside a block stays
    below the block's last cumulative value). Each block's own sum of 256 entries is float32
    (relative error ~1e-7; the search inside the block recomputes it in float64 and clamps to
    it): summing with ``dtype=torch.float64`` first copies all (rows, vocab) entries to a new
    float64 tensor, 1.3 ms of a 42 ms decode step at batch 16 (``torch.profiler``)."""
    import torch

    rows, vocab = probs.shape
    u = torch.rand(rows, 1, generator=generator, dtype=torch.float64).to(probs.device)
    n_blocks = -(-vocab // SAMPLING_BLOCK)
    ragged = n_blocks * SAMPLING_BLOCK - vocab
    padded = torch.nn.functional.pad(probs, (0, ragged)) if ragged else probs  # 49152 = 192 blocks: no copy
    blocks = padded.view(rows, n_blocks, SAMPLING_BLOCK)
    block_cdf = blocks.sum(-1).double().cumsum(-1)  # (rows, n_blocks); see the docstring on float64
    target = u * block_cdf[:, -1:]
    b = torch.searchsorted(block_cdf, target, right=True).clamp_(max=n_blocks - 1)  # (rows, 1)
    below = torch.where(b > 0, block_cdf.gather(-1, (b - 1).clamp(min=0)), torch.zeros_like(target))
    inner = blocks.gather(1, b[:, :, None].expand(rows, 1, SAMPLING_BLOCK)).squeeze(1).double().cumsum(-1)
    last = inner[:, -1:]
    rest = torch.minimum(target - below, torch.nextafter(last, torch.zeros_like(last)))
    j = torch.searchsorted(inner, rest, right=True)
    return (b * SAMPLING_BLOCK + j).squeeze(-1).clamp_(max=vocab - 1).cpu()


def _sample(probs: Any, generators: list[Any], shared: Any) -> Any:
    """One token per row: a row with its own generator (a seeded request) draws from it, the
    other rows draw together from the ``shared`` generator."""
    import torch

    if all(g is None for g in generators):
        return _draw(probs, shared)
    out = torch.empty(probs.shape[0], dtype=torch.long)
    unseeded = [i for i, g in enumerate(generators) if g is None]
    if unseeded:
        out[unseeded] = _draw(probs[unseeded], shared)
    for i, g in enumerate(generators):
        if g is not None:
            out[i] = _draw(probs[i : i + 1], g)[0]
    return out


def _top_p_probs(probs: Any, top_p: float) -> Any:
    """Zero out the tail beyond nucleus mass ``top_p`` and renormalise."""
    if top_p >= 1.0:
        return probs
    import torch

    sorted_p, order = probs.sort(dim=-1, descending=True)
    keep = sorted_p.cumsum(-1) - sorted_p < top_p
    sorted_p = sorted_p * keep
    out = torch.zeros_like(probs).scatter(-1, order, sorted_p)
    return out / out.sum(-1, keepdim=True)


def _cut_at_stop(text: str, stops: tuple[str, ...]) -> str:
    """Text up to and including the first stop string."""
    cut = math.inf
    for s in stops:
        at = text.find(s)
        if at >= 0:
            cut = min(cut, at + len(s))
    return text if cut == math.inf else text[: int(cut)]
