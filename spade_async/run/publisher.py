"""Publishing a trained adapter: written to the run folder, loaded by the engine, probed, and
the older versions pruned.

Why one owner: each new learner version goes through the same four steps in this order, and
each has a reason to be where it is. The folder is written first (the engine loads it by path);
the in-loop evaluation scores the base model before any adapter goes live (the hook
``before_publish``); the probe (:mod:`spade_async.adapter_check`) checks right after the load
that the engine serves what the learner trained, and ``engine.probe.stop_after`` mismatches in
a row stop the run; only then are old versions deleted (:mod:`spade_async.run.retention` keeps
the live one, the previous one and the checkpointed ones). ``engine.probe`` and
``run.keep_adapters`` are the config it reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from spade_async.adapter_check import AdapterProbe
from spade_async.config.sections import AdapterProbeConfig
from spade_async.engine.base import Engine
from spade_async.hardware.cpu_share import CPU_SHARE
from spade_async.learner.base import Learner
from spade_async.memory.store import Store
from spade_async.run.control import RunControl
from spade_async.run.retention import adapter_folder, prune_adapters


class AdapterPublisher:
    """Makes the learner's newest version the one the engine serves."""

    def __init__(
        self,
        run_dir: Path,
        *,
        engine: Engine,
        learner: Learner,
        store: Store,
        control: RunControl,
        report: Callable[[str], None],
        keep: int,
        probe: AdapterProbe | None,
        probe_cfg: AdapterProbeConfig,
        before_publish: Callable[[], Awaitable[None]],
    ) -> None:
        self.run_dir = run_dir
        self.engine = engine
        self.learner = learner
        self.store = store
        self.control = control
        self.report = report
        self.keep = keep
        self.probe = probe
        """Checks the engine after each adapter load (None: not checked, e.g. a scripted learner)."""
        self.probe_cfg = probe_cfg
        self.before_publish = before_publish
        self.probe_failures = 0
        """Adapter probe mismatches in a row."""

    async def publish(self, step: int) -> dict[str, float]:
        """Write, load, probe and prune the learner's current version (after ``step``'s update);
        returns the probe's metrics (none when not probed)."""
        version = self.learner.version
        path = adapter_folder(self.run_dir, version)
        await anyio.to_thread.run_sync(CPU_SHARE.staged(self.learner.save_adapter), path)
        await self.before_publish()  # the base model is scored before any adapter goes live
        await self.engine.load_adapter(version, str(path))
        metrics = await self._probe(step, version) if self.probe is not None else {}
        await anyio.to_thread.run_sync(prune_adapters, self.run_dir, self.keep, {version})
        return metrics

    async def _probe(self, step: int, version: int) -> dict[str, float]:
        """Run the adapter probe after a load; a mismatch is an event and a warning, and
        ``engine.probe.stop_after`` of them in a row stop the run."""
        assert self.probe is not None
        result = await self.probe.check(version)
        if result.ok:
            self.probe_failures = 0
            return result.metrics()
        self.probe_failures += 1
        limit = self.probe_cfg.stop_after
        message = f"adapter probe after loading v{version}: {result.problem} ({self.probe_failures} in a row)"
        await self.store.record_event(step, "adapter_mismatch", message)
        self.report(f"warning: {message}")
        if self.probe_failures >= limit and not self.control.stop_requested:
            stop = (
                f"stopping: {limit} adapter probes in a row failed. Check that the engine loads adapters "
                "(engine.backend; for vLLM: enable_lora, max_lora_rank >= model.lora_rank, that the adapter "
                "folder it is given is the one just written), that engine and learner load the same base "
                "(model.name, model.dtype, model.qlora_serve), and the sampling temperature; "
                "engine.probe.enabled = false turns the check off"
            )
            await self.store.record_event(step, "adapter_stop", stop)
            self.report(stop)
            self.control.request_stop()
        return result.metrics()
