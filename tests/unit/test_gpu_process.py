"""GPU process plumbing on CPU: the CUDA probe never initialises CUDA, the engine's
CUDA_VISIBLE_DEVICES is scoped, and processes started under the SIGINT shield ignore Ctrl-C."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from spade_async.hardware import gpu
from spade_async.hardware.gpu import (
    NVML_CHECK,
    cuda_device_count,
    scoped_visible_devices,
    sigint_shielded,
    visible_devices_value,
)


def test_importing_the_package_makes_cuda_probes_nvml_based() -> None:
    code = "import os, spade_async; print(os.environ.get('PYTORCH_NVML_BASED_CUDA_CHECK'))"
    env = {k: v for k, v in os.environ.items() if k != NVML_CHECK}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "1"


def test_a_process_that_probed_leaves_cuda_uninitialised() -> None:
    code = textwrap.dedent("""
        import os
        os.environ.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
        from spade_async.hardware.gpu import cuda_device_count
        cuda_device_count()
        import torch
        print(os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"], torch.cuda.is_initialized())
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.stdout.split() == ["1", "False"]


def test_probe_counts_through_nvml_and_never_calls_the_cuda_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a GPU box: a CUDA build of torch whose NVML sees 3 GPUs. Calling the CUDA runtime
    (cudaGetDeviceCount, which initialises CUDA and poisons vLLM's fork) fails the test."""
    import torch

    def poisoned() -> int:
        raise AssertionError("the probe initialised CUDA")

    monkeypatch.delenv(NVML_CHECK, raising=False)
    monkeypatch.setattr(torch.backends.cuda, "is_built", lambda: True)
    monkeypatch.setattr(torch.cuda, "_is_compiled", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: 3)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(torch._C, "_cuda_getDeviceCount", poisoned, raising=False)
    assert cuda_device_count() == 3
    assert os.environ[NVML_CHECK] == "1"
    assert torch.cuda.is_available()  # and any later library check goes through NVML too

    # NVML cannot answer: the count comes from a subprocess, never from this process's runtime.
    monkeypatch.setattr(torch.cuda, "_device_count_nvml", lambda: -1)
    monkeypatch.setattr(gpu, "_count_in_subprocess", lambda: 2)
    assert cuda_device_count() == 2


def test_cpu_only_torch_counts_zero() -> None:
    assert cuda_device_count() == 0


def test_engine_gpus_map_through_the_parents_visible_devices() -> None:
    assert visible_devices_value([1, 2], None) == "1,2"
    assert visible_devices_value([1, 2], "") == "1,2"
    assert visible_devices_value([0, 2], "4,5,7") == "4,7"
    assert visible_devices_value([1], "GPU-aaa, GPU-bbb") == "GPU-bbb"


def test_visible_devices_are_scoped_to_the_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with scoped_visible_devices([1, 2, 3]) as value:
        assert value == "1,2,3" and os.environ["CUDA_VISIBLE_DEVICES"] == "1,2,3"
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(os.environ['CUDA_VISIBLE_DEVICES'])"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert child.stdout.strip() == "1,2,3"  # what the engine's processes inherit
    assert "CUDA_VISIBLE_DEVICES" not in os.environ  # the learner sees every GPU again
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    with pytest.raises(RuntimeError), scoped_visible_devices([1]):
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
        raise RuntimeError("engine failed to start")
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "2,3"


# -- SIGINT isolation ------------------------------------------------------------------

CHILD = textwrap.dedent("""
    import signal, sys
    got = []
    signal.signal(signal.SIGINT, lambda *a: got.append(1))  # as vLLM's EngineCore does
    print("ready", flush=True)
    sys.stdin.readline()  # the parent has sent SIGINT by now
    pending = signal.SIGINT in signal.sigpending()
    print(f"handled={bool(got)} pending={pending}", flush=True)
""")


def _exec_child() -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _interrupt(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGINT)  # what a terminal Ctrl-C sends to the foreground group
    proc.stdin.write("go\n")
    proc.stdin.flush()
    line = proc.stdout.readline().strip()
    proc.wait(timeout=60)
    return line


def test_a_process_started_under_the_shield_never_sees_sigint() -> None:
    with sigint_shielded():
        proc = _exec_child()  # fork + exec, as multiprocessing's spawn does
    assert _interrupt(proc) == "handled=False pending=True"
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # this thread's mask is restored


def test_without_the_shield_the_child_handles_sigint() -> None:
    """Control: the same child, started normally, runs its handler (so the test above can fail)."""
    assert _interrupt(_exec_child()) == "handled=True pending=False"


def _forked_child(conn: Any) -> None:
    got: list[int] = []
    signal.signal(signal.SIGINT, lambda *a: got.append(1))
    conn.send("ready")
    conn.recv()
    conn.send((bool(got), signal.SIGINT in signal.sigpending()))


def test_a_forked_child_under_the_shield_never_sees_sigint() -> None:
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    with sigint_shielded():
        proc = ctx.Process(target=_forked_child, args=(child,))
        proc.start()
    assert parent.recv() == "ready"
    os.kill(proc.pid, signal.SIGINT)
    parent.send("go")
    assert parent.recv() == (False, True)
    proc.join(timeout=60)
    assert proc.exitcode == 0
