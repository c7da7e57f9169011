"""Controller side of an env child's private socket: send a request line, receive a reply line.

Why a hand-written channel over a non-blocking socket: it is the hot path (a step round trip
is ~0.1 ms), it must cap what it buffers (a child may send gigabytes without a newline), and
it must report end-of-file distinctly from a timeout. anyio's ``wait_readable`` keeps it
backend-neutral and cancellable by ``fail_after``.
"""

from __future__ import annotations

import socket

import anyio

CHUNK = 1 << 18


class ChannelClosed(Exception):
    """The child closed its end (it exited or was killed)."""


class ReplyTooLarge(Exception):
    """More than the cap arrived without a line end."""


class LineChannel:
    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.buffer = bytearray()

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                sent = self.sock.send(view)
            except BlockingIOError:
                await anyio.wait_writable(self.sock)
                continue
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise ChannelClosed(str(exc)) from None
            view = view[sent:]

    async def receive_line(self, max_bytes: int) -> bytes:
        scanned = 0
        while True:
            end = self.buffer.find(b"\n", scanned)
            if end >= 0:
                line = bytes(self.buffer[:end])
                del self.buffer[: end + 1]
                return line
            if len(self.buffer) > max_bytes:
                raise ReplyTooLarge(f"more than {max_bytes} bytes without a line end")
            scanned = len(self.buffer)
            try:
                chunk = self.sock.recv(CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self.sock)
                continue
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                raise ChannelClosed("end of file")
            self.buffer += chunk

    def close(self) -> None:
        self.sock.close()
