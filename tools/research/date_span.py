"""Saying which dates a run covered when they are not the ones asked for (the data begins later or ends earlier)."""

from __future__ import annotations

from datetime import datetime

from tools.i18n import _

GRACE_DAYS = 10  # a run starting or ending within this many calendar days of the range asked for needs no note
                 # (weekends and holidays; the Spring Festival closes the market for up to 10 days)


def _days(earlier: str, later: str) -> int:
    return (datetime.strptime(later, "%Y%m%d") - datetime.strptime(earlier, "%Y%m%d")).days


def span_note(asked_start: str, asked_end: str, first: str, last: str) -> str | None:
    """'Asked for 20180101–20200601; ran 20190102–20200601: there is no data before 20190102.' (in the language in
    effect) when the dates that ran (YYYYMMDD) start or end well inside the range asked for, else None."""
    why = []
    if _days(asked_start, first) > GRACE_DAYS:
        why.append(_("there is no data before {day}").format(day=first))
    if _days(last, asked_end) > GRACE_DAYS:
        why.append(_("there is no data after {day}").format(day=last))
    if not why:
        return None
    return _("Asked for {start}–{end}; ran {first}–{last}: {why}.").format(start=asked_start, end=asked_end,
                                                                          first=first, last=last,
                                                                          why=_(" and ").join(why))
