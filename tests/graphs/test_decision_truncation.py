"""Point in time (issue 14): every analyst tool answers the same at date D whether its sources hold later rows or
were cut at D, and no tool ever returns a row dated after D; memory reads are cut at D as well."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine

from graphs.analyze.toolkit import TOOLSETS, Toolkit
from graphs.context import WorkflowContext
from testkit.desk import desk_context
from tools.data.fundamentals import LocalFundamentals, fundamentals_source
from tools.data.local import LocalProvider, sample_dir
from tools.data.news import LocalNews, LocalPosts
from tools.desk.memory import MemoryController
from tools.sandbox import Sandbox

CODE = "600519.SH"
D = "20200814"
AS_OF = "2020-08-14T15:00:00+08:00"
INCOME = [  # (end_date, ann_date, f_ann_date, n_income_attr_p): the Q3 report is announced after D
    ("20200331", "20200429", "20200429", 13_093_939_000.0),
    ("20200630", "20200730", "20200730", 22_096_075_000.0),
    ("20200930", "20201028", "20201028", 33_169_010_000.0),
]
NEWS = [  # (datetime, title): one item at D's 15:00 close, one the evening after
    ("2020-08-13 20:00:00", "贵州茅台发布半年报解读"), ("2020-08-14 15:00:00", "贵州茅台获增持"),
    ("2020-08-14 18:30:00", "贵州茅台董事会决议公告"), ("2020-08-20 09:00:00", "贵州茅台回购股份"),
]


def _write_sources(root: Path, cut: bool) -> None:
    """Market bars, fundamentals and news, whole or cut at D (bare dates: the end of that day)."""
    root.mkdir()
    daily = pd.read_parquet(sample_dir() / "daily.parquet")
    basic = pd.read_parquet(sample_dir() / "daily_basic.parquet").assign(pe_ttm=35.5, total_mv=2.1e8)
    income = pd.DataFrame([{"ts_code": CODE, "end_date": e, "ann_date": a, "f_ann_date": f, "report_type": "1",
                            "n_income_attr_p": v} for e, a, f, v in INCOME])
    fina = pd.DataFrame([{"ts_code": CODE, "end_date": e, "ann_date": a, "roe": roe}
                         for (e, a, _, _), roe in zip(INCOME, (7.59, 14.28, 21.35), strict=True)])
    news = pd.DataFrame([{"datetime": t, "title": title, "content": title, "source": "cls", "codes": CODE}
                         for t, title in NEWS])
    if cut:
        daily, basic = daily[daily["trade_date"] <= D], basic[basic["trade_date"] <= D]
        income = income[income["f_ann_date"] <= D]
        fina = fina[fina["ann_date"] <= D]
        news = news[news["datetime"] <= "2020-08-14 15:00:00"]
    daily.to_parquet(root / "daily.parquet")
    basic.to_parquet(root / "daily_basic.parquet")
    income.to_csv(root / "income.csv", index=False)
    fina.to_csv(root / "fina_indicator.csv", index=False)
    news.to_csv(root / "news.csv", index=False)
    news.to_csv(root / "posts.csv", index=False)
    (root / "stock_basic.csv").write_text((sample_dir() / "stock_basic.csv").read_text())


def _context(engine: Engine, sandbox: Sandbox, root: Path) -> WorkflowContext:
    provider = LocalProvider(root)
    return desk_context(engine, sandbox, provider, None, fundamentals=fundamentals_source(directory=root),
                        news=LocalNews(root), posts=LocalPosts(root))


def _all_outputs(ctx: WorkflowContext) -> dict[str, Any]:
    request = {"ts_code": CODE, "trade_date": D, "as_of": AS_OF}
    outputs = {}
    for analyst in TOOLSETS:
        kit = Toolkit(analyst, ctx, request)
        for name in kit.functions:
            outputs[f"{analyst}.{name}"] = kit.run(name, {}).output
    return outputs


def _dates(value: Any) -> list[str]:
    text = json.dumps(value, ensure_ascii=False)
    return re.findall(r"\b(20\d{6})\b", text) + [d.replace("-", "") for d in re.findall(r"\b20\d\d-\d\d-\d\d", text)]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_every_tool_answers_the_same_with_sources_cut_at_the_decision_date(
        tmp_path: Path, engine: Engine, sandbox: Sandbox) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    _write_sources(whole, cut=False)
    _write_sources(cut, cut=True)
    full_outputs = _all_outputs(_context(engine, sandbox, whole))
    cut_outputs = _all_outputs(_context(engine, sandbox, cut))
    assert full_outputs == cut_outputs
    for name, output in full_outputs.items():
        assert all(day <= D for day in _dates(output)), name
    # the tools did see data: bars up to D, the reports announced by D, the two items public by the close
    assert full_outputs["market.get_price_bars"]["bars"][-1]["trade_date"] == D
    assert [r["end_date"] for r in full_outputs["fundamentals.get_income"]["rows"]] == ["20200630", "20200331"]
    assert [r["roe"] for r in full_outputs["fundamentals.get_fina_indicator"]["rows"]] == [14.28, 7.59]
    assert [i["title"] for i in full_outputs["news.get_news"]["items"]] == ["贵州茅台获增持", "贵州茅台发布半年报解读"]
    assert full_outputs["sentiment.get_sentiment"]["items"] == 4  # two news items and the same two as posts


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_memory_written_after_the_decision_date_is_not_read_at_it(engine: Engine) -> None:
    memory = MemoryController(engine, "market", namespace="truncation-test")
    memory.save_today_report(CODE, D, "report of D", session="post_close",
                             written_at=datetime.fromisoformat(AS_OF))
    memory.save_today_report(CODE, "20200817", "report of the next day", session="post_close",
                             written_at=datetime.fromisoformat("2020-08-17T15:00:00+08:00"))
    memory.refresh_summaries(CODE, "20200817", "post_close")
    seen = memory.get_memory_summary(CODE, D, "post_close")
    assert seen["today_report"] == "report of D"
    assert "next day" not in json.dumps(seen, ensure_ascii=False)


def test_local_fundamentals_name_no_row_after_the_date_even_when_the_file_has_them(tmp_path: Path) -> None:
    _write_sources(tmp_path / "src", cut=False)
    rows = LocalFundamentals(tmp_path / "src").income(CODE, "20201027").rows
    assert [r["end_date"] for r in rows] == ["20200630", "20200331"]
