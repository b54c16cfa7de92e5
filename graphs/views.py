"""Adapter-neutral views of results: what a workflow's presenter returns and what every adapter (Slack
blocks, console text) knows how to format. Plain text only, no markup."""

from __future__ import annotations

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
    users: list[str] = field(default_factory=list)  # user ids named in the text (Slack shows them as mentions)
    artifacts: list[ArtifactRef] = field(default_factory=list)  # refs of stored charts and files that go with it
