"""``spade-async report``: a run's figures as PNG plots and a Markdown summary that embeds them.

Why files: the TUI shows a run while you watch it; a report is what you attach to a note,
a pull request or a paper draft. It reads the database read-only (a live run is not
blocked or changed) and writes only into the output folder.
"""
