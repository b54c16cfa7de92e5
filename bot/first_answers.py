"""What the core answers before it is built: a line that is `help` (帮助 …), read by the core's own dispatcher
(graphs/conversation.py), answered with the help the built core gives (bot/core/intake.py). Light: no graph, no
LangChain, no database; a surface still warming up (the console) offers it while the rest imports."""

from __future__ import annotations

from collections.abc import Collection

from graphs import conversation
from graphs.conversation import HelpSection, Intent
from tools.data.provider import MarketDataProvider


def read_line(text: str, waiting: str | None, local: Collection[tuple[str, str]]) -> Intent:
    """What a line is (graphs/conversation.py), the surface's own commands known by their usages' first words."""
    return conversation.read(text, waiting, {usage.split()[0] for usage, _summary in local})


def help_before_start(line: str, provider: MarketDataProvider,
                      local: Collection[tuple[str, str]]) -> tuple[HelpSection, ...] | None:
    """The help sections when `line` asks for help, else None (the built core answers it); `local`: the surface's own
    commands (usage, summary message id), as it hands them to the core with each line. In the language in effect."""
    if not isinstance(read_line(line.strip(), None, local), conversation.Help):
        return None
    return tuple(conversation.help_sections(provider, local))
