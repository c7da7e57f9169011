"""Grounding documents for the designer: JSONL, Parquet, local HF datasets, or built-in docs.

Why a cursor with explicit state: each design is grounded in "the next document", and a
resumed run must see the very same documents it would have seen without the interruption.
The order is a seeded shuffle per pass (epoch), so ``state()`` is three integers plus a
fingerprint of the source, saved in the checkpoint and restored by ``load_state``.

Why a built-in source: a first run should need no download. The docstrings of standard
library modules (math, statistics, itertools, ...) and of sympy when it is installed are
small, factual texts about mathematics and algorithms: good seeds for reasoning games.

Every problem with a configured source (missing file, bad JSON, wrong field, missing
optional package) is a :class:`CorpusError` with one line naming the file and the fix.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from spade_async.util.errors import UserError

if TYPE_CHECKING:
    from spade_async.config import CorpusConfig

BUILTIN_MODULES: tuple[str, ...] = (
    "math",
    "statistics",
    "itertools",
    "heapq",
    "bisect",
    "fractions",
    "random",
    "collections",
    "graphlib",
    "string",
    "textwrap",
)
"""Standard-library modules whose docstrings make the built-in corpus."""

SYMPY_AREAS: tuple[str, ...] = (
    "sympy.ntheory",
    "sympy.combinatorics",
    "sympy.functions.combinatorial",
    "sympy.logic",
    "sympy.sets",
    "sympy.geometry",
    "sympy.discrete",
    "sympy.concrete",
    "sympy.solvers",
    "sympy.calculus",
    "sympy.series",
)
"""Sympy subpackages close to the skills (number theory, combinatorics, logic, geometry, ...);
printing, internals and the polynomial machinery are left out."""

CHECKED_DOCUMENTS = 10_000
"""Documents a run's preflight reads (a corpus of millions is checked by its start)."""
MIN_DOC_CHARS = 50
"""Docstrings shorter than this are too thin to ground an environment."""


class CorpusError(UserError):
    """A corpus source that cannot be used; the message is one line naming the file and the reason."""

    exit_code = 2


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str


class Source(Protocol):
    """Random access to a fixed list of documents."""

    def __len__(self) -> int: ...

    def get(self, index: int) -> Document: ...

    def fingerprint(self) -> str:
        """Changes when the documents (or their order) change; checked on resume."""
        ...


def _first_line_title(text: str, limit: int = 80) -> str:
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def cut(text: str, max_chars: int) -> str:
    """``text`` shortened to at most ``max_chars``, at a word boundary when one is near, marked with …"""
    if len(text) <= max_chars:
        return text
    if max_chars <= 1:
        return text[:max_chars]
    head = text[: max_chars - 1]
    space = head.rfind(" ")
    if space >= 0.8 * len(head):
        head = head[:space]
    return head.rstrip() + "…"


# ---------------------------------------------------------------------- JSONL


class JsonlSource:
    """One JSON object per line; ``text_field`` holds the text, optional ``title`` and ``id``.

    The file is scanned once to validate every line and remember the offsets of non-empty
    documents; texts are read back on demand, so large files cost little memory.
    """

    def __init__(self, path: str | Path, text_field: str = "text"):
        self.path = Path(path)
        self.text_field = text_field
        if not self.path.exists():
            raise CorpusError(f"{self.path}: no such file (corpus.path)")
        if self.path.is_dir():
            raise CorpusError(f"{self.path}: is a folder; the jsonl source needs one .jsonl file")
        self._offsets: list[tuple[int, int]] = []  # (byte offset, line number)
        digest = hashlib.sha256()
        with self.path.open("rb") as fh:
            offset = 0
            for line_no, raw in enumerate(fh, start=1):
                digest.update(raw)
                if raw.strip():
                    record = self._parse(raw, line_no)
                    if record[self.text_field].strip():
                        self._offsets.append((offset, line_no))
                offset += len(raw)
        if not self._offsets:
            raise CorpusError(f"{self.path}: no documents with a non-empty {self.text_field!r} field")
        self._fingerprint = f"jsonl:{digest.hexdigest()}"

    def _parse(self, raw: bytes, line_no: int) -> dict[str, Any]:
        where = f"{self.path}:{line_no}"
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CorpusError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(record, dict):
            raise CorpusError(f"{where}: expected a JSON object per line, got {type(record).__name__}")
        if self.text_field not in record:
            fields = ", ".join(sorted(record)) or "none"
            raise CorpusError(f"{where}: no field {self.text_field!r} (fields: {fields}); set corpus.text_field")
        if not isinstance(record[self.text_field], str):
            kind = type(record[self.text_field]).__name__
            raise CorpusError(f"{where}: field {self.text_field!r} is {kind}, expected a string")
        return record

    def __len__(self) -> int:
        return len(self._offsets)

    def get(self, index: int) -> Document:
        offset, line_no = self._offsets[index]
        with self.path.open("rb") as fh:
            fh.seek(offset)
            record = self._parse(fh.readline(), line_no)
        text = record[self.text_field]
        title = record.get("title")
        doc_id = record.get("id")
        return Document(
            id=str(doc_id) if isinstance(doc_id, (str, int)) else f"{self.path.name}:{line_no}",
            title=title if isinstance(title, str) and title.strip() else _first_line_title(text),
            text=text,
        )

    def fingerprint(self) -> str:
        return self._fingerprint


# ---------------------------------------------------------------------- column sources


class _ColumnSource:
    """Documents held as columns in memory (Parquet and HF datasets)."""

    def __init__(
        self,
        name: str,
        texts: Sequence[Any],
        titles: Sequence[Any] | None,
        ids: Sequence[Any] | None,
    ):
        self.name = name
        keep = [i for i, t in enumerate(texts) if isinstance(t, str) and t.strip()]
        if not keep:
            raise CorpusError(f"{name}: no documents with non-empty text")
        self._texts = [texts[i] for i in keep]
        self._titles = [titles[i] for i in keep] if titles is not None else None
        self._ids = [ids[i] for i in keep] if ids is not None else None
        self._rows = keep
        digest = hashlib.sha256()
        for text in self._texts:
            digest.update(hashlib.sha256(text.encode("utf-8")).digest())
        self._fingerprint = f"columns:{digest.hexdigest()}"

    def __len__(self) -> int:
        return len(self._texts)

    def get(self, index: int) -> Document:
        text = self._texts[index]
        title = self._titles[index] if self._titles is not None else None
        doc_id = self._ids[index] if self._ids is not None else None
        return Document(
            id=str(doc_id) if isinstance(doc_id, (str, int)) else f"{Path(self.name).name}:{self._rows[index]}",
            title=title if isinstance(title, str) and title.strip() else _first_line_title(text),
            text=text,
        )

    def fingerprint(self) -> str:
        return self._fingerprint


def _check_column(where: str, columns: Sequence[str], field: str) -> None:
    if field not in columns:
        raise CorpusError(f"{where}: no column {field!r} (columns: {', '.join(columns)}); set corpus.text_field")


def parquet_source(path: str | Path, text_field: str = "text") -> _ColumnSource:
    """A Parquet file, or a folder of Parquet files read as one table (needs pyarrow)."""
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"{path}: no such file or folder (corpus.path)")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise CorpusError(f"{path}: the parquet corpus source needs pyarrow: pip install pyarrow") from None
    try:
        schema_names = (
            list(pq.read_schema(path).names) if path.is_file() else list(pq.ParquetDataset(path).schema.names)
        )
        _check_column(str(path), schema_names, text_field)
        columns = [c for c in (text_field, "title", "id") if c in schema_names]
        table = pq.read_table(path, columns=columns)
    except CorpusError:
        raise
    except Exception as exc:
        raise CorpusError(f"{path}: cannot read as Parquet ({type(exc).__name__}: {exc})") from None
    data = {c: table.column(c).to_pylist() for c in columns}
    return _ColumnSource(str(path), data[text_field], data.get("title"), data.get("id"))


def hf_disk_source(path: str | Path, text_field: str = "text") -> _ColumnSource:
    """A dataset saved with ``Dataset.save_to_disk`` (a DatasetDict uses 'train', else its first split)."""
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"{path}: no such folder (corpus.path)")
    try:
        from datasets import DatasetDict, load_from_disk
    except ImportError:
        raise CorpusError(
            f"{path}: the hf_disk corpus source needs the datasets package: pip install datasets"
        ) from None
    try:
        ds = load_from_disk(str(path))
    except Exception as exc:
        raise CorpusError(f"{path}: not a dataset saved with save_to_disk ({type(exc).__name__}: {exc})") from None
    if isinstance(ds, DatasetDict):
        if not ds:
            raise CorpusError(f"{path}: the DatasetDict has no splits")
        ds = ds["train"] if "train" in ds else ds[sorted(ds)[0]]
    _check_column(str(path), list(ds.column_names), text_field)
    titles = list(ds["title"]) if "title" in ds.column_names else None
    ids = list(ds["id"]) if "id" in ds.column_names else None
    return _ColumnSource(str(path), list(ds[text_field]), titles, ids)


# ---------------------------------------------------------------------- built-in


def _public_members(module: Any) -> Iterator[tuple[str, Any]]:
    names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
    for name in sorted(set(names)):
        try:
            yield name, getattr(module, name)
        except AttributeError:
            continue


def _doc_of(qualname: str, obj: Any) -> Document | None:
    doc = inspect.getdoc(obj)
    if not doc or len(doc) < MIN_DOC_CHARS:
        return None
    try:
        signature = str(inspect.signature(obj)) if callable(obj) else ""
    except (TypeError, ValueError):
        signature = ""
    return Document(id=f"builtin:{qualname}", title=qualname, text=f"{qualname}{signature}\n\n{doc}")


def _module_docs(module_name: str, *, methods: bool, areas: tuple[str, ...] | None = None) -> list[Document]:
    """Docs of a module and its public members (defined under one of ``areas`` if given)."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return []
    docs = [d for d in [_doc_of(module_name, module)] if d and areas is None]
    for name, obj in _public_members(module):
        if inspect.ismodule(obj):
            continue
        if not (inspect.isclass(obj) or callable(obj)):
            continue
        if areas is not None and not str(getattr(obj, "__module__", "")).startswith(areas):
            continue
        qual = f"{module_name}.{name}"
        if (doc := _doc_of(qual, obj)) is not None:
            docs.append(doc)
        if methods and inspect.isclass(obj):
            for meth_name, meth in sorted(vars(obj).items()):
                if not meth_name.startswith("_") and callable(meth):
                    if (doc := _doc_of(f"{qual}.{meth_name}", meth)) is not None:
                        docs.append(doc)
    return docs


@functools.lru_cache(maxsize=4)
def builtin_documents(include_sympy: bool = True) -> tuple[Document, ...]:
    """Docstrings of :data:`BUILTIN_MODULES` (and sympy if importable), sorted by id, deduplicated."""
    docs: list[Document] = []
    for name in BUILTIN_MODULES:
        docs.extend(_module_docs(name, methods=True))
    if include_sympy and importlib.util.find_spec("sympy") is not None:
        docs.extend(_module_docs("sympy", methods=False, areas=SYMPY_AREAS))
        docs.extend(_module_docs("sympy.combinatorics", methods=False, areas=SYMPY_AREAS))
    seen_ids: set[str] = set()
    seen_texts: set[str] = set()
    unique: list[Document] = []
    for doc in sorted(docs, key=lambda d: d.id):
        body = doc.text.split("\n\n", 1)[-1]  # inherited docstrings repeat: keep the first
        if doc.id in seen_ids or body in seen_texts:
            continue
        seen_ids.add(doc.id)
        seen_texts.add(body)
        unique.append(doc)
    return tuple(unique)


class ListSource:
    """Documents given in memory (tests, fixed prompts); ``kind`` prefixes the fingerprint."""

    def __init__(self, docs: Sequence[Document], kind: str = "list"):
        if not docs:
            raise CorpusError(f"{kind} corpus: no documents")
        self._docs = tuple(docs)
        self._fingerprint = f"{kind}:" + hashlib.sha256("\n".join(d.id for d in self._docs).encode()).hexdigest()

    def __len__(self) -> int:
        return len(self._docs)

    def get(self, index: int) -> Document:
        return self._docs[index]

    def fingerprint(self) -> str:
        return self._fingerprint


class BuiltinSource(ListSource):
    """Installed documentation as a corpus: nothing to download."""

    def __init__(self, include_sympy: bool = True):
        super().__init__(builtin_documents(include_sympy), kind="builtin")


# ---------------------------------------------------------------------- cursor


class Corpus:
    """A deterministic, resumable cursor over a source: a seeded shuffle, reshuffled each pass."""

    def __init__(self, source: Source, *, seed: int = 0, max_chars: int = 1500):
        if len(source) == 0:
            raise CorpusError("corpus source has no documents")
        self.source = source
        self.seed = seed
        self.max_chars = max_chars
        self._epoch = 0
        self._position = 0
        self._order: list[int] | None = None

    @classmethod
    def from_config(cls, cfg: CorpusConfig, *, seed: int = 0) -> Corpus:
        """The corpus a run's ``[corpus]`` section describes."""
        source: Source
        if cfg.source == "builtin":
            source = BuiltinSource()
        elif cfg.path is None:
            raise CorpusError(f"corpus.path is required when corpus.source = {cfg.source!r}")
        elif cfg.source == "jsonl":
            source = JsonlSource(cfg.path, cfg.text_field)
        elif cfg.source == "parquet":
            source = parquet_source(cfg.path, cfg.text_field)
        elif cfg.source == "hf_disk":
            source = hf_disk_source(cfg.path, cfg.text_field)
        else:  # pragma: no cover - the config's Literal forbids it
            raise CorpusError(f"unknown corpus.source {cfg.source!r}")
        return cls(source, seed=seed, max_chars=cfg.max_chars)

    def __len__(self) -> int:
        return len(self.source)

    def check(self, limit: int = CHECKED_DOCUMENTS) -> None:
        """Read the first ``limit`` documents, so a file that cannot serve raises
        :class:`CorpusError` before a run loads its model (preflight), not in its first design."""
        for index in range(min(len(self.source), limit)):
            self.source.get(index)

    def _epoch_order(self) -> list[int]:
        if self._order is None:
            order = list(range(len(self.source)))
            random.Random(f"spade-corpus:{self.seed}:{self._epoch}").shuffle(order)
            self._order = order
        return self._order

    def next(self) -> Document:
        """The next document (text cut to ``max_chars``); after the last one, a new shuffled pass."""
        order = self._epoch_order()
        doc = self.source.get(order[self._position])
        self._position += 1
        if self._position >= len(order):
            self._epoch += 1
            self._position = 0
            self._order = None
        return Document(doc.id, doc.title, cut(doc.text, self.max_chars))

    def state(self) -> dict[str, Any]:
        """JSON-serialisable cursor state for a checkpoint."""
        return {
            "seed": self.seed,
            "epoch": self._epoch,
            "position": self._position,
            "size": len(self.source),
            "fingerprint": self.source.fingerprint(),
        }

    def load_state(self, state: dict[str, Any], *, strict: bool = True) -> None:
        """Continue exactly where ``state()`` was taken.

        If the source changed since (different documents), raise :class:`CorpusError`, or
        with ``strict=False`` keep the seed and pass and wrap the position into range.
        """
        try:
            seed, epoch, position = int(state["seed"]), int(state["epoch"]), int(state["position"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorpusError(f"corpus state is malformed ({exc!r}): {state!r}") from None
        changed = state.get("fingerprint") != self.source.fingerprint() or state.get("size") != len(self.source)
        if changed and strict:
            raise CorpusError(
                f"the corpus changed since the checkpoint ({state.get('size')} -> {len(self.source)} documents); "
                "restore the original corpus or resume with a non-strict corpus state"
            )
        self.seed, self._epoch, self._position = seed, epoch, position % len(self.source)
        self._order = None
