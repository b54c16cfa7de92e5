"""Point-in-time news, announcements and social posts about one stock (the desk scores their sentiment:
tools/desk/sentiment.py).

Every source answers with a `NewsResult`: items published on or before `as_of` (to the second, Beijing time)
within the lookback, newest first, duplicates (same title and content after whitespace normalisation) kept once
at their first publication; or no items and a `gap` saying in one sentence why.
"""

from __future__ import annotations

import csv
import json
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd

from tools.data.schema import DataError, normalize_codes
from tools.data.tushare import TushareProvider
from tools.i18n import N_, _

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
BEIJING = timezone(timedelta(hours=8))  # naive times are Beijing time; aware ones are converted to it

# Rows a tushare call answers at most, without paging: a window that fills it is split in halves.
# news: REFERENCE.md; major_news: undocumented, a conservative guess (waditu/tushare#1715); anns_d: tushare docs.
ROW_CAPS = {"news": 1500, "major_news": 200, "anns_d": 2000}
MIN_WINDOW = timedelta(minutes=10)  # windows are not split below this; a full one is reported in `notes`
NEWS_FIELDS = ["datetime", "content", "title", "channels"]
MAJOR_NEWS_FIELDS = ["title", "content", "pub_time", "src"]
ANNS_FIELDS = ["ann_date", "ts_code", "name", "title", "url", "rec_time"]
ABOUT = {"news": N_("news about {code}"), "posts": N_("posts about {code}")}  # a local file's items, by its stem
ABOUT_OTHER = N_("{stem} items about {code}")  # a file of another stem


@dataclass(frozen=True)
class NewsItem:
    """One piece of news: when it became public ("YYYY-MM-DD HH:MM:SS", Beijing time), its text, where it came
    from ("news:sina", "major_news", "anns_d", or a local file's source column) and the codes it concerns
    (() for market-wide items)."""

    datetime: str
    title: str
    content: str
    source: str
    codes: tuple[str, ...] = ()
    url: str = ""


@dataclass(frozen=True)
class NewsResult:
    """Items newest first and the source that served them; `gap` says why there are none, `notes` what is
    partial (an endpoint that failed, a window at tushare's row cap, items cut at `limit`)."""

    items: tuple[NewsItem, ...]
    source: str
    gap: str | None = None
    notes: tuple[str, ...] = ()


class NewsSource(ABC):
    """News about one ts_code published in [as_of - lookback_days, as_of]."""

    name: str = "news"

    def news(self, ts_code: str, as_of: datetime, lookback_days: int = 7, limit: int = 50) -> NewsResult:
        """At most `limit` items, newest first; malformed arguments raise `DataError`, missing data is a gap."""
        code, end = _check(ts_code, as_of, lookback_days, limit)
        start = end - timedelta(days=lookback_days)
        try:
            candidates, notes = self._candidates(code, start, end)
        except DataError as exc:
            return NewsResult((), self.name, gap=str(exc))
        items, cut = select_items(candidates, start, end, limit)
        notes = [*notes, *cut]
        if not items:
            gap = _("no {what} between {start} and {end} {where}").format(
                what=self._nothing(code), start=_text(start), end=_text(end), where=self._where())
            if notes:
                gap += _(" ({notes})").format(notes="; ".join(notes))
            return NewsResult((), self.name, gap=gap)
        return NewsResult(items, self.name, notes=tuple(notes))

    @abstractmethod
    def _candidates(self, ts_code: str, start: datetime, end: datetime) -> tuple[list[NewsItem], list[str]]:
        """Items about `ts_code` (may hold items outside [start, end]) and notes on partial answers;
        `DataError` when the source cannot answer at all."""

    def _nothing(self, ts_code: str) -> str:
        """What there is none of, in the language in effect."""
        return _("news about {code}").format(code=ts_code)

    def _where(self) -> str:
        """Where it was looked for, in the language in effect."""
        return _("from {source}").format(source=self.name)


class TushareNews(NewsSource):
    """tushare's `news` (per `news_srcs`), `major_news` and `anns_d` endpoints through `TushareProvider.query`.

    news and major_news are market-wide: an item is kept when its title or content names the stock's code
    digits or its name (from `name_of`, by default the provider's stock_basic; a leading ST / *ST is ignored).
    Requests end at `as_of`; anns_d, dated by day, is asked up to the next day and kept by its publication time
    `rec_time` (an announcement without one counts as published at the end of its ann_date)."""

    name = "tushare"

    def __init__(self, provider: TushareProvider, *, name_of: Callable[[str], str | None] | None = None,
                 news_srcs: Sequence[str] = ("sina",), major_news: bool = True, announcements: bool = True) -> None:
        self._provider = provider
        self._name_of = name_of or self._stock_basic_name
        self._news_srcs = tuple(news_srcs)
        self._major_news = major_news
        self._announcements = announcements
        self._names: dict[str, str | None] = {}

    def _stock_basic_name(self, ts_code: str) -> str | None:
        """The stock's current name from stock_basic, asked once per code."""
        if ts_code not in self._names:
            self._names[ts_code] = self._provider.securities(ts_code)[ts_code].name
        return self._names[ts_code]

    def _candidates(self, ts_code: str, start: datetime, end: datetime) -> tuple[list[NewsItem], list[str]]:
        notes: list[str] = []
        try:
            name = self._name_of(ts_code)
        except DataError as exc:
            name = None
            notes.append(_("could not look up the name of {code} ({error}); matched on its code digits only").format(
                code=ts_code, error=exc))
        mentions = _mention_matcher(ts_code, name)
        items: list[NewsItem] = []
        failures: list[str] = []
        for src in self._news_srcs:
            try:
                frame = self._windowed("news", {"src": src}, NEWS_FIELDS, start, end, notes)
            except DataError as exc:
                failures.append(f"tushare news (src {src}): {exc}")
                continue
            items += _frame_items(frame, "datetime", f"news:{src}", ts_code, mentions)
        if self._major_news:
            try:
                frame = self._windowed("major_news", {}, MAJOR_NEWS_FIELDS, start, end, notes)
                items += _frame_items(frame, "pub_time", "major_news", ts_code, mentions)
            except DataError as exc:
                failures.append(f"tushare major_news: {exc}")
        if self._announcements:
            try:
                items += self._anns(ts_code, start, end, notes)
            except DataError as exc:
                failures.append(f"tushare anns_d: {exc}")
        if failures and len(failures) == self._endpoint_count():
            raise DataError("; ".join(failures))
        return items, [*notes, *failures]

    def _endpoint_count(self) -> int:
        return len(self._news_srcs) + self._major_news + self._announcements

    def _windowed(self, api: str, params: dict[str, object], fields: list[str], start: datetime, end: datetime,
                  notes: list[str]) -> pd.DataFrame:
        """All rows of a datetime-ranged endpoint in [start, end], halving windows that hit its row cap."""
        frame = self._provider.query(api, {**params, "start_date": _text(start), "end_date": _text(end)}, fields)
        if len(frame) < ROW_CAPS[api]:
            return frame
        if end - start <= MIN_WINDOW:
            label = " ".join([api, *(f"{k} {v}" for k, v in params.items())])
            notes.append(_("tushare {endpoint} returned its cap of {cap} rows for {start} to {end}; some items of "
                           "that window may be missing").format(endpoint=label, cap=ROW_CAPS[api], start=_text(start),
                                                                end=_text(end)))
            return frame
        middle = (start + (end - start) / 2).replace(microsecond=0)
        older = self._windowed(api, params, fields, start, middle, notes)
        newer = self._windowed(api, params, fields, middle + timedelta(seconds=1), end, notes)
        return pd.concat([older, newer], ignore_index=True)

    def _anns(self, ts_code: str, start: datetime, end: datetime, notes: list[str]) -> list[NewsItem]:
        params = {"ts_code": ts_code, "start_date": start.strftime("%Y%m%d"),
                  "end_date": (end + timedelta(days=1)).strftime("%Y%m%d")}
        frame = self._provider.query("anns_d", params, ANNS_FIELDS)
        if len(frame) >= ROW_CAPS["anns_d"]:
            notes.append(_("tushare anns_d returned its cap of {cap} rows for {code}").format(cap=ROW_CAPS["anns_d"],
                                                                                              code=ts_code))
        items = []
        for row in frame.to_dict("records"):
            if _cell(row.get("ts_code")).upper() != ts_code:
                continue
            moment = parse_time(row.get("rec_time")) or parse_time(_cell(row.get("ann_date")))
            if moment is not None:
                items.append(NewsItem(_text(moment), _cell(row.get("title")), "", "anns_d", (ts_code,),
                                      _cell(row.get("url"))))
        return items

    def _nothing(self, ts_code: str) -> str:
        return _("news or announcements mentioning {code}").format(code=ts_code)


class LocalNews(NewsSource):
    """Reads `<stem>.csv` or `<stem>.json` (a list of objects) from `root`, with the columns datetime, title,
    content, source and codes (ts_codes separated by commas or semicolons; empty: market-wide).

    A datetime without a time of day counts as published at the end of that day. Rows whose datetime cannot
    be read are skipped and counted in `notes`. Market-wide items are included unless `include_market_wide`
    is False. The file is read once, lazily."""

    def __init__(self, root: str | Path, stem: str = "news", *, include_market_wide: bool = True) -> None:
        self.root = Path(root)
        self.stem = stem
        self.include_market_wide = include_market_wide
        self.name = f"local {stem} files in {self.root}"
        self._loaded: tuple[list[NewsItem], int] | None = None

    def _candidates(self, ts_code: str, start: datetime, end: datetime) -> tuple[list[NewsItem], list[str]]:
        if self._loaded is None:
            self._loaded = self._read()
        items, skipped = self._loaded
        notes = [_("skipped {n} row(s) of {file} with an unreadable datetime").format(n=skipped, file=self.stem)] \
            if skipped else []
        wanted = [i for i in items if ts_code in i.codes or (not i.codes and self.include_market_wide)]
        return wanted, notes

    def _read(self) -> tuple[list[NewsItem], int]:
        if not self.root.is_dir():
            raise DataError(_("the news directory {path} does not exist").format(path=self.root))
        path = next((p for p in (self.root / f"{self.stem}.csv", self.root / f"{self.stem}.json") if p.is_file()),
                    None)
        if path is None:
            raise DataError(_("no {stem}.csv or {stem}.json in {path}").format(stem=self.stem, path=self.root))
        try:
            records = _read_records(path)
        except (OSError, ValueError, csv.Error) as exc:
            raise DataError(_("cannot read {path}: {error}").format(path=path, error=exc)) from None
        columns = set().union(*(r.keys() for r in records)) if records else set()
        if records and ("datetime" not in columns or not columns & {"title", "content"}):
            raise DataError(_("{path} needs a datetime column and a title or content column").format(path=path))
        items: list[NewsItem] = []
        skipped = 0
        for record in records:
            moment = parse_time(record.get("datetime"))
            if moment is None:
                skipped += 1
                continue
            codes = _codes(record.get("codes"))
            items.append(NewsItem(_text(moment), _cell(record.get("title")), _cell(record.get("content")),
                                  _cell(record.get("source")) or f"local:{self.stem}", codes,
                                  _cell(record.get("url"))))
        return items, skipped

    def _nothing(self, ts_code: str) -> str:
        about = _(ABOUT.get(self.stem, ABOUT_OTHER)).format(stem=self.stem, code=ts_code)
        return about + (_(" or the whole market") if self.include_market_wide else "")

    def _where(self) -> str:
        return _("in local {stem} files in {path}").format(stem=self.stem, path=self.root)


class LocalPosts(LocalNews):
    """Social posts (`posts.csv` or `posts.json`) in LocalNews' schema, for the sentiment analyst."""

    def __init__(self, root: str | Path, *, include_market_wide: bool = False) -> None:
        super().__init__(root, "posts", include_market_wide=include_market_wide)


class CombinedNews(NewsSource):
    """The union of several sources' items, selected together (deduplicated, newest first, cut at `limit`);
    a source that cannot answer is named in `notes`, or in the gap when none can."""

    def __init__(self, *sources: NewsSource) -> None:
        if not sources:
            raise ValueError("CombinedNews needs at least one source")
        self.sources = sources
        self.name = " and ".join(s.name for s in sources)

    def _candidates(self, ts_code: str, start: datetime, end: datetime) -> tuple[list[NewsItem], list[str]]:
        items: list[NewsItem] = []
        notes: list[str] = []
        failures: list[str] = []
        for source in self.sources:
            try:
                found, more = source._candidates(ts_code, start, end)
            except DataError as exc:
                failures.append(str(exc))
                continue
            items += found
            notes += more
        if len(failures) == len(self.sources):
            raise DataError("; ".join(failures))
        return items, notes + failures


class NoNews(NewsSource):
    """The source when none is configured: every answer is a gap saying so (`reason`, a message id, in the
    language in effect)."""

    name = "none"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def _candidates(self, ts_code: str, start: datetime, end: datetime) -> tuple[list[NewsItem], list[str]]:
        raise DataError(_(self.reason))


NO_NEWS = N_("no news source configured (set QUANTDESK_NEWS_DIR to a folder with news.csv or news.json, or "
             "QUANTDESK_TUSHARE_NEWS=true with a TUSHARE_TOKEN that has tushare's news permission)")
NO_POSTS = N_("no social posts configured (set QUANTDESK_NEWS_DIR to a folder with posts.csv or posts.json)")


def news_source(*, directory: str | Path | None = None, tushare: TushareProvider | None = None,
                name_of: Callable[[str], str | None] | None = None,
                news_srcs: Sequence[str] = ("sina",)) -> NewsSource:
    """Local news files in `directory`, tushare's news endpoints, both combined, or a source whose every
    answer is the gap `NO_NEWS`."""
    sources: list[NewsSource] = []
    if directory is not None:
        sources.append(LocalNews(directory))
    if tushare is not None:
        sources.append(TushareNews(tushare, name_of=name_of, news_srcs=news_srcs))
    if not sources:
        return NoNews(NO_NEWS)
    return sources[0] if len(sources) == 1 else CombinedNews(*sources)


def posts_source(*, directory: str | Path | None = None) -> NewsSource:
    """Social posts from `directory`, or a source whose every answer is the gap `NO_POSTS`."""
    return LocalPosts(directory) if directory is not None else NoNews(NO_POSTS)


def select_items(items: Iterable[NewsItem], start: datetime, end: datetime,
                 limit: int) -> tuple[tuple[NewsItem, ...], list[str]]:
    """Items published in [start, end], each (title, content) once at its first publication, newest first,
    at most `limit`; and a note when some were cut."""
    low, high = _text(start), _text(end)
    window = sorted((i for i in items if low <= i.datetime <= high),
                    key=lambda i: (i.datetime, i.source, i.title, i.content, i.codes, i.url))
    seen: set[tuple[str, str]] = set()
    kept: list[NewsItem] = []
    for item in window:
        key = (_squash(item.title), _squash(item.content))
        if key not in seen:
            seen.add(key)
            kept.append(item)
    kept.reverse()
    cut = [_("kept the newest {limit} of {n} items").format(limit=limit, n=len(kept))] if len(kept) > limit else []
    return tuple(kept[:limit]), cut


def parse_time(value: object) -> datetime | None:
    """A publication time as a naive Beijing datetime (whole seconds); a bare date (YYYYMMDD or YYYY-MM-DD)
    is the end of that day, so it is never visible earlier that day; None when unreadable or empty."""
    if isinstance(value, datetime):
        moment = value
    else:
        text = _cell(value)
        if re.fullmatch(r"\d{8}", text):
            text = f"{text[:4]}-{text[4:6]}-{text[6:]}"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            moment = moment.replace(hour=23, minute=59, second=59)
    return _beijing(moment)


def _beijing(moment: datetime) -> datetime:
    """A naive Beijing datetime in whole seconds."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(BEIJING).replace(tzinfo=None)
    return moment.replace(microsecond=0)


def _check(ts_code: str, as_of: datetime, lookback_days: int, limit: int) -> tuple[str, datetime]:
    """A validated single ts_code and as_of as a naive Beijing datetime; `DataError` otherwise."""
    codes = normalize_codes(ts_code)
    if len(codes) != 1:
        raise DataError(_("one ts_code at a time, not {codes}").format(codes=", ".join(codes)))
    if not isinstance(as_of, datetime):
        raise DataError(_("as_of must be a datetime (to the second), not {value!r}").format(value=as_of))
    if lookback_days < 0 or limit < 1:
        raise DataError(_("lookback_days must be 0 or more and limit at least 1, not {days} and {limit}").format(
            days=lookback_days, limit=limit))
    return codes[0], _beijing(as_of)


def _frame_items(frame: pd.DataFrame, time_column: str, source: str, ts_code: str,
                 mentions: Callable[[str], bool]) -> list[NewsItem]:
    """Items of a market-wide feed that mention the stock."""
    items = []
    for row in frame.to_dict("records"):
        title, content = _cell(row.get("title")), _cell(row.get("content"))
        moment = parse_time(row.get(time_column))
        if moment is not None and mentions(f"{title}\n{content}"):
            items.append(NewsItem(_text(moment), title, content, source, (ts_code,)))
    return items


def _mention_matcher(ts_code: str, name: str | None) -> Callable[[str], bool]:
    """Whether a text names the code's six digits (not inside a longer number) or the stock's name."""
    digits = re.compile(rf"(?<!\d){ts_code[:6]}(?!\d)")
    names = set()
    if name:
        full = _compact(name)
        names = {n for n in (full, re.sub(r"^\*?ST", "", full)) if len(n) >= 2}

    def mentions(text: str) -> bool:
        compact = _compact(text)
        return bool(digits.search(compact)) or any(n in compact for n in names)

    return mentions


def _read_records(path: Path) -> list[dict[str, object]]:
    if path.suffix == ".json":
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise ValueError(_("expected a JSON list of objects"))
        return data
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return [dict(row) for row in csv.DictReader(handle)]


def _codes(value: object) -> tuple[str, ...]:
    """ts_codes from a cell: a list, or text separated by commas or semicolons (ASCII or full-width)."""
    parts = value if isinstance(value, list) else re.split(r"[,;，；\s]+", _cell(value))
    return tuple(dict.fromkeys(str(p).strip().upper() for p in parts if str(p).strip()))


def _cell(value: object) -> str:
    """A cell's stripped text; '' for None and NaN."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return str(value).strip()


def _squash(text: str) -> str:
    return " ".join(text.split())


def _compact(text: str) -> str:
    """NFKC-normalised text without whitespace, for matching names like 万  科Ａ."""
    return "".join(unicodedata.normalize("NFKC", text).split())


def _text(moment: datetime) -> str:
    return moment.strftime(TIME_FORMAT)
