"""What the trading desk reads from the run's context: the order subgraph's needs plus its sources and budgets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from graphs.context import Models
from graphs.order.deps import OrderDeps
from tools.data.fundamentals import FundamentalsSource
from tools.data.news import NewsSource


class AnalyzeDeps(OrderDeps, Models, Protocol):
    fundamentals: FundamentalsSource | None  # None: not configured
    news: NewsSource | None
    posts: NewsSource | None
    decision_token_budget: int  # tokens one decision may use, all agents together
    replay_token_budget: int  # tokens one replay may use over all its dates
    max_answer_tokens: int  # the most answer tokens one call asks for
    desk_namespace: str  # the desk's memory and decision log ("live"; a replay has its own)

    @property
    def stop_requested(self) -> Callable[[], bool]:  # the adapter's "stop this run", checked inside long nodes
        ...

    @property
    def stop_honoured(self) -> Callable[[], None]:  # a long node stopped early for it
        ...
