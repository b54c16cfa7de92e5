from __future__ import annotations

import pytest

from graphs.signal.grammar import SignalRequest, looks_structured, parse
from graphs.signal.library import STRATEGIES, find_strategy


def test_full_request() -> None:
    request = parse("signal ma_cross 000001.SZ,600000.sh 20230101 2023-12-31 fast=5 slow=20")
    assert request == SignalRequest("ma_cross", ("000001.SZ", "600000.SH"), "20230101", "20231231",
                                    {"fast": "5", "slow": "20"})
    assert request.missing() == []


def test_pieces_merge_and_missing_is_ordered() -> None:
    request = parse("rsi")
    assert request.missing() == ["codes", "dates"]
    request = request.merge(parse("600519.SH 430047.BJ"))
    assert request.missing() == ["dates"]
    request = request.merge(parse("20200101 20200601 window=10"))
    assert request.missing() == [] and request.params == {"window": "10"} and request.strategy == "rsi"
    assert SignalRequest.from_dict(request.as_dict()).as_dict() == request.as_dict()


@pytest.mark.parametrize(("text", "structured"), [
    ("signal bollinger 600519.SH 20200101 20200601", True),
    ("channel 600519.SH", True),
    ("600519.SH 20200101 20200601", True),
    ("ma cross please on moutai", False),
    ("find stocks with rising volume", False),
    ("buy moutai when pe is below 20", False),
])
def test_structured_or_free_form(text: str, structured: bool) -> None:
    assert looks_structured(text) is structured


def test_parameters_are_checked() -> None:
    strategy = STRATEGIES["ma_cross"]
    assert strategy.resolve({}) == {"fast": 5, "slow": 20}
    for given, message in [({"fast": "x"}, "not a number"), ({"fast": "2.5"}, "whole number"),
                           ({"slow": "9999"}, "between"), ({"speed": "1"}, "has no parameter speed"),
                           ({"fast": "20", "slow": "5"}, "must be shorter")]:
        with pytest.raises(ValueError, match=message):
            strategy.resolve(given)
    assert STRATEGIES["momentum"].resolve({"top": "0.1"})["top"] == 0.1


def test_aliases() -> None:
    assert find_strategy("Golden-Cross").name == "ma_cross"
    assert find_strategy("donchian").name == "channel"
    assert find_strategy("cross") is None
