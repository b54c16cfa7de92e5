"""A-share fees (tools/broker/fees.py) to the fen against hand calculations, with a date on each side of every
rate change."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from decimal import Decimal as D

import pytest

from tools.broker.boards import OrderRuleError, Side
from tools.broker.fees import DEFAULT_RATES, FeeRates, Fees, estimate_fees, fill_fees, parse_schedule, round_fen
from tools.settings import Settings

ZERO = D("0")


def fees(commission: str, stamp: str, transfer: str, handling: str = "0", regulator: str = "0") -> Fees:
    return Fees(D(commission), D(stamp), D(transfer), D(handling), D(regulator))


def test_round_fen_is_half_up() -> None:
    assert str(round_fen(D("16.055"))) == "16.06"  # float round(16.055, 2) gives 16.05
    assert str(round_fen(D("16.0549"))) == "16.05"
    assert str(round_fen(D("2"))) == "2.00"


def test_small_buy_pays_the_minimum_commission() -> None:
    # 1,000 x 10.00 = 10,000 on SH: commission max(5, 2.50) = 5.00, transfer 10,000 x 0.00001 = 0.10, no stamp duty
    got = estimate_fees("600519.SH", "buy", D("10000"), date(2023, 9, 1), DEFAULT_RATES)
    assert got == fees("5.00", "0", "0.10")
    assert str(got.commission) == "5.00"
    assert got.total == D("5.10")


@pytest.mark.parametrize(("on", "stamp", "total"), [
    (date(2023, 8, 25), "200.00", "252.00"),  # 200,000 x 0.001
    (date(2023, 8, 28), "100.00", "152.00"),  # 200,000 x 0.0005
])
def test_sell_stamp_duty_halved_on_2023_08_28(on: date, stamp: str, total: str) -> None:
    # 10,000 x 20.00 = 200,000: commission 200,000 x 0.00025 = 50.00, transfer 200,000 x 0.00001 = 2.00
    got = estimate_fees("600519.SH", "sell", D("200000"), on, DEFAULT_RATES)
    assert got == fees("50.00", stamp, "2.00")
    assert got.total == D(total)


def test_stamp_duty_rate_known_from_2008_09_19() -> None:
    assert DEFAULT_RATES.stamp_duty.rate(date(2008, 9, 19)) == D("0.001")
    with pytest.raises(OrderRuleError, match="no stamp duty rate known before 2008-09-19"):
        DEFAULT_RATES.stamp_duty.rate(date(2008, 9, 18))


@pytest.mark.parametrize(("code", "side", "on", "transfer"), [
    ("600519.SH", "sell", date(2022, 4, 28), "4.00"),  # 200,000 x 0.00002
    ("600519.SH", "sell", date(2022, 4, 29), "2.00"),  # 200,000 x 0.00001
    ("000001.SZ", "buy", date(2022, 4, 28), "4.00"),
    ("000001.SZ", "buy", date(2022, 4, 29), "2.00"),
    ("000001.SZ", "buy", date(2015, 8, 3), "4.00"),
])
def test_transfer_fee_halved_on_2022_04_29(code: str, side: Side, on: date, transfer: str) -> None:
    got = estimate_fees(code, side, D("200000"), on, DEFAULT_RATES)
    assert got.transfer_fee == D(transfer)
    assert got.commission == D("50.00")


def test_no_transfer_fee_rate_before_2015_08_01() -> None:
    with pytest.raises(OrderRuleError, match="no transfer fee rate known before 2015-08-01"):
        estimate_fees("600519.SH", "sell", D("200000"), date(2015, 7, 31), DEFAULT_RATES)


@pytest.mark.parametrize(("on", "value", "transfer"), [
    (date(2021, 11, 15), "1000", "0.03"),  # 1,000 x 0.000025 = 0.025 -> 0.03 (truncation: 0.02)
    (date(2022, 4, 28), "100000", "2.50"),  # 100,000 x 0.000025
    (date(2022, 4, 29), "100000", "1.00"),  # 100,000 x 0.00001
])
def test_beijing_transfer_fee(on: date, value: str, transfer: str) -> None:
    assert estimate_fees("830799.BJ", "buy", D(value), on, DEFAULT_RATES).transfer_fee == D(transfer)


def test_no_beijing_transfer_fee_rate_before_2021_11_15() -> None:
    with pytest.raises(OrderRuleError, match="no Beijing transfer fee rate known before 2021-11-15"):
        estimate_fees("830799.BJ", "buy", D("1000"), date(2021, 11, 12), DEFAULT_RATES)


def test_each_item_rounds_half_up() -> None:
    # sell 30,030 on 2023-09-01: commission 7.5075 -> 7.51, stamp 15.015 -> 15.02 (truncation: 15.01),
    # transfer 0.3003 -> 0.30
    got = estimate_fees("600519.SH", "sell", D("30030"), date(2023, 9, 1), DEFAULT_RATES)
    assert got == fees("7.51", "15.02", "0.30")
    assert got.total == D("22.83")
    # commission 30,020 x 0.00025 = 7.505 -> 7.51 (truncation: 7.50); transfer 1,500 x 0.00001 = 0.015 -> 0.02
    assert estimate_fees("000001.SZ", "buy", D("30020"), date(2023, 9, 1), DEFAULT_RATES).commission == D("7.51")
    assert estimate_fees("000001.SZ", "buy", D("1500"), date(2023, 9, 1), DEFAULT_RATES).transfer_fee == D("0.02")


def test_commission_minimum_applies_to_the_whole_order() -> None:
    on = date(2023, 9, 1)
    # first fill 4,000: 1.00 < 5, charged 5.00
    first = fill_fees("600519.SH", "buy", D("4000"), on, DEFAULT_RATES)
    assert first == fees("5.00", "0", "0.04")
    # second fill 30,000: the order's 34,000 x 0.00025 = 8.50, so this fill 8.50 - 5.00 = 3.50
    second = fill_fees("600519.SH", "buy", D("30000"), on, DEFAULT_RATES, commission_so_far=D("5.00"),
                       value_so_far=D("4000"))
    assert second == fees("3.50", "0", "0.30")
    # a small second fill 8,000: the order's 12,000 x 0.00025 = 3.00 is still under the minimum already paid
    small = fill_fees("600519.SH", "buy", D("8000"), on, DEFAULT_RATES, commission_so_far=D("5.00"),
                      value_so_far=D("4000"))
    assert small == fees("0.00", "0", "0.08")


def test_handling_and_regulator_fees_when_set() -> None:
    rates = replace(DEFAULT_RATES, handling_fee_rate=D("0.0000487"), regulator_fee_rate=D("0.00002"))
    # 100,000: commission 25.00, transfer 1.00, handling 4.87, regulator 2.00
    got = estimate_fees("600519.SH", "buy", D("100000"), date(2023, 9, 1), rates)
    assert got == fees("25.00", "0", "1.00", "4.87", "2.00")
    assert got.total == D("32.87")
    # 10,000: handling 0.487 -> 0.49, regulator 0.20
    small = estimate_fees("000001.SZ", "buy", D("10000"), date(2023, 9, 1), rates)
    assert (small.handling_fee, small.regulator_fee) == (D("0.49"), D("0.20"))


def test_defaults_charge_no_handling_or_regulator_fee() -> None:
    got = estimate_fees("600519.SH", "buy", D("100000"), date(2023, 9, 1), DEFAULT_RATES)
    assert (got.handling_fee, got.regulator_fee) == (ZERO, ZERO)


def test_bad_side_or_value_is_refused() -> None:
    with pytest.raises(ValueError, match="side must be 'buy' or 'sell'"):
        estimate_fees("600519.SH", "Sell", D("1000"), date(2023, 9, 1), DEFAULT_RATES)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be positive"):
        estimate_fees("600519.SH", "buy", D("0"), date(2023, 9, 1), DEFAULT_RATES)
    with pytest.raises(OrderRuleError, match="only A-share stocks"):
        estimate_fees("900901.SH", "buy", D("1000"), date(2023, 9, 1), DEFAULT_RATES)


# schedules


def test_schedule_rates_by_date() -> None:
    schedule = parse_schedule(" 20150801:0.00002 , 20220429:0.00001 ", "transfer fee")
    assert schedule.entries == ((date(2015, 8, 1), D("0.00002")), (date(2022, 4, 29), D("0.00001")))
    assert schedule.rate(date(2015, 8, 1)) == D("0.00002")
    assert schedule.rate(date(2022, 4, 28)) == D("0.00002")
    assert schedule.rate(date(2022, 4, 29)) == D("0.00001")
    assert schedule.rate(date(2030, 1, 1)) == D("0.00001")
    with pytest.raises(OrderRuleError) as caught:
        schedule.rate(date(2015, 7, 31))
    assert str(caught.value) == "no transfer fee rate known before 2015-08-01"


@pytest.mark.parametrize(("text", "problem"), [
    ("", "'' is not YYYYMMDD:rate"),
    ("20150801", "'20150801' is not YYYYMMDD:rate"),
    ("2015081:0.00002", "'2015081:0.00002' is not YYYYMMDD:rate"),
    ("20151301:0.00002", "'20151301:0.00002' is not YYYYMMDD:rate"),
    ("20150801:abc", "'20150801:abc' is not YYYYMMDD:rate"),
    ("20150801:0.00002,", "'' is not YYYYMMDD:rate"),
    ("20150801:0.01", "rate 0.01 must be at least 0 and below 0.01"),
    ("20150801:-0.00001", "rate -0.00001 must be at least 0 and below 0.01"),
    ("20150801:NaN", "rate NaN must be at least 0 and below 0.01"),
    ("20220429:0.00001,20150801:0.00002", "dates must increase, 2015-08-01 does not"),
    ("20150801:0.00002,20150801:0.00001", "dates must increase, 2015-08-01 does not"),
])
def test_bad_schedules_are_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_schedule(text, "transfer fee")
    assert str(caught.value) == f"transfer fee schedule {text!r}: {problem}"


def test_zero_rate_is_allowed() -> None:
    assert parse_schedule("20230828:0", "stamp duty").rate(date(2023, 8, 28)) == ZERO


def test_rates_from_settings() -> None:
    settings = Settings(_env_file=None, QUANTDESK_COMMISSION_RATE="0.0003", QUANTDESK_COMMISSION_MIN="0",
                        QUANTDESK_HANDLING_FEE_RATE="0.0000487", QUANTDESK_REGULATOR_FEE_RATE="0.00002",
                        QUANTDESK_STAMP_DUTY="20080919:0.001", QUANTDESK_TRANSFER_FEE="20150801:0.00003",
                        QUANTDESK_TRANSFER_FEE_BJ="20211115:0.00004")
    rates = FeeRates.from_settings(settings)
    assert (rates.commission_rate, rates.commission_min) == (D("0.0003"), ZERO)
    assert (rates.handling_fee_rate, rates.regulator_fee_rate) == (D("0.0000487"), D("0.00002"))
    on = date(2024, 1, 8)
    assert rates.stamp_duty.rate(on) == D("0.001")
    assert rates.transfer_fee.rate(on) == D("0.00003")
    assert rates.transfer_fee_bj.rate(on) == D("0.00004")
    # 1,000 sold: commission 0.30 (no minimum), stamp 1.00, transfer 0.03, handling 0.0487 -> 0.05, regulator 0.02
    assert estimate_fees("600519.SH", "sell", D("1000"), on, rates) == fees("0.30", "1.00", "0.03", "0.05", "0.02")


def test_default_settings_give_the_default_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COMMISSION_RATE", "COMMISSION_MIN", "HANDLING_FEE_RATE", "REGULATOR_FEE_RATE", "STAMP_DUTY",
                 "TRANSFER_FEE", "TRANSFER_FEE_BJ"):
        monkeypatch.delenv(f"QUANTDESK_{name}", raising=False)
    assert FeeRates.from_settings(Settings(_env_file=None)) == DEFAULT_RATES
