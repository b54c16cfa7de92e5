"""A cross-sectional strategy on fewer codes than its groups need (issue 39, item 9): momentum ranks by percentile
(k / n for k = 1 … n); its bottom group takes ranks <= bottom, its top group ranks > 1 - top. With 3 codes the
ranks are 1/3, 2/3, 1: bottom=0.2 takes none (a code needs 1/n <= 0.2, so n >= 5), top=0.2 takes the best one."""

from __future__ import annotations

from pathlib import Path

from graphs.signal.groups import empty_group_warnings
from graphs.signal.library import STRATEGIES
from testkit.console import console_lines

MOMENTUM, VALUATION = STRATEGIES["momentum"], STRATEGIES["valuation"]


def test_momentum_on_three_codes_warns_that_it_never_sells_and_what_would_fill_the_group() -> None:
    (warning,) = empty_group_warnings("momentum", MOMENTUM.groups, {"window": 20, "top": 0.2, "bottom": 0.2}, 3)
    assert warning == ("momentum ranks 3 codes each day, and its bottom=0.2 group holds none of them (it needs at "
                       "least 5 codes): it never signals a sell, and every code it buys is held to the end (a "
                       "buy-and-hold of the codes it bought). Give at least 5 codes, or bottom=0.34 or more.")


def test_groups_that_hold_a_code_say_nothing() -> None:
    assert empty_group_warnings("momentum", MOMENTUM.groups, {"window": 20, "top": 0.2, "bottom": 0.2}, 5) == []
    assert empty_group_warnings("momentum", MOMENTUM.groups, {"window": 20, "top": 0.2, "bottom": 0.34}, 3) == []


def test_valuation_on_three_codes_never_buys_with_cheap_below_a_third() -> None:
    """cheap=0.3 takes ranks <= 0.3: none of 1/3, 2/3, 1 (4 codes give 1/4); dear=0.3 takes the dearest."""
    (warning,) = empty_group_warnings("valuation", VALUATION.groups, {"cheap": 0.3, "dear": 0.3}, 3)
    assert warning.startswith("valuation ranks 3 codes each day, and its cheap=0.3 group holds none of them (it needs "
                              "at least 4 codes): it never signals a buy, so it holds nothing long.")
    assert warning.endswith("Give at least 4 codes, or cheap=0.34 or more.")


def test_the_issue_s_momentum_run_reports_no_win_rate_and_says_what_it_did(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, "signal momentum 000001.SZ,600036.SH,601318.SH 20190102 20200601 window=20")
    assert "  Trades: buys / sells: 3 / 0 (0 round trips)" in lines
    assert "  Win rate (closed round trips): n/a: no round trip closed" in lines
    assert any(line.startswith("  Open positions in profit: ") and line.endswith(" of 3") for line in lines)
    assert not any("Hit rate" in line for line in lines)
    assert any(line.startswith("warning: momentum ranks 3 codes each day, and its bottom=0.2 group holds none")
               for line in lines)
