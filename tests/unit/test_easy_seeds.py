"""The easy warm-up tier: one short game per skill, winnable, deterministic, never crashing."""

from __future__ import annotations

import random

import pytest

from spade_async.config import SKILLS
from spade_async.envs.contract import INJECTED
from spade_async.envs.seeds import load_seeds

EASY = load_seeds("easy")


def instantiate(source: str):
    namespace = dict(INJECTED)
    exec(compile(source, "<seed>", "exec"), namespace)  # trusted, hand-written test input
    classes = [
        v for v in namespace.values() if isinstance(v, type) and hasattr(v, "step") and v not in INJECTED.values()
    ]
    assert len(classes) == 1
    return classes[0]()


def test_one_easy_game_per_skill() -> None:
    assert sorted(s.skill for s in EASY) == sorted(SKILLS)
    assert all(s.hint and s.description for s in EASY)
    assert {s.name for s in load_seeds("all")} == {s.name for s in load_seeds()} | {s.name for s in EASY}


@pytest.mark.parametrize("seed_env", EASY, ids=lambda s: s.name)
def test_solution_wins_and_games_are_deterministic(seed_env) -> None:
    for seed in range(5):
        env = instantiate(seed_env.source)
        first, _ = env.reset(seed=seed)
        *_, (_obs, reward, done, cut, _info) = [env.step(f"\\boxed{{{a}}}") for a in env.solution()]
        assert (reward, done, cut) == (1.0, True, False)
        again = instantiate(seed_env.source)
        assert again.reset(seed=seed)[0] == first


@pytest.mark.parametrize("seed_env", EASY, ids=lambda s: s.name)
def test_garbage_never_raises_and_episodes_end(seed_env) -> None:
    rng = random.Random(0)
    for seed in range(5):
        env = instantiate(seed_env.source)
        env.reset(seed=seed)
        for _ in range(env.max_turns):
            junk = rng.choice(["", "\\boxed{}", "\\boxed{-1}", "hello", "\\boxed{999999999999}", "\\boxed{ZZ}"])
            _, reward, done, cut, _ = env.step(junk)
            assert 0.0 <= reward <= 1.0
            if done or cut:
                break
        assert done or cut, f"{seed_env.name} did not end within max_turns"


def test_random_play_is_neither_hopeless_nor_certain() -> None:
    """A warm-up game must give a weak policy variance: some wins, some losses."""
    rng = random.Random(1)
    for seed_env in EASY:
        wins = 0
        for seed in range(40):
            env = instantiate(seed_env.source)
            obs, _ = env.reset(seed=seed)
            words = [w.strip(".,?:") for w in obs.replace("\\boxed{", " ").replace("}", " ").split()]
            words += [str(n) for n in range(1, 30)]  # a weak policy also guesses small numbers
            reward = 0.0
            for _ in range(env.max_turns):
                _, reward, done, cut, _ = env.step(f"\\boxed{{{rng.choice(words)}}}")
                if done or cut:
                    break
            wins += reward == 1.0
        assert 0 < wins < 40, (seed_env.name, wins)
