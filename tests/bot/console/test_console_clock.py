"""`quantdesk chat` on the simulated clock (issue 28, item 12; issue 39, item 8): from a fresh data directory on the
bundled sample (bars through Monday 20200824) the clock starts 20 sessions earlier, on Monday 20200727, so a
newcomer's buy, `clock next` and sell work; each dead end names its way out."""

from __future__ import annotations

from pathlib import Path

from testkit.console import console_lines
from tools.access.login import os_login


def test_a_round_trip_on_the_bundled_data_from_a_fresh_data_directory(tmp_path: Path) -> None:
    """Issue 39, item 8: order, approve, `clock next`, sell, approve, account. 600519.SH closes at 1622.55 on
    20200727 and 1670.00 on 20200728 (the sample's daily file). Buy 162,255.00: commission 0.025 % = 40.56,
    transfer 0.002 % = 3.25 (3.2451 half-up). Sell 167,000.00: commission 41.75, stamp duty 0.1 % = 167.00,
    transfer 3.34. Cash 1,000,000 - 162,298.81 + 166,787.91 = 1,004,489.10."""
    lines = console_lines(tmp_path, "order 600519.SH buy 100", "approve", "clock next", "order 600519.SH sell 100",
                  "approve", "account")
    text = "\n".join(lines)
    bought = lines.index("Order 1 filled: BUY 100 600519.SH at 1622.55 on 20200727 (simulated fill at the last "
                         "available close); value 162,255.00, fees 43.81.")
    moved = lines.index("The simulated clock moved from 20200727 to 20200728 (by "
                        f"{os_login()}; one simulated clock for every paper account in this database).")
    sold = lines.index("Order 2 filled: SELL 100 600519.SH at 1670.00 on 20200728 (simulated fill at the last "
                       "available close); value 167,000.00, fees 212.09.")
    assert bought < moved < sold
    assert "PASS sellable (T+1): 100 of 100 shares sellable today" in text
    account = lines[sold:]
    assert "Equity 1,004,489.10 CNY (+4,489.10 since the start), cash 1,004,489.10 of which 0.00 held for open " \
           "buys." in account
    assert "  As of 20200728 (the simulated session; `clock` shows and moves it); trading is on." in account
    assert {"  Realised P&L: +4,489.10", "  Market value: 0.00", "  Marks: 2"} <= set(account)


def test_the_dead_ends_of_the_simulated_clock_name_their_way_out(tmp_path: Path) -> None:
    """A sell of today's buy fails T+1 and names `clock next`; `clock next` at the data's end names `clock set`."""
    lines = console_lines(tmp_path, "clock", "order 000001.SZ buy 100", "approve", "order 000001.SZ sell 100",
                  "reject not yet", "clock set 20200824", "clock next")
    assert "Simulated clock: the session is 20200727 (one simulated clock for every paper account in this database; " \
           "the data ends at 20200824)." in lines
    assert ("FAIL sellable (T+1): 0 of 100 shares sellable today (shares bought today and shares in open sell orders "
            "are not); shares bought today become sellable when the simulated clock moves to the next session: "
            "`clock next`, then propose the sell again") in lines
    assert lines[-1] == ("error: the data ends at 20200824, so the simulated clock cannot move to 20200825: it moves "
                         "only over days the data has bars for, since fills need bars. `clock set DATE` moves it back "
                         "to an earlier session no order is dated after (`account reset NAME` clears an account's "
                         "orders)")


def test_clock_next_runs_the_rule_scheduled_in_the_console_as_of_the_new_session(tmp_path: Path) -> None:
    """Issue 28, item 12: a rule scheduled at 09:30 in the console runs once for each session the clock moves to,
    before the next line is read, deciding on bars up to that session only."""
    lines = console_lines(tmp_path, 'rule add 000001.SZ "buy when close > ma(30); sell when close < ma(30)"',
                          'rule schedule 1 "30 9 * * 1-5" anyway to watch the clock run it', "clock set 20200821",
                          "clock next")
    moved = next(i for i, line in enumerate(lines) if line.startswith("The simulated clock moved from 20200821 to "
                                                                      "20200824"))
    after = lines[moved:]
    assert ("  Rule 1 (000001.SZ, schedule `30 9 * * 1-5` Asia/Shanghai) runs for 20200824 at 09:30 Asia/Shanghai, "
            "on bars up to 20200824, in a new thread of its channel.") in after
    root = after.index("(Rule 1 (000001.SZ): scheduled run for the simulated session 20200824 (2020-08-24 01:30 UTC), "
                       f"owner {os_login()})")
    report = after.index("Rule 1 (000001.SZ): BUY", root)
    assert '"last": "2020-08-24 00:00:00"' in after[report + 2]  # the fetch step: no bar after the session
    assert "  As of: 20200824 (the simulated session; `clock` shows and moves it)" in after[report:]
    assert "  Execution: rule1-20200824T0130Z" in after[report:]
    friday = lines[:moved]
    assert "  Execution: rule1-20200821T0130Z" in friday  # `clock set` ran the Friday session's tick
    assert any('"last": "2020-08-21 00:00:00"' in line for line in friday)
    assert sum(line.startswith("  Execution: rule1-") for line in lines) == 2
