"""Rule backtests on tiny synthetic histories: every fill, fee, mark and the benchmark checked against hand
calculations with the paper account's cost model (commission 0.025 % with a 5 CNY minimum, transfer fee 0.001 %,
stamp duty on sells 0.1 % until 2023-08-27 and 0.05 % from 2023-08-28; all rounded half-up to the fen)."""

from __future__ import annotations

import math
import statistics
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from tools.broker.fees import Fees
from tools.data.local import LocalProvider
from tools.data.schema import DataError
from tools.rules.backtest import Mark, Trade, backtest_rule

D = Decimal
RULE = "buy when close > ma(3); sell when close < ma(3)"

# (trade_date, open, close); high = max(open, close) + 0.10, low = min(open, close) - 0.10
SERIES = [
    ("20230816", 10.00, 10.20),
    ("20230817", 10.10, 10.10),
    ("20230818", 10.05, 10.00),
    ("20230821", 10.00, 9.95),  # START; ma(3) = 10.0167: close below, a sell while flat does nothing
    ("20230822", 10.10, 10.60),  # ma(3) = 10.1833: buy
    ("20230823", 10.50, 10.80),  # bought at the open; ma(3) = 10.45: buy again, already long
    ("20230824", 10.70, 10.20),  # ma(3) = 10.5333: sell
    ("20230825", 10.00, 10.00),  # sold at the open (stamp duty 0.1 %); ma(3) = 10.3333: sell, flat
    ("20230828", 10.00, 10.60),  # ma(3) = 10.2667: buy
    ("20230829", 10.40, 10.90),  # bought at the open; ma(3) = 10.5: buy, long
    ("20230830", 10.80, 10.30),  # ma(3) = 10.6: sell
    ("20230831", 10.20, 10.10),  # sold at the open (stamp duty 0.05 %); ma(3) = 10.4333: sell, flat
    ("20230901", 10.00, 10.50),  # END; ma(3) = 10.3: buy, but no next bar
]


def _provider(root: Path, code: str, rows: list[tuple[str, float, float, float, float]]) -> LocalProvider:
    """daily.csv of (trade_date, open, high, low, close) rows."""
    frame = pd.DataFrame(rows, columns=["trade_date", "open", "high", "low", "close"])
    frame.insert(0, "ts_code", code)
    frame["vol"] = 1000.0
    frame.to_csv(root / "daily.csv", index=False)
    return LocalProvider(root)


def _ohlc(series: list[tuple[str, float, float]]) -> list[tuple[str, float, float, float, float]]:
    return [(d, o, round(max(o, c) + 0.1, 2), round(min(o, c) - 0.1, 2), c) for d, o, c in series]


def _fees(commission: str, stamp_duty: str, transfer_fee: str) -> Fees:
    return Fees(D(commission), D(stamp_duty), D(transfer_fee), D("0.00"), D("0.00"))


def test_every_trade_fee_and_mark_by_hand(tmp_path: Path) -> None:
    provider = _provider(tmp_path, "600000.SH", _ohlc(SERIES))
    result = backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, cash=D("10000"))
    assert (result.warmup, result.warmup_bars) == (2, 3)  # it needs two bars before START, and reads all three
    assert result.decisions.index[0] == pd.Timestamp("2023-08-21")
    assert result.decisions["action"].tolist() == ["sell", "buy", "buy", "sell", "sell", "buy", "buy", "sell",
                                                   "sell", "buy"]
    s = result.strategy
    assert s.trades == (
        # 10000 / 10.50 = 952 shares -> 900 (lots of 100); 9450.00 + 5.00 commission (min) + 0.09 transfer fee
        Trade("20230823", "buy", 900, D("10.50"), D("9450.00"), _fees("5.00", "0.00", "0.09"), "20230822"),
        # cash 544.91; 9000.00 - 5.00 - 9.00 stamp duty (0.1 %) - 0.09
        Trade("20230825", "sell", 900, D("10.00"), D("9000.00"), _fees("5.00", "9.00", "0.09"), "20230824"),
        # cash 9530.82; 9530.82 / 10.40 = 916 -> 900; 9360.00 + 5.00 + 0.09
        Trade("20230829", "buy", 900, D("10.40"), D("9360.00"), _fees("5.00", "0.00", "0.09"), "20230828"),
        # cash 165.73; 9180.00 - 5.00 - 4.59 stamp duty (0.05 % from 2023-08-28) - 0.09
        Trade("20230831", "sell", 900, D("10.20"), D("9180.00"), _fees("5.00", "4.59", "0.09"), "20230830"),
    )
    assert [m.equity for m in s.marks] == [D("10000.00"), D("10000.00"), D("10264.91"), D("9724.91"),
                                           D("9530.82"), D("9530.82"), D("9975.73"), D("9435.73"),
                                           D("9336.05"), D("9336.05")]
    assert s.marks[2] == Mark("20230823", D("544.91"), 900, D("10.80"))
    assert s.marks[-1] == Mark("20230901", D("9336.05"), 0, D("10.50"))
    assert s.final_equity == D("9336.05")
    assert s.total_return == D("-0.066395")
    assert s.max_drawdown == D("9336.05") / D("10264.91") - 1  # from the 2023-08-23 peak
    assert s.fees_paid == D("33.95")
    assert s.trade_count == 4
    assert s.notes == ("20230901: the buy decided on the last bar has no next bar to fill on",)
    assert s.equity.tolist() == [10000.0, 10000.0, 10264.91, 9724.91, 9530.82, 9530.82, 9975.73, 9435.73,
                                 9336.05, 9336.05]
    assert s.equity.index[0] == pd.Timestamp("2023-08-21")


def test_the_buy_and_hold_benchmark_by_hand(tmp_path: Path) -> None:
    provider = _provider(tmp_path, "600000.SH", _ohlc(SERIES))
    b = backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, cash=D("10000")).benchmark
    # 1000 shares at 10.00 would cost 10000.00 + 5.00 + 0.10 > 10000: 900 shares, 9000.00 + 5.00 + 0.09
    assert b.trades == (Trade("20230821", "buy", 900, D("10.00"), D("9000.00"), _fees("5.00", "0.00", "0.09"), None),)
    # cash 994.91 + 900 × close
    assert [m.equity for m in b.marks] == [D("9949.91"), D("10534.91"), D("10714.91"), D("10174.91"),
                                           D("9994.91"), D("10534.91"), D("10804.91"), D("10264.91"),
                                           D("10084.91"), D("10444.91")]
    assert b.final_equity == D("10444.91")
    assert b.total_return == D("0.044491")
    assert b.max_drawdown == D("9994.91") / D("10714.91") - 1  # deeper than 10084.91 / 10804.91 - 1
    assert b.fees_paid == D("5.09")
    assert b.notes == ()


def test_order_sizes_round_down_to_the_lot_rule(tmp_path: Path) -> None:
    provider = _provider(tmp_path, "600000.SH", _ohlc(SERIES))

    def first_buy(size: int | None = None, value: Decimal | None = None) -> Trade:
        return backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, cash=D("10000"), size=size,
                             value=value).strategy.trades[0]

    # 250 shares -> 200; 2100.00 + 5.00 + 0.02 (0.021)
    assert first_buy(size=250) == Trade("20230823", "buy", 200, D("10.50"), D("2100.00"),
                                        _fees("5.00", "0.00", "0.02"), "20230822")
    # 5000 CNY / 10.50 = 476 shares -> 400; 4200.00 + 5.00 + 0.04 (0.042)
    assert first_buy(value=D("5000")) == Trade("20230823", "buy", 400, D("10.50"), D("4200.00"),
                                               _fees("5.00", "0.00", "0.04"), "20230822")
    small = backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, cash=D("10000"), size=50).strategy
    assert small.trades == ()
    assert small.notes[0] == ("20230823: the buy decided on 20230822 did not fill: no whole lot at 10.50 within the "
                              "order size fits the cash (10000 CNY)")


def test_star_market_lots_grow_by_one_share(tmp_path: Path) -> None:
    provider = _provider(tmp_path, "688001.SH", _ohlc(SERIES))
    result = backtest_rule(RULE, "688001.SH", "20230821", "20230901", provider, cash=D("10000"))
    # 952 shares cost 9996.00 + 5.00 + 0.10 > 10000; 951 cost 9985.50 + 5.00 + 0.10 (0.099855) = 9990.60
    assert result.strategy.trades[0] == Trade("20230823", "buy", 951, D("10.50"), D("9985.50"),
                                              _fees("5.00", "0.00", "0.10"), "20230822")
    # the benchmark: 1000 shares cost 10005.10; 999 cost 9990.00 + 5.00 + 0.10 (0.0999)
    assert result.benchmark.trades[0].quantity == 999
    assert result.benchmark.trades[0].fees == _fees("5.00", "0.00", "0.10")


def test_a_buy_locked_at_limit_up_lapses_and_retries(tmp_path: Path) -> None:
    rows = [("20230815", 10.00, 10.10, 9.90, 10.00),
            ("20230816", 10.00, 10.60, 9.90, 10.50),  # START: close > 10, buy
            ("20230817", 11.55, 11.55, 11.55, 11.55),  # one price at limit-up 10.50 × 1.1 = 11.55: no fill; buy
            ("20230818", 11.60, 11.80, 11.50, 11.70)]  # bought at the open
    provider = _provider(tmp_path, "600000.SH", rows)
    result = backtest_rule("buy when close > 10", "600000.SH", "20230816", "20230818", provider, cash=D("10000"))
    assert result.warmup_bars == 1  # the bar before START gives the first fill its previous close
    assert result.strategy.notes == ("20230817: the buy decided on 20230816 did not fill: locked at limit-up 11.55 "
                                     "(low 11.55): no sellers below the limit, the buy cannot fill",)
    # 10000 / 11.60 = 862 shares -> 800; 9280.00 + 5.00 + 0.09 (0.0928)
    assert result.strategy.trades == (Trade("20230818", "buy", 800, D("11.60"), D("9280.00"),
                                            _fees("5.00", "0.00", "0.09"), "20230817"),)
    assert result.benchmark.trades[0].trade_date == "20230816"


def test_warm_up_bars_are_found_across_a_long_suspension(tmp_path: Path) -> None:
    rows = [*_ohlc([("20230601", 10.0, 10.1), ("20230602", 10.1, 10.0)]), *_ohlc(SERIES[3:])]
    provider = _provider(tmp_path, "600000.SH", rows)
    result = backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, cash=D("10000"))
    assert result.warmup_bars == 2
    # ma(3) on START = (10.1 + 10.0 + 9.95) / 3 = 10.0167 from the June bars: no warm-up left
    assert result.decisions["ma(3)"].iloc[0] == pytest.approx(30.05 / 3)
    assert not result.decisions["warming_up"].any()


def test_data_that_begins_at_start_warms_up_inside_the_period(tmp_path: Path) -> None:
    provider = _provider(tmp_path, "600000.SH", _ohlc(SERIES))
    result = backtest_rule("buy when close > ma(5)", "600000.SH", "20230816", "20230901", provider, cash=D("10000"))
    assert (result.warmup, result.warmup_bars) == (4, 0)
    assert result.decisions["warming_up"].tolist() == [True] * 4 + [False] * 9
    assert result.benchmark.trades[0].trade_date == "20230816"


def test_decisions_and_fills_never_look_ahead(tmp_path: Path) -> None:
    base = backtest_rule(RULE, "600000.SH", "20230821", "20230901", _provider(tmp_path, "600000.SH", _ohlc(SERIES)),
                         cash=D("10000"))
    # every close after 2023-08-24 10 % lower: the decisions up to 08-24 and the sell they cause at the 08-25
    # open stay the same; later decisions change (08-28: 9.54 is now below ma(3) = 9.58)
    changed = [(d, o, round(c * 0.9, 2) if d > "20230824" else c) for d, o, c in SERIES]
    other_root = tmp_path / "changed"
    other_root.mkdir()
    other = backtest_rule(RULE, "600000.SH", "20230821", "20230901", _provider(other_root, "600000.SH",
                                                                                 _ohlc(changed)), cash=D("10000"))
    pd.testing.assert_frame_equal(base.decisions.loc[:"2023-08-24"], other.decisions.loc[:"2023-08-24"])
    assert base.strategy.trades[:2] == other.strategy.trades[:2]
    assert base.decisions["action"].tolist() != other.decisions["action"].tolist()


def test_bad_sizes_are_refused(tmp_path: Path) -> None:
    provider = _provider(tmp_path, "600000.SH", _ohlc(SERIES))
    with pytest.raises(ValueError, match="not both"):
        backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, size=100, value=D("1000"))
    with pytest.raises(ValueError, match="must be positive"):
        backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, size=0)


def test_the_figures_are_the_signal_backtests_vocabulary_on_the_whole_account(tmp_path: Path) -> None:
    """Issue 28, item 1: annualised return, Sharpe and exposure beside the return, drawdown, trades and fees, all on
    the starting cash; by hand from the marks of test_every_trade_fee_and_mark_by_hand."""
    provider = _provider(tmp_path, "600000.SH", _ohlc(SERIES))
    f = backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, cash=D("10000")).strategy.figures
    equity = [10000.0, 10000.0, 10264.91, 9724.91, 9530.82, 9530.82, 9975.73, 9435.73, 9336.05, 9336.05]
    path = [10000.0, *equity]
    daily = [b / a - 1 for a, b in zip(path[:-1], path[1:], strict=True)]
    assert f.total_return == pytest.approx(-0.066395, rel=1e-12)
    assert f.annual_return == pytest.approx(0.933605 ** (252 / 10) - 1, rel=1e-12)
    assert f.sharpe == pytest.approx(statistics.mean(daily) / statistics.stdev(daily) * math.sqrt(252), rel=1e-12)
    assert f.max_drawdown == pytest.approx(9336.05 / 10264.91 - 1, rel=1e-12)
    invested = [900 * 10.80 / 10264.91, 900 * 10.20 / 9724.91, 900 * 10.90 / 9975.73, 900 * 10.30 / 9435.73]
    assert f.exposure == pytest.approx(sum(invested) / 10, rel=1e-12)  # held over 4 of the 10 closes
    assert (f.trades, f.bars) == (4, 10)
    assert f.fees == pytest.approx(33.95 / 10000, rel=1e-12)


def test_a_start_before_the_data_says_which_dates_ran(tmp_path: Path) -> None:
    provider = _provider(tmp_path, "600000.SH", _ohlc(SERIES))
    early = backtest_rule(RULE, "600000.SH", "20230701", "20230901", provider, cash=D("10000"))
    assert early.span == "Asked for 20230701–20230901; ran 20230816–20230901: there is no data before 20230816."
    assert backtest_rule(RULE, "600000.SH", "20230821", "20230901", provider, cash=D("10000")).span is None


def test_a_range_before_the_data_is_refused_naming_the_range_asked_for(tmp_path: Path) -> None:
    """The backtest reads the code's whole history (from EARLIEST, for the warm-up); a range with no data is still
    refused with the dates the person asked for, not EARLIEST's."""
    provider = _provider(tmp_path, "600000.SH", _ohlc(SERIES))
    with pytest.raises(DataError, match=r"between 20100101 and 20100301 .*covers 20230816 to 20230901"):
        backtest_rule(RULE, "600000.SH", "20100101", "20100301", provider)
