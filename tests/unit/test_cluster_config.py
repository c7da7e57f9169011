"""The [cluster] section: off by default, strict, reported by `config show --cluster`, and a
run with it off never imports Ray."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from spade_async.cli import cli
from spade_async.config import Config, ConfigError, validate_config

ROOT = Path(__file__).resolve().parents[2]


def test_cluster_is_off_by_default_and_rejects_unknown_keys() -> None:
    cfg = Config()
    assert cfg.cluster.enabled is False
    with pytest.raises(ConfigError, match="cluster"):
        validate_config({"cluster": {"enabled": True, "pools": 3}})
    with pytest.raises(ConfigError, match="sandbox_pools"):
        validate_config({"cluster": {"sandbox_pools": 0}})


def test_config_show_cluster_says_what_goes_where() -> None:
    out = CliRunner().invoke(cli, ["config", "show", "tiny", "--cluster", "--set", "cluster.enabled=true",
                                   "--set", "cluster.sandbox_pools=3", "--set", 'cluster.address="head:6379"'],
                             catch_exceptions=False).output
    layout = out.split("# cluster layout:")[1]
    assert "Ray cluster at head:6379" in layout
    assert "sandbox: 3 remote pool(s)" in layout
    assert "run database" in layout and "this machine" in layout
    assert "a lost pool is restarted in the background (at most 4 restarts per run)" in layout
    off = CliRunner().invoke(cli, ["config", "show", "tiny", "--cluster"], catch_exceptions=False).output
    assert "cluster off" in off.split("# cluster layout:")[1]
    assert "# cluster layout:" not in CliRunner().invoke(cli, ["config", "show", "tiny"]).output


def test_a_run_with_cluster_off_never_imports_ray(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        import anyio
        from spade_async import cli  # noqa: F401  (the command line, as `spade-async run` loads it)
        from spade_async.launch import open_run
        from spade_async.testing import ScriptedEngine, ScriptedLearner
        from tests.integration.test_pipeline import make_config

        cfg = make_config(__import__("pathlib").Path({str(tmp_path)!r}), mode="fixed")
        cfg.run.max_steps = 1

        async def go():
            async with open_run(cfg, engine=ScriptedEngine(), learner=ScriptedLearner(), report=lambda s: None) as p:
                assert await p.run(sync=True) == 1
        anyio.run(go)
        print("ray imported" if "ray" in sys.modules else "ray not imported")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ray not imported")
