"""A local Ray cluster of two simulated nodes (Ray's own cluster utilities), one per module.

Why small: the test machine has 2 busy cores. Each node offers one CPU, so two sandbox pool
actors of one CPU each must land on different nodes; no dashboard; a 100 MB object store.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

ray = pytest.importorskip("ray")  # the dev extra installs it; skipped only outside the dev install

NODE = {"num_cpus": 1, "object_store_memory": 100 * 1024 * 1024}


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[object]:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    cluster.add_node(**NODE)
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
