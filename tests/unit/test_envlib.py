"""The environment library: size, skills, families, held-out split, format, near-duplicates, and
that the shipped files are exactly the generator's output.

Why these checks: the library exists so that a warm start has to learn to write games instead of
recalling a few (issue 51): that needs many files over every skill, grouped by mechanic, whole
mechanics held out, and no two files so alike that one is a copy of the other.
"""

from __future__ import annotations

import ast
import difflib
import random

import pytest

from spade_async.config import SKILLS
from spade_async.envlib import LibraryFile, families, generate, held_out_families, load_envlib, split
from spade_async.envs.contract import INJECTED

FILES = load_envlib()
LIMIT = 0.9


def test_size_skills_and_families() -> None:
    assert len(FILES) >= 200
    assert {f.skill for f in FILES} == set(SKILLS)
    groups = families()
    assert len(groups) >= 30
    for name, files in groups.items():
        assert len(files) >= 3, name
        assert len({f.skill for f in files}) == 1, name  # a family is one mechanic of one skill
        assert all(f.family == name and f.name.startswith(name) for f in files)
    assert len({f.name for f in FILES}) == len(FILES)
    assert FILES == sorted(FILES, key=lambda f: (f.family, f.name))


def test_whole_families_are_held_out_for_every_skill() -> None:
    held = held_out_families()
    assert held == held_out_families()  # deterministic
    groups = families()
    assert held <= set(groups)
    assert {groups[name][0].skill for name in held} == set(SKILLS)
    assert 0.1 <= len(held) / len(groups) <= 0.3
    train, test = split()
    assert len(train) + len(test) == len(FILES)
    assert {f.family for f in test} == held and not {f.family for f in train} & held


def _format_problems(f: LibraryFile) -> list[str]:
    tree = ast.parse(f.code)
    problems = []
    heads = [n.targets[0].id for n in tree.body[:3] if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)]
    if heads != ["SKILL", "HINT", "DESCRIPTION"]:
        problems.append(f"first constants {heads}")
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    if len(classes) != 1 or [b.id for b in classes[0].bases if isinstance(b, ast.Name)] != ["GameEnv"]:
        problems.append("not exactly one GameEnv class")
    if any(isinstance(n, ast.Import | ast.ImportFrom) for n in ast.walk(tree)):
        problems.append("imports")
    methods = {n.name for n in classes[0].body if isinstance(n, ast.FunctionDef)} if classes else set()
    if not {"reset", "step", "solution"} <= methods:
        problems.append(f"methods {sorted(methods)}")
    return problems


def test_every_file_has_the_designer_format() -> None:
    bad = {f.name: p for f in FILES if (p := _format_problems(f))}
    assert not bad, bad
    assert _format_problems(LibraryFile("x", "x", "x", "import os\nSKILL = 'a'\n"))  # the check can fail


def instantiate(code: str):
    namespace = dict(INJECTED)
    exec(compile(code, "<envlib>", "exec"), namespace)  # our own generated files, trusted test input
    (cls,) = [
        v for v in namespace.values() if isinstance(v, type) and hasattr(v, "step") and v not in INJECTED.values()
    ]
    return cls()


def random_play_wins(code: str, rng: random.Random, seeds: range) -> int:
    wins = 0
    for seed in seeds:
        env = instantiate(code)
        obs, _ = env.reset(seed=seed)
        words = [w.strip(".,?:!'()") for w in obs.replace("\\boxed{", " ").replace("}", " ").split()]
        words += [str(n) for n in range(1, 30)]
        for _ in range(env.max_turns):
            _, reward, done, cut, _ = env.step(f"\\boxed{{{rng.choice(words)}}}")
            if done or cut:
                break
        wins += done and reward == 1.0
    return wins


def test_solutions_win_within_ten_turns_and_random_play_mostly_loses() -> None:
    """``selfplay.max_turns`` is 10 in every preset: a game must be won (and end) within it."""
    rng, rates = random.Random(0), []
    for f in FILES:
        env = instantiate(f.code)
        assert env.max_turns <= 10, f.name
        for seed in (3, 11):
            env.reset(seed=seed)
            *_, (_, reward, done, cut, _) = [env.step(f"\\boxed{{{a}}}") for a in env.solution()]
            assert (reward, done, cut) == (1.0, True, False), (f.name, seed)
        rates.append(random_play_wins(f.code, rng, range(10)) / 10)
    assert sum(rates) / len(rates) < 0.1
    assert max(rates) <= 0.5


def ratio(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


def test_no_two_files_are_near_duplicates() -> None:
    """difflib's ratio (the measure the run reports against the library) stays at most 0.9 for
    every pair. quick_ratio is an upper bound of ratio, so pairs it puts at or under the limit
    are skipped; ratio is not symmetric, so the other order is checked where the first is near."""
    worst, seen = 0.0, 0
    for i, a in enumerate(FILES):
        matcher = difflib.SequenceMatcher(None, "", a.code)
        for b in FILES[i + 1 :]:
            matcher.set_seq1(b.code)
            if matcher.real_quick_ratio() <= LIMIT or matcher.quick_ratio() <= LIMIT:
                continue
            seen += 1
            r = matcher.ratio()
            if r > 0.8:
                r = max(r, ratio(a.code, b.code))
            assert r <= LIMIT, (a.name, b.name, r)
            worst = max(worst, r)
    assert seen and worst > 0.5  # the check compared real pairs
    assert ratio(FILES[0].code, FILES[0].code.replace("0.0", "0.00", 1)) > LIMIT  # and can fail


@pytest.fixture(scope="module")
def built() -> dict[str, str]:
    return generate.build()


def test_shipped_files_are_the_generator_output(built: dict[str, str]) -> None:
    assert generate.check(want=built) == []
    assert len(built) == len(FILES)


def test_check_reports_an_edited_a_missing_and_an_extra_file(built: dict[str, str], tmp_path) -> None:
    generate.write(built, tmp_path)
    assert generate.check(tmp_path, want=built) == []
    first, second = sorted(built)[:2]
    (tmp_path / first).write_text(built[first] + "# edited\n", encoding="utf-8")
    (tmp_path / second).unlink()
    (tmp_path / "stray").mkdir()
    (tmp_path / "stray" / "extra.py").write_text("x = 1\n", encoding="utf-8")
    assert generate.check(tmp_path, want=built) == [
        f"missing {second}",
        "not generated stray/extra.py",
        f"differs {first}",
    ]
