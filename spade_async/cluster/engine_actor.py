"""An engine replica on one Ray node: the actor that holds one of our engines.

Why plain data in and out: requests arrive as dicts of token ids and sampling settings and
completions go back as dicts, so the driver never trusts a pickled object of the node's, and
an error comes back as data (its kind and message) for the driver to raise. The engine is
built with :func:`spade_async.engine.factory.build_engine`, the same recipe a one-box run
uses, on the placement :func:`spade_async.hardware.placement.replica_placement` gives this node.

Why adapters arrive as bytes: the run folder lives on the driver's machine. The driver sends
an adapter's files once through Ray's object store; this actor writes them into a private
temp folder on its node and loads them from there (``cluster.adapters = "shared_path"``:
the driver sends the path instead and the folder must be mounted here). The version this
replica serves is reported back, so a replica that failed to load a version is never
mistaken for one that serves it.

Why the folder's name carries the process id: a replica lost to ``ray.kill`` (a stale version,
a crash) or to a dead node never runs :meth:`EngineActor.shutdown`, so its folder stays. The
next replica started on the host removes the folders of replicas whose process has ended
(:func:`sweep_orphaned_adapter_dirs`).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from spade_async.engine.base import Engine, GenerationRequest, Sampling
from spade_async.util.failpoints import failpoint

Outcome = dict[str, Any]
"""``{"ok": True, "value": ...}`` or ``{"ok": False, "kind": <exception class name>, "message": ...}``."""
KEEP_VERSIONS = 2
"""Adapter folders kept on the node (vLLM may re-read an evicted adapter from its path)."""
ADAPTER_DIR_PREFIX = "spade-engine-adapters-"
"""A replica's private folder is ``<tmp>/spade-engine-adapters-<pid>-<random>``."""


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def sweep_orphaned_adapter_dirs(root: Path | None = None) -> list[Path]:
    """Remove the adapter folders under ``root`` (the temp dir) of replicas whose process has
    ended; the removed folders. A folder whose process still runs, or whose name carries no
    process id, is left alone."""
    base = Path(root if root is not None else tempfile.gettempdir())
    removed = []
    for folder in base.glob(f"{ADAPTER_DIR_PREFIX}*-*"):
        pid = folder.name.removeprefix(ADAPTER_DIR_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or _process_alive(int(pid)) or not folder.is_dir():
            continue
        shutil.rmtree(folder, ignore_errors=True)  # another user's folder stays (and is not listed)
        if not folder.exists():
            removed.append(folder)
    return removed


def request_to_dict(request: GenerationRequest) -> dict[str, Any]:
    """A request as plain data (the driver's side of the wire)."""
    return {
        "prompt_ids": list(request.prompt_ids),
        "sampling": asdict(request.sampling),
        "role": request.role,
        "affinity": request.affinity,
    }


def request_from_dict(data: dict[str, Any]) -> GenerationRequest:
    s = dict(data["sampling"])
    sampling = Sampling(
        float(s["temperature"]),
        float(s["top_p"]),
        int(s["max_new_tokens"]),
        tuple(str(x) for x in s.get("stop", ())),
        s.get("seed"),
        s.get("enable_thinking"),
    )
    return GenerationRequest(
        [int(t) for t in data["prompt_ids"]], sampling, str(data.get("role", "agent")), data.get("affinity")
    )


def _failed(exc: BaseException) -> Outcome:
    return {"ok": False, "kind": type(exc).__name__, "message": str(exc)}


class EngineActor:
    """Holds one engine; made remote with ``ray.remote`` by :class:`~spade_async.cluster.engine.RemoteEngine`."""

    def __init__(self) -> None:
        self._engine: Engine | None = None
        self._dir: Path | None = None
        self._loaded: list[Path] = []
        self.served = 0

    def _live(self) -> Engine:
        if self._engine is None:
            raise RuntimeError("this engine replica was never started")
        return self._engine

    async def start(self, cfg: dict[str, Any], model_path: str) -> Outcome:
        """Build the engine on this node (``model_path`` is resolved here: a hub id in this
        node's Hugging Face cache, or a folder present on this node)."""
        import anyio
        import ray

        from spade_async.config import Config
        from spade_async.engine.embedded import resolve_model_path
        from spade_async.engine.factory import build_engine
        from spade_async.hardware.gpu import cuda_device_count
        from spade_async.hardware.placement import replica_placement

        where = {"node": ray.get_runtime_context().get_node_id()[:8], "host": socket.gethostname(), "pid": os.getpid()}
        try:
            config = Config.model_validate(cfg)
            placement = replica_placement(config, cuda_device_count())
            path = await anyio.to_thread.run_sync(resolve_model_path, model_path)
            self._engine = await anyio.to_thread.run_sync(build_engine, config, path, placement)
        except Exception as exc:  # a node that cannot host the engine says why, as data
            return {**_failed(exc), **where}
        sweep_orphaned_adapter_dirs()
        self._dir = Path(tempfile.mkdtemp(prefix=f"{ADAPTER_DIR_PREFIX}{os.getpid()}-"))
        return {
            "ok": True,
            "value": {"device": placement.engine_device, "backend": config.engine.backend, "model_path": path},
            **where,
        }

    async def generate(self, requests: list[dict[str, Any]]) -> Outcome:
        """Complete plain-data requests; plain-data completions (each with the adapter version
        that produced it) in the same order."""
        try:
            completions = await self._live().generate([request_from_dict(r) for r in requests])
        except Exception as exc:  # e.g. a prompt longer than engine.max_model_len
            return _failed(exc)
        self.served += len(requests)
        return {"ok": True, "value": [asdict(c) for c in completions]}

    def _write(self, version: int, files: dict[str, bytes]) -> Path:
        assert self._dir is not None
        folder = Path(tempfile.mkdtemp(prefix=f"v{version}-", dir=self._dir))
        for name, data in files.items():
            rel = Path(name)
            if rel.is_absolute() or ".." in rel.parts:
                raise ValueError(f"adapter file name {name!r} is not inside the adapter folder")
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(data)
        return folder

    async def load_adapter(self, version: int, files: dict[str, bytes] | None, path: str | None) -> Outcome:
        """Make adapter ``version`` live, from its files' bytes (written to this node's private
        folder) or, with ``files`` None, from ``path`` read directly. Answers the version this
        replica now serves."""
        import anyio

        written: Path | None = None
        try:
            failpoint("engine_adapter")  # a replica that cannot load this version (tests)
            if files is not None:
                written = await anyio.to_thread.run_sync(self._write, version, files)
            source = str(written) if written is not None else str(path)
            await self._live().load_adapter(version, source)
        except Exception as exc:
            if written is not None:
                shutil.rmtree(written, ignore_errors=True)
            return _failed(exc)
        if written is not None:
            self._loaded.append(written)
            for old in self._loaded[:-KEEP_VERSIONS]:
                shutil.rmtree(old, ignore_errors=True)
            self._loaded = self._loaded[-KEEP_VERSIONS:]
        return {"ok": True, "value": int(self._live().adapter_version)}

    async def info(self) -> dict[str, Any]:
        """Where it runs, the adapter version it serves, requests served, adapter folders kept
        (and the private folder that holds them)."""
        engine = self._engine
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "adapter_version": int(engine.adapter_version) if engine is not None else None,
            "served": self.served,
            "adapter_dirs": [str(p) for p in self._loaded],
            "adapter_root": str(self._dir) if self._dir is not None else None,
            "generated_tokens": int(engine.generated_tokens) if engine is not None else 0,
        }

    async def shutdown(self) -> None:
        """Release the engine and delete the adapter folder (the actor is killed after this)."""
        engine, self._engine = self._engine, None
        if engine is not None:
            await engine.aclose()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
