"""Environment text never acts on a terminal (issue class 11): ``env check`` and ``env play``
print observations, prints and errors full of escape sequences as visible escapes, and the
TUI's environment and replay views do the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from spade_async.cli.env_cmd import env as env_group
from spade_async.util.textsafe import is_terminal_safe, terminal_safe
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
    summary = EnvSummary(
        id="e1",
        created_step=0,
        updated_step=None,
        skill=bad,
        domain="games",
        origin="designer",
        status="active",
        valid=True,
        win_rate=None,
        hint_win_rate=None,
        regret=None,
        designer_reward=None,
        n_plays=0,
        doc_title=bad,
    )
    episode = Episode(
        id=1,
        step=0,
        adapter_version=0,
        hinted=False,
        outcome=0.0,
        turns=1,
        truncated=False,
        transcript=[Turn(role="observation", text=bad, reward=None)],
    )
    detail = EnvDetail(summary=summary, code=bad, hint=bad, doc_title=bad, reasons=[bad], plain=episode, hinted=None)
    console = Console(record=True, width=200, force_terminal=False)
    for renderable in (render_hint(detail), render_meta(detail), render_episode(episode, "Plain play")):
        console.print(renderable)
    text = console.export_text()
    assert ESC not in text and "\u202e" not in text and "\\x1b]0;pwned" in text


# -- issue 22, class 7: every display path cleans text, one test per widget ----------------------

BAD = "boom\x1b]0;pwned-title\x07\x1b[8mhidden\x1b]52;c;ZXZpbA==\x07\u202e"
"""An env exception message: terminal title, hidden text, an OSC 52 clipboard write, bidi override."""


def _shown(renderable: object) -> str:
    console = Console(record=True, width=400, force_terminal=False)
    console.print(renderable)
    return console.export_text()


def _assert_clean(text: str) -> None:
    assert ESC not in text and "\x07" not in text and "\u202e" not in text, repr(text)
    assert "\\x1b]52;c;" in text or "\\x1b]0;" in text, repr(text)  # shown visibly, not dropped


def test_event_log_cleans_env_messages() -> None:
    from tui.reader import EventRow
    from tui.widgets.events import render_event

    text = _shown(
        render_event(
            EventRow(id=1, step=0, kind="error", message=f"env failed during play: {BAD}", created_at=5.0),
            run_start=0.0,
        )
    )
    _assert_clean(text)
    assert "boom\\x1b]0;pwned-title\\x07" in text


def test_header_cleans_run_name_and_waiting_line() -> None:
    from tui.reader import RunInfo
    from tui.widgets.header import render_header

    run = RunInfo(id=1, name=BAD, status="running", created_at=0.0)
    _assert_clean(_shown(render_header(run, [], 10.0, owned=False, paused=False, waiting=BAD)))
    _assert_clean(_shown(render_header(None, [], 10.0, owned=False, paused=False, waiting=BAD)))


def test_eval_panel_cleans_names() -> None:
    from tui.widgets.evals import render_evals

    row = {
        "model": BAD,
        "suite": BAD,
        "metric": "[bold]m",
        "base_mean": 0.1,
        "mean": 0.2,
        "delta": 0.1,
        "ci_low": 0.0,
        "ci_high": 0.2,
    }
    text = _shown(render_evals([row]))
    _assert_clean(text)
    assert "[bold]m" in text  # plain text: markup in a name is shown, not applied


def test_chart_legend_cleans_labels() -> None:
    from tui.widgets.plots import ChartPanel

    _assert_clean(_shown(ChartPanel([(BAD, "red")])._legend()))


def test_report_summary_cleans_names(tmp_path: Path) -> None:
    from spade_async.report.data import RunData
    from spade_async.report.markdown import summary

    text = summary(RunData(name=BAD, status=BAD), tmp_path)
    _assert_clean(text)


@pytest.mark.anyio
async def test_tables_hold_clean_plain_text_cells() -> None:
    from textual.app import App, ComposeResult

    from tui.reader import EnvSummary
    from tui.stats import SkillStats
    from tui.widgets.envs import EnvTable
    from tui.widgets.skills import SkillTable

    class Tables(App[None]):
        def compose(self) -> ComposeResult:
            yield EnvTable()
            yield SkillTable()

    app = Tables()
    async with app.run_test():
        envs, skills = app.query_one(EnvTable), app.query_one(SkillTable)
        envs.show(
            [
                EnvSummary(
                    id="e1",
                    created_step=0,
                    updated_step=None,
                    skill=BAD,
                    domain="games",
                    origin="designer",
                    status=BAD,
                    valid=True,
                    win_rate=None,
                    hint_win_rate=None,
                    regret=None,
                    designer_reward=None,
                    n_plays=0,
                    doc_title=BAD,
                )
            ]
        )
        skills.show([SkillStats(skill=BAD, count=1, valid_pct=100.0, mean_win_rate=None, mean_regret=None)])
        for table in (envs, skills):
            cells = [str(cell) for cell in table.get_row_at(0)]
            _assert_clean(" ".join(cells))
