"""What a workflow is to the rest of QuantDesk: one registry entry (see graphs/registry.py)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graphs.grammar import Words
from tools.data.schema import DAILY, DAILY_BASIC
from tools.i18n import _

if TYPE_CHECKING:  # the registry stays light: help and the grammar are read before any graph or context is imported
    from langgraph.graph.state import CompiledStateGraph

    from graphs.background import Notice
    from graphs.context import WorkflowContext
    from graphs.measures import Measures, RunRecord
    from graphs.views import View
    from tools.data.provider import MarketDataProvider


class Lazy:
    """A function (or class) of a heavy module, named `"package.module:name"` and imported at its first use: the
    registry names graphs, presenters and command handlers this way, so reading it imports none of them."""

    __slots__ = ("target", "_found")

    def __init__(self, target: str) -> None:
        self.target = target
        self._found: Any = None

    def resolve(self) -> Any:
        if self._found is None:
            module, _sep, name = self.target.partition(":")
            self._found = getattr(importlib.import_module(module), name)
        return self._found

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Lazy({self.target!r})"


@dataclass(frozen=True)
class CommandCall:
    """One command as an adapter hands it over: who asked, in which account's place, with which words."""

    context: WorkflowContext
    args: list[str]
    user: str | None
    account: str  # the adapter's default paper account (one per Slack channel; `console`)
    # the command made background work due (a clock move's rule runs): the adapter may run its background service's
    # pass at once (the console does, and waits for the runs it starts); else it runs at the next pass
    background_due: Callable[[], None] = field(default=lambda: None)
    # (card action, reason) -> how many open cards of that action the adapter rejected as this caller, each through
    # its one decision path (a trading switch-off ends every open order card at once); 0 where it cannot
    close_cards: Callable[[str, str], int] = field(default=lambda action, reason: 0)
    # (thread id, checkpoint, fields) -> whether the result a run posted at that checkpoint is shown again with the
    # fields added (a live re-run's stability on the decision's card); False where nothing was posted
    amend_result: Callable[[str, str, dict[str, Any]], bool] = field(default=lambda thread, checkpoint, fields: False)

    @property
    def is_trader(self) -> bool:
        """A trader of some account: global actions (the switch, the simulated clock)."""
        from graphs.context import trades_anywhere

        return trades_anywhere(self.context, self.user)

    def is_trader_of(self, account: str) -> bool:
        from graphs.context import traders_of

        return self.user is not None and self.user in traders_of(self.context, account)


class CommandError(ValueError):
    """A command that cannot be done as asked; the message says why and what to type."""


@dataclass(frozen=True)
class Subcommand:
    """A command that needs no graph run (e.g. `factor list`, `account`): it answers with a view."""

    usage: str
    summary: str
    run: Callable[[CommandCall], View]
    min_args: int = 0  # fewer words are not this command (`cancel` alone ends a pending request)
    free_text_from: int | None = None  # from this argument on, words a person wrote (a reason): kept as typed


@dataclass(frozen=True)
class Workflow:
    name: str  # the request's first word, the `/quant` subcommand and the main graph's node
    summary: str  # one line: what it does (help and the LLM router's prompt)
    usage: str  # the grammar
    example: str
    notes: tuple[str, ...]  # more help lines (strategies, kinds, what parameters mean): message ids (N_)
    starts_request: Callable[[str], bool]  # a new request of this workflow (first word is its keyword or a kind)
    looks_structured: Callable[[str], bool]  # the grammar rather than prose
    build: Callable[..., CompiledStateGraph[Any, Any, Any, Any]]  # build(checkpointer=...) -> the compiled subgraph
    present: Callable[[dict[str, Any]], View]  # a finished run's result as a view
    deps: Lazy  # the Protocol of what its nodes read from the run's context: its deps.py
    subcommands: dict[str, Subcommand] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # agent -> model role (main, light, deep): its models.py
    measure: Callable[[RunRecord], Measures] | None = None  # what `quantdesk eval` measures of a run (None: no eval)
    # a run its background work started (a structured request) that crashed: (context, thread id, request, error) ->
    # notices; what the run's own bookkeeping would have done (a rule counts toward its auto-pause)
    after_failure: Callable[[WorkflowContext, str, dict[str, Any], str], list[Notice]] | None = None
    # what the notes' {placeholders} stand for, on the active data provider
    note_values: Callable[[MarketDataProvider], dict[str, str]] = field(default=lambda provider: {})
    words: Words = field(default_factory=Words)  # its Chinese words by role (graphs.grammar.Words)

    def help_notes(self, provider: MarketDataProvider) -> list[str]:
        """The notes in the language in effect, placeholders filled for `provider`."""
        values = self.note_values(provider)
        return [_(note).format(**values) for note in self.notes]

    def subcommand(self, words: list[str]) -> Subcommand | None:
        """The subcommand `words` call (`factor list` → list), if any."""
        return self.subcommands.get(words[0].lower()) if words else None


def runnable_names(needs: Mapping[str, tuple[str, ...]], provider: MarketDataProvider) -> str:
    """The names whose fields `provider` serves, then the others, each with the fields it lacks (help's strategies
    and factor kinds)."""
    served = {*provider.available_fields(DAILY), *provider.available_fields(DAILY_BASIC)}
    lacking = {name: [f for f in fields if f not in served] for name, fields in needs.items()}
    ready = ", ".join(name for name, missing in lacking.items() if not missing)
    others = [_("{name} (needs {fields})").format(name=name, fields=", ".join(missing))
              for name, missing in lacking.items() if missing]
    if not others:
        return ready
    return _("{ready}; not on the {provider} data: {others}").format(ready=ready, provider=provider.label(),
                                                                   others=", ".join(others))
