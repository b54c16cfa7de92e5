"""Texts stored in English (an order's notes, an evaluation run's outcome) shown in the language in effect: a stored
text is read back through the template that wrote it, and that template's translation is filled with what its
placeholders held."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from tools.i18n.catalog import _


@cache
def _pattern(template: str) -> re.Pattern[str]:
    """A template as a regular expression whose named groups are its placeholders."""
    parts = re.split(r"\{(\w+)\}", template)
    return re.compile("".join(re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)"
                              for i, part in enumerate(parts)))


def stored_text(text: str, templates: Sequence[str]) -> str:
    """`text` in the language in effect, read through the first of `templates` it matches whole (a text no template
    wrote, as it is); a placeholder holding another such text is shown translated too."""
    for template in templates:
        found = _pattern(template).fullmatch(text)
        if found:
            return _(template).format(**{k: stored_text(v, templates) for k, v in found.groupdict().items()})
    return text
