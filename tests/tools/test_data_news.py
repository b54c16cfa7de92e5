"""Point-in-time news from local files and the loopback tushare fake, and the lexicon sentiment score."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from testkit.fakes.tushare_server import GOOD_TOKEN, NO_PERMISSION_TOKEN, FakeTushare, TushareServer
from tools.data.news import (
    NO_NEWS,
    NO_POSTS,
    CombinedNews,
    LocalNews,
    NewsItem,
    NewsResult,
    NewsSource,
    TushareNews,
    news_source,
    posts_source,
)
from tools.data.schema import DataError
from tools.data.tushare import TushareProvider
from tools.desk.sentiment import score_sentiment

CODE = "600519.SH"
AS_OF = datetime(2022, 12, 20, 14, 59)

# Hand-made local news: (datetime, title, content, source, codes); the last column is when each row became
# public as this test reads it (a bare date: the end of that day), used to cut the file at an as-of time.
LOCAL_ROWS = [
    ("2022-12-20 15:00:00", "贵州茅台发布回购公告", "公司拟回购股份", "cls", "600519.SH", "2022-12-20 15:00:00"),
    ("2022-12-20 14:59:00", "贵州茅台获批新产能", "产能扩张获批", "cls", "600519.SH", "2022-12-20 14:59:00"),
    ("2022-12-20 10:00:00", "茅台 业绩 增长", "营收同比增长", "sina", "600519.SH;000858.SZ", "2022-12-20 10:00:00"),
    ("2022-12-20 11:30:00", "茅台  业绩 增长", " 营收同比增长 ", "eastmoney", "600519.sh", "2022-12-20 11:30:00"),
    ("2022-12-19 09:00:00", "A股收评", "沪指收涨", "cls", "", "2022-12-19 09:00:00"),
    ("2022-12-18 09:00:00", "五粮液减持", "", "cls", "000858.SZ", "2022-12-18 09:00:00"),
    ("2022-12-13 14:58:59", "茅台旧闻", "", "cls", "600519.SH", "2022-12-13 14:58:59"),
    ("2022-12-13 14:59:00", "茅台股东大会", "", "cls", "600519.SH", "2022-12-13 14:59:00"),
    ("2022-12-20", "茅台当日公告", "日期无时间", "cls", "600519.SH", "2022-12-20 23:59:59"),
    ("not a time", "坏行", "", "cls", "600519.SH", ""),
]
COLUMNS = ["datetime", "title", "content", "source", "codes"]


def write_local(root: Path, rows: list[tuple[str, ...]], kind: str, stem: str = "news") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    records = [dict(zip(COLUMNS, row[:5], strict=True)) for row in rows]
    if kind == "json":
        for record in records:  # JSON may carry codes as a list
            record["codes"] = [c for c in record["codes"].split(";") if c]
        (root / f"{stem}.json").write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    else:
        pd.DataFrame(records, columns=COLUMNS).to_csv(root / f"{stem}.csv", index=False)
    return root


def cut_local(as_of: datetime) -> list[tuple[str, ...]]:
    """The rows published on or before `as_of` (unreadable rows stay: they are skipped either way)."""
    stamp = as_of.strftime("%Y-%m-%d %H:%M:%S")
    return [row for row in LOCAL_ROWS if not row[5] or row[5] <= stamp]


def listing(result: NewsResult) -> list[tuple[str, str, str]]:
    return [(i.datetime, i.title, i.source) for i in result.items]


@pytest.fixture(params=["csv", "json"])
def local(request: pytest.FixtureRequest, tmp_path: Path) -> LocalNews:
    return LocalNews(write_local(tmp_path, LOCAL_ROWS, request.param))


def test_local_news_is_point_in_time_newest_first_and_deduplicated(local: LocalNews) -> None:
    result = local.news(CODE, AS_OF)
    assert listing(result) == [
        ("2022-12-20 14:59:00", "贵州茅台获批新产能", "cls"),  # 15:00 is after 14:59; the bare date is end of day
        ("2022-12-20 10:00:00", "茅台 业绩 增长", "sina"),  # its 11:30 copy differs only in whitespace
        ("2022-12-19 09:00:00", "A股收评", "cls"),  # market-wide
        ("2022-12-13 14:59:00", "茅台股东大会", "cls"),  # exactly 7 days back; 14:58:59 is outside
    ]
    assert result.items[1].codes == ("600519.SH", "000858.SZ") and result.items[2].codes == ()
    assert result.gap is None and result.notes == ("skipped 1 row(s) of news with an unreadable datetime",)
    assert result.source == f"local news files in {local.root}"


def test_local_news_options(local: LocalNews, tmp_path: Path) -> None:
    late = local.news(CODE, datetime(2022, 12, 20, 23, 59, 59), lookback_days=0)
    assert [i.title for i in late.items] == ["茅台当日公告"]  # the bare date, at the end of its day
    assert [i.title for i in local.news(CODE, AS_OF, limit=2).items] == ["贵州茅台获批新产能", "茅台 业绩 增长"]
    assert "kept the newest 2 of 4 items" in local.news(CODE, AS_OF, limit=2).notes
    aware = datetime(2022, 12, 20, 6, 59, tzinfo=UTC)  # 14:59 in Beijing
    assert local.news(CODE, aware) == local.news(CODE, AS_OF)
    own = LocalNews(local.root, include_market_wide=False).news(CODE, AS_OF)
    assert "A股收评" not in [i.title for i in own.items] and len(own.items) == 3
    assert [i.title for i in local.news("000858.SZ", AS_OF).items] == ["茅台 业绩 增长", "A股收评", "五粮液减持"]


def test_local_news_does_not_change_when_later_rows_are_deleted(tmp_path: Path) -> None:
    for kind in ("csv", "json"):
        full = LocalNews(write_local(tmp_path / kind / "full", LOCAL_ROWS, kind))
        for as_of in (datetime(2022, 12, 13, 14, 59), datetime(2022, 12, 19, 9), datetime(2022, 12, 20, 10),
                      datetime(2022, 12, 20, 11, 30), AS_OF, datetime(2022, 12, 20, 15),
                      datetime(2022, 12, 21, 0, 0)):
            cut = LocalNews(write_local(tmp_path / kind / f"{as_of:%d%H%M}", cut_local(as_of), kind))
            for code in (CODE, "000858.SZ"):
                whole, part = full.news(code, as_of), cut.news(code, as_of)
                assert whole.items == part.items and whole.notes == part.notes, (kind, as_of, code)
                assert (whole.gap is None) == (part.gap is None)


def test_missing_local_news_is_a_gap(tmp_path: Path) -> None:
    empty = LocalNews(tmp_path).news(CODE, AS_OF)
    assert empty.items == () and empty.gap == f"no news.csv or news.json in {tmp_path}"
    absent = LocalNews(tmp_path / "nope").news(CODE, AS_OF)
    assert absent.gap == f"the news directory {tmp_path / 'nope'} does not exist"
    write_local(tmp_path, LOCAL_ROWS[:1], "csv")
    nothing = LocalNews(tmp_path).news(CODE, AS_OF)
    assert nothing.items == () and nothing.gap == (
        f"no news about 600519.SH or the whole market between 2022-12-13 14:59:00 and 2022-12-20 14:59:00 "
        f"in local news files in {tmp_path}")
    (tmp_path / "posts.csv").write_text("when,text\n2022-12-20 10:00:00,hi\n", encoding="utf-8")
    broken = posts_source(directory=tmp_path).news(CODE, AS_OF)
    assert broken.gap == f"{tmp_path / 'posts.csv'} needs a datetime column and a title or content column"


def test_unconfigured_sources_answer_with_a_gap() -> None:
    assert news_source().news(CODE, AS_OF) == NewsResult((), "none", gap=NO_NEWS)
    assert posts_source().news(CODE, AS_OF).gap == NO_POSTS
    assert "QUANTDESK_NEWS_DIR" in NO_NEWS and "QUANTDESK_NEWS_DIR" in NO_POSTS


def test_posts_are_stock_specific_by_default(tmp_path: Path) -> None:
    write_local(tmp_path, [("2022-12-20 09:31:00", "", "茅台要起飞了 利好", "xueqiu", "600519.SH"),
                           ("2022-12-20 09:32:00", "", "大盘今天怎么走", "xueqiu", "")], "json", stem="posts")
    result = posts_source(directory=tmp_path).news(CODE, AS_OF)
    assert [(i.content, i.source) for i in result.items] == [("茅台要起飞了 利好", "xueqiu")]


def test_bad_arguments_raise(local: LocalNews) -> None:
    with pytest.raises(DataError, match="malformed ts_code"):
        local.news("600519", AS_OF)
    with pytest.raises(DataError, match="as_of must be a datetime"):
        local.news(CODE, "2022-12-20")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="limit at least 1"):
        local.news(CODE, AS_OF, limit=0)


# --- tushare ------------------------------------------------------------------------------------------------

NEWS = pd.DataFrame([
    ["2022-12-20 15:00:00", "贵州茅台午后拉升", "", "", "sina"],
    ["2022-12-20 14:30:00", "", "600519大宗交易成交1.2亿元", "", "sina"],
    ["2022-12-20 14:00:00", "", "【贵州茅台：上调部分产品出厂价】", "公司", "sina"],
    ["2022-12-20 13:00:00", "两市成交1600519000元", "", "", "sina"],  # the digits inside a longer number
    ["2022-12-20 12:00:00", "五粮液涨停", "", "", "sina"],
    ["2022-12-19 10:00:00", "贵州茅台早盘走强", "", "", "wallstreetcn"],  # a src not asked for
], columns=["datetime", "title", "content", "channels", "src"])
MAJOR_NEWS = pd.DataFrame([
    ["贵州茅台业绩快报", "营收增长", "2022-12-19 20:00:00", "新华网"],
    ["贵州茅台业绩快报 ", "营收增长", "2022-12-19 20:05:00", "凤凰财经"],  # a copy: major_news repeats a lot
    ["宏观综述", "社融数据", "2022-12-19 21:00:00", "新华网"],
], columns=["title", "content", "pub_time", "src"])
ANNS = pd.DataFrame([
    ["20221220", CODE, "贵州茅台", "贵州茅台关于回购股份的公告", "http://x/1.pdf", "2022-12-20 18:00:00"],
    ["20221221", CODE, "贵州茅台", "贵州茅台董事会决议公告", "http://x/2.pdf", "2022-12-20 19:30:00"],
    ["20221219", CODE, "贵州茅台", "贵州茅台股东大会通知", "http://x/3.pdf", None],
    ["20221220", "000858.SZ", "五粮液", "五粮液关于回购股份的公告", "http://x/4.pdf", "2022-12-20 17:00:00"],
], columns=["ann_date", "ts_code", "name", "title", "url", "rec_time"])
STOCK_BASIC = pd.DataFrame([[CODE, "贵州茅台", "20010827", "L"], ["000002.SZ", "万  科Ａ", "19910129", "L"]],
                           columns=["ts_code", "name", "list_date", "list_status"])
NAMECHANGE = pd.DataFrame([[CODE, "贵州茅台", "20010827", None]],
                          columns=["ts_code", "name", "start_date", "end_date"])
TABLES = {"news": NEWS, "major_news": MAJOR_NEWS, "anns_d": ANNS, "stock_basic": STOCK_BASIC,
          "namechange": NAMECHANGE}


def cut_tables(as_of: datetime) -> dict[str, pd.DataFrame]:
    """The feeds with every row published after `as_of` deleted (an announcement without rec_time: its
    ann_date's end)."""
    stamp = as_of.strftime("%Y-%m-%d %H:%M:%S")
    published = ANNS["rec_time"].fillna(ANNS["ann_date"].str[:4] + "-" + ANNS["ann_date"].str[4:6] + "-"
                                         + ANNS["ann_date"].str[6:] + " 23:59:59")
    return {**TABLES, "news": NEWS[NEWS["datetime"] <= stamp], "anns_d": ANNS[published <= stamp],
            "major_news": MAJOR_NEWS[MAJOR_NEWS["pub_time"] <= stamp]}


@pytest.fixture
def server() -> Iterator[TushareServer]:
    with TushareServer(FakeTushare(dict(TABLES))) as srv:
        yield srv


def tushare_news(server: TushareServer, token: str = GOOD_TOKEN, **options: object) -> TushareNews:
    return TushareNews(TushareProvider(token, server.url, sleep=lambda _s: None), **options)  # type: ignore[arg-type]


def test_tushare_news_mentions_the_stock_and_is_point_in_time(server: TushareServer) -> None:
    result = tushare_news(server, name_of=lambda _code: "贵州茅台").news(CODE, AS_OF)
    assert listing(result) == [
        ("2022-12-20 14:30:00", "", "news:sina"),
        ("2022-12-20 14:00:00", "", "news:sina"),
        ("2022-12-19 23:59:59", "贵州茅台股东大会通知", "anns_d"),  # no rec_time: the end of its ann_date
        ("2022-12-19 20:00:00", "贵州茅台业绩快报", "major_news"),  # its 20:05 copy is dropped
    ]
    assert result.items[0].content == "600519大宗交易成交1.2亿元" and result.items[0].codes == (CODE,)
    assert result.items[2].url == "http://x/3.pdf" and result.gap is None and result.notes == ()
    evening = tushare_news(server, name_of=lambda _code: "贵州茅台").news(CODE, datetime(2022, 12, 20, 20))
    assert [i.title for i in evening.items[:3]] == [
        "贵州茅台董事会决议公告",  # dated 20221221 but published the evening before
        "贵州茅台关于回购股份的公告", "贵州茅台午后拉升"]
    assert len(evening.items) == 7


def test_tushare_requests_end_at_as_of(server: TushareServer) -> None:
    tushare_news(server, name_of=lambda _code: "贵州茅台").news(CODE, AS_OF)
    sent = {r["api_name"]: r for r in server.fake.requests}
    assert sent["news"]["params"] | {"limit": 0} == {"src": "sina", "start_date": "2022-12-13 14:59:00",
                                                    "end_date": "2022-12-20 14:59:00", "limit": 0, "offset": 0}
    assert sent["news"]["fields"] == "datetime,content,title,channels"
    assert sent["major_news"]["params"]["end_date"] == "2022-12-20 14:59:00"
    assert sent["major_news"]["fields"] == "title,content,pub_time,src"
    assert (sent["anns_d"]["params"]["start_date"], sent["anns_d"]["params"]["end_date"]) == ("20221213", "20221221")
    assert sent["anns_d"]["fields"] == "ann_date,ts_code,name,title,url,rec_time"


def test_tushare_news_does_not_change_when_later_rows_are_deleted(server: TushareServer) -> None:
    full = tushare_news(server)  # names from stock_basic
    with TushareServer(FakeTushare({})) as cut_server:
        cut = tushare_news(cut_server)
        for as_of in (datetime(2022, 12, 19, 20), datetime(2022, 12, 19, 23, 59, 59), AS_OF,
                      datetime(2022, 12, 20, 14, 30), datetime(2022, 12, 20, 18), datetime(2022, 12, 21)):
            cut_server.fake.tables = cut_tables(as_of)
            for code in (CODE, "000858.SZ"):
                assert full.news(code, as_of) == cut.news(code, as_of), (as_of, code)
    assert len(full.news(CODE, datetime(2022, 12, 21)).items) == 7


def test_tushare_news_splits_windows_at_the_row_cap(server: TushareServer) -> None:
    filler = pd.DataFrame({"datetime": [(datetime(2022, 12, 20, 14) - timedelta(minutes=i)).strftime(
        "%Y-%m-%d %H:%M:%S") for i in range(1600)], "title": "市场快讯", "content": "", "channels": "", "src": "sina"})
    old = pd.DataFrame([["2022-12-14 09:00:00", "贵州茅台发布公告", "", "", "sina"]], columns=list(NEWS.columns))
    server.fake.tables["news"] = pd.concat([filler, old], ignore_index=True)
    source = tushare_news(server, name_of=lambda _code: "贵州茅台", major_news=False, announcements=False)
    result = source.news(CODE, AS_OF)
    assert listing(result) == [("2022-12-14 09:00:00", "贵州茅台发布公告", "news:sina")]  # beyond the newest 1,500
    assert result.notes == ()
    assert len([r for r in server.fake.requests if r["api_name"] == "news"]) > 2
    crowded = pd.DataFrame({"datetime": ["2022-12-20 14:00:00"] * 1600, "title": [f"快讯{i}" for i in range(1600)],
                            "content": "", "channels": "", "src": "sina"})
    server.fake.tables["news"] = crowded
    capped = source.news(CODE, AS_OF)
    assert capped.items == () and capped.gap is not None
    assert "tushare news src sina returned its cap of 1500 rows for 2022-12-20 13:5" in capped.gap


def test_tushare_failures_are_notes_or_gaps(server: TushareServer) -> None:
    refused = tushare_news(server, NO_PERMISSION_TOKEN).news(CODE, AS_OF)
    assert refused.items == () and refused.gap is not None
    for api in ("news", "major_news", "anns_d"):
        assert f"no permission for tushare {api}" in refused.gap
    del server.fake.tables["major_news"]
    partial = tushare_news(server, name_of=lambda _code: "贵州茅台").news(CODE, AS_OF)
    assert len(partial.items) == 3 and partial.gap is None
    assert len(partial.notes) == 1 and partial.notes[0].startswith("tushare major_news: ")


def test_names_are_matched_without_spacing_or_width_differences(server: TushareServer) -> None:
    server.fake.tables["news"] = pd.DataFrame([["2022-12-20 09:00:00", "万科A 销售回暖", "", "", "sina"]],
                                              columns=list(NEWS.columns))
    result = tushare_news(server, major_news=False, announcements=False).news("000002.SZ", AS_OF)
    assert [i.title for i in result.items] == ["万科A 销售回暖"]  # stock_basic spells it 万  科Ａ


def test_local_and_tushare_combined(server: TushareServer, tmp_path: Path) -> None:
    write_local(tmp_path, LOCAL_ROWS, "csv")
    provider = TushareProvider(GOOD_TOKEN, server.url)
    source = news_source(directory=tmp_path, tushare=provider, name_of=lambda _code: "贵州茅台")
    assert isinstance(source, CombinedNews)
    result = source.news(CODE, AS_OF, limit=3)
    assert listing(result) == [("2022-12-20 14:59:00", "贵州茅台获批新产能", "cls"),
                               ("2022-12-20 14:30:00", "", "news:sina"),
                               ("2022-12-20 14:00:00", "", "news:sina")]
    assert "kept the newest 3 of 8 items" in result.notes
    assert source.news(CODE, datetime(2022, 12, 10)).gap is not None


# --- sentiment ----------------------------------------------------------------------------------------------


def item(stamp: str, title: str, content: str = "") -> NewsItem:
    return NewsItem(stamp, title, content, "test", (CODE,))


def test_lexicon_sentiment() -> None:
    items = [
        item("2022-12-20 10:00:00", "贵州茅台回购股份", "控股股东增持"),  # two positive terms
        item("2022-12-20 09:00:00", "茅台营收负增长", "业绩不及预期"),  # 负增长 is not 增长; 不及预期 one term
        item("2022-12-19 09:00:00", "股东未减持", "公司否认存在违规"),  # both negated: neutral
        item("2022-12-18 09:00:00", "Analyst UPGRADE for Moutai", "not a loss"),
        item("2022-12-17 09:00:00", "市场综述", "beaten path; the upgrader"),  # no whole-word hits
    ]
    summary = score_sentiment(items)
    assert (summary.positive, summary.negative, summary.neutral) == (2, 1, 2)
    assert summary.score == pytest.approx(0.2)  # (2 - 1) / 5
    assert [d.item.title for d in summary.drivers] == ["贵州茅台回购股份", "茅台营收负增长",
                                                       "Analyst UPGRADE for Moutai"]
    assert [(d.net, d.positive_terms, d.negative_terms) for d in summary.drivers] == [
        (2, ("回购", "增持"), ()), (-2, (), ("负增长", "不及预期")), (1, ("upgrade",), ())]
    assert score_sentiment(items, max_drivers=1).drivers[0].item.title == "贵州茅台回购股份"
    assert score_sentiment(reversed(items)) == summary  # order does not matter


def test_sentiment_of_nothing_is_neutral() -> None:
    empty = score_sentiment([])
    assert (empty.positive, empty.negative, empty.neutral, empty.score, empty.drivers) == (0, 0, 0, 0.0, ())
    gloomy = score_sentiment([item("2022-12-20 10:00:00", "收到警示函", "被立案调查"), item("2022-12-20 11:00:00",
                                                                                     "lawsuit; downgrade")])
    assert gloomy.score == -1.0 and gloomy.drivers[0].net == -2


def test_sources_share_the_protocol(local: LocalNews) -> None:
    sources: list[NewsSource] = [local, news_source(), posts_source()]
    assert all(isinstance(s.news(CODE, AS_OF), NewsResult) for s in sources)
