"""`quantdesk chat` on the simulated clock (issue 28, item 12): buy, approve, `clock next`, sell, approve, account."""

from __future__ import annotations

import getpass
from pathlib import Path

from tests.test_console import _chat


def test_the_simulated_clock_lets_a_buy_be_sold_the_next_session(tmp_path: Path) -> None:
    """Issue 28, item 12: on the bundled sample (bars through 20200824) the clock goes back a session, a buy fills
    there, `clock next` lets T+1 pass and the sell fills at the next session's close."""
    lines = _chat(tmp_path, "clock set 20200821", "order 000001.SZ buy 100", "approve", "clock next",
                  "order 000001.SZ sell 100", "approve", "account")
    assert "The simulated clock moved back from 20200824 to 20200821 (by " in "\n".join(lines)
    bought = next(i for i, line in enumerate(lines) if line.startswith("Order 1 filled: BUY 100 000001.SZ"))
    assert " on 20200821 " in lines[bought]
    moved = next(i for i, line in enumerate(lines) if line.startswith("The simulated clock moved from 20200821 to "
                                                                      "20200824"))
    assert bought < moved
    assert "PASS sellable (T+1): 100 of 100 shares sellable today" in "\n".join(lines[moved:])
    sold = next(i for i, line in enumerate(lines) if line.startswith("Order 2 filled: SELL 100 000001.SZ"))
    assert " at 14.46 on 20200824 " in lines[sold]
    assert "  As of 20200824 (the simulated session; `clock` shows and moves it); trading is on." in lines[sold:]
    assert "  Market value: 0.00" in lines[sold:]


def test_clock_next_runs_the_rule_scheduled_in_the_console_as_of_the_new_session(tmp_path: Path) -> None:
    """Issue 28, item 12: a rule scheduled at 09:30 in the console runs once for each session the clock moves to,
    before the next line is read, deciding on bars up to that session only."""
    lines = _chat(tmp_path, 'rule add 000001.SZ "buy when close > ma(30); sell when close < ma(30)" '
                            'every="30 9 * * 1-5"', "clock set 20200821", "clock next")
    moved = next(i for i, line in enumerate(lines) if line.startswith("The simulated clock moved from 20200821 to "
                                                                      "20200824"))
    after = lines[moved:]
    assert ("  Rule 1 (000001.SZ, schedule `30 9 * * 1-5` Asia/Shanghai) runs for 20200824 at 09:30 Asia/Shanghai, "
            "on bars up to 20200824, in a new thread of its channel.") in after
    root = after.index("(Rule 1 (000001.SZ): scheduled run for the simulated session 20200824 (2020-08-24 01:30 UTC), "
                       f"owner {getpass.getuser()})")
    report = after.index("Rule 1 (000001.SZ): BUY", root)
    assert '"last": "2020-08-24 00:00:00"' in after[report + 2]  # the fetch step: no bar after the session
    assert "  As of: 20200824 (the simulated session; `clock` shows and moves it)" in after[report:]
    assert "  Execution: rule1-20200824T0130Z" in after[report:]
    friday = lines[:moved]
    assert "  Execution: rule1-20200821T0130Z" in friday  # `clock set` ran the Friday session's tick
    assert any('"last": "2020-08-21 00:00:00"' in line for line in friday)
    assert sum(line.startswith("  Execution: rule1-") for line in lines) == 2
