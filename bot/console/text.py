"""Views (graphs/views.py) as console text."""

from __future__ import annotations

from collections.abc import Callable

from graphs.views import View, named
from tools.i18n import _


def view_text(view: View, person: Callable[[str], str] = str) -> str:
    """The title (unless the summary already begins with it), the summary, the lines, facts, table, code, notes
    and warnings; the people it names as `person` names them."""
    body = [f"  {line}" for line in view.lines] + [f"  {label}: {value}" for label, value in view.facts]
    if view.table is not None:
        body += ["  " + row for row in view.table.aligned().splitlines()]
    if view.code:
        body += [_("code:"), view.code]
    head = [view.title, view.summary] if body and not view.summary.startswith(view.title) else [view.summary]
    return named("\n".join(head + body + [_("  note: {note}").format(note=n) for n in view.notes]
                           + [_("warning: {warning}").format(warning=w) for w in view.warnings]), view.users, person)
