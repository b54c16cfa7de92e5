"""The console's help as text, and its own data commands' usages: light (no pandas, no graph), so a `help` typed
while the session still warms up is answered from here (bot/console/early.py) exactly as the session answers it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tools.i18n import N_, _, display_width, pad_right

if TYPE_CHECKING:
    from bot.core.intake import HelpSection


@dataclass(frozen=True)
class DataUsage:
    usage: str
    summary: str  # a message id
    arity: tuple[int, int | None]  # (fewest, most) arguments; None: no upper bound


# the console's own data commands (bot/console/data.py runs them)
DATA_COMMANDS: dict[str, DataUsage] = {
    "codes": DataUsage("codes", N_("codes the data provider knows"), (0, 0)),
    "fields": DataUsage("fields", N_("fields the data provider offers"), (0, 0)),
    "bars": DataUsage("bars CODES START END [FIELD ...]", N_("daily bars (long), e.g. bars 000001.SZ 20200101 "
                                                             "20200331"), (3, None)),
    "load": DataUsage("load FIELD CODES START END", N_("a wide date x code frame into the workspace"), (4, 4)),
    "ws": DataUsage("ws", N_("frames in the current thread's workspace (inputs and outputs)"), (0, 0)),
    "show": DataUsage("show NAME", N_("head and tail of a workspace frame"), (1, 1)),
}
DATA_HELP = tuple((command.usage, command.summary) for command in DATA_COMMANDS.values())  # the core reads it

USAGE_WIDTH = 34  # the help's usage column; a longer usage puts its summary on the next line


def _entry(usage: str, summary: str) -> str:
    """One command of the help: its usage, then its summary in the second column (counted in terminal cells, so
    a Chinese usage lines up too)."""
    if display_width(usage) < USAGE_WIDTH:
        return f"  {pad_right(usage, USAGE_WIDTH)}{summary}"
    return f"  {usage}\n  {'':<{USAGE_WIDTH}}{summary}"


def help_text(sections: tuple[HelpSection, ...]) -> str:
    """The core's help as the console shows it: a title per section, usages in a column."""
    lines = [_("workflow requests (a new request starts a new thread; anything else continues the current one):")]
    for section in sections:
        lines.append(f"{section.title}:")
        for entry in section.entries:
            if entry.heading:
                lines += [f"  {entry.usage}", f"      {entry.summary}"]
            else:
                lines.append(_entry(entry.usage, entry.summary) if entry.usage else f"      {entry.summary}")
    lines.append(_entry("quit", _("leave (end of input does too)")))
    return "\n".join(lines)
