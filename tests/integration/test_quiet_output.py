"""Quiet by default: a command that loads a model (``export adapter --merge`` on a real LoRA of
the tiny model) prints its own lines only, no tqdm "Loading weights" bar, no transformers
FutureWarning; ``--verbose`` (or SPADE_ASYNC_VERBOSE=1) shows them. Run as the real console
command in a subprocess: the settings take effect before transformers is imported, as for a user."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spade_async.util.quiet import QUIET_ENV, VERBOSE_ENV
from tests.integration.runs import tiny_adapter_run

ROOT = Path(__file__).resolve().parents[2]
LIBRARY_NOISE = ("Loading weights", "FutureWarning", "is deprecated")


def _spade(*args: str, verbose_env: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {VERBOSE_ENV, *QUIET_ENV}}
    env["PYTHONPATH"] = str(ROOT)
    if verbose_env:
        env[VERBOSE_ENV] = "1"
    return subprocess.run(
        [sys.executable, "-m", "spade_async.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_library_output_is_hidden_unless_verbose(tmp_path: Path, tiny_model_dir: Path) -> None:
    run = tiny_adapter_run(tmp_path, tiny_model_dir)
    quiet = _spade("export", "adapter", str(run), str(tmp_path / "quiet"), "--merge")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == f"wrote the merged model of step 2 to {tmp_path / 'quiet'}\n"
    assert quiet.stderr == ""

    for how, verbose in (
        ("flag", _spade("export", "adapter", str(run), str(tmp_path / "v1"), "--merge", "--verbose")),
        ("env", _spade("export", "adapter", str(run), str(tmp_path / "v2"), "--merge", verbose_env=True)),
    ):
        assert verbose.returncode == 0, verbose.stderr
        assert "Loading weights" in verbose.stderr, how
        # Whether a library warns here depends on its version (peft 0.21 made transformers warn,
        # 0.22 does not): warnings are checked in tests/unit/test_quiet_warnings.py instead.
        assert "wrote the merged model of step 2" in verbose.stdout
    assert not any(noise in quiet.stdout + quiet.stderr for noise in LIBRARY_NOISE)
