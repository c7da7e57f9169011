"""Write the environment library from the family templates (``python -m spade_async.envlib.generate``).

Why generated and checked in: the files ship as package data and are read as text, so a user
needs no generator at run time; ``--check`` (run by the tests) fails when the shipped files are
not exactly what this code makes, so templates and files cannot drift apart.

Each family yields every combination of its axes in a fixed shuffled order; a candidate is kept
when its similarity to every file already kept in its family is below :data:`KEEP_BELOW`, up to
:data:`PER_FAMILY` files. The tests check the whole library (across families too) against the
0.9 limit.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from spade_async.envlib.mechanics import Family, all_families

LIBRARY = Path(__file__).resolve().parent / "library"
PER_FAMILY = 8
"""Most files kept per family."""
KEEP_BELOW = 0.9
"""A candidate this similar (or more) to a kept file of its family is not kept (the library's limit)."""
CANDIDATES = 24
"""Candidates considered per family (the first of its shuffled combinations); bounds the generator's time."""


def similarity(a: str, b: str) -> float:
    """difflib's ratio in both argument orders, the larger one (the ratio is not symmetric)."""
    return max(difflib.SequenceMatcher(None, a, b).ratio(), difflib.SequenceMatcher(None, b, a).ratio())


def family_files(family: Family) -> dict[str, str]:
    """``{file name: code}`` kept for ``family``: farthest-first. The first candidate is kept, then
    repeatedly the candidate least similar to everything kept (difflib's ratio, candidate first),
    while that stays below :data:`KEEP_BELOW`, up to :data:`PER_FAMILY` files (of the first
    :data:`CANDIDATES`). A last pass drops a file whose ratio in the other argument order reaches
    the limit (the ratio is not symmetric; the library's limit holds for both orders)."""
    pool = family.candidates()[:CANDIDATES]
    kept = [pool.pop(0)]
    nearest = [0.0] * len(pool)
    while True:
        matcher = difflib.SequenceMatcher(None, "", kept[-1][1])  # the kept file's index, built once
        for i, (_, code) in enumerate(pool):
            matcher.set_seq1(code)
            nearest[i] = max(nearest[i], matcher.ratio())
        if not pool or len(kept) >= PER_FAMILY:
            break
        best = min(range(len(pool)), key=lambda i: (nearest[i], i))
        if nearest[best] >= KEEP_BELOW:
            break
        kept.append(pool.pop(best))
        nearest.pop(best)
    final: list[tuple[str, str]] = []
    for name, code in kept:
        if all(similarity(code, other) < KEEP_BELOW for _, other in final):
            final.append((name, code))
    return dict(sorted(final))


def build() -> dict[str, str]:
    """``{"<family>/<name>.py": code}`` for the whole library."""
    return {f"{f.name}/{name}.py": code for f in all_families() for name, code in family_files(f).items()}


def on_disk(root: Path = LIBRARY) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted(root.glob("*/*.py"))}


def write(files: dict[str, str], root: Path = LIBRARY) -> None:
    for path in root.glob("*/*.py"):
        path.unlink()
    for folder in root.iterdir() if root.is_dir() else []:
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    for rel, code in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code, encoding="utf-8")


def check(root: Path = LIBRARY, want: dict[str, str] | None = None) -> list[str]:
    """What differs between the files under ``root`` and the generator's output (``want``, built
    when not given); empty when identical."""
    want, have = want if want is not None else build(), on_disk(root)
    problems = [f"missing {rel}" for rel in sorted(set(want) - set(have))]
    problems += [f"not generated {rel}" for rel in sorted(set(have) - set(want))]
    problems += [f"differs {rel}" for rel in sorted(set(want) & set(have)) if want[rel] != have[rel]]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 when the shipped files differ from the output")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for line in problems[:50]:
            print(line)
        print(
            "envlib: up to date"
            if not problems
            else f"envlib: {len(problems)} files differ; run python -m spade_async.envlib.generate"
        )
        return 1 if problems else 0
    files = build()
    write(files)
    print(f"envlib: wrote {len(files)} files in {len({rel.split('/')[0] for rel in files})} families to {LIBRARY}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
