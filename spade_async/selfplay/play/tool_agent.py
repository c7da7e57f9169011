"""The Reasoning Agent in the tool-use domain: function calls, tool messages, token in / token out.

Why a harness in the trainer: the environment (in the sandbox) only executes calls on its
backend state. Like an OpenAI-style function-calling server, the harness parses the model's
turn (Qwen3 ``<tool_call>`` JSON or OpenAI-style objects, :mod:`spade_async.envs.tool_calls`),
validates the arguments against the tool's JSON Schema (``jsonschema``,
:class:`~spade_async.envs.tool_schemas.ToolBox`) and sends the environment only valid,
canonical calls. A malformed or invalid call is answered with an error tool message and still
costs the environment a turn (it is stepped with an empty action), so the turn budget and the
final reward are the environment's own either way; nothing the model writes can crash a play.

Tokens: as for games (:mod:`spade_async.selfplay.play.agent`), the sampled tokens are appended
and never re-rendered; results come back as ``tool`` messages and a newly revealed
instruction as a ``user`` message, through the model's own chat template (the seam after the
assistant turn is derived from the template, so Qwen3's ``<tool_response>`` wrapping comes out
exactly as it was trained). The tools go to the template's native tool rendering when it has
one (Qwen3); otherwise (SmolLM2) the same Hermes/Qwen wording lists them in the system prompt.

Outcome scoring is the games one: the reward of the terminating step (the fraction of
instructions satisfied), 0 when the runner truncates, ``no_action_penalty`` when the episode
held no valid call at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from spade_async.engine.base import Engine, Sampling
from spade_async.envs.tool_calls import CallError, parse_tool_calls
from spade_async.envs.tool_schemas import ToolBox
from spade_async.sandbox.interface import EnvPool, EnvSession
from spade_async.sandbox.pool import EnvProtocolError, SandboxError
from spade_async.selfplay.design.parsing import strip_thinking
from spade_async.selfplay.play.agent import (
    EngineFailure,
    Episode,
    TokenTrace,
    describe_env_data_error,
)
from spade_async.selfplay.prompts import render

_MARKER = "\u2063SPADE_TURN\u2063"
TOOL_PREFILL = '<tool_call>\n{"name": "'
"""With ``selfplay.action_prefill``, every turn starts inside a call (part of the prompt)."""
NO_CALL = ""
"""What the environment is stepped with for a turn without a valid call (it costs a turn)."""


def tool_messages_prompt(
    engine: Engine, box: ToolBox, first_user: str, enable_thinking: bool | None = None
) -> list[int]:
    """Prompt ids: system prompt + tools (natively when the template renders tools) + first user turn."""
    tools = box.openai_tools()
    system = render("agent_tool_system", example=box.example_call())
    messages = [{"role": "system", "content": system}, {"role": "user", "content": first_user}]
    native = engine.chat_text(messages, add_generation_prompt=True, enable_thinking=enable_thinking, tools=tools)
    if native != engine.chat_text(messages, add_generation_prompt=True, enable_thinking=enable_thinking):
        return engine.encode(native)
    listed = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
    messages[0]["content"] = system + "\n\n" + render("agent_tool_list", tools=listed)
    return engine.chat_prompt(messages, enable_thinking=enable_thinking)


def tool_seam(
    engine: Engine, results: list[str], user: str | None, after_eos: bool, enable_thinking: bool | None = None
) -> str:
    """Template text after an assistant turn: one tool message per result, then ``user`` if any."""
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": _MARKER},
        *({"role": "tool", "content": r} for r in results),
        *([{"role": "user", "content": user}] if user else []),
    ]
    text = engine.chat_text(messages, add_generation_prompt=True, enable_thinking=enable_thinking)
    seam = text[text.index(_MARKER) + len(_MARKER) :]
    if after_eos and seam.startswith(engine.eos_text):
        seam = seam[len(engine.eos_text) :]
    return seam


async def _opening(
    engine: Engine, env: EnvSession, episode: Episode, seed: int, hint: str | None, enable_thinking: bool | None
) -> tuple[str, ToolBox, TokenTrace]:
    """Reset the environment and check its tool contract (at every reset: bounded work); the
    first observation (and hint) go into the transcript. Returns (the observation, the tools,
    the first prompt)."""
    obs, info = await env.reset(seed)
    box = ToolBox.from_info(info)
    if box.problems:
        raise EnvProtocolError(
            f"reset(seed={seed}) broke the tool contract admission checked: " + "; ".join(box.problems)[:1000]
        )
    episode.note("observation", obs, None)
    first = obs
    if hint is not None:
        episode.note("hint", hint, None, first=True)
        first = render("agent_tool_hint", hint=hint, observation=obs)
    return obs, box, TokenTrace(tool_messages_prompt(engine, box, first, enable_thinking))


@dataclass
class _CallsPlayed:
    """What one reply's tool calls did."""

    results: list[str]
    """One line per call played: its result, or ``error: ...`` for a refused call."""
    user: str | None
    """A user message to show after the results: the next instruction the environment
    revealed, or the reminder to call a tool (a reply without calls)."""
    done: bool
    reward: float
    """The last step's reward (the no-action penalty for a reply without calls, unless it ended the episode)."""
    terminated: bool
    instruction: str
    """The open instruction after these calls."""


async def _play_calls(
    env: EnvSession, box: ToolBox, episode: Episode, said: str, instruction: str, no_action_penalty: float
) -> _CallsPlayed:
    """Play the reply's tool calls in order until one ends the episode; a call the tools refuse
    (or one that does not parse) is a no-call step with an error line."""
    calls = parse_tool_calls(strip_thinking(said))
    if not calls:
        result = await env.step(NO_CALL)
        done = result.terminated or result.truncated
        user = render("agent_tool_no_call", instruction=instruction)
        reward = result.reward if done else no_action_penalty
        return _CallsPlayed([], user, done, reward, result.terminated, instruction)
    played = _CallsPlayed([], None, False, 0.0, False, instruction)
    for call in calls:
        problem = box.check(call)
        if problem is None and not isinstance(call, CallError):
            episode.n_actions += 1
            result = await env.step(call.to_json())
            text = result.info.get("result")
            played.results.append(text if isinstance(text, str) else result.obs)
        else:
            result = await env.step(NO_CALL)
            played.results.append(f"error: {problem}")
        played.reward, played.terminated = result.reward, result.terminated
        revealed = result.info.get("next_instruction")
        if isinstance(revealed, str) and revealed:
            played.user = played.instruction = revealed
        if result.terminated or result.truncated:
            played.done = True
            break
    return played


async def play_tool_episode(
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
    """Play one tool-use episode; never raises for environment failures (they set ``error``),
    including any exception while handling the environment's data; engine failures propagate."""
    episode = Episode(
        env_id=env_id, hinted=hint is not None, seed=seed, outcome=0.0, turns=0, truncated=False, transcript=[]
    )
    try:
        async with await pool.open(source) as env:
            obs, box, trace = await _opening(engine, env, episode, seed, hint, sampling.enable_thinking)
            open_instruction = obs
            terminated = False
            last_reward = 0.0
            prefill = engine.encode(TOOL_PREFILL) if action_prefill else []
            for turn in range(max_turns):
                if len(trace.ids) + len(prefill) + sampling.max_new_tokens > max_context_tokens:
                    break
                trace.add_context(prefill)
                completion = await trace.sample(engine, sampling, episode)
                said = (TOOL_PREFILL if action_prefill else "") + completion.text
                episode.note("agent", said, None)
                step = await _play_calls(env, box, episode, said, open_instruction, no_action_penalty)
                results, user, done = step.results, step.user, step.done
                last_reward, terminated, open_instruction = step.reward, step.terminated, step.instruction
                shown = "\n".join(results + ([user] if user else []))
                episode.note("observation", shown, last_reward)
                if done or turn + 1 == max_turns:
                    break
                ended_with_eos = bool(completion.token_ids) and completion.token_ids[-1] == engine.eos_token_id
                trace.add_context(
                    engine.encode(
                        tool_seam(
                            engine, results, user, after_eos=ended_with_eos, enable_thinking=sampling.enable_thinking
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
