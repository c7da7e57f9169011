"""Is a ``.safetensors`` file whole? Its header parses and its size is what the header says.

Why: a checkpoint or an export interrupted while an adapter was written leaves a file that
``safetensors`` refuses only when it is loaded (a ``SafetensorError`` deep in a resume), or
that a plain copy passes on as if it were good. The format makes the check cheap: 8 bytes of
little-endian header length, that many bytes of JSON naming every tensor's
``data_offsets`` into the data that follows, and nothing after the last tensor's end. Reading
the header alone (never the tensors) tells a half-written file from a whole one.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

MAX_HEADER_BYTES = 100 * 1024 * 1024
"""safetensors' own limit on the JSON header."""


def safetensors_problem(path: Path) -> str | None:
    """What is wrong with the safetensors file ``path`` (None when it is whole)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                return f"{path}: {size} bytes, too short for a safetensors file (half-written?)"
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER_BYTES or 8 + n > size:
                return f"{path}: its header says {n} bytes but the file has {size} (half-written?)"
            header = json.loads(fh.read(n).decode("utf-8"))
    except OSError as exc:
        return f"{path}: cannot read it ({exc.strerror or exc})"
    except (UnicodeDecodeError, ValueError, RecursionError):
        return f"{path}: its header is not valid JSON (damaged or half-written)"
    if not isinstance(header, dict):
        return f"{path}: its header is not a JSON object (damaged)"
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
            return f"{path}: tensor {name!r} has no valid data_offsets (damaged)"
        end = max(end, offsets[1])
    if size != 8 + n + end:
        return f"{path}: {size} bytes where its header promises {8 + n + end} (half-written or damaged)"
    return None
