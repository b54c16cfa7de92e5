"""Issue 25, item 6: charts render Chinese with the bundled font (no system font needed): a chart with Chinese
titles and labels draws every glyph (matplotlib's missing-glyph warning is an error here), and the same chart without
the bundled font does warn, so the check can fail."""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
from fontTools.ttLib import TTFont

from tools.i18n import using
from tools.research import cjk_font
from tools.research.charts import account_equity, price_with_trades


def _chart() -> bytes:
    index = pd.bdate_range("2020-01-02", periods=60)
    close = pd.Series(1700 + np.sin(np.arange(60) / 5) * 40, index=index)
    positions = pd.Series((np.arange(60) // 10) % 2, index=index, dtype=float)
    equity = (1 + close.pct_change().fillna(0) * positions.shift(1).fillna(0)).cumprod()
    with using("zh-CN"):
        return price_with_trades(close, positions, "均线交叉 金叉/死叉 — 600519.SH 贵州茅台", equity=equity,
                                 benchmark=close / close.iloc[0])


def test_a_chart_with_chinese_labels_has_every_glyph() -> None:
    cjk_font.install()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*missing from font.*")
        png = _chart()
        account_equity(["20200102", "20200103"], [1e6, 1.01e6], 1e6, "模拟账户 console 净值")
    assert png.startswith(b"\x89PNG")


def test_without_the_bundled_font_the_same_chart_misses_glyphs() -> None:
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}), pytest.warns(UserWarning, match="missing from font"):
        _chart()


def test_the_bundled_font_covers_gb2312() -> None:
    covered = TTFont(cjk_font.FONT_FILE).getBestCmap()
    gb2312 = {bytes([hi, lo]).decode("gb2312", errors="ignore") for hi in range(0xB0, 0xF8) for lo in range(0xA1, 0xFF)}
    hanzi = {c for c in gb2312 if c}
    assert len(hanzi) == 6763
    assert all(ord(c) in covered for c in hanzi | set("，。：；（）“”、¥%"))
    assert cjk_font.FONT_FILE.stat().st_size < 5_000_000
