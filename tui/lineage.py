"""The lineage screen: the tree of environments each line of mutations came from.

Why a screen of its own: the environment browser lists environments by the step they were
born, so a line of mutations (a parent, its mutations, theirs) is scattered over it. Here each
line is one branch, every node with its win rate, regret and how it ended (live, retired,
rejected, expelled by the play audit, ...), and the highlighted node's code and latest plays
are shown by the browser's own detail view. The tree is read once when the screen opens
(``RunReader.load_lineage``, off the UI thread); open it again to see newer designs.

Environments no mutation came from are gathered, folded, under one node at the end: in a
long run most designs are never mutated, and the lines are what this screen is for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Static, Tree
from textual.widgets.tree import TreeNode

from spade_async.memory.lineage import (
    END_EXPELLED,
    END_LIVE,
    END_REJECTED,
    END_RETIRED_BY_HAND,
    Lineage,
    LineageNode,
)
from spade_async.util.textsafe import terminal_safe

from .reader import EnvDetail
from .stats import fmt_num
from .widgets.envs import EnvDetailView

_END_STYLE = {END_LIVE: "green", END_REJECTED: "red", END_EXPELLED: "bold red", END_RETIRED_BY_HAND: "yellow"}


def node_label(node: LineageNode) -> Text:
    """One line per environment: id, generation, win rate, regret, how it ended, skill."""
    text = Text()
    text.append(node.id[:8], style="bold")
    text.append(f"  gen {node.generation}  win {fmt_num(node.win_rate)}  regret {fmt_num(node.regret)}  ")
    end = node.end if node.ended_step is None else f"{node.end} at step {node.ended_step + 1}"
    text.append(end, style=_END_STYLE.get(node.end, "dim"))
    if node.cut is not None:
        text.append(f"  (parent {(node.recorded_parent or '')[:8]}: {node.cut})", style="dim italic")
    text.append(f"  {terminal_safe(node.skill or '—')}", style="cyan")  # last: a narrow pane cuts it first
    return text


def summary_line(lineage: Lineage) -> str:
    """What the tree holds, in one line."""
    edges = len(lineage.edges())
    return (
        f"{len(lineage.nodes)} environments, {edges} mutation link(s), "
        f"{len(lineage.branching_roots())} line(s), deepest generation {lineage.depth()}"
    )


class LineageTree(Tree[str]):
    """The lineage as a ``Tree``; each node's data is its environment id (a group node: None)."""

    def show(self, lineage: Lineage) -> None:
        self.clear()
        self.root.expand()
        lines = lineage.branching_roots()
        for root in lines:
            self._add(self.root, lineage, root)
        singles = [r for r in lineage.roots if not lineage.nodes[r].children]
        if singles:
            group = self.root.add(Text(f"{len(singles)} environment(s) no mutation came from", style="dim"))
            for env_id in singles:
                group.add_leaf(node_label(lineage.nodes[env_id]), data=env_id)

    def _add(self, under: TreeNode[str], lineage: Lineage, root: str) -> None:
        stack: list[tuple[TreeNode[str], str]] = [(under, root)]
        while stack:  # no recursion: a line may be thousands of mutations long
            parent, env_id = stack.pop()
            node = lineage.nodes[env_id]
            if node.children:
                branch = parent.add(node_label(node), data=env_id, expand=True)
                stack.extend((branch, c) for c in reversed(node.children))
            else:
                parent.add_leaf(node_label(node), data=env_id)

    def node_for(self, env_id: str) -> TreeNode[str] | None:
        """The tree node of ``env_id`` (None if not shown)."""
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.data == env_id:
                return node
            stack.extend(node.children)
        return None


class LineageScreen(Screen[None]):
    DEFAULT_CSS = """
    #lineage-caption { height: 1; color: $text-muted; padding: 0 1; }
    #lineage-tree { width: 3fr; }
    #lineage-detail { width: 2fr; padding: 0 1; border-left: solid $primary-background; }
    """
    BINDINGS = [Binding("l,escape", "close", "back")]  # noqa: RUF012 (Textual's own declaration style)

    def __init__(
        self,
        load_lineage: Callable[[], Lineage | None],
        load_detail: Callable[[str], EnvDetail | None],
    ) -> None:
        """Both loaders are called in a worker thread (``RunReader.load_lineage`` / ``load_detail``)."""
        super().__init__()
        self._load_lineage = load_lineage
        self._load_detail = load_detail
        self.lineage: Lineage | None = None
        self.detail: EnvDetail | None = None

    def compose(self) -> ComposeResult:
        yield Static("reading the lineage…", id="lineage-caption")
        with Horizontal():
            yield LineageTree(Text("lineage", style="bold"), id="lineage-tree")
            yield EnvDetailView(id="lineage-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(LineageTree).focus()
        self.run_worker(self._fill(), group="lineage", exclusive=True)

    async def _fill(self) -> None:
        lineage = await asyncio.to_thread(self._load_lineage)
        caption = self.query_one("#lineage-caption", Static)
        if lineage is None:
            caption.update("the run database is not readable yet; press l to close and open it again")
            return
        self.lineage = lineage
        caption.update(summary_line(lineage) + "   (read when opened: press l to close, l again to refresh)")
        self.query_one(LineageTree).show(lineage)

    @on(Tree.NodeHighlighted, "#lineage-tree")
    def _highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        if event.node.data is not None:
            self.run_worker(self._fetch_detail(event.node.data), group="lineage-detail", exclusive=True)

    async def _fetch_detail(self, env_id: str) -> None:
        detail = await asyncio.to_thread(self._load_detail, env_id)
        self.detail = detail
        self.query_one(EnvDetailView).show(detail)

    def action_close(self) -> None:
        self.dismiss(None)
