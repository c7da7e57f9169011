"""Embeddings: the packaged MiniLM loads offline and orders by meaning; the hashing fallback is deterministic."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from spade_async.memory.embed import (
    BUILTIN_MODEL,
    DIM,
    Embedder,
    EmbedError,
    HashingEmbedder,
    builtin_model_dir,
    make_embedder,
)

TEXTS = [
    "Find the shortest path through a grid maze from the start to the exit.",
    "Navigate a labyrinth on a 2D board and reach the goal square in the fewest moves.",
    "The bakery sells sourdough bread and croissants every morning.",
]


def check_order(vecs: np.ndarray) -> None:
    assert vecs.shape == (3, DIM) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    sim = vecs @ vecs.T
    assert sim[0, 1] > sim[0, 2] and sim[0, 1] > sim[1, 2]


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_builtin_model_found_without_import() -> None:
    folder = builtin_model_dir()
    assert (folder / "model.safetensors").is_file()


def test_real_model_offline_orders_by_meaning(no_network: None) -> None:
    embedder = make_embedder(BUILTIN_MODEL)
    assert isinstance(embedder, Embedder)
    check_order(embedder.embed(TEXTS))
    assert embedder.embed([]).shape == (0, DIM)
    # callable from worker threads at once
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(embedder.embed(TEXTS[:2]))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 3
    np.testing.assert_allclose(results[0], results[1], atol=1e-5)


def test_hashing_embedder() -> None:
    embedder = make_embedder("hashing")
    assert isinstance(embedder, HashingEmbedder)
    check_order(embedder.embed(["grid maze path exit start", "grid maze path exit goal", "bakery bread"]))
    a, b = embedder.embed(TEXTS), HashingEmbedder().embed(TEXTS)
    np.testing.assert_array_equal(a, b)
    empty = embedder.embed(["", "!!"])
    assert not empty.any()  # no words: zero rows, not NaN


def test_unknown_model_name_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(EmbedError, match="never downloaded"):
        make_embedder("sentence-transformers/all-mpnet-base-v2")
    with pytest.raises(EmbedError, match="cannot load"):
        Embedder(tmp_path).embed(["x"])
