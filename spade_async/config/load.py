"""Load a config: read the TOML file, apply ``--set`` overrides, validate, and turn pydantic's
errors into one line per problem that a person can act on.

``load_config(path, overrides)`` is the only entry point; it raises :class:`ConfigError`
holding one line per problem, which the CLI prints and exits with status 2.
"""

from __future__ import annotations

import difflib
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from spade_async.config.sections import Config
from spade_async.util.errors import UserError


class ConfigError(UserError):
    """A config that cannot be used; ``problems`` holds one human-readable line each."""

    exit_code = 2  # bad input, like a usage error

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def _model_for_path(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The section model that owns the field at ``loc`` (for "did you mean" suggestions)."""
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        else:
            return None
    return model


def _format_error(err: dict[str, Any]) -> str:
    loc = tuple(err["loc"])
    path = ".".join(str(p) for p in loc)
    if err["type"] == "extra_forbidden":
        owner = _model_for_path(loc)
        hint = ""
        if owner is not None:
            close = difflib.get_close_matches(str(loc[-1]), list(owner.model_fields), n=1, cutoff=0.75)
            if close:
                hint = f"; did you mean {close[0]!r}?"
        return f"{path}: unknown key{hint}"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"{path}: {msg}" if path else msg  # cross-field checks name their keys themselves


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse ``key.path=value``; the value is read as TOML, else taken as a plain string."""
    if "=" not in text:
        raise ConfigError([f"--set {text}: expected KEY=VALUE, e.g. run.max_steps=3"])
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError([f"--set {text}: empty key segment"])
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    except RecursionError:
        raise ConfigError([f"--set {key}: the value nests too deeply to read"]) from None
    return key.split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set each ``key.path=value`` into the raw TOML data (before validation)."""
    for text in overrides:
        path, value = parse_override(text)
        node = data
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError([f"--set {text}: {part} is a value, not a section"])
            node = child
        node[path[-1]] = value
    return data


def validate_config(data: dict[str, Any]) -> Config:
    """Validate raw data; raise :class:`ConfigError` with one line per problem."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError([_format_error(dict(e)) for e in exc.errors()]) from None
    except RecursionError:
        raise ConfigError(["the config nests too deeply to read"]) from None


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read, override and validate a TOML config file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such config file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{path}: cannot read ({exc.__class__.__name__}: {exc})"]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: TOML syntax error: {exc}"]) from None
    except RecursionError:
        raise ConfigError([f"{path}: nests too deeply to read (arrays or tables inside each other)"]) from None
    data = apply_overrides(data, overrides or [])
    return validate_config(data)


def config_to_toml(cfg: Config) -> str:
    """Render a resolved config as TOML (used by `config show` and stored with each run)."""
    lines: list[str] = []

    def fmt(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(value, list):
            return "[" + ", ".join(fmt(v) for v in value) + "]"
        return repr(value)

    def emit(prefix: str, data: dict[str, Any]) -> None:
        scalars = {k: v for k, v in data.items() if not isinstance(v, dict)}
        tables = {k: v for k, v in data.items() if isinstance(v, dict)}
        if prefix and scalars:
            lines.append(f"[{prefix}]")
        for key, value in scalars.items():
            if value is not None:
                lines.append(f"{key} = {fmt(value)}")
        if prefix and scalars:
            lines.append("")
        for key, value in tables.items():
            emit(f"{prefix}.{key}" if prefix else key, value)

    emit("", cfg.model_dump())
    return "\n".join(lines).rstrip() + "\n"


def gpu_settings(cfg: Config) -> list[str]:
    """The settings of ``cfg`` that need a CUDA GPU (empty for a config that runs on a CPU).
    vLLM and QLoRA run on a CPU too (vLLM's CPU build, bitsandbytes' CPU NF4) when the config
    says ``run.device = "cpu"``; otherwise they mean the GPU path."""
    on_cpu = cfg.run.device == "cpu"
    return [
        k
        for k, on in (
            ('run.device = "cuda"', cfg.run.device == "cuda"),
            ('engine.backend = "vllm"', cfg.engine.backend == "vllm" and not on_cpu),
            ("model.qlora = true", cfg.model.qlora and not on_cpu),
        )
        if on
    ]
