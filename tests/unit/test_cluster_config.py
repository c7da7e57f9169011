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

from spade_async.cli.app import cli
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
    out = (
        CliRunner()
        .invoke(
            cli,
            [
                "config",
                "show",
                "tiny",
                "--cluster",
                "--set",
                "cluster.enabled=true",
                "--set",
                "cluster.sandbox_pools=3",
                "--set",
                'cluster.address="head:6379"',
            ],
            catch_exceptions=False,
        )
        .output
    )
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
        from spade_async.run.assemble import open_run
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
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ray not imported")


def engine_cluster(**cluster: object) -> dict[str, object]:
    return {"enabled": True, "engine_replicas": 2, **cluster}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"cluster": {"engine_replicas": 2}}, "needs cluster.enabled = true"),
        ({"run": {"device": "cpu"}, "cluster": engine_cluster(engine_gpus=1)}, "would not use their GPUs"),
        ({"engine": {"backend": "vllm"}, "cluster": engine_cluster()}, "each engine replica needs a GPU"),
        ({"run": {"device": "cuda"}, "cluster": engine_cluster()}, "each engine replica needs a GPU"),
        ({"cluster": engine_cluster(engine_gpus=2)}, "the HF engine uses one GPU"),
        ({"engine": {"backend": "vllm"}, "cluster": engine_cluster(engine_gpus=1.5)}, "whole number"),
        ({"cluster": engine_cluster(adapters="nfs")}, "adapters"),
    ],
)
def test_engine_replica_combinations_that_cannot_work_are_refused(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        validate_config(data)


def test_engine_replicas_that_can_work_are_accepted() -> None:
    validate_config({"run": {"device": "cpu"}, "engine": {"backend": "vllm"}, "cluster": engine_cluster()})  # vLLM-CPU
    validate_config({"engine": {"backend": "vllm"}, "cluster": engine_cluster(engine_gpus=0.5)})  # two share a GPU
    validate_config({"cluster": engine_cluster(engine_gpus=1)})  # HF on a GPU each


def test_a_replica_owns_the_gpus_ray_gave_it() -> None:
    from spade_async.hardware.placement import PlacementError, replica_placement

    cpu = replica_placement(validate_config({"cluster": engine_cluster()}), gpu_count=0)
    assert cpu.engine_device == "cpu" and cpu.engine_gpus == ()
    hf = replica_placement(validate_config({"cluster": engine_cluster(engine_gpus=1)}), gpu_count=1)
    assert hf.engine_device == "cuda:0" and hf.learner_gpu is None
    vllm = replica_placement(
        validate_config(
            {
                "engine": {"backend": "vllm"},
                "placement": {"tensor_parallel_size": 2},
                "cluster": engine_cluster(engine_gpus=4),
            }
        ),
        gpu_count=4,
    )
    assert (vllm.engine_gpus, vllm.tensor_parallel_size, vllm.data_parallel_size) == ((0, 1, 2, 3), 2, 2)
    half = replica_placement(
        validate_config({"engine": {"backend": "vllm"}, "cluster": engine_cluster(engine_gpus=0.5)}), gpu_count=1
    )
    assert half.gpu_memory_utilization == pytest.approx(0.45)  # half of dedicated_memory_utilization
    with pytest.raises(PlacementError, match="sees none"):
        replica_placement(validate_config({"cluster": engine_cluster(engine_gpus=1)}), gpu_count=0)


def test_a_driver_with_remote_vllm_replicas_needs_no_gpu_or_vllm_itself() -> None:
    from spade_async.run.assemble import preflight

    cfg = validate_config(
        {"engine": {"backend": "vllm"}, "cluster": engine_cluster(engine_gpus=1), "model": {"name": str(ROOT)}}
    )  # any existing folder: not the embedded model
    placement = preflight(cfg, gpu_count=0)
    assert placement.learner_gpu is None  # the learner on this CPU; vLLM only on the replicas' nodes


def test_config_show_cluster_says_where_engine_replicas_go() -> None:
    out = (
        CliRunner()
        .invoke(
            cli,
            [
                "config",
                "show",
                "tiny",
                "--cluster",
                "--set",
                "cluster.enabled=true",
                "--set",
                "cluster.engine_replicas=3",
                "--set",
                'cluster.adapters="shared_path"',
            ],
            catch_exceptions=False,
        )
        .output
    )
    layout = out.split("# cluster layout:")[1]
    assert "engine: 3 replica(s)" in layout and "the HF engine on the CPU" in layout
    assert "by shared path" in layout and "learner" in layout
    bad = CliRunner().invoke(cli, ["config", "show", "tiny", "--cluster", "--set", "cluster.engine_replicas=2"])
    assert bad.exit_code != 0 and "needs cluster.enabled = true" in bad.output
