"""Progress as data: nodes report what they are doing on LangGraph's custom stream (`stream_mode="custom"`), so
adapters show it without knowing node names."""

from __future__ import annotations

from langgraph.config import get_stream_writer

PROGRESS = "progress"


def report_progress(label: str, detail: str | None = None) -> None:
    """Tell the adapter this step is under way, e.g. ("dry run", "attempt 2/6")."""
    get_stream_writer()({PROGRESS: label, "detail": detail})
