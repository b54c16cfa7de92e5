"""`help` lists the strategies and factor kinds the active data provider can run, and marks the others with the
fields they need (issue 39, item 10): the bundled sample has daily bars and turnover_rate only, no pe, pb, pe_ttm
or total_mv."""

from __future__ import annotations

from pathlib import Path

from graphs.conversation import help_sections
from testkit.market import JUNE, market
from tools.data.local import SampleProvider
from tools.data.provider import MarketDataProvider
from tools.i18n import using

STRATEGIES = "ma_cross, momentum, mean_reversion, rsi, bollinger, channel"
KINDS = "momentum, reversal, volatility, turnover, volume_price_corr"


def _notes(provider: MarketDataProvider, workflow: str) -> list[str]:
    (section,) = [s for s in help_sections(provider) if s.entries[0].heading and
                  s.entries[0].usage.startswith(f"{workflow} ")]
    return [entry.summary for entry in section.entries if not entry.usage]


def test_on_the_bundled_sample_help_marks_what_needs_pe_pb_or_market_value() -> None:
    sample = SampleProvider()
    assert (f"strategies: {STRATEGIES}; not on the bundled sample data: valuation (needs pe, pb)"
            in _notes(sample, "signal"))
    assert (f"kinds: {KINDS}; not on the bundled sample data: value (needs pe_ttm), book_to_price (needs pb), "
            "size (needs total_mv)") in _notes(sample, "factor")
    with using("zh-CN"):
        assert (f"因子种类：{KINDS}；在内置样本数据上无法运行：value（需要 pe_ttm）, book_to_price（需要 pb）, "
                "size（需要 total_mv）") in _notes(sample, "factor")


def test_with_daily_indicators_every_strategy_and_kind_is_listed_plainly(tmp_path: Path) -> None:
    lines = ["ts_code,trade_date,turnover_rate,pe,pe_ttm,pb,total_mv"]
    lines += [f"{code},{day},1.0,10.0,10.0,1.0,100000" for code, day, *_ in JUNE]
    (tmp_path / "daily_basic.csv").write_text("\n".join(lines) + "\n")
    provider = market(tmp_path, JUNE)
    assert f"strategies: {STRATEGIES}, valuation" in _notes(provider, "signal")
    assert f"kinds: {KINDS}, value, book_to_price, size" in _notes(provider, "factor")
