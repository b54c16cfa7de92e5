"""`quantdesk chat` on the simulated clock (issue 28, item 12): buy, approve, `clock next`, sell, approve, account."""

from __future__ import annotations

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
