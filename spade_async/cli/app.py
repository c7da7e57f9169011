"""`spade-async` command line: run, resume, init, config, env, setup-model, tui, steer.

Why a thin layer: every command parses its input, turns any expected failure (bad config,
bad environment file, missing run) into one clear line and an exit status, and hands off
to the library. A traceback reaching the user is a bug. Each command catches its own known
errors: config errors here (exit 2), run errors in ``launch.launch_run`` (and the TUI's
``tui.run``), which also write an unexpected error's traceback to ``run_dir/error.log``.
Click's own usage errors (unknown option, missing argument, bad value, unknown command) are
turned into the same one-line style once, by the top-level group (cli/usage.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import click

from spade_async import __version__
from spade_async.cli.config_doc import config_doc, toml_with_docs
from spade_async.cli.env_cmd import env
from spade_async.cli.errors import (
    CONFIG_FILE,
    DB_FILE,
    EXIT_USAGE,
    USER_FILE_ERRORS,
    CommandFailed,
    UsageProblem,
    describe_file_error,
    run_folder,
)
from spade_async.cli.eval_cmd import eval_command
from spade_async.cli.export_cmd import export
from spade_async.cli.model_cmd import setup_model
from spade_async.cli.presets_cmd import config_list, init
from spade_async.cli.report_cmd import report
from spade_async.cli.steer_cmd import steer
from spade_async.cli.usage import one_line_usage_errors
from spade_async.cli.warmstart_cmd import warmstart
from spade_async.config import Config, ConfigError, config_to_toml, load_config
from spade_async.config.presets import resolve_config
from spade_async.hardware.allocator import tune_malloc
from spade_async.memory.run_dir import RunDir
from spade_async.util.errors import UserError
from spade_async.util.quiet import VERBOSE_ENV, quiet_libraries, verbose_requested
from spade_async.util.textsafe import terminal_safe

EXIT_CONFIG = 2
TUI_PACKAGE = "spade_async_tui"
"""The TUI's import name once installed: the wheel maps the repository's tui/ folder to it
(pyproject.toml, package-dir), so site-packages gets no top-level ``tui`` to collide with."""


def _tui_module(name: str) -> ModuleType:
    """``spade_async_tui.<name>``; from a checkout that was not installed (PYTHONPATH), its
    ``tui/`` folder beside this package, and never some other project's ``tui``."""
    try:
        return importlib.import_module(f"{TUI_PACKAGE}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != TUI_PACKAGE:
            raise
    checkout = Path(__file__).resolve().parents[2]
    spec = importlib.util.find_spec("tui")
    origin = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    if origin is None or origin.parent != checkout / "tui":
        raise ModuleNotFoundError(f"No module named {TUI_PACKAGE!r}", name=TUI_PACKAGE)
    return importlib.import_module(f"tui.{name}")


def _load_or_exit(path: str, overrides: tuple[str, ...]) -> Config:
    """A config file, or a preset by name (`tiny`); an existing path wins over a preset."""
    try:
        return load_config(resolve_config(path), list(overrides))
    except ConfigError as exc:
        for line in exc.problems:
            click.echo(f"error: {line}", err=True)
        sys.exit(EXIT_CONFIG)


class _Cli(click.Group):
    """The command group; ``--verbose`` may also be written after the subcommand
    (``spade-async eval runs/a --verbose``): it is moved in front, where the group reads it.
    Click's usage errors of every command print one line (cli/usage.py)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        end = args.index("--") if "--" in args else len(args)
        if "--verbose" in args[1:end]:
            args = ["--verbose", *(a for i, a in enumerate(args) if not (a == "--verbose" and i < end))]
        ctx.meta[_ARGV] = args
        with one_line_usage_errors(ctx, args):
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        with one_line_usage_errors(ctx, [a for a in ctx.meta.get(_ARGV, ()) if a != "--verbose"]):
            try:
                return super().invoke(ctx)
            except UserError as exc:  # the one place a command's UserError becomes its message
                failure = UsageProblem if exc.exit_code == EXIT_USAGE else CommandFailed
                raise failure(terminal_safe(exc)) from None
            except USER_FILE_ERRORS as exc:  # a damaged or unreadable file of the user's: one line, exit 2
                if verbose_requested() or "--verbose" in ctx.meta.get(_ARGV, ()):
                    raise
                raise UsageProblem(terminal_safe(describe_file_error(exc))) from None


_ARGV = "spade_async.argv"


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="spade-async")
@click.option(
    "--verbose",
    is_flag=True,
    help="Show the libraries' own output (progress bars, warnings), hidden by default; "
    f"also {VERBOSE_ENV}=1. May follow the subcommand.",
)
def cli(verbose: bool) -> None:
    """spade-async: SPADE self-play RL (design environments, play them, learn) on one box."""
    quiet_libraries(verbose or verbose_requested())  # before any library is imported: spade_async/util/quiet.py
    tune_malloc()  # before any model is loaded: see spade_async/hardware/allocator.py


@cli.command()
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False))
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value (TOML syntax), e.g. run.max_steps=3.",
)
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Shorthand for --set run.max_steps=N.")
@click.option("--headless", is_flag=True, help="Console progress only (no TUI).")
@click.option(
    "--sync", "sync_mode", is_flag=True, help="Strictly sequential loop (no overlap), for comparison and debugging."
)
@click.option("--resume", is_flag=True, help="Continue from the newest complete checkpoint in run.run_dir.")
@click.option("--force", is_flag=True, help="With --resume: accept a config that differs from the checkpointed one.")
def run(
    config_path: str,
    overrides: tuple[str, ...],
    max_steps: int | None,
    headless: bool,
    sync_mode: bool,
    resume: bool,
    force: bool,
) -> None:
    """Train by self-play with the settings in CONFIG (a file, or a preset name: spade-async config list)."""
    if max_steps is not None:
        overrides = (*overrides, f"run.max_steps={max_steps}")
    cfg = _load_or_exit(config_path, overrides)
    sys.exit(_start(cfg, headless=headless, sync=sync_mode, resume=resume, force=force))


@cli.command()
@click.argument("run_dir", type=click.Path())
@click.option("--headless", is_flag=True, help="Console progress only (no TUI).")
@click.option("--max-steps", type=click.IntRange(min=1), default=None, help="Raise the step budget of the resumed run.")
def resume(run_dir: str, headless: bool, max_steps: int | None) -> None:
    """Continue the run in RUN_DIR from its newest complete checkpoint, with its own config.

    RUN_DIR is the run, wherever it was moved or copied: it wins over the ``run.run_dir``
    written in its config.toml (a note says so when they differ)."""
    run = run_folder(run_dir, CONFIG_FILE)
    folder = RunDir(run)
    folder.check_database()  # a damaged database is an error here, before anything loads
    overrides = (f"run.max_steps={max_steps}",) if max_steps else ()
    cfg = _load_or_exit(str(run / CONFIG_FILE), overrides)
    # A folder this process cannot write, or one in use, is its one error line, before the note
    # below: the note is for a run that will start (the run takes the lock again, to keep it).
    folder.lock().check()
    if Path(cfg.run.run_dir).resolve() != run.resolve():
        click.echo(
            f"note: resuming the run in {run_dir}; its config.toml names run.run_dir = {cfg.run.run_dir!r} "
            "(the folder given here wins)",
            err=True,
        )
        cfg.run.run_dir = str(run)
    sys.exit(_start(cfg, headless=headless, sync=False, resume=True, force=max_steps is not None))


def _start(cfg: Config, *, headless: bool, sync: bool, resume: bool, force: bool) -> int:
    """Run in the TUI when a terminal is attached (the CLI is the application shell: the
    library itself never imports the TUI), else headless with console progress."""
    from spade_async.run.assemble import preflight

    preflight(cfg)  # before the TUI opens: a missing GPU or model is one line, not a screen (main)
    if not headless and sys.stdout.isatty() and sys.stdin.isatty():
        try:
            run_with_tui = _tui_module("run").run_with_tui
        except ImportError as exc:
            click.echo(f"note: TUI unavailable ({exc}); running headless", err=True)
        else:
            return int(run_with_tui(cfg, sync=sync, resume=resume, force=force))
    from spade_async.run.assemble import launch_run

    return launch_run(cfg, sync=sync, resume=resume, force=force)


@cli.group()
def config() -> None:
    """Inspect configuration files and the shipped presets."""


@config.command("show")
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False))
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a value before showing.")
@click.option("--doc", "with_doc", is_flag=True, help="Precede each value with its description (a TOML comment).")
@click.option(
    "--gpus",
    type=click.IntRange(min=0),
    default=None,
    help="Resolve the placement for a machine with this many GPUs (default: this machine's).",
)
@click.option(
    "--cluster",
    "cluster",
    is_flag=True,
    help="Also say what runs on the Ray cluster and what stays on this machine ([cluster]).",
)
def config_show(config_path: str, overrides: tuple[str, ...], with_doc: bool, gpus: int | None, cluster: bool) -> None:
    """Print CONFIG (a file or a preset name) fully resolved (defaults filled in) as TOML, then
    where engine and learner would run (as TOML comments)."""
    from spade_async.hardware.gpu import cuda_device_count
    from spade_async.hardware.placement import PlacementError, resolve_placement

    cfg = _load_or_exit(config_path, overrides)
    click.echo(toml_with_docs(cfg) if with_doc else config_to_toml(cfg), nl=False)
    count = cuda_device_count() if gpus is None else gpus
    where = "this machine" if gpus is None else "a machine"
    click.echo(f"\n# placement on {where} with {count} GPU(s):")
    try:
        lines = resolve_placement(cfg, count).describe()
    except PlacementError as exc:
        lines = [f"cannot run here: {exc}"]
    for line in lines:
        click.echo(f"#   {line}")
    if cluster:
        from spade_async.cluster.layout import describe_cluster

        click.echo("\n# cluster layout:")
        for line in describe_cluster(cfg, lines):
            click.echo(f"#   {line}")


@cli.command()
@click.argument("run_dir", type=click.Path())
def tui(run_dir: str) -> None:
    """Watch the run in RUN_DIR (live or finished) in the terminal UI."""
    run = run_folder(run_dir, DB_FILE)
    try:
        run_tui = _tui_module("cli").run_tui
    except ImportError as exc:  # the TUI is an optional part of the install
        raise CommandFailed(f"the TUI is not available ({exc}); pip install textual") from None
    sys.exit(run_tui(run))


cli.add_command(env)
config.add_command(config_doc)
cli.add_command(eval_command)
cli.add_command(export)
cli.add_command(report)
cli.add_command(steer)
cli.add_command(init)
cli.add_command(warmstart)
cli.add_command(setup_model)
config.add_command(config_list)


def main() -> None:
    cli(prog_name="spade-async")


if __name__ == "__main__":
    main()
