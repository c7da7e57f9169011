"""``spade-async warmstart CONFIG``: run the config's designer warm start on its own.

Why a command beside ``run``: a warm start takes minutes on a CPU; running it once writes the
result to the cache a run with the same settings then starts from (or to ``--out``, for
``warmstart.adapter`` in other configs), and prints what it learned (loss on the library and
on its held-out families) before a run is spent on it. ``--ship`` (in a checkout) writes the
result into the package's ``warmstart/shipped/KEY``: how the main job's shipped warm start is
made and reproduced (``tests/unit/test_shipped_warmstart.py`` fails while it is stale).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import click

from spade_async.cli.errors import UsageProblem
from spade_async.config import Config, ConfigError, load_config
from spade_async.config.presets import resolve_config


@click.command("warmstart")
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config value (TOML syntax).")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Also copy the result (adapter/ and warmstart.json) to this folder.",
)
@click.option(
    "--ship",
    is_flag=True,
    help="Train (never from the cache or the package) and write the result into this checkout's "
    "spade_async/warmstart/shipped/KEY, replacing the shipped results of the same config.",
)
def warmstart(config_path: str, overrides: tuple[str, ...], out: str | None, ship: bool) -> None:
    """Train the designer warm start of CONFIG (its [warmstart] section) and cache it."""
    cfg = _config(config_path, overrides)
    cfg = cfg.model_copy(update={"warmstart": cfg.warmstart.model_copy(update={"enabled": True})})
    if ship:
        _clear_cache(cfg)
    line, folder = _train(cfg)
    click.echo(line)
    if out is not None:
        shutil.copytree(folder, Path(out), dirs_exist_ok=True)
        click.echo(f"wrote {out}")
    if ship:
        click.echo(f"shipped as {_ship(folder)}")


def _clear_cache(cfg: Config) -> None:
    from spade_async.warmstart.train import cached_folder

    shutil.rmtree(cached_folder(cfg), ignore_errors=True)


def _ship(folder: Path) -> Path:
    """Copy a result into the package's shipped folder (its key as the name), without PEFT's
    README; the shipped results of other keys stay (other presets may use them)."""
    from spade_async.warmstart import train

    shipped = Path(train.__file__).parent / train.SHIPPED / folder.name
    shutil.rmtree(shipped, ignore_errors=True)
    shutil.copytree(folder, shipped, ignore=shutil.ignore_patterns("README.md"))
    return shipped


def _config(path: str, overrides: tuple[str, ...]) -> Config:
    """A config file or a preset by name (`tiny_designer`), as `run` reads it."""
    try:
        return load_config(resolve_config(path), list(overrides))
    except ConfigError as exc:
        raise UsageProblem(str(exc)) from None


def _train(cfg: Config) -> tuple[str, Path]:
    from spade_async.engine.embedded import resolve_model_path
    from spade_async.engine.factory import build_engine
    from spade_async.run.assemble import build_learner, preflight
    from spade_async.warmstart.train import cached_folder, read_result, run_warm_start

    placement = preflight(cfg, trains_on_samples=False)  # supervised: trains on files, not samples
    folder = cached_folder(cfg)
    cached = read_result(folder)
    if cached is not None:
        return f"{cached.describe()} (already in the cache, {folder})", folder
    model_path = resolve_model_path(cfg.model.name)
    engine = build_engine(cfg, model_path, placement)
    learner = build_learner(cfg, model_path, placement)
    try:
        result = run_warm_start(cfg, engine=engine, learner=learner, out=folder, report=click.echo)
    finally:
        anyio.run(engine.aclose)
    return f"{result.describe()}; cached in {folder}", folder
