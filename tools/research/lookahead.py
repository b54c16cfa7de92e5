"""The truncation test for look-ahead: code that only reads the past gives the same values up to a date whether or
not the data after that date exists. Shared by every workflow that runs user or model code on dated frames."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from tools.i18n import LANGUAGES, N_, _, translate

CUT_SHARE = 0.6  # the cut leaves this share of the dates that have values before it
MIN_DATES = 10  # fewer dates with values: too short to test
LOOKAHEAD = N_("look-ahead: {what} on {day} changes when the data after {cut} is removed, so it uses future data "
               "(e.g. shift(-n), centred windows or full-sample statistics)")


class CutRunError(Exception):
    """The code failed on the inputs cut at a date; the message says why."""


def cut_date(full: pd.DataFrame | pd.Series) -> pd.Timestamp | None:
    """A date inside the part of `full` that has values (warm-up rows skipped), or None when too short."""
    present = full.notna() if isinstance(full, pd.Series) else full.notna().any(axis=1)
    dates = full.index[present.to_numpy()]
    if len(dates) < MIN_DATES:
        return None
    return pd.Timestamp(dates[int(len(dates) * CUT_SHARE)])


def is_lookahead_problem(text: str) -> bool:
    """Whether `text` (an error that quotes a problem from `lookahead_problem`, in any language) says the code used
    future data: it holds the words of `LOOKAHEAD` before its first placeholder ("look-ahead: ", "未来函数："). Code
    that merely fails or changes type on the cut data is not counted."""
    return any(translate(language, LOOKAHEAD).split("{", 1)[0] in text for language in LANGUAGES)


def lookahead_problem(run_cut: Callable[[pd.Timestamp], Any], full: pd.DataFrame | pd.Series,
                      what: str = N_("the output")) -> str | None:
    """Run the code again on inputs cut at a date inside `full` (`run_cut(date)` returns that run's output or
    raises CutRunError) and compare the values up to the cut: a problem naming the first date that changed,
    or None when nothing did (or `full` is too short to test). `what` is a message id, the problem is in the
    language in effect."""
    cut = cut_date(full)
    if cut is None:
        return None
    name, day = _(what), f"{cut:%Y%m%d}"
    try:
        early = run_cut(cut)
    except CutRunError as exc:
        return _("{what} fails on the data cut at {cut}: {error}").format(what=name, cut=day, error=exc)
    if type(early) is not type(full):
        return _("on the data cut at {cut}, {what} is a {kind}, not a {expected}").format(
            cut=day, what=name, kind=type(early).__name__, expected=type(full).__name__)
    early_table = early.to_frame() if isinstance(early, pd.Series) else early
    before = pd.DataFrame(full.loc[:cut]).reindex(index=early_table.index, columns=early_table.columns)
    try:
        same = np.isclose(before.to_numpy(dtype=float), early_table.to_numpy(dtype=float), rtol=1e-9, atol=1e-12,
                          equal_nan=True)
    except (TypeError, ValueError):
        return _("on the data cut at {cut}, {what} holds values that are not numbers").format(cut=day, what=name)
    changed = ~same.all(axis=1)
    if not changed.any():
        return None
    first = pd.Timestamp(early_table.index[np.argmax(changed)])
    return _(LOOKAHEAD).format(what=name, day=f"{first:%Y%m%d}", cut=day)
