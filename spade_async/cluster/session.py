"""Joining (or starting) the Ray cluster for one run, and leaving it.

Why the run owns the connection: with ``address = "local"`` the run starts a private cluster
and must stop it at the end (Ctrl-C included); Ray's own processes are fate-shared with the
process that started them, so a kill -9 of the trainer takes them down too. With a given
address the driver only connects; our actors are never detached, so Ray ends them when the
driver goes away. A caller that already initialised Ray (tests, notebooks) keeps its
connection: the run neither re-initialises nor shuts it down.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import anyio

from spade_async.cluster.errors import ClusterError
from spade_async.config import ClusterConfig

MIB = 1024 * 1024


def require_ray() -> None:
    """Refuse, with the fix, when the ``ray`` extra is not installed."""
    if importlib.util.find_spec("ray") is None:
        raise ClusterError("cluster.enabled = true needs Ray: pip install -e '.[ray]' (Ray 2.60)")


def connect(cc: ClusterConfig) -> bool:
    """Make sure this process is a Ray driver; return whether it initialised Ray (and so must
    shut it down)."""
    require_ray()
    import ray

    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    try:
        if cc.address == "local":
            # address="local": always a new private cluster, even when another Ray cluster runs on this
            # machine (without it, ray.init joins the one named in /tmp/ray/ray_current_cluster)
            ray.init(address="local", num_cpus=cc.local_cpus, object_store_memory=cc.object_store_mib * MIB, **kwargs)
        else:
            kwargs.pop("include_dashboard")
            ray.init(address=cc.address, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"cannot join the Ray cluster at cluster.address = {cc.address!r}: {exc}") from None
    return True


def disconnect(owned: bool) -> None:
    if owned:
        import ray

        ray.shutdown()


def kill_actor(actor: Any) -> None:
    """End a Ray actor for sure, without restart; one that is gone already is fine."""
    import ray

    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # already gone
        pass


async def end_actors(live: list[Any], every: list[Any], within_s: float, owns_ray: bool) -> None:
    """Ask each ``live`` actor to ``shutdown()`` (``within_s`` for all of them), then kill
    ``every`` actor and leave Ray when this run started it. Shielded: Ctrl-C cannot leave an
    actor behind."""
    import ray

    with anyio.CancelScope(shield=True):
        refs = [actor.shutdown.remote() for actor in live]
        with anyio.move_on_after(within_s):
            for ref in refs:
                try:
                    await ref
                except ray.exceptions.RayError:
                    pass
        for actor in every:
            kill_actor(actor)
        disconnect(owns_ray)
