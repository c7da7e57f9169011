"""Remote engine replicas (Ray actors on two simulated nodes) behind the Engine protocol:
routing by affinity, adapters by content, the stale-version guard, retries after a lost replica."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from spade_async.cluster.engine import RemoteEngine
from spade_async.cluster.errors import ClusterError
from spade_async.config import Config
from spade_async.engine.base import Engine, GenerationRequest, Sampling
from tests.cluster.test_remote_pool import kill_for_sure, wait_cpus

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

KEYS = [f"env-{i}" for i in range(8)]


def engine_config(model: Path, **cluster: object) -> Config:
    return Config.model_validate(
        {
            "run": {"device": "cpu"},
            "model": {"name": str(model)},
            "engine": {"batch_size": 8, "max_model_len": 512},
            "cluster": {"enabled": True, "engine_replicas": 2, "engine_cpus": 0.5, "start_timeout_s": 180.0, **cluster},
        }
    )


@pytest.fixture
async def engine(ray_cluster: object, tiny_model_dir: Path) -> AsyncIterator[RemoteEngine]:
    remote = await RemoteEngine.start(engine_config(tiny_model_dir), str(tiny_model_dir))
    try:
        yield remote
    finally:
        await remote.aclose()
    assert wait_cpus(2.0) == 2.0  # every replica actor ended


def request(i: int, key: str | None, new: int = 3, seed: int | None = None) -> GenerationRequest:
    return GenerationRequest([1, 2, 3, 10 + i], Sampling(max_new_tokens=new, seed=seed), affinity=key)


async def served(engine: RemoteEngine) -> dict[int, int]:
    return {r["index"]: r["served"] for r in await engine.info()}


async def test_a_key_stays_on_one_replica_keys_spread_and_order_is_kept(engine: RemoteEngine) -> None:
    assert isinstance(engine, Engine)
    assert engine.replicas == engine.live_replicas == 2
    assert len({m.node for m in engine.members}) == 2  # one replica per simulated node
    chosen: dict[str, set[int]] = {key: set() for key in KEYS}
    for _ in range(2):  # every key twice, one call at a time: which replica's count grew?
        for i, key in enumerate(KEYS):
            before = await served(engine)
            (out,) = await engine.generate([request(i, key)])
            after = await served(engine)
            chosen[key] |= {m for m in after if after[m] != before[m]}
            assert out.prompt_ids == request(i, key).prompt_ids
    assert all(len(replicas) == 1 for replicas in chosen.values()), chosen  # same key, same replica
    assert set().union(*chosen.values()) == {0, 1}  # different keys use both replicas
    mixed = [request(i, KEYS[i % len(KEYS)] if i % 3 else None) for i in range(10)]
    outs = await engine.generate(mixed)
    assert [o.prompt_ids for o in outs] == [r.prompt_ids for r in mixed]  # split per replica, reassembled in order
    assert all(o.adapter_version == 0 for o in outs)
    assert engine.encode("hello") == engine.tokenizer.encode(
        "hello", add_special_tokens=False
    )  # tokenizer on the driver
    assert engine.retries == 0 and engine.events == []


def save_adapter(model_dir: Path, out: Path, seed: int) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(str(model_dir)),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    model.save_pretrained(str(out))
    return out


async def test_an_adapter_reaches_every_replica_by_content(
    engine: RemoteEngine, tiny_model_dir: Path, tmp_path: Path
) -> None:
    probes = [request(i, key, new=4, seed=5) for i, key in enumerate(KEYS)]
    base = await engine.generate(probes)
    folder = save_adapter(tiny_model_dir, tmp_path / "run" / "adapters" / "v1", seed=1)
    await engine.load_adapter(1, str(folder))
    assert engine.adapter_version == 1
    for replica in await engine.info():  # each replica loaded its own copy, written from the bytes sent
        assert replica["adapter_version"] == 1
        (copy,) = replica["adapter_dirs"]
        assert not copy.startswith(str(tmp_path))
        for f in folder.iterdir():
            assert (Path(copy) / f.name).read_bytes() == f.read_bytes()
    tuned = await engine.generate(probes)
    assert {o.adapter_version for o in tuned} == {1}
    assert [o.logprobs for o in tuned] != [o.logprobs for o in base]  # the same seeds, other weights
    # shared_path: the replicas read the folder themselves (a run folder every node mounts)
    engine.cluster = engine.cluster.model_copy(update={"adapters": "shared_path"})
    await engine.load_adapter(2, str(save_adapter(tiny_model_dir, tmp_path / "v2", seed=2)))
    assert {r["adapter_version"] for r in await engine.info()} == {2}
    assert {o.adapter_version for o in await engine.generate(probes)} == {2}


async def test_a_replica_that_misses_a_version_is_lost_not_served_stale(
    engine: RemoteEngine, tiny_model_dir: Path, tmp_path: Path
) -> None:
    doomed, kept = engine.members
    (doomed_root,) = [Path(r["adapter_root"]) for r in await engine.info() if r["index"] == doomed.index]
    assert doomed_root.is_dir()
    # The next adapter load fails in this replica's process only (the project's failpoint).
    await doomed.actor.__ray_call__.remote(lambda _: os.environ.__setitem__("SPADE_ASYNC_RAISE_AT", "engine_adapter:1"))
    await engine.load_adapter(1, str(save_adapter(tiny_model_dir, tmp_path / "v1", seed=1)))
    assert engine.adapter_version == 1 and engine.live_replicas == 1
    assert doomed.lost is not None and "stale" in engine.events[0] and "injected failure" in engine.events[0]
    outs = await engine.generate([request(i, key) for i, key in enumerate(KEYS)])
    assert {o.adapter_version for o in outs} == {1}  # every key, the doomed replica's too, gets v1
    assert [r["index"] for r in await engine.info()] == [kept.index]
    assert wait_cpus(1.5) == 1.5  # the stale replica's actor was killed (its half CPU is free)
    # ... without its shutdown(), so its adapter folder stayed; the next replica started on the
    # host removes it (the kept replica's folder stays: its process runs).
    assert doomed_root.is_dir()
    later = await RemoteEngine.start(engine_config(tiny_model_dir, engine_replicas=1), str(tiny_model_dir))
    try:
        assert not doomed_root.exists()
        (kept_info,) = [r for r in await engine.info() if r["index"] == kept.index]
        assert await anyio.Path(kept_info["adapter_root"]).is_dir()
    finally:
        await later.aclose()


async def test_a_replica_killed_mid_generate_has_its_requests_retried(
    engine: RemoteEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    doomed = engine.replica_for(KEYS[0])
    roots = [Path(r["adapter_root"]) for r in await engine.info()]  # killed below: no shutdown() removes them
    batch = [request(i, key, new=48) for i, key in enumerate(KEYS)]
    on_doomed = sum(engine.replica_for(key) is doomed for key in KEYS)
    results: list[list[object]] = []
    sent = anyio.Event()
    call = engine._call

    async def watched(member: object, method: str, *args: object) -> dict[str, object]:
        if member is doomed and method == "generate":
            sent.set()
        return await call(member, method, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "_call", watched)

    async def go() -> None:
        results.append(list(await engine.generate(batch)))

    async with anyio.create_task_group() as tg:
        tg.start_soon(go)
        await sent.wait()  # the call is on its way to the doomed replica
        ray.kill(doomed.actor, no_restart=True)
    (outs,) = results
    assert [o.prompt_ids for o in outs] == [r.prompt_ids for r in batch]  # every request completed, in order
    assert all(len(o.token_ids) > 0 for o in outs)
    assert engine.retries == on_doomed > 0
    assert engine.live_replicas == 1 and len(engine.events) == 1 and "lost" in engine.events[0]
    assert engine.replica_for(KEYS[0]) is not doomed  # its keys moved
    # With no replica left, a clear error.
    await kill_for_sure(engine.replica_for(KEYS[0]).actor)
    with pytest.raises(ClusterError, match="every engine replica was lost"):
        for _ in range(2):  # the first call finds the last replica dead and retries on none
            await engine.generate(batch[:1])
    assert engine.live_replicas == 0
    for root in roots:  # what this test's replicas left (the next replica started would sweep them)
        shutil.rmtree(root)
