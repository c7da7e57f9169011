"""The seed environments meet the contract, are winnable, and are not won by chance.

The seeds are trusted code, so this test execs them in-process in a namespace built from
``contract.INJECTED`` (the same names the sandbox injects). Generated code never runs this way.
"""

from __future__ import annotations

import ast
import itertools
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from spade_async.config import SKILLS
from spade_async.envs.contract import INJECTED, GameEnv
from spade_async.envs.seeds import SeedEnv, load_env_folder, load_seeds, string_constants

SEEDS = load_seeds()
SEED_IDS = [s.name for s in SEEDS]

PROBES: dict[str, list[str]] = {
    "caesar_probe": ["encode a", "encode abc"],
    "dark_maze": ["move up", "move down", "move left", "move right"],
    "domino_order": ["push A", "push C", "push E"],
    "hidden_knapsack": ["inspect 1", "inspect 4"],
    "hidden_polynomial": ["eval 0", "eval 1", "eval -1"],
    "liar_guards": ["ask A", "ask B", "ask E"],
    "mastermind": ["guess 123", "guess 111", "guess 345"],
    "number_guess": ["guess 50", "guess 25", "guess 75"],
    "sequence_rule": ["next"],
    "switch_pair": ["toggle 1", "toggle 2", "toggle 5"],
    "treasure_scan": ["scan 0 0", "scan 0 4", "scan 2 2"],
    "tuning_knob": ["test 0", "test 15", "test 30"],
}
"""Per seed, a few well-formed probing commands for the random player."""

GARBAGE = [
    "",
    "   ",
    "hello",
    "\\boxed{}",
    "\\boxed{ }",
    "\\boxed{???}",
    "{{{",
    "\\boxed{9" * 3,
    "\\boxed{" + "9" * 5000 + "}",
    "\\boxed{ünïcödé ２ ٣}",
    "\\boxed{\x00\x1b[2J}",
    "None",
]
GARBAGE_ARGS = ["", "x", "-1", "-999", "99", "1.5", "nan", "1 2 3 4 5 6 7 8", "a b", "²", "٣"]


def build(seed: SeedEnv) -> type[GameEnv]:
    """Exec a seed's source in a fresh injected namespace; return its one env class."""
    namespace: dict[str, Any] = dict(INJECTED)
    exec(compile(seed.source, f"<seed {seed.name}>", "exec"), namespace)
    classes = [v for k, v in namespace.items() if isinstance(v, type) and issubclass(v, GameEnv) and k not in INJECTED]
    assert len(classes) == 1, f"{seed.name}: expected one GameEnv subclass, got {classes}"
    return classes[0]


def boxed(command: str) -> str:
    return command if "\\boxed{" in command else f"I will act now. \\boxed{{{command}}}"


def play(env: GameEnv, actions: list[str]) -> list[tuple[str, float, bool, bool, dict]]:
    """Step until the episode ends or the actions run out; check every step's types."""
    steps = []
    for action in actions:
        result = env.step(boxed(action))
        obs, reward, terminated, truncated, info = result
        assert isinstance(obs, str) and obs
        assert isinstance(reward, (int, float)) and 0.0 <= reward <= 1.0
        assert isinstance(terminated, bool) and isinstance(truncated, bool)
        assert isinstance(info, dict)
        steps.append(result)
        if terminated or truncated:
            break
    return steps


def won(steps: list[tuple[str, float, bool, bool, dict]]) -> bool:
    return bool(steps) and steps[-1][2] and steps[-1][1] == 1.0


def commands_of(cls: type[GameEnv]) -> list[str]:
    """Command words the env understands, from the solutions of a few seeds."""
    words: set[str] = set()
    for s in range(5):
        env = cls()
        env.reset(seed=s)
        words |= {a.split()[0] for a in env.solution()}
    return sorted(words)


def test_library_covers_every_skill_twice() -> None:
    counts = Counter(s.skill for s in SEEDS)
    assert len(SEEDS) >= 12
    assert set(counts) <= set(SKILLS)
    assert all(counts[skill] >= 2 for skill in SKILLS), counts
    assert set(PROBES) == set(SEED_IDS), "every seed needs probe commands in PROBES"


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_seed_file_format(seed: SeedEnv) -> None:
    tree = ast.parse(seed.source)
    assert [type(n).__name__ for n in tree.body[:3]] == ["Assign"] * 3
    assert [n.targets[0].id for n in tree.body[:3]] == ["SKILL", "HINT", "DESCRIPTION"]  # type: ignore[attr-defined]
    assert len([n for n in tree.body if isinstance(n, ast.ClassDef)]) == 1
    assert not any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(tree))
    assert 30 <= len(seed.source.splitlines()) <= 70, "seeds are prompt examples: keep them short"
    assert len(seed.hint) > 40 and seed.description
    cls = build(seed)
    assert 1 <= cls.max_turns <= 12
    assert callable(getattr(cls, "solution", None))


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_reset_is_deterministic(seed: SeedEnv) -> None:
    cls = build(seed)
    for s in range(4):
        a, b = cls(), cls()
        obs_a, info_a = a.reset(seed=s)
        obs_b, info_b = b.reset(seed=s)
        assert isinstance(obs_a, str) and isinstance(info_a, dict)
        assert (obs_a, info_a) == (obs_b, info_b)
        assert a.solution() == b.solution()
        probes = PROBES[seed.name] * 2
        assert play(a, probes) == play(b, probes)
    assert len({tuple(_fresh(cls, s).solution()) for s in range(10)}) > 1, "seed must matter"


def _fresh(cls: type[GameEnv], seed: int) -> GameEnv:
    env = cls()
    env.reset(seed=seed)
    return env


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_solution_wins(seed: SeedEnv) -> None:
    cls = build(seed)
    for s in range(5):
        env = _fresh(cls, s)
        actions = env.solution()
        assert actions and all(isinstance(a, str) for a in actions)
        steps = play(env, actions)
        assert len(steps) == len(actions), "the solution ended early"
        assert won(steps), f"seed {s}: solution {actions} ended with {steps[-1]}"
        assert not steps[-1][3]
        # Reset after play restores the same game.
        again = cls()
        again.reset(seed=s)
        assert again.solution() == actions


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_random_play_rarely_wins(seed: SeedEnv) -> None:
    cls = build(seed)
    answers = [a for s in range(100, 105) for a in _fresh(cls, s).solution()]
    pool = PROBES[seed.name] + answers
    rng = random.Random(1234)
    n_seeds = 30
    wins = 0
    for s in range(n_seeds):
        env = _fresh(cls, s)
        steps = play(env, [rng.choice(pool) for _ in range(cls.max_turns)])
        assert steps[-1][2] or steps[-1][3], "episode must end within max_turns"
        wins += won(steps)
    assert wins <= 0.3 * n_seeds, f"random play won {wins}/{n_seeds}"


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_garbage_never_raises_and_truncates(seed: SeedEnv) -> None:
    cls = build(seed)
    actions = list(GARBAGE)
    for word in commands_of(cls) + [p.split()[0] for p in PROBES[seed.name]]:
        actions += [f"\\boxed{{{word} {arg}}}".replace(" }", "}") for arg in GARBAGE_ARGS]
    env = _fresh(cls, 0)
    turns = 0
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        turns += 1
        assert isinstance(obs, str) and obs
        assert 0.0 <= reward <= 1.0 and isinstance(info, dict)
        if terminated or truncated:
            assert turns <= cls.max_turns
            env = _fresh(cls, turns)
            turns = 0
        else:
            assert turns < cls.max_turns, "episode ran past max_turns"


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_pure_garbage_truncates_exactly_at_max_turns(seed: SeedEnv) -> None:
    cls = build(seed)
    env = _fresh(cls, 3)
    for turn in range(1, cls.max_turns + 1):
        obs, reward, terminated, truncated, _ = env.step("\\boxed{fly to the moon}")
        assert "\\boxed{" in obs, "invalid-action feedback should show the command syntax"
        assert not terminated and reward == 0.0
        assert truncated == (turn == cls.max_turns)


@pytest.mark.parametrize("seed", SEEDS, ids=SEED_IDS)
def test_first_observation_names_commands(seed: SeedEnv) -> None:
    obs, _ = _fresh(build(seed), 0).reset(seed=0)
    assert "\\boxed{" in obs


def test_loaded_constants_match_ast() -> None:
    by_name = {s.name: s for s in SEEDS}
    assert by_name["number_guess"].skill == "Mathematical Reasoning"
    assert by_name["number_guess"].hint.startswith("Use binary search")
    assert by_name["number_guess"].source.startswith('SKILL = "Mathematical Reasoning"')


def test_load_env_folder(tmp_path: Path) -> None:
    (tmp_path / "b_env.py").write_text('SKILL = "Optimization"\nHINT = "h"\nclass B(GameEnv):\n    pass\n')
    (tmp_path / "a_env.py").write_text("class A(GameEnv):\n    pass\n")
    (tmp_path / "_private.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("not an env")
    envs = load_env_folder(tmp_path)
    assert [e.name for e in envs] == ["a_env", "b_env"]
    assert envs[0].skill == "unknown" and envs[0].hint == "" and envs[0].description == ""
    assert envs[1].skill == "Optimization" and envs[1].hint == "h"


def test_load_env_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_env_folder(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"no \.py environment files"):
        load_env_folder(tmp_path)
    (tmp_path / "broken.py").write_text("class (:\n")
    with pytest.raises(ValueError, match=r"broken\.py: not valid Python"):
        load_env_folder(tmp_path)


def test_seed_folder_loads_like_the_library() -> None:
    folder = Path(__file__).resolve().parents[2] / "spade_async" / "envs" / "seeds"
    assert load_env_folder(folder) == SEEDS


# --- The hints are privileged: following them wins (for the seeds with a mechanical hint). ---


def _num(text: str, pattern: str) -> int:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in {text!r}"
    return int(match.group(1))


def _follow_number_guess(env: GameEnv) -> tuple:
    lo, hi = 1, 100
    while True:
        mid = (lo + hi) // 2
        result = env.step(boxed(f"guess {mid}"))
        if result[2] or result[3]:
            return result
        lo, hi = (mid + 1, hi) if "higher" in result[0] else (lo, mid - 1)


def _follow_hidden_polynomial(env: GameEnv) -> tuple:
    f0, f1, fm1 = (_num(env.step(boxed(f"eval {x}"))[0], r"= (-?\d+)") for x in (0, 1, -1))
    c, b = f0, (f1 - fm1) // 2
    return env.step(boxed(f"answer {(f1 + fm1) // 2 - c} {b} {c}"))


def _follow_treasure_scan(env: GameEnv) -> tuple:
    d1 = _num(env.step(boxed("scan 0 0"))[0], r"distance (\d+)")
    d2 = _num(env.step(boxed("scan 0 4"))[0], r"distance (\d+)")
    c = (d1 - d2 + 4) // 2
    return env.step(boxed(f"dig {d1 - c} {c}"))


def _follow_tuning_knob(env: GameEnv) -> tuple:
    y0, y15, y30 = (_num(env.step(boxed(f"test {x}"))[0], r": (-?\d+)") for x in (0, 15, 30))
    return env.step(boxed(f"set {round(15 + 7.5 * (y30 - y0) / (2 * y15 - y0 - y30))}"))


def _follow_domino_order(env: GameEnv) -> tuple:
    counts = {d: _num(env.step(boxed(f"push {d}"))[0], r"topples (\d+)") for d in "ABCD"}
    counts["E"] = 15 - sum(counts.values())
    return env.step(boxed("answer " + "".join(sorted(counts, key=lambda d: -counts[d]))))


def _follow_liar_guards(env: GameEnv) -> tuple:
    claims: Counter[int] = Counter()
    for guard in "ABCDE":
        claims[_num(env.step(boxed(f"ask {guard}"))[0], r"door (\d)")] += 1
        door, n = claims.most_common(1)[0]
        if n == 3:
            return env.step(boxed(f"open {door}"))
    raise AssertionError("no door named by three guards")


def _follow_switch_pair(env: GameEnv) -> tuple:
    first = None
    for i in range(1, 6):
        if "ON" in env.step(boxed(f"toggle {i}"))[0]:
            first = i
            break
    assert first is not None
    for j in range(1, first):
        if "off" in env.step(boxed(f"toggle {j}"))[0]:
            return env.step(boxed(f"answer {j} {first}"))
    raise AssertionError("lamp never went off")


def _follow_caesar_probe(env: GameEnv) -> tuple:
    shift = ord(env.step(boxed("encode a"))[0].split("'")[3]) - 97
    secret = env.last_reset_obs.split("'")[1]  # type: ignore[attr-defined]
    plain = "".join(chr((ord(ch) - 97 - shift) % 26 + 97) for ch in secret)
    return env.step(boxed(f"answer {plain}"))


def _follow_mastermind(env: GameEnv) -> tuple:
    def feedback(guess: str, code: str) -> tuple[int, int]:
        exact = sum(g == c for g, c in zip(guess, code, strict=True))
        return exact, sum((Counter(guess) & Counter(code)).values()) - exact

    codes = ["".join(p) for p in itertools.product("12345", repeat=3)]
    for guess in ["111", "222", "333", "444", None, None, None, None]:
        guess = guess or codes[0]
        result = env.step(boxed(f"guess {guess}"))
        if result[2] or result[3]:
            return result
        seen = (_num(result[0], r"(\d) exact"), _num(result[0], r"(\d) misplaced"))
        codes = [c for c in codes if feedback(guess, c) == seen]
    raise AssertionError("ran out of guesses")


def _follow_hidden_knapsack(env: GameEnv) -> tuple:
    weights = [int(w) for w in re.findall(r"\d+", env.last_reset_obs.split("[")[1].split("]")[0])]  # type: ignore[attr-defined]
    capacity = _num(env.last_reset_obs, r"holds weight (\d+)")  # type: ignore[attr-defined]
    values = [_num(env.step(boxed(f"inspect {i}"))[0], r"value (\d+)") for i in range(1, 7)]
    subsets = [s for n in range(1, 7) for s in itertools.combinations(range(6), n)]
    best = max(
        (s for s in subsets if sum(weights[i] for i in s) <= capacity),
        key=lambda s: sum(values[i] for i in s),
    )
    return env.step(boxed("take " + " ".join(str(i + 1) for i in best)))


def _follow_sequence_rule(env: GameEnv) -> tuple:
    env.step(boxed("next"))
    t = [int(x) for x in re.findall(r"-?\d+", env.step(boxed("next"))[0].split(":", 1)[1])]
    d, ratio = t[1] - t[0], t[1] // t[0]
    rules = [
        lambda n: t[0] + d * n,
        lambda n: t[0] * ratio**n,
        lambda n: (n + 1) ** 2 + t[0] - 1,
    ]
    fib = t[:2]
    while len(fib) < 8:
        fib.append(fib[-1] + fib[-2])
    candidates = [[rule(n) for n in range(8)] for rule in rules] + [fib]
    seq = next(c for c in candidates if c[:4] == t)
    return env.step(boxed(f"answer {seq[7]}"))


HINT_FOLLOWERS = {
    "mastermind": _follow_mastermind,
    "hidden_knapsack": _follow_hidden_knapsack,
    "sequence_rule": _follow_sequence_rule,
    "number_guess": _follow_number_guess,
    "hidden_polynomial": _follow_hidden_polynomial,
    "treasure_scan": _follow_treasure_scan,
    "tuning_knob": _follow_tuning_knob,
    "domino_order": _follow_domino_order,
    "liar_guards": _follow_liar_guards,
    "switch_pair": _follow_switch_pair,
    "caesar_probe": _follow_caesar_probe,
}


@pytest.mark.parametrize("name", sorted(HINT_FOLLOWERS))
def test_following_the_hint_wins(name: str) -> None:
    cls = build(next(s for s in SEEDS if s.name == name))
    for s in range(20):
        env = cls()
        env.last_reset_obs = env.reset(seed=s)[0]  # type: ignore[attr-defined]
        obs, reward, terminated, _, _ = HINT_FOLLOWERS[name](env)
        assert terminated and reward == 1.0, f"seed {s}: {obs}"
        assert env.turn <= cls.max_turns


def test_string_constants_forms() -> None:
    code = (
        'SKILL = "A"\nHINT = (\n    "one "\n    "two"\n)\nDESCRIPTION: str = \'d\'\n'
        'N = 3\nF = f"{N}"\nX = Y = "multi"\nclass C:\n    INNER = "no"\n'
    )
    assert string_constants(code) == {"SKILL": "A", "HINT": "one two", "DESCRIPTION": "d"}


@pytest.mark.parametrize("code", ["HINT = (", "class A:\x00 pass", "(" * 5000])
def test_string_constants_raises_syntax_error_on_bad_code(code: str) -> None:
    with pytest.raises(SyntaxError):
        string_constants(code)
