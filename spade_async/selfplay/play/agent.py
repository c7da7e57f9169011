"""The Reasoning Agent: multi-turn episodes against a sandboxed environment, token in / token out.

Why tokens, not chat re-rendering: after each turn we *append* the sampled tokens and the
tokenised observation to one growing id list. Re-rendering the chat and re-tokenising would
change token boundaries at the seams, so the trained tokens would no longer be the sampled
ones and their behaviour logprobs would not line up. The loss mask is 1 exactly on the
tokens the policy sampled; the template scaffolding and observations are 0.

The observation seam (end-of-turn marker, user header, assistant header) is derived once
from the model's own chat template, so this works for any chat model, not just SmolLM2.

Outcome scoring (docs/rewards.md): the reward of the step that terminated the episode, clipped
to [-1, 1]; 0 when the episode was truncated. Deviation: an episode in which the agent never
produced a parsable ``\\boxed{}`` action scores ``no_action_penalty`` instead of 0, so format
failures are distinguishable from honest losses in the GRPO group.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from spade_async.engine.base import Completion, Engine, GenerationRequest, Sampling
from spade_async.envs.contract import parse_boxed
from spade_async.learner.samples import TrainSample
from spade_async.sandbox.interface import EnvPool, EnvSession
from spade_async.sandbox.pool import SandboxError
from spade_async.selfplay.design.parsing import strip_thinking
from spade_async.selfplay.prompts import render
from spade_async.selfplay.rewards import episode_outcome
from spade_async.util.failpoints import failpoint

_MARKER = "\u2063SPADE_TURN\u2063"
PREFILL = "\\boxed{"
MAX_STORED_TURN_CHARS = 4_000
"""Most characters of one transcript turn kept (stored in the database, shown in the TUI); the
agent itself sees the whole observation."""
MAX_STORED_EPISODE_CHARS = 32_000
"""Most characters of one episode's transcript kept in all; later turns keep only a marker."""


class EngineFailure(Exception):
    """An exception the engine (or a failpoint) raised while sampling a turn.

    The play loops end an episode for anything that goes wrong while handling the environment's
    data, but an engine failure is not the environment's: they re-raise ``original`` as is.
    """

    def __init__(self, original: Exception) -> None:
        super().__init__(str(original))
        self.original = original


def describe_env_data_error(exc: BaseException) -> str:
    """The episode error for an exception raised while handling one environment's data."""
    try:
        message = str(exc)
    except Exception:
        message = ""
    message = message if len(message) <= 300 else message[:300] + "..."
    return f"EnvDataError: handling the environment's data raised {type(exc).__name__}" + (
        f": {message}" if message else ""
    )


def _kept(text: str, room: int) -> str:
    """``text`` cut to ``room`` characters (and :data:`MAX_STORED_TURN_CHARS`), saying how much was cut."""
    limit = max(min(room, MAX_STORED_TURN_CHARS), 0)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters not stored]"


def completion_text(text: str, prefilled: bool) -> str:
    """What the agent said this turn: with a prefill, the box is opened by the prompt."""
    if not prefilled:
        return text
    body = text if "}" in text else text + "}"
    return PREFILL + body


@dataclass
class Episode:
    """One play of one environment."""

    env_id: str
    hinted: bool
    seed: int
    outcome: float
    turns: int
    truncated: bool
    transcript: list[dict[str, Any]]
    input_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    behaviour_logprobs: list[float] = field(default_factory=list)
    adapter_version: int = 0
    """Oldest adapter version among the episode's turns (what staleness is measured against)."""
    n_actions: int = 0
    generated_tokens: int = 0
    error: str | None = None
    """Set when the environment failed during play (timeout, crash); the episode is not trained on."""
    stored_chars: int = field(default=0, repr=False)
    """Characters of text in ``transcript`` so far (bounded by :data:`MAX_STORED_EPISODE_CHARS`)."""

    def note(self, role: str, text: str, reward: float | None, *, first: bool = False) -> None:
        """Add a turn to the transcript, its text cut to the storage caps (see the constants)."""
        kept = _kept(str(text), MAX_STORED_EPISODE_CHARS - self.stored_chars)
        self.stored_chars += len(kept)
        turn = {"role": role, "text": kept, "reward": reward}
        if first:
            self.transcript.insert(0, turn)
        else:
            self.transcript.append(turn)

    def to_sample(self, advantage: float, temperature: float) -> TrainSample:
        return TrainSample(
            role="agent",
            input_ids=self.input_ids,
            loss_mask=self.loss_mask,
            behaviour_logprobs=self.behaviour_logprobs,
            advantage=advantage,
            adapter_version=self.adapter_version,
            temperature=temperature,
            reward=self.outcome,
            group=self.env_id,
        )


def turn_seed(seed: int, turn: int) -> int:
    """The sampling seed of one turn of an episode whose sampling seed is ``seed``."""
    return (seed * 1_000_033 + turn * 7_919 + 1) % (2**31)


@dataclass
class TokenTrace:
    """The growing token-in/token-out record of one episode, shared by every agent loop:
    context tokens (prompt, prefill, observation seams) carry mask 0, sampled tokens mask 1
    with their behaviour logprobs."""

    ids: list[int]
    mask: list[int] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mask = [0] * len(self.ids)
        self.logps = [0.0] * len(self.ids)

    def add_context(self, ids: list[int]) -> None:
        self.ids += ids
        self.mask += [0] * len(ids)
        self.logps += [0.0] * len(ids)

    async def sample(self, engine: Engine, sampling: Sampling, episode: Episode) -> Completion:
        """Generate one agent turn from the trace and append its sampled tokens."""
        if sampling.seed is not None:  # one seed per turn: the same stream whatever the batch or arrival order
            sampling = replace(sampling, seed=turn_seed(sampling.seed, episode.turns))
        try:
            failpoint("generate")
            completion = (
                await engine.generate([GenerationRequest(self.ids, sampling, role="agent", affinity=episode.env_id)])
            )[0]
        except Exception as exc:  # not the environment's fault: the play loop re-raises it
            raise EngineFailure(exc) from exc
        self.versions.append(completion.adapter_version)
        self.ids += completion.token_ids
        self.mask += [1] * len(completion.token_ids)
        self.logps += completion.logprobs
        episode.generated_tokens += len(completion.token_ids)
        episode.turns += 1
        return completion

    def finish(
        self, episode: Episode, engine: Engine, *, last_reward: float, terminated: bool, no_action_penalty: float
    ) -> None:
        """Score the episode (outcome rules in the module docstring) and hand it the trace."""
        episode.truncated = not terminated
        episode.outcome = episode_outcome(last_reward, terminated, not terminated)
        if episode.n_actions == 0:
            episode.outcome = no_action_penalty
        episode.input_ids, episode.loss_mask, episode.behaviour_logprobs = self.ids, self.mask, self.logps
        episode.adapter_version = min(self.versions) if self.versions else engine.adapter_version


def observation_seam(engine: Engine, observation: str, after_eos: bool, enable_thinking: bool | None = None) -> str:
    """Template text between an assistant turn's content and the next assistant turn."""
    text = engine.chat_text(
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": _MARKER},
            {"role": "user", "content": observation},
        ],
        add_generation_prompt=True,
        enable_thinking=enable_thinking,
    )
    seam = text[text.index(_MARKER) + len(_MARKER) :]
    if after_eos and seam.startswith(engine.eos_text):
        # The sampled EOS already closed the turn; don't add a second end marker.
        seam = seam[len(engine.eos_text) :]
    return seam


def agent_context_budget(max_context_tokens: int, max_model_len: int | None) -> int:
    """Most tokens an episode's transcript may reach: the configured cap, but never more than
    the engine accepts (a turn starts only while prompt + its completion fit in both)."""
    return max_context_tokens if max_model_len is None else min(max_context_tokens, max_model_len)


def _opening(
    engine: Engine, episode: Episode, obs: str, hint: str | None, *, enable_thinking: bool | None
) -> TokenTrace:
    """The episode's first prompt: the agent's system prompt and the first observation (with
    the hint before it, for a hinted episode); both go into the transcript."""
    episode.note("observation", obs, None)
    first = obs
    if hint is not None:
        episode.note("hint", hint, None, first=True)
        first = render("agent_hint", hint=hint, observation=obs)
    return TokenTrace(
        engine.chat_prompt(
            [{"role": "system", "content": render("agent_system")}, {"role": "user", "content": first}],
            enable_thinking=enable_thinking,
        )
    )


async def _act(env: EnvSession, said: str, episode: Episode, no_action_penalty: float) -> tuple[str, float, bool, bool]:
    """Play the reply's boxed action, if any: (observation, reward, terminated, truncated). No
    action costs ``no_action_penalty`` and the agent is told how to give one."""
    action = parse_boxed(strip_thinking(said))  # a \boxed{} pondered in <think> is no action
    if action is None:
        return "No action found. End your reply with \\boxed{<command>}.", no_action_penalty, False, False
    episode.n_actions += 1
    result = await env.step("\\boxed{" + action + "}")
    return result.obs, result.reward, result.terminated, result.truncated


async def play_episode(
    engine: Engine,
    pool: EnvPool,
    *,
    env_id: str,
    source: str,
    seed: int,
    hint: str | None,
    sampling: Sampling,
    max_turns: int,
    max_context_tokens: int,
    no_action_penalty: float,
    action_prefill: bool = False,
) -> Episode:
    """Play one episode; never raises for environment failures (they set ``error``), whatever
    the failure: any exception while handling the environment's data ends this episode only.
    Engine failures propagate."""
    episode = Episode(
        env_id=env_id, hinted=hint is not None, seed=seed, outcome=0.0, turns=0, truncated=False, transcript=[]
    )
    try:
        async with await pool.open(source) as env:
            obs, _info = await env.reset(seed)
            trace = _opening(engine, episode, obs, hint, enable_thinking=sampling.enable_thinking)
            terminated = False
            last_reward = 0.0
            prefill = engine.encode(PREFILL) if action_prefill else []
            for _turn in range(max_turns):
                if len(trace.ids) + len(prefill) + sampling.max_new_tokens > max_context_tokens:
                    break
                trace.add_context(prefill)
                completion = await trace.sample(engine, sampling, episode)
                said = completion_text(completion.text, action_prefill)
                episode.note("agent", said, None)
                obs, reward, done, cut = await _act(env, said, episode, no_action_penalty)
                episode.note("observation", obs, reward)
                last_reward = reward
                if done or cut:
                    terminated = done
                    break
                if _turn + 1 == max_turns:
                    break  # out of turns: no next observation to append
                ended_with_eos = bool(completion.token_ids) and completion.token_ids[-1] == engine.eos_token_id
                trace.add_context(
                    engine.encode(
                        observation_seam(
                            engine, obs, after_eos=ended_with_eos, enable_thinking=sampling.enable_thinking
                        )
                    )
                )
            trace.finish(
                episode, engine, last_reward=last_reward, terminated=terminated, no_action_penalty=no_action_penalty
            )
    except SandboxError as exc:
        episode.error = f"{exc.__class__.__name__}: {exc}"
    except EngineFailure as failure:
        raise failure.original from None
    except Exception as exc:  # the environment's data broke its handling here: this environment only
        episode.error = describe_env_data_error(exc)
    return episode
