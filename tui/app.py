"""The SPADE run monitor: a Textual app over a run's SQLite database.

Why it only reads the database: the same app watches a live run in another terminal, a
finished run, or a run started in this process, and in none of these cases may it slow
or lock the trainer. Polls run in a worker thread on a read-only connection and ask only
for new rows; the UI thread just renders what they bring back. Steering (pause, stop)
goes through an optional ``RunController`` given by whoever started the run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Footer, HelpPanel, Input, Static, TabbedContent, TabPane

from spade_async.selfplay.design.status import designer_note
from spade_async.util.textsafe import terminal_safe

from .confirm import ConfirmStopScreen
from .controller import RunController
from .export import export_env
from .lineage import LineageScreen
from .reader import EnvDetail, EnvSummary, PollResult, RunInfo, RunReader, StepRow
from .stats import band_counts, designer_tally, points, recent_envs, skill_stats
from .steer import SteerKeys
from .widgets.archive import ArchivePanel
from .widgets.bands import BandHistogram
from .widgets.envs import EnvDetailView, EnvTable
from .widgets.evals import EvalPanel
from .widgets.events import EventLog
from .widgets.header import RunHeader
from .widgets.plots import ChartPanel, Series
from .widgets.skills import SkillTable

# (chart id, ((legend label, metric key, colour), ...)): the series overlaid on each chart.
# Colours are RGB hex, so the chart's lines and the legend's marks are the same colour
# (plotext's colour names map to other ANSI codes than Rich's).
CHARTS: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    (
        "chart-regret",  # the designer's signal and the two arms it is the gap between
        (
            ("mean regret", "regret_mean", "#f2c744"),
            ("hint-arm return", "hint_return_mean", "#4fc3f7"),
            ("plain-arm return", "plain_return_mean", "#f06292"),
        ),
    ),
    (
        "chart-agent",  # how the agent does, and how much of the pool is worth learning on
        (
            ("agent mean return", "agent_return_mean", "#81c784"),
            ("learnable fraction", "learnable_fraction", "#9575cd"),
        ),
    ),
)


ENV_SELECTION_ACTIONS = frozenset({"export", "steer_retire", "steer_pin", "filter"})
"""Actions on the environment browser's highlighted row (tui/steer.py, ``action_export``)."""


class SpadeApp(SteerKeys):  # SteerKeys: an App with the steering keys (tui/steer.py)
    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses live elsewhere
    TITLE = "spade-async"
    BINDINGS = [  # noqa: RUF012 (Textual's own declaration style)
        Binding("q", "quit_app", "quit"),
        Binding("question_mark", "toggle_help", "help"),
        Binding("p", "toggle_pause", "pause/resume"),  # offered only by the TUI that owns the run
        Binding("p", "refuse_pause", "pause/resume", show=False),  # a watching TUI says why not
        Binding("slash", "filter", "filter envs"),
        Binding("e", "export", "export env"),
        Binding("1", "show_tab('overview')", "overview"),
        Binding("2", "show_tab('environments')", "environments"),
        Binding("l", "show_lineage", "lineage"),
        Binding("escape", "close_filter", "close filter", show=False),
    ]

    def __init__(
        self,
        db_path: Path,
        controller: RunController | None = None,
        poll_interval: float = 1.0,
        *,
        clock: Callable[[], float] = time.time,
        export_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.db_path = db_path
        self.controller = controller
        self.poll_interval = poll_interval
        self.clock = clock
        self.export_dir = export_dir if export_dir is not None else Path.cwd()
        self.reader = RunReader(db_path)
        self.run_info: RunInfo | None = None
        self.steps: list[StepRow] = []
        self.envs: dict[str, EnvSummary] = {}
        self.detail: EnvDetail | None = None
        self._detail_wanted: str | None = None
        self.waiting: str | None = None
        self.filter_text = ""
        self.polls = 0  # completed polls, for tests and the curious
        self._poll_lock = asyncio.Lock()
        self._poll_pending = False

    # ---------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        with TabbedContent(initial="overview"):
            with TabPane("Overview [1]", id="overview"):
                with Horizontal(id="overview-top"):
                    with Vertical(id="plots"):
                        for cid, lines in CHARTS:
                            yield ChartPanel([(label, color) for label, _key, color in lines], id=cid)
                    with Vertical(id="side"):
                        yield Static("[b]designer[/b]", classes="caption")
                        yield Static("", id="designer-note")
                        yield Static("[b]win-rate bands[/b] of the live envs (newest step)", classes="caption")
                        yield BandHistogram(id="bands")
                        yield Static("[b]skills[/b]", classes="caption")
                        yield SkillTable(id="skills")
                        yield Static("[b]held-out eval[/b] (adapter - base)", classes="caption", id="evals-caption")
                        yield EvalPanel(id="evals")
                        yield Static(
                            "[b]archive[/b] (retired envs replayed: still solved)",
                            classes="caption",
                            id="archive-caption",
                        )
                        yield ArchivePanel(id="archive")
                yield Static("[b]events[/b]", classes="caption")
                yield EventLog(id="events")
            with TabPane("Environments [2]", id="environments"):
                yield Input(placeholder="filter: skill, status, id or document", id="filter")
                with Horizontal():
                    yield EnvTable(id="env-table")
                    yield EnvDetailView(id="env-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self._show_evals(False)
        self._show_archive(False)
        self._render_header()
        self._schedule_poll()
        self.set_interval(self.poll_interval, self._schedule_poll)

    def on_unmount(self) -> None:
        self.reader.close()

    # ---------------------------------------------------------------- polling

    def _schedule_poll(self) -> None:
        # At most one poll queued or running: a slow disk must not pile polls up.
        if self._poll_pending:
            self._render_header()  # keep the elapsed clock moving
            return
        self._poll_pending = True
        self.run_worker(self.poll_now(), group="poll")

    async def poll_now(self) -> None:
        """Fetch new rows off the UI thread and render them."""
        try:
            async with self._poll_lock:
                result = await asyncio.to_thread(self.reader.poll)
                try:
                    self._apply(result)
                except NoMatches:
                    return  # the app is shutting down: its widgets are gone
                self.polls += 1
        finally:
            self._poll_pending = False

    def _apply(self, result: PollResult) -> None:
        self.waiting = result.waiting
        if result.reset:
            self._forget_all()
        run_start = self.run_info.created_at if self.run_info else 0.0
        run_changed = result.run is not None and result.run != self.run_info
        if result.run is not None:
            self.run_info = result.run
            run_start = result.run.created_at
        if result.steps or result.reset or self.polls == 0:
            self.steps.extend(result.steps)
            self._draw_charts()
            self.query_one("#bands", BandHistogram).show(band_counts(self.steps))
        if result.events:
            self.query_one("#events", EventLog).add_events(result.events, run_start)
            self.mark_steering(result.events)  # tui/steer.py
        if result.evals:
            self.query_one("#evals", EvalPanel).add_rows(result.evals)
            self._show_evals(True)
        if result.archive:
            self.query_one("#archive", ArchivePanel).add_rows(result.archive)
            self._show_archive(True)
        changed = [e for e in result.envs if self.envs.get(e.id) != e]
        for e in changed:
            self.envs[e.id] = e
        if changed or result.reset or run_changed:
            self._show_designer()
        if changed or result.reset:
            self.query_one("#skills", SkillTable).show(skill_stats(self.envs.values()))
            self._refresh_env_table()
            if self.detail is not None and self.detail.summary.id in {e.id for e in changed}:
                self._load_detail(self.detail.summary.id)
        self._render_header()

    def _forget_all(self) -> None:
        """The run was rewound (resumed from a checkpoint): start over from the full read."""
        self.steps.clear()
        self.query_one("#evals", EvalPanel).clear()
        self._show_evals(False)
        self.query_one("#archive", ArchivePanel).clear()
        self._show_archive(False)
        self.envs.clear()
        self.query_one("#events", EventLog).clear()
        self.mark_steering([], reset=True)
        self.query_one("#skills", SkillTable).clear()
        self.query_one("#env-table", EnvTable).clear()
        self._draw_charts()
        self.detail = None
        self._detail_wanted = None
        self.query_one("#env-detail", EnvDetailView).show(None)

    def _draw_charts(self) -> None:
        for cid, lines in CHARTS:
            self.query_one(f"#{cid}", ChartPanel).set_series(
                [Series(label, color, *points(self.steps, key)) for label, key, color in lines]
            )

    def _show_designer(self) -> None:
        run = self.run_info
        note = designer_note(
            designer_tally(self.envs.values()),
            run.model if run else None,
            fixed_pool=run is not None and run.mode == "fixed",
        )
        self.query_one("#designer-note", Static).update(Text(note))

    def _show_evals(self, on: bool) -> None:
        """The eval panel is shown only once the run has evaluation results."""
        self.query_one("#evals", EvalPanel).display = on
        self.query_one("#evals-caption", Static).display = on

    def _show_archive(self, on: bool) -> None:
        """The archive panel is shown only once the run has archive rounds."""
        self.query_one("#archive", ArchivePanel).display = on
        self.query_one("#archive-caption", Static).display = on

    def _render_header(self) -> None:
        try:
            header = self.query_one("#header", RunHeader)
        except NoMatches:
            return  # shutting down
        header.show(
            self.run_info,
            self.steps,
            self.clock(),
            owned=self.controller is not None,
            paused=self.controller is not None and self.controller.paused,
            waiting=self.waiting,
        )

    def _refresh_env_table(self) -> None:
        table = self.query_one("#env-table", EnvTable)
        table.show(recent_envs(self.envs.values(), self.filter_text))
        self._follow_selection()

    # ---------------------------------------------------------------- environment details

    @on(DataTable.RowHighlighted, "#env-table")
    def _follow_selection(self) -> None:
        # Read the table's current row rather than the event's: a refill queues several
        # highlight events, and only where the cursor ends up matters.
        selected = self.query_one("#env-table", EnvTable).selected_id()
        if selected is not None and selected != self._detail_wanted:
            self._load_detail(selected)

    def _load_detail(self, env_id: str) -> None:
        self._detail_wanted = env_id
        self.run_worker(self._fetch_detail(env_id), group="detail", exclusive=True)

    async def _fetch_detail(self, env_id: str) -> None:
        detail = await asyncio.to_thread(self.reader.load_detail, env_id)
        self.detail = detail
        self.query_one("#env-detail", EnvDetailView).show(detail)

    # ---------------------------------------------------------------- actions

    def action_show_tab(self, tab: str) -> None:
        if isinstance(self.screen, LineageScreen):
            self.screen.dismiss(None)
        self.query_one(TabbedContent).active = tab

    def action_filter(self) -> None:
        self.action_show_tab("environments")
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self._refresh_env_table()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.query_one("#env-table", EnvTable).focus()

    def action_close_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if box.display:
            box.value = ""
            box.display = False
            self.query_one("#env-table", EnvTable).focus()

    def action_export(self) -> None:
        if self.detail is None:
            self.notify("select an environment first (tab 2)", severity="warning")
            return
        if not self.detail.summary.valid:
            why = "; ".join(self.detail.reasons) or "no reason recorded"
            self.notify(
                f"not exported: this environment failed validation ({terminal_safe(why)[:200]}), "
                "so there is nothing runnable to export",
                severity="warning",
            )
            return
        try:
            path = export_env(self.detail, self.export_dir)
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        self.notify(f"exported to {path}")

    def action_show_lineage(self) -> None:
        self.push_screen(LineageScreen(self.reader.load_lineage, self.reader.load_detail))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Pause is offered (footer, key) only where this TUI owns the run; elsewhere ``p``
        explains instead. Over the lineage screen the keys that act on the environment
        browser's selection are off: they would act on another environment than the one shown."""
        if action in ENV_SELECTION_ACTIONS and isinstance(self.screen, LineageScreen):
            return False
        if action == "toggle_pause":
            return self.controller is not None
        if action == "refuse_pause":
            return self.controller is None
        return True

    def action_toggle_help(self) -> None:
        """Show the keys panel, or hide it when it is shown."""
        if self.screen.query(HelpPanel):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def action_refuse_pause(self) -> None:
        self.notify(
            "not the owner: this TUI watches a run started elsewhere, it cannot pause it",
            severity="warning",
        )

    def action_toggle_pause(self) -> None:
        if self.controller is None:
            self.action_refuse_pause()
            return
        if self.controller.paused:
            self.controller.resume()
            self.notify("run resumed")
        else:
            self.controller.pause()
            self.notify("run paused: new work waits until you press p again")
        self._render_header()

    def action_quit_app(self) -> None:
        if self.controller is None:
            self.exit(0)
            return
        if self.run_info is not None and self.run_info.status != "running":
            self.exit(0)  # the run already ended: nothing to stop
            return

        def answered(stop: bool | None) -> None:
            if stop and self.controller is not None:
                self.controller.request_stop()
                self.exit(0)

        self.push_screen(ConfirmStopScreen(), answered)
