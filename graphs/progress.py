"""Progress as data: nodes report what they are doing, and the long prose they finish, on LangGraph's custom stream
(`stream_mode="custom"`), so adapters show it without knowing node names."""

from __future__ import annotations

from langgraph.config import get_stream_writer

PROGRESS = "progress"
PROSE = "prose"


def report_progress(label: str, detail: str | None = None) -> None:
    """Tell the adapter this step is under way, e.g. ("dry run", "attempt 2/6")."""
    get_stream_writer()({PROGRESS: label, "detail": detail})


def report_prose(key: str, title: str, text: str) -> None:
    """A piece of long prose finished (an analyst's report, a debate turn, the trader's reasoning): a surface that
    streams shows it as it goes; `key` names it within the run (the same when the node runs again)."""
    get_stream_writer()({PROSE: key, "title": title, "text": text})
