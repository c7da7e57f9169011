"""Hostile envs: TCP/UDP/raw/Unix-socket connects to listeners this test starts on loopback.
Each attack is also run unsandboxed (positive control) so the test can fail."""

# ruff: noqa: ASYNC240 - tests touch small local files and start victims directly

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from spade_async.sandbox.pool import SandboxPool
from tests.sandbox.conftest import assert_serves, hostile, unsandboxed

pytestmark = pytest.mark.anyio


class Listener:
    """A loopback listener counting what reaches it."""

    def __init__(self, family: int, kind: int, address: object) -> None:
        self.sock = socket.socket(family, kind)
        self.sock.bind(address)
        self.sock.settimeout(0.1)
        if kind == socket.SOCK_STREAM:
            self.sock.listen()
        self.received: list[bytes] = []
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop:
            try:
                if self.sock.type == socket.SOCK_STREAM:
                    conn, _ = self.sock.accept()
                    conn.settimeout(1)
                    self.received.append(conn.recv(100) or b"<connected>")
                    conn.close()
                else:
                    self.received.append(self.sock.recv(100))
            except (TimeoutError, OSError):
                continue

    def settle(self) -> list[bytes]:
        time.sleep(0.15)
        return list(self.received)

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        self.sock.close()


@pytest.fixture
def tcp() -> Iterator[Listener]:
    listener = Listener(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0))
    yield listener
    listener.close()


async def _attack(pool: SandboxPool, name: str, action: str) -> str:
    async with await pool.open(hostile(name)) as env:
        await env.reset(0)
        return (await env.step(action)).obs


async def test_tcp_connect(pool: SandboxPool, tcp: Listener) -> None:
    target = f"127.0.0.1:{tcp.sock.getsockname()[1]}"
    assert (await _attack(pool, "tcp_connect", target)).startswith("DENIED")
    assert tcp.settle() == []
    assert unsandboxed("tcp_connect", target) == "CONNECTED"
    assert tcp.settle() == [b"exfiltrated"]
    await assert_serves(pool)


async def test_tcp6_connect(pool: SandboxPool) -> None:
    try:
        listener = Listener(socket.AF_INET6, socket.SOCK_STREAM, ("::1", 0))
    except OSError:
        pytest.fail("this host has no IPv6 loopback; the test needs one")
    try:
        target = f"[::1]:{listener.sock.getsockname()[1]}"
        assert (await _attack(pool, "tcp_connect", target)).startswith("DENIED")
        assert listener.settle() == []
        assert unsandboxed("tcp_connect", target) == "CONNECTED"
        assert listener.settle() == [b"exfiltrated"]
    finally:
        listener.close()


async def test_udp_send(pool: SandboxPool) -> None:
    listener = Listener(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))
    try:
        target = f"127.0.0.1:{listener.sock.getsockname()[1]}"
        assert (await _attack(pool, "udp_send", target)).startswith("DENIED")
        assert listener.settle() == []
        assert unsandboxed("udp_send", target) == "SENT"
        assert listener.settle() == [b"exfiltrated"]
    finally:
        listener.close()
    await assert_serves(pool)


@pytest.mark.parametrize("abstract", [False, True])
async def test_unix_socket_connect(pool: SandboxPool, tmp_path: Path, abstract: bool) -> None:
    path = f"\0spade-test-{time.monotonic_ns()}" if abstract else str(tmp_path / "listener.sock")
    listener = Listener(socket.AF_UNIX, socket.SOCK_STREAM, path)
    tmp_path.chmod(0o777)
    if not abstract:
        Path(path).chmod(0o777)
    action = "@" + path[1:] if abstract else path
    try:
        assert (await _attack(pool, "unix_connect", action)).startswith("DENIED")
        assert listener.settle() == []
        assert unsandboxed("unix_connect", action) == "CONNECTED"
        assert listener.settle() == [b"exfiltrated"]
    finally:
        listener.close()
    await assert_serves(pool)


async def test_raw_socket(pool: SandboxPool) -> None:
    assert (await _attack(pool, "raw_socket", "")).startswith("DENIED")
    assert unsandboxed("raw_socket", "") == "RAW"  # root may open raw sockets outside the sandbox
    await assert_serves(pool)


async def test_listen(pool: SandboxPool) -> None:
    assert (await _attack(pool, "tcp_listen", "")).startswith("DENIED")
    assert unsandboxed("tcp_listen", "").startswith("LISTENING")
    await assert_serves(pool)
