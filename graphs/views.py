"""Adapter-neutral views of results: what a workflow's presenter returns and what every adapter (Slack
blocks, console text) knows how to format. Plain text only, no markup."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tools.i18n import display_width, pad_left
from tools.storage.artifacts import ArtifactRef


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[str]]

    def aligned(self) -> str:
        """The table as fixed-width text (right-aligned columns, Chinese characters two cells wide)."""
        cells = [self.columns, *self.rows]
        widths = [max(display_width(row[i]) for row in cells) for i in range(len(self.columns))]
        return "\n".join(" ".join(pad_left(cell, w) for cell, w in zip(row, widths, strict=True)) for row in cells)


@dataclass(frozen=True)
class View:
    """A result to show: a title, a short summary (also the plain-text fallback), sentences, label/value facts,
    an optional table and code, small print (conventions) and warnings."""

    title: str
    summary: str
    lines: list[str] = field(default_factory=list)
    facts: list[tuple[str, str]] = field(default_factory=list)
    table: Table | None = None
    code: str | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)  # people named by user id in the texts (see `named`)
    accounts: list[str] = field(default_factory=list)  # paper accounts named in the texts (see `named`)
    artifacts: list[ArtifactRef] = field(default_factory=list)  # refs of stored charts and files that go with it


# People and paper accounts are named by id in every text a workflow writes (a user id, an account's name: in Slack
# a channel's account is named after the channel); the text lists them (`users`, `accounts`: a View's fields, an
# interrupt payload's keys of the same names), and each surface shows them its way: Slack as mentions and channel
# links where it renders them and plain names elsewhere, the console by name.

ANGLED = re.compile(r"(<[^>]*>)")  # a span a surface wrote already (a mention, a link): never rewritten


def named(text: str, ids: Iterable[str], show: Callable[[str], str]) -> str:
    """`text` with each of `ids` (a whole ASCII word: Chinese text runs on without spaces; outside `<...>` spans)
    shown as `show(id)` says."""
    wanted = sorted({i for i in ids if i}, key=len, reverse=True)
    if not wanted:
        return text
    pattern = re.compile(r"(?<![A-Za-z0-9_@#])(" + "|".join(map(re.escape, wanted)) + r")(?![A-Za-z0-9_])")
    return "".join(part if ANGLED.fullmatch(part) else pattern.sub(lambda m: show(m.group(1)), part)
                   for part in ANGLED.split(text))


def refs(users: Iterable[str | None] = (), accounts: Iterable[str | None] = ()) -> dict[str, list[str]]:
    """The people and accounts an interrupt payload's texts name, as its `users` and `accounts` keys."""
    return {"users": [u for u in dict.fromkeys(users) if u], "accounts": [a for a in dict.fromkeys(accounts) if a]}
