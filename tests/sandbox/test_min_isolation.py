"""The default minimum isolation includes filesystem confinement (issue class 12): a host
with seccomp alone is refused with a message naming the missing layer and the explicit
config line that lowers the minimum; lowering it is honoured (and shows what it gives up)."""

from __future__ import annotations

import pytest

from spade_async.config import Config, SandboxConfig
from spade_async.sandbox.errors import IsolationTooLow
from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import assert_serves, hostile

pytestmark = pytest.mark.anyio


def test_default_minimum_requires_filesystem_confinement() -> None:
    assert SandboxConfig().min_isolation == "landlock" and Config().sandbox.min_isolation == "landlock"


async def test_seccomp_only_host_is_refused_with_the_fix() -> None:
    with pytest.raises(IsolationTooLow) as caught:
        await SandboxPool.start(SandboxConfig(), disable=frozenset({"landlock"}))
    message = str(caught.value)
    assert "is 'seccomp'" in message and "missing layer(s): landlock (" in message
    assert 'min_isolation = "seccomp" under [sandbox]' in message and "docs/sandbox.md" in message
    # positive control: lowered explicitly, the pool runs, and an env reads a file outside its workdir
    lowered = SandboxConfig(min_isolation="seccomp", call_timeout_s=1.0)
    async with await SandboxPool.start(lowered, disable=frozenset({"landlock"})) as pool:
        assert pool.isolation.level == "seccomp"
        async with await pool.open(hostile("read_file")) as env:
            await env.reset(0)
            assert "canary: a child must not" in (await env.step(pool.canary)).obs  # world-readable by mode
        await assert_serves(pool)
