"""Environment text never acts on a terminal (issue class 11): ``env check`` and ``env play``
print observations, prints and errors full of escape sequences as visible escapes, and the
TUI's environment and replay views do the same."""

from __future__ import annotations

from click.testing import CliRunner
from rich.console import Console

from spade_async.commands.env_cmd import env as env_group
from spade_async.textsafe import is_terminal_safe, terminal_safe
from tests.sandbox.conftest import HOSTILE, unsandboxed

ESC = "\x1b"
FIXTURE = str(HOSTILE / "terminal_escapes.py")


def test_terminal_safe() -> None:
    raw = "a\x1b]0;t\x07b\x1b[2J\rc\u202ed\x9b1m\n\tok ü → 中"
    safe = terminal_safe(raw)
    assert safe == "a\\x1b]0;t\\x07b\\x1b[2J\\x0dc\\u202ed\\x9b1m\n\tok ü → 中"
    assert is_terminal_safe(safe) and not is_terminal_safe(raw)
    assert terminal_safe("plain text") == "plain text"


def test_env_check_prints_escapes_visibly() -> None:
    assert ESC in unsandboxed("terminal_escapes", "x")  # positive control: the env emits raw escapes
    result = CliRunner().invoke(env_group, ["check", FIXTURE, "--actions", "x|raise"])
    assert ESC not in result.output and "\\x1b]0;pwned-title" in result.output, result.output
    assert "\u202e" not in result.output and "\x9b" not in result.output and "\r" not in result.output


def test_env_play_prints_escapes_visibly() -> None:
    result = CliRunner().invoke(env_group, ["play", FIXTURE], input="raise\n")
    shown = result.output
    assert "ready\\x1b]0;pwned-title" in shown and "boom\\x1b" in shown, shown
    assert ESC not in shown


def test_tui_views_neutralise_env_text() -> None:
    from tui.reader import EnvDetail, EnvSummary, Episode, Turn
    from tui.widgets.envs import render_hint, render_meta
    from tui.widgets.replay import render_episode

    bad = "\x1b]0;pwned\x07\x1b[2Jhint\u202e"
    summary = EnvSummary(id="e1", created_step=0, updated_step=None, skill=bad, domain="games", origin="designer",
                         status="active", valid=True, win_rate=None, hint_win_rate=None, regret=None,
                         designer_reward=None, n_plays=0, doc_title=bad)
    episode = Episode(id=1, step=0, adapter_version=0, hinted=False, outcome=0.0, turns=1, truncated=False,
                      transcript=[Turn(role="observation", text=bad, reward=None)])
    detail = EnvDetail(summary=summary, code=bad, hint=bad, doc_title=bad, reasons=[bad], plain=episode, hinted=None)
    console = Console(record=True, width=200, force_terminal=False)
    for renderable in (render_hint(detail), render_meta(detail), render_episode(episode, "Plain play")):
        console.print(renderable)
    text = console.export_text()
    assert ESC not in text and "\u202e" not in text and "\\x1b]0;pwned" in text
