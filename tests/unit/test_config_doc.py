"""docs/config.md is generated from the field docstrings and must be up to date."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.cli.config_doc import render_config_doc
from spade_async.config import Config

ROOT = Path(__file__).resolve().parents[2]


def test_committed_reference_is_up_to_date() -> None:
    committed = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    assert committed == render_config_doc(), (
        "docs/config.md is stale: run `spade-async config doc --write docs/config.md` (or `make docs`)"
    )


def test_reference_lists_every_field_with_its_docstring() -> None:
    text = render_config_doc()
    for section, field in Config.model_fields.items():
        model = field.annotation
        assert f"## `[{section}]`" in text
        for name, sub in model.model_fields.items():  # type: ignore[union-attr]
            if sub.description and not hasattr(sub.annotation, "model_fields"):
                assert f"| `{name}` |" in text and " ".join(sub.description.split())[:40] in text.replace("\\|", "|")


def test_config_show_doc_comments_each_value() -> None:
    out = CliRunner().invoke(cli, ["config", "show", str(ROOT / "configs" / "tiny.toml"), "--doc"]).output
    lines = out.splitlines()
    i = lines.index("max_steps = 8")
    assert lines[i - 1].startswith("# Number of rollout steps")
