"""``spade-async env check|play ENV``: validate or play an environment file (or a built-in seed
environment by name, e.g. ``mastermind``) in the sandbox.

Why a separate group: it is the tool a person uses to see exactly what the trainer would
decide about a candidate (same sandbox, same checks, same reasons) and to play it by hand.
A bad file is a verdict, never a traceback: exit 0 admitted, 1 rejected, 2 when the check
itself could not run (unreadable file, isolation below the configured minimum). Everything
the environment wrote (observations, prints, errors, class name) goes through
``terminal_safe`` before it reaches the terminal: escape sequences are shown, not obeyed.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import click

from spade_async.admission.validate import ADMISSION_TURN_LIMIT, validate_source
from spade_async.cli.errors import UsageProblem
from spade_async.config import Config, ConfigError, load_config
from spade_async.envs.seeds import find_seed, seed_names
from spade_async.sandbox.errors import SandboxError
from spade_async.sandbox.pool import SandboxPool
from spade_async.util.textsafe import terminal_safe


def _say(text: object, *, err: bool = False) -> None:
    """Echo text that may contain environment output, neutralised for the terminal."""
    click.echo(terminal_safe(text), err=err)


def _config(path: str | None) -> Config:
    try:
        return load_config(path) if path else Config()
    except ConfigError as exc:
        raise UsageProblem(str(exc)) from None


def _read_source(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageProblem(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None


def _resolve_env(env_arg: str) -> tuple[Path, str, str | None]:
    """ENV as a file path (it wins when it exists) or a built-in seed's name (``mastermind``):
    its display path, its source, and for a seed its domain."""
    path = Path(env_arg)
    if path.exists():
        if path.is_dir():
            raise UsageProblem(f"{env_arg}: a folder; give an environment file or a seed name")
        return path, _read_source(path), None
    found = find_seed(env_arg) if "/" not in env_arg and not env_arg.endswith(".py") else None
    if found is None:
        raise UsageProblem(
            f"{env_arg}: no such file, nor a built-in seed environment of that name (seeds: {', '.join(seed_names())})"
        )
    seed, domain = found
    return Path(f"{seed.name} (built-in seed)"), seed.source, domain


def _config_for(config_path: str | None, domain: str | None) -> Config:
    """The --config file, else the defaults, in the seed's own domain when ENV named one."""
    if config_path is None and domain is not None:
        return Config.model_validate({"selfplay": {"domain": domain}})
    return _config(config_path)


async def play_actions(pool: SandboxPool, source: str, seed: int, actions: list[str]) -> list[dict[str, Any]]:
    """reset(seed) then each action in a fresh child; one record per call, stops at the first error."""
    records: list[dict[str, Any]] = []
    try:
        env = await pool.open(source)
    except SandboxError as exc:
        return [{"call": "open", "error": str(exc)}]
    async with env:
        try:
            obs, info = await env.reset(seed)
            records.append({"call": f"reset(seed={seed})", "obs": obs, "info": info})
            for action in actions:
                result = await env.step(action)
                records.append(
                    {
                        "call": f"step({action!r})",
                        "obs": result.obs,
                        "reward": result.reward,
                        "terminated": result.terminated,
                        "truncated": result.truncated,
                        "info": result.info,
                        "output": result.output,
                    }
                )
                if result.terminated or result.truncated:
                    break
        except SandboxError as exc:
            records.append({"call": "error", "error": str(exc), "output": exc.output})
    return records


async def check_source(source: str, cfg: Config, seed: int, actions: list[str], max_turns: int) -> dict[str, Any]:
    """The whole report of ``env check`` as a JSON-able dict."""
    async with await SandboxPool.start(cfg.sandbox) as pool:
        verdict = await validate_source(
            pool, source, max_turns=max_turns, seeds=(seed, seed + 1), domain=cfg.selfplay.domain
        )
        steps = await play_actions(pool, source, seed, actions) if actions else []
        return {**verdict.as_dict(), "steps": steps, "isolation": pool.isolation.as_dict()}


def _print_report(path: Path, report: dict[str, Any]) -> None:
    verdict = "ADMITTED" if report["admitted"] else "REJECTED"
    name = f" (class {report['class_name']})" if report["class_name"] else ""
    _say(f"{path}: {verdict}{name}")
    iso = report["isolation"]
    active = [k for k, v in iso["layers"].items() if v]
    click.echo(f"isolation: {iso['level']} (active: {', '.join(active) or 'none'})")
    click.echo("checks: " + ", ".join(f"{k} {'ok' if v else 'FAILED'}" for k, v in report["checks"].items()))
    if report["has_solution"]:
        click.echo(f"solution wins: {report['solution_wins']}")
    for reason in report["reasons"]:
        _say(f"  - {reason}")
    for record in report["steps"]:
        if "error" in record:
            _say(f"{record['call']}: {record['error']}")
            continue
        extra = (
            ""
            if "reward" not in record
            else (f"  reward={record['reward']:g} terminated={record['terminated']} truncated={record['truncated']}")
        )
        _say(f"{record['call']}{extra}")
        _say(textwrap.indent(record["obs"], "    "))


@click.group("env")
def env() -> None:
    """Check or play a generated environment file in the sandbox."""


@env.command("check")
@click.argument("env_arg", metavar="ENV")
@click.option("--seed", type=int, default=0, show_default=True, help="First seed checked and used for --actions.")
@click.option("--actions", default="", help='Actions to play after the checks, separated by "|".')
@click.option(
    "--max-turns",
    type=click.IntRange(min=1),
    default=ADMISSION_TURN_LIMIT,
    show_default=True,
    help="Invalid actions within which the environment must end an episode by itself.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Config file whose [sandbox] limits and selfplay.domain (tool_use: the tool-use checks) apply.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(env_arg: str, seed: int, actions: str, max_turns: int, config_path: str | None, as_json: bool) -> None:
    """Validate ENV (an environment file, or a built-in seed by name: mastermind) in the
    sandbox; exit 0 if admitted, 1 if rejected."""
    file, source, domain = _resolve_env(env_arg)
    cfg = _config_for(config_path, domain)
    action_list = actions.split("|") if actions else []
    try:
        report = anyio.run(check_source, source, cfg, seed, action_list, max_turns)
    except SandboxError as exc:
        _say(f"error: {exc}", err=True)
        sys.exit(2)
    if as_json:
        click.echo(json.dumps(report, indent=2, default=str))
    else:
        _print_report(file, report)
    sys.exit(0 if report["admitted"] else 1)


async def _play(source: str, cfg: Config, seed: int) -> int:
    async with await SandboxPool.start(cfg.sandbox) as pool:
        try:
            env_ = await pool.open(source)
        except SandboxError as exc:
            _say(f"error: {exc}", err=True)
            return 1
        async with env_:
            try:
                obs, _ = await env_.reset(seed)
                _say(obs)
                total = 0.0
                for turn in range(1, cfg.selfplay.max_turns * 100):
                    action = await _ask(turn)
                    if action is None:
                        click.echo("bye")
                        return 0
                    result = await env_.step(action)
                    total += result.reward
                    if result.output:
                        _say(f"[env printed]\n{result.output}")
                    _say(f"{result.obs}\n(reward {result.reward:g})")
                    if result.terminated or result.truncated:
                        click.echo(
                            f"episode {'over' if result.terminated else 'truncated'}; last reward {result.reward:g}"
                        )
                        return 0
            except SandboxError as exc:
                _say(f"error: {exc}", err=True)
                return 1
    return 0


async def _ask(turn: int) -> str | None:
    """The next action, read in a daemon thread: Ctrl-C ends the play at once (an anyio worker
    thread blocked in ``input()`` kept the process alive until Enter was pressed)."""
    done = anyio.Event()
    box: list[str | None] = []
    token = anyio.lowlevel.current_token()

    def read() -> None:
        box.append(_read_action(turn))
        with contextlib.suppress(RuntimeError):  # the loop is gone (interrupted): nobody waits
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=read, name="env-play-input", daemon=True).start()
    await done.wait()
    return box[0]


def _read_action(turn: int) -> str | None:
    try:
        text = click.prompt(f"[{turn}] action (empty line or Ctrl-D to quit)", default="", show_default=False)
    except (click.Abort, EOFError):
        return None
    return text or None


@env.command("play")
@click.argument("env_arg", metavar="ENV")
@click.option("--seed", type=int, default=None, help="Replay this seed (default: a fresh random seed, printed).")
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False), default=None)
def play(env_arg: str, seed: int | None, config_path: str | None) -> None:
    """Play ENV (an environment file, or a built-in seed by name: mastermind) in the terminal,
    one action per line."""
    _file, source, domain = _resolve_env(env_arg)
    cfg = _config_for(config_path, domain)
    if seed is None:
        seed = secrets.randbelow(2**31)
    click.echo(f"seed {seed} (replay with --seed {seed})")
    try:
        code = anyio.run(_play, source, cfg, seed)
    except SandboxError as exc:
        _say(f"error: {exc}", err=True)
        code = 2
    except KeyboardInterrupt:
        click.echo("\ninterrupted", err=True)
        code = 130
    sys.exit(code)
