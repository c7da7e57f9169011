"""``env check``/``env play`` take a built-in seed environment by name (what a pip user has: no
checkout, no file path), a tool-use seed in its own domain, and still take file paths; an
unknown name is a usage error that lists the names."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from spade_async.cli.env_cmd import env as env_group
from spade_async.envs.seeds import find_seed, seed_names

SEEDS = Path(__file__).resolve().parents[2] / "spade_async" / "envs" / "seeds"


def test_names_cover_every_seed_file_of_both_domains() -> None:
    files = {p.stem for p in SEEDS.rglob("*.py") if not p.name.startswith("_")}
    assert set(seed_names()) == files
    found = find_seed("press_button")
    assert found is not None and found[1] == "tool_use"
    assert find_seed("no_such_seed") is None


def test_play_a_seed_by_name() -> None:
    result = CliRunner().invoke(env_group, ["play", "mastermind", "--seed", "3"], input="\\boxed{1234}\n\n")
    assert result.exit_code == 0, result.output
    assert "seed 3 (replay with --seed 3)" in result.output and "bye" in result.output
    by_path = CliRunner().invoke(env_group, ["play", str(SEEDS / "mastermind.py"), "--seed", "3"], input="\n")
    assert by_path.exit_code == 0 and by_path.output.splitlines()[1] == result.output.splitlines()[1]  # same game


def test_check_seeds_by_name_in_their_domain() -> None:
    games = CliRunner().invoke(env_group, ["check", "mastermind"])
    assert games.exit_code == 0, games.output
    assert games.output.startswith("mastermind (built-in seed): ADMITTED")
    tools = CliRunner().invoke(env_group, ["check", "press_button"])  # no --config: the tool-use checks
    assert tools.exit_code == 0, tools.output
    assert "press_button (built-in seed): ADMITTED" in tools.output


def test_an_unknown_name_lists_the_seeds_and_exits_2() -> None:
    result = CliRunner().invoke(env_group, ["play", "mastermnd"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: mastermnd: no such file, nor a built-in seed environment")
    assert "mastermind" in result.stderr and "Traceback" not in result.output
    missing_file = CliRunner().invoke(env_group, ["check", "/nonexistent/env.py"])
    assert missing_file.exit_code == 2 and "no such file" in missing_file.stderr
