"""The parts of the GPU path that CPU can exercise, with the real SmolLM2 tokenizer: prompts
fitted to max_model_len in both engines, enable_thinking per role, per-request seeds and
shared stop ids in the HF engine, the QLoRA preparation, adapter pruning, gpu_smoke.sh."""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import torch

from spade_async.config import (
    Config,
    EngineConfig,
    LearnerConfig,
    ModelConfig,
    SandboxConfig,
    load_config,
)
from spade_async.engine.base import GenerationRequest, Sampling
from spade_async.engine.hf import HFEngine
from spade_async.engine.vllm import VLLMEngine
from spade_async.envs.seeds import load_seeds
from spade_async.memory.records import EnvRecord
from spade_async.memory.retrieval import Example
from spade_async.run.checkpoint import VERSION_FILE, write_checkpoint
from spade_async.run.retention import checkpointed_versions, prune_adapters
from spade_async.sandbox.pool import SandboxPool
from spade_async.selfplay.design.corpus import Document
from spade_async.selfplay.design.designer import (
    DesignJob,
    PromptTooLong,
    design_environment,
    design_prompt,
    fit_design_prompt,
    write_hint,
)
from spade_async.selfplay.play.agent import agent_context_budget, play_episode
from spade_async.testing import ScriptedEngine

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.anyio

THINKING_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)


@pytest.fixture(scope="module")
def hf(tiny_model_dir: Path) -> HFEngine:
    return HFEngine(tiny_model_dir, seed=0, max_model_len=1024)


def vllm_front(hf: HFEngine) -> VLLMEngine:
    """The vLLM engine's prompt side (tokenizer, templates, limits) without a GPU engine."""
    engine = VLLMEngine.__new__(VLLMEngine)
    engine.tokenizer = hf.tokenizer
    engine.max_model_len = hf.max_model_len
    return engine


def long_job(origin: str = "fresh", parent_code: str = "") -> DesignJob:
    code = load_seeds()[0].source
    examples = [
        Example(
            EnvRecord(
                code=code + f"\n# variant {i}\n",
                domain="games",
                skill="Logical Deduction",
                origin="seed",
                created_step=0,
                win_rate=0.5,
            ),
            "in_band",
        )
        for i in range(3)
    ]
    doc = Document("d", "A long document", "The rules of a long board game. " * 250)
    parent = (
        EnvRecord(code=parent_code, domain="games", skill="Logical Deduction", origin="seed", created_step=0)
        if parent_code
        else None
    )
    return DesignJob("Logical Deduction", doc, origin, parent=parent, examples=examples, change="one change")


# -- prompt fitting --------------------------------------------------------------------


@pytest.mark.parametrize("which", ["hf", "vllm"])
def test_designer_prompt_is_fitted_to_the_budget(hf: HFEngine, which: str) -> None:
    engine: Any = hf if which == "hf" else vllm_front(hf)
    job = long_job()
    budget = 1024 - 256
    assert len(design_prompt(engine, job)) > budget  # the unfitted prompt would be rejected
    ids, shown = fit_design_prompt(engine, job, budget)
    assert len(ids) <= budget
    assert len(shown.examples) < len(job.examples) or len(shown.doc.text) < len(job.doc.text)
    assert ids == design_prompt(engine, shown)  # what is trained on is what was shown


def test_both_engines_render_the_same_prompts(hf: HFEngine) -> None:
    front = vllm_front(hf)
    budget = 700
    assert fit_design_prompt(hf, long_job(), budget)[0] == fit_design_prompt(front, long_job(), budget)[0]
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "obs"}]
    assert hf.chat_prompt(chat) == front.chat_prompt(chat)


def test_examples_go_before_the_document(hf: HFEngine) -> None:
    job = long_job()
    with_doc = len(design_prompt(hf, job))
    no_examples = len(design_prompt(hf, DesignJob(job.skill, job.doc, "fresh")))
    ids, shown = fit_design_prompt(hf, job, no_examples + 5)
    assert shown.examples == [] and shown.doc.text == job.doc.text and len(ids) <= no_examples + 5 < with_doc


def test_a_mutation_whose_parent_cannot_fit_becomes_a_fresh_design(hf: HFEngine) -> None:
    huge_parent = "\n".join(f"x_{i} = {i}  # filler line" for i in range(600))
    ids, shown = fit_design_prompt(hf, long_job("mutation", huge_parent), 700)
    assert shown.origin == "fresh" and shown.parent is None and len(ids) <= 700


def test_a_budget_below_the_bare_prompt_names_the_fix(hf: HFEngine) -> None:
    with pytest.raises(PromptTooLong, match=r"raise engine\.max_model_len or lower engine\.designer\.max_new_tokens"):
        fit_design_prompt(hf, long_job(), 50)


@pytest.fixture
async def pool() -> AsyncIterator[SandboxPool]:
    async with await SandboxPool.start(SandboxConfig(call_timeout_s=2.0)) as p:
        yield p


async def test_a_long_design_job_runs_on_the_hf_engine(hf: HFEngine, pool: SandboxPool) -> None:
    """Before fitting, this prompt raised 'exceeds engine.max_model_len' and ended the step."""
    design = await design_environment(
        hf,
        pool,
        long_job(),
        designer_sampling=Sampling(max_new_tokens=256, seed=0),
        hint_sampling=Sampling(max_new_tokens=64),
        max_turns=5,
        repair_turns=1,
        separate_hint_call=True,
        max_model_len=hf.max_model_len,
    )
    assert len(design.prompt_ids) + 256 <= hf.max_model_len
    assert len(design.completion.token_ids) > 0


async def test_agent_transcripts_stay_inside_the_engine_limit(tiny_model_dir: Path, pool: SandboxPool) -> None:
    engine = HFEngine(tiny_model_dir, seed=1, max_model_len=300)
    seed_env = next(s for s in load_seeds() if s.name == "number_guess")
    budget = agent_context_budget(8192, engine.max_model_len)  # selfplay.max_context_tokens above the engine's
    assert budget == 300
    sent: list[int] = []
    generate = engine.generate

    async def recording(requests: list[GenerationRequest]) -> list[Any]:
        sent.extend(len(r.prompt_ids) + r.sampling.max_new_tokens for r in requests)
        return await generate(requests)

    engine.generate = recording  # type: ignore[method-assign]
    ep = await play_episode(
        engine,
        pool,
        env_id="g",
        source=seed_env.source,
        seed=0,
        hint="Use binary search.",
        sampling=Sampling(max_new_tokens=24),
        max_turns=50,
        max_context_tokens=budget,
        no_action_penalty=-0.1,
    )
    assert ep.error is None and 1 <= ep.turns < 50  # the budget, not max_turns, ended it
    assert len(sent) == ep.turns and max(sent) <= 300  # every request fitted the engine


# -- enable_thinking -------------------------------------------------------------------


def test_enable_thinking_reaches_the_chat_template(tiny_model_dir: Path) -> None:
    engine = HFEngine(tiny_model_dir, seed=0)
    engine.tokenizer.chat_template = THINKING_TEMPLATE
    chat = [{"role": "user", "content": "hi"}]
    for e in (engine, vllm_front(engine)):
        assert e.chat_text(chat, enable_thinking=False).endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
        assert e.chat_text(chat, enable_thinking=True).endswith("<|im_start|>assistant\n")
        assert e.chat_text(chat) == e.chat_text(chat, enable_thinking=True)  # unset: the template's default


async def test_each_role_renders_with_its_own_thinking_switch(pool: SandboxPool) -> None:
    engine = ScriptedEngine(policies={"agent": lambda p, r: "guess \\boxed{50}"})
    cfg = EngineConfig.model_validate(
        {"designer": {"enable_thinking": True}, "agent": {"enable_thinking": False}, "hint": {"enable_thinking": False}}
    )
    designer, agent, hint = (Sampling.from_config(s) for s in (cfg.designer, cfg.agent, cfg.hint))
    assert (designer.enable_thinking, agent.enable_thinking, hint.enable_thinking) == (True, False, False)
    await design_environment(
        engine,
        pool,
        long_job(),
        designer_sampling=designer,
        hint_sampling=hint,
        max_turns=5,
        repair_turns=0,
        separate_hint_call=True,
    )
    assert engine.chats[-1][1] is True and "Python programs" in engine.chats[-1][0][0]["content"]
    engine.chats.clear()
    await write_hint(engine, "class G: pass", hint)
    assert [flag for _, flag in engine.chats] == [False]
    engine.chats.clear()
    seed_env = next(s for s in load_seeds() if s.name == "number_guess")
    await play_episode(
        engine,
        pool,
        env_id="g",
        source=seed_env.source,
        seed=0,
        hint=None,
        sampling=agent,
        max_turns=3,
        max_context_tokens=100_000,
        no_action_penalty=-0.1,
    )
    assert len(engine.chats) >= 2  # the first prompt and the seam of each later turn
    assert all(flag is False for _, flag in engine.chats)


def test_qwen3_presets_turn_thinking_off_for_every_role() -> None:
    for name in ("games_qwen3_4b.toml", "games_qwen3_8b.toml", "games_qwen3_8b_4gpu.toml"):
        cfg = load_config(ROOT / "configs" / name)
        assert cfg.engine.agent.enable_thinking is False and cfg.engine.hint.enable_thinking is False
        assert cfg.engine.designer.enable_thinking is False


# -- HF engine: seeds and stops --------------------------------------------------------


async def test_a_seeded_request_samples_the_same_alone_or_batched(hf: HFEngine) -> None:
    prompt = hf.chat_prompt([{"role": "user", "content": "Pick a number."}])

    def req(seed: int | None) -> GenerationRequest:
        return GenerationRequest(prompt, Sampling(max_new_tokens=12, seed=seed))

    alone_a = (await hf.generate([req(1)]))[0].token_ids
    alone_b = (await hf.generate([req(2)]))[0].token_ids
    assert alone_a != alone_b
    batched = await hf.generate([req(1), req(2), req(None)])
    assert batched[0].token_ids == alone_a
    assert batched[1].token_ids == alone_b  # before the fix the whole batch used the first seed
    swapped = await hf.generate([req(2), req(1)])
    assert (swapped[0].token_ids, swapped[1].token_ids) == (alone_b, alone_a)


async def test_hf_stops_at_every_stop_id_like_vllm(tiny_model_dir: Path) -> None:
    engine = HFEngine(tiny_model_dir, seed=0)
    assert engine.stop_ids[0] == engine.eos_token_id
    prompt = engine.chat_prompt([{"role": "user", "content": "Hello"}])
    request = GenerationRequest(prompt, Sampling(max_new_tokens=8, seed=3))
    first = (await engine.generate([request]))[0]
    token = first.token_ids[2]
    assert token not in engine.stop_ids and token not in first.token_ids[:2]
    engine.stop_ids = [engine.eos_token_id, token]  # e.g. <|endoftext|> from generation_config
    stopped = (await engine.generate([request]))[0]
    assert stopped.token_ids == first.token_ids[:3] and stopped.finish_reason == "stop"


# -- QLoRA -----------------------------------------------------------------------------


def test_qlora_prepares_the_base_with_non_reentrant_checkpointing(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bitsandbytes needs CUDA, so the 4-bit load is replaced by the float model; everything
    after it (PEFT's k-bit preparation, LoRA, the optimizer) is the real code path."""
    import peft

    from spade_async.learner import trainer as trainer_mod

    calls: list[dict[str, Any]] = []
    real = peft.prepare_model_for_kbit_training

    def spy(model: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(model, **kwargs)

    def load_float(path: str, cfg: ModelConfig, device: str) -> Any:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
        model.is_loaded_in_4bit = True  # what bitsandbytes' loader marks; PEFT keys its preparation on it
        return model

    monkeypatch.setattr(peft, "prepare_model_for_kbit_training", spy)
    monkeypatch.setattr(trainer_mod, "_load_base", load_float)
    trainer = trainer_mod.Trainer(
        str(tiny_model_dir),
        ModelConfig(qlora=True, lora_rank=8),
        LearnerConfig(),
        device="cpu",
        gradient_checkpointing=True,
    )
    assert calls == [{"use_gradient_checkpointing": True, "gradient_checkpointing_kwargs": {"use_reentrant": False}}]
    base = trainer.model.get_base_model()
    assert base.is_gradient_checkpointing
    assert base.get_input_embeddings().weight.dtype == torch.float32  # non-4-bit parameters cast to fp32


# -- adapters on disk ------------------------------------------------------------------


class VersionedLearner:
    def __init__(self, version: int) -> None:
        self.version = version

    def save_adapter(self, path: Path) -> None:
        Path(path).mkdir(parents=True)

    def state_dict(self) -> dict[str, int]:
        return {"version": self.version}


def test_pruning_keeps_the_newest_and_the_checkpointed_versions(tmp_path: Path) -> None:
    for v in range(10):
        (tmp_path / "adapters" / f"v{v}").mkdir(parents=True)
    (tmp_path / "adapters" / "notes").mkdir()
    write_checkpoint(tmp_path, 3, learner=VersionedLearner(2), snapshot={}, config_hash="h")
    write_checkpoint(tmp_path, 5, learner=VersionedLearner(4), snapshot={}, config_hash="h")
    assert (tmp_path / "checkpoints" / "step_4" / VERSION_FILE).read_text().strip() == "2"
    assert checkpointed_versions(tmp_path) == {2, 4}
    deleted = prune_adapters(tmp_path, keep=3, protect={0})
    assert deleted == [1, 3, 5, 6]
    assert sorted(p.name for p in (tmp_path / "adapters").iterdir()) == ["notes", "v0", "v2", "v4", "v7", "v8", "v9"]
    shutil.rmtree(tmp_path / "checkpoints" / "step_4")  # the checkpoint was pruned: its adapter may go
    assert prune_adapters(tmp_path, keep=3) == [0, 2]


def test_pruning_an_empty_run_folder_is_a_no_op(tmp_path: Path) -> None:
    assert prune_adapters(tmp_path, keep=2) == []


# -- scripts/gpu_smoke.sh --------------------------------------------------------------


def test_gpu_smoke_script_runs_a_valid_qlora_config_without_downloads() -> None:
    script = (ROOT / "scripts" / "gpu_smoke.sh").read_text()
    assert "set -euo pipefail" in script
    assert "|| true" not in script  # a failed step fails the script
    assert not re.search(
        r"\b[A-Z][\w-]+/[\w.-]+-\d", script.replace("runs/gpu-smoke", "")
    )  # no hub id like Qwen/Qwen3-0.6B
    assert "MODEL=${1:-embedded:smollm2-135m-instruct}" in script
    config_path = re.search(r"^CONFIG=(\S+)$", script, re.M)
    assert config_path is not None
    overrides = ['model.name="embedded:smollm2-135m-instruct"', 'run.run_dir="runs/gpu-smoke-1"']
    cfg: Config = load_config(ROOT / config_path.group(1), overrides)  # what the script runs
    assert cfg.model.qlora and cfg.engine.backend == "vllm" and cfg.run.device == "cuda"
    assert cfg.selfplay.envs_per_step >= 2 * cfg.selfplay.skills_per_regen
    assert cfg.run.checkpoint_every == 1  # so the script's resume has a checkpoint to start from
    assert "benchmarks/learner.py --device cuda" in script and "resume" in script


# -- hub ids resolve to the local cache, never to a download ----------------------------


def test_a_hub_id_resolves_to_its_cached_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from spade_async.engine.embedded import EmbeddedModelError, resolve_model_path

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    repo = tmp_path / "models--Org--Tiny-1B"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "config.json").write_text("{}")
    assert resolve_model_path("Org/Tiny-1B") == str(repo / "snapshots" / "abc123")
    assert resolve_model_path(str(tmp_path)) == str(tmp_path)  # a local folder stays itself
    with pytest.raises(EmbeddedModelError, match=r"huggingface-cli download Org/Missing-2B"):
        resolve_model_path("Org/Missing-2B")
