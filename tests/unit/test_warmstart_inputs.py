"""A run's own files (a warm start's adapter and library, the corpus) are checked before the model
loads and before anything is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spade_async.config import load_config
from spade_async.config.presets import resolve_config
from spade_async.run.assemble import preflight
from spade_async.run.warm_start import WarmStartError

ROOT = Path(__file__).resolve().parents[2]


def tiny(**warmstart: object):  # type: ignore[no-untyped-def]
    cfg = load_config(resolve_config("tiny"))
    return cfg.model_copy(update={"warmstart": cfg.warmstart.model_copy(update=warmstart)})


def test_a_missing_or_half_written_adapter_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WarmStartError, match=r"no adapter_model\.safetensors"):
        preflight(tiny(adapter=str(tmp_path / "nowhere")))
    (tmp_path / "adapter_model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(WarmStartError, match="not a PEFT adapter folder"):
        preflight(tiny(adapter=str(tmp_path)))


def test_a_library_file_without_a_class_or_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text('SKILL = "Optimization"\nX = 1\n')
    with pytest.raises(WarmStartError, match="a defines no environment class"):
        preflight(tiny(library=str(tmp_path)))
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"code": "class A:\n    pass\n" + "#" * 70_000}) + "\n")
    with pytest.raises(WarmStartError, match=r"over sandbox\.max_source_bytes"):
        preflight(tiny(library=str(pool)))


def test_the_run_command_refuses_before_anything_is_written(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "spade_async.cli",
            "run",
            "tiny",
            "--headless",
            "--set",
            f'run.run_dir="{run_dir}"',
            "--set",
            f'warmstart.adapter="{tmp_path / "missing"}"',
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "warmstart.adapter" in lines[0] and "Traceback" not in proc.stderr
    assert not run_dir.exists()


def test_a_corpus_that_cannot_serve_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    """The same wire for the corpus: a JSONL whose second line is not JSON stops the preflight
    with exit status 2 (it used to stop the run's first design, after its folder was made)."""
    from spade_async.selfplay.design.corpus import CorpusError

    corpus = tmp_path / "docs.jsonl"
    corpus.write_text('{"text": "a document long enough to ground a game, more or less."}\n{broken\n')
    cfg = load_config(resolve_config("tiny"), ["corpus.source=jsonl", f'corpus.path="{corpus}"'])
    with pytest.raises(CorpusError, match=r"docs\.jsonl:2: not valid JSON") as caught:
        preflight(cfg)
    assert caught.value.exit_code == 2
