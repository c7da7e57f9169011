"""Corpus sources and the resumable cursor."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from spade_async.config import CorpusConfig
from spade_async.selfplay.design.corpus import (
    BuiltinSource,
    Corpus,
    CorpusError,
    Document,
    JsonlSource,
    ListSource,
    builtin_documents,
    cut,
    hf_disk_source,
    parquet_source,
)


def write_jsonl(path: Path, records: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def docs(n: int) -> list[Document]:
    return [Document(f"d{i}", f"title {i}", f"text {i}") for i in range(n)]


# ------------------------------------------------------------------ cursor


def test_every_document_once_per_pass_in_a_seeded_order() -> None:
    corpus = Corpus(ListSource(docs(10)), seed=3)
    first = [corpus.next().id for _ in range(10)]
    second = [corpus.next().id for _ in range(10)]
    assert sorted(first) == sorted(second) == sorted(d.id for d in docs(10))
    assert first != second  # reshuffled each pass
    assert first != [d.id for d in docs(10)]  # shuffled at all
    again = Corpus(ListSource(docs(10)), seed=3)
    assert [again.next().id for _ in range(10)] == first  # stable for a seed
    other = Corpus(ListSource(docs(10)), seed=4)
    assert [other.next().id for _ in range(10)] != first


def test_state_round_trip_resumes_exactly() -> None:
    corpus = Corpus(ListSource(docs(7)), seed=1)
    for _ in range(9):  # into the second pass
        corpus.next()
    state = json.loads(json.dumps(corpus.state()))  # survives a JSON checkpoint
    expected = [corpus.next().id for _ in range(12)]
    restored = Corpus(ListSource(docs(7)), seed=999)
    restored.load_state(state)
    assert [restored.next().id for _ in range(12)] == expected


def test_load_state_refuses_a_changed_source() -> None:
    state = Corpus(ListSource(docs(5))).state()
    changed = Corpus(ListSource(docs(6)))
    with pytest.raises(CorpusError, match="changed"):
        changed.load_state(state)
    changed.load_state({**state, "position": 4}, strict=False)
    changed.next()
    with pytest.raises(CorpusError, match="malformed"):
        changed.load_state({"seed": 0})


def test_documents_cut_to_max_chars() -> None:
    long = Document("x", "t", "word " * 1000)
    corpus = Corpus(ListSource([long]), max_chars=100)
    text = corpus.next().text
    assert len(text) <= 100 and text.endswith("…")
    assert cut("short", 100) == "short"
    assert len(cut("a" * 500, 50)) == 50  # no space to break at: hard cut


# ------------------------------------------------------------------ built-in


def test_builtin_corpus_from_installed_docs() -> None:
    corpus = Corpus.from_config(CorpusConfig(), seed=0)
    all_docs = builtin_documents()
    ids = {d.id for d in all_docs}
    assert {"builtin:math.comb", "builtin:itertools.permutations", "builtin:heapq.heapify"} <= ids
    if importlib.util.find_spec("sympy") is not None:
        assert "builtin:sympy.isprime" in ids
    assert len(ids) == len(all_docs) == len(corpus)
    assert all(len(d.text) >= 50 for d in all_docs)
    doc = corpus.next()
    assert doc.text and doc.title and len(doc.text) <= CorpusConfig().max_chars
    assert len(BuiltinSource(include_sympy=False)) < len(corpus)


# ------------------------------------------------------------------ JSONL


def test_jsonl_source(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"body": "Alpha text.\nmore", "title": "Alpha", "id": "a1"},
            {"body": "   "},  # empty: skipped
            {"body": "Beta text."},
        ],
    )
    with path.open("a") as fh:
        fh.write("\n")  # blank lines are fine
    source = JsonlSource(path, text_field="body")
    assert len(source) == 2
    assert source.get(0) == Document("a1", "Alpha", "Alpha text.\nmore")
    assert source.get(1) == Document("c.jsonl:3", "Beta text.", "Beta text.")
    cfg = CorpusConfig(source="jsonl", path=str(path), text_field="body", max_chars=5)
    corpus = Corpus.from_config(cfg, seed=0)
    assert {corpus.next().text for _ in range(2)} == {"Alph…", "Beta…"}


@pytest.mark.parametrize(
    ("lines", "field", "match"),
    [
        (
            ['{"text": "ok"}', '{"txt": "x"}'],
            "text",
            r"c\.jsonl:2: no field 'text' \(fields: txt\)",
        ),
        (['{"text": "ok"}', "{not json"], "text", r"c\.jsonl:2: not valid JSON"),
        (['["a list"]'], "text", r"c\.jsonl:1: expected a JSON object"),
        (['{"text": 3}'], "text", r"c\.jsonl:1: field 'text' is int"),
        (['{"text": ""}'], "text", r"c\.jsonl: no documents"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path: Path, lines: list[str], field: str, match: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(CorpusError, match=match) as info:
        JsonlSource(path, field)
    assert "\n" not in str(info.value)


def test_missing_paths_are_clear(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"nope\.jsonl: no such file"):
        JsonlSource(tmp_path / "nope.jsonl")
    with pytest.raises(CorpusError, match="is a folder"):
        JsonlSource(tmp_path)
    with pytest.raises(CorpusError, match="no such"):
        parquet_source(tmp_path / "nope.parquet")
    with pytest.raises(CorpusError, match="no such"):
        hf_disk_source(tmp_path / "nope")


# ------------------------------------------------------------------ optional packages


def test_parquet_without_pyarrow_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    (tmp_path / "c.parquet").write_bytes(b"")
    with pytest.raises(CorpusError, match="pip install pyarrow"):
        parquet_source(tmp_path / "c.parquet")


def test_hf_disk_without_datasets_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(CorpusError, match="pip install datasets"):
        hf_disk_source(tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="pyarrow not installed")
def test_parquet_round_trip(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"content": ["one doc", "", "two doc"], "title": ["One", None, None]}), path)
    source = parquet_source(path, "content")
    assert [source.get(i) for i in range(len(source))] == [
        Document("c.parquet:0", "One", "one doc"),
        Document("c.parquet:2", "two doc", "two doc"),
    ]
    with pytest.raises(CorpusError, match=r"no column 'text' \(columns: content, title\)"):
        parquet_source(path, "text")


@pytest.mark.skipif(importlib.util.find_spec("datasets") is None, reason="datasets not installed")
def test_hf_disk_round_trip(tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict

    DatasetDict({"train": Dataset.from_dict({"text": ["a doc", "b doc"]})}).save_to_disk(str(tmp_path / "ds"))
    source = hf_disk_source(tmp_path / "ds")
    assert [source.get(i).text for i in range(len(source))] == ["a doc", "b doc"]
    with pytest.raises(CorpusError, match="no column 'body'"):
        hf_disk_source(tmp_path / "ds", "body")
