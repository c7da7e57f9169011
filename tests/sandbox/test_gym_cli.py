"""The gymnasium adapter passes check_env; the ``env check``/``env play`` CLI gives verdicts,
JSON and exit codes, and never a traceback for a bad file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from gymnasium.utils.env_checker import check_env

from spade_async.cli.env_cmd import env as env_group
from spade_async.export.gym import SandboxedGymEnv, to_printable
from tests.sandbox.conftest import ENVS, HOSTILE, benign


def test_gym_adapter_passes_check_env() -> None:
    gym_env = SandboxedGymEnv(benign("maze"), max_turns=8)
    try:
        check_env(gym_env, skip_render_check=True)
        obs, _ = gym_env.reset(seed=1)
        assert gym_env.observation_space.contains(obs)
    finally:
        gym_env.close()


def test_printable_escaping() -> None:
    assert to_printable("a→b\x07") == "a\\u2192b\\x07"


def test_check_admitted_with_actions() -> None:
    result = CliRunner().invoke(env_group, ["check", str(ENVS / "guess.py"), "--actions", "\\boxed{5}|\\boxed{2}"])
    assert result.exit_code == 0, result.output
    assert "ADMITTED (class GuessNumber)" in result.output
    assert "isolation: full" in result.output and "step('\\\\boxed{5}')" in result.output


def test_check_json_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "class E:\n    def reset(self, seed=None):\n        return 'o', {}\n    def step(self, a):\n        return 'o', 5.0, True, False, {}\n"
    )
    result = CliRunner().invoke(env_group, ["check", str(bad), "--json", "--actions", "a"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert report["admitted"] is False and report["checks"]["reward_range"] is False
    # A reward outside [0, 1] is the environment's error (never clipped into a win).
    assert report["isolation"]["level"] == "full" and report["steps"][1]["call"] == "error"
    assert "reward 5.0" in report["steps"][1]["error"] and "[0, 1]" in report["steps"][1]["error"]


def test_check_bad_file_has_no_traceback() -> None:
    result = CliRunner().invoke(env_group, ["check", str(HOSTILE / "syntax_error.py")])
    assert result.exit_code == 1
    assert "SyntaxError at line 6" in result.output and "Traceback" not in result.output


def test_check_missing_file() -> None:
    result = CliRunner().invoke(env_group, ["check", "/nonexistent/env.py"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_play_in_terminal() -> None:
    result = CliRunner().invoke(
        env_group, ["play", str(ENVS / "maze.py"), "--seed", "3"], input="\\boxed{right}\n\\boxed{fly}\n\n"
    )
    assert result.exit_code == 0, result.output
    assert "Unknown move." in result.output and "bye" in result.output


def test_play_draws_a_fresh_seed_and_prints_it_for_replay() -> None:
    import re

    seeds = []
    for _ in range(2):
        result = CliRunner().invoke(env_group, ["play", str(ENVS / "guess.py")], input="\n")
        assert result.exit_code == 0, result.output
        seeds.append(int(re.search(r"seed (\d+) \(replay with --seed \1\)", result.output).group(1)))
    assert seeds[0] != seeds[1]  # 1 in 2**31 to collide
    replay = CliRunner().invoke(env_group, ["play", str(ENVS / "guess.py"), "--seed", str(seeds[0])], input="\n")
    assert f"seed {seeds[0]} " in replay.output
