"""Text columns on a terminal: East Asian wide and full-width characters take two cells, combining marks none."""

from __future__ import annotations

import unicodedata


def display_width(text: str) -> int:
    """The cells `text` takes on a terminal."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad_right(text: str, width: int) -> str:
    """`text` followed by spaces up to `width` cells (as str.ljust, counting cells)."""
    return text + " " * max(0, width - display_width(text))


def pad_left(text: str, width: int) -> str:
    """Spaces up to `width` cells, then `text` (as str.rjust, counting cells)."""
    return " " * max(0, width - display_width(text)) + text
