"""Periodic passes of the workflows, run by the bot's reconciler whether or not anybody asks, and the notices they
hand back: each is posted into its thread once (the adapter keys the post by `key`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from graphs.context import WorkflowContext


@dataclass(frozen=True)
class Notice:
    thread_id: str  # the LangGraph thread id (the adapter maps it to its Slack thread)
    key: str  # the post's once-only key
    text: str


PeriodicPass = Callable[[WorkflowContext], list[Notice]]
