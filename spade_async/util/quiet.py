"""Quiet by default: the libraries' own chatter stays out of a command's output unless asked for.

Why: every command that loads a model printed transformers' tqdm "Loading weights" bars and
FutureWarnings about transformers' own renames (``gradient_checkpointing_enable`` ...), which
say nothing to a user and bury the lines that do. ``spade-async --verbose`` (or
``SPADE_ASYNC_VERBOSE=1``) shows all of it again. Our own messages, warnings and errors are
never hidden: this only touches the libraries' progress bars, their loggers below ERROR, and
FutureWarning / DeprecationWarning (addressed to developers, not users) plus UserWarnings
raised inside the libraries.

It works through environment variables read at import (set before the CLI imports
transformers, so the settings also reach the processes a run starts) and, for a library
already imported, through its own switches.
"""

from __future__ import annotations

import os
import sys
import warnings

VERBOSE_ENV = "SPADE_ASYNC_VERBOSE"
LIBRARIES = (
    "transformers",
    "peft",
    "torch",
    "huggingface_hub",
    "sentence_transformers",
    "accelerate",
    "tokenizers",
    "datasets",
    "safetensors",
    "gguf",
    "vllm",
    "bitsandbytes",
    "trackio",
    "tensorboard",
)
"""Libraries whose UserWarnings are hidden too (matched on the warning's module)."""
QUIET_ENV = {
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # transformers' and huggingface_hub's tqdm bars
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
}


def verbose_requested() -> bool:
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def quiet_libraries(verbose: bool) -> None:
    """Hide the libraries' progress bars, info logs and FutureWarnings (``verbose``: show all)."""
    if verbose:
        os.environ[VERBOSE_ENV] = "1"  # the processes a command starts inherit the choice
        return
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    for library in LIBRARIES:
        warnings.filterwarnings("ignore", category=UserWarning, module=rf"{library}(\.|$)")
    if "transformers" in sys.modules:  # imported before us: switch it off through its own API
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
