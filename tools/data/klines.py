"""Klines (OHLCV bars) for trading rules: A-share daily bars from the market-data providers, crypto exchange bars
through ccxt (the optional `crypto` extra: `pip install quantdesk[crypto]`)."""

from __future__ import annotations

import difflib
import logging
import re
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, replace
from datetime import date
from functools import lru_cache
from types import ModuleType
from typing import Any, Literal
from urllib.parse import SplitResult, urlsplit, urlunsplit

import pandas as pd

from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError, normalize_codes
from tools.i18n import N_, _
from tools.settings import Settings

log = logging.getLogger(__name__)

KLINE_COLUMNS = ("open", "high", "low", "close", "volume")
TIMEFRAMES = ("1m", "3m", "5m", "15m", "30m", "1h", "2h", "4h", "6h", "8h", "12h", "1d", "3d", "1w", "1M")
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
SHANGHAI = "Asia/Shanghai"
CRYPTO_QUOTES = ("USDT", "USDC", "FDUSD", "BUSD", "TUSD", "DAI", "BTC", "ETH", "BNB", "EUR")
CRYPTO_INSTALL = "pip install 'quantdesk[crypto]'"

_TS_CODE = re.compile(r"^\d{6}\.(SH|SZ|BJ)$")
_PAIR = re.compile(r"^[A-Z0-9]{1,20}/[A-Z0-9]{1,20}$")
_COMPACT = re.compile(r"^[A-Z0-9]{4,30}$")

Moment = str | date  # YYYYMMDD, an ISO date or time, a date, a datetime or a pandas Timestamp


class KlineError(ValueError):
    """A kline request that cannot be served; the message says what to change."""


class KlineFetchError(KlineError):
    """The source failed (network, rate limit, outage): asking again later may work."""


@dataclass(frozen=True, eq=False)
class Klines:
    """Bars of one symbol, oldest first: `frame` has float columns open, high, low, close, volume and a
    tz-aware DatetimeIndex `time`, each bar's open time. `notes` are readable caveats for the user."""

    symbol: str
    timeframe: str
    source: str
    frame: pd.DataFrame
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class KlineRequest:
    """A validated request: `count` bars at most, open times within [start, end] where given."""

    symbol: str
    timeframe: str
    count: int
    limit: int | None  # as asked: None means "the whole range", capped at MAX_LIMIT bars
    start: pd.Timestamp | None
    end: pd.Timestamp | None


class KlineProvider(ABC):
    """Klines by symbol and timeframe; subclasses serve validated requests."""

    source: str  # where the bars come from: the provider's or the exchange's name
    tz: str = "UTC"  # how naive start / end values are read

    def klines(self, symbol: str, timeframe: str, *, limit: int | None = None, start: Moment | None = None,
               end: Moment | None = None) -> Klines:
        """The last `limit` bars (default 100, at most 1000) whose open time lies in [start, end], oldest first.

        With `start` and no `limit`: every bar of the range, or its last 1000 with a note. `end` defaults to the
        latest bar. Naive times are read in the provider's timezone (`tz`)."""
        tf = check_timeframe(timeframe)
        check_limit(limit)
        since, until = _moment(start, self.tz, N_("start")), _moment(end, self.tz, N_("end"))
        if since is not None and until is not None and since > until:
            raise KlineError(_("start {start} is after end {end}").format(start=since, end=until))
        count = limit or (MAX_LIMIT if since is not None else DEFAULT_LIMIT)
        result = self._fetch(KlineRequest(self._symbol(symbol), tf, count, limit, since, until))
        frame, notes = result.frame, list(result.notes)
        if frame.empty:
            raise KlineError(_("no {timeframe} klines for {symbol} from {source}{span}").format(
                timeframe=tf, symbol=result.symbol, source=result.source, span=_span(since, until)))
        if len(frame) > count:
            if limit is None:
                notes.append(truncated_note())
            frame = frame.iloc[-count:]
        elif limit is not None and len(frame) < limit:
            notes.append(_("only {n} of the {limit} bars asked for exist{span}").format(
                n=len(frame), limit=limit, span=_span(since, until)))
        log.debug("%d %s klines of %s from %s", len(frame), tf, result.symbol, result.source)
        return replace(result, frame=frame, notes=tuple(notes))

    @abstractmethod
    def _symbol(self, symbol: str) -> str:
        """The symbol in canonical form; a malformed one is a KlineError."""

    @abstractmethod
    def _fetch(self, request: KlineRequest) -> Klines:
        """Bars for the request, restricted to [start, end] (possibly more than `count`: the caller keeps the
        last `count`)."""


class AShareKlines(KlineProvider):
    """A-share daily bars (timeframe 1d only) of a ts_code like 600519.SH from a MarketDataProvider.

    Bar times are midnight Asia/Shanghai of the trade date. Volume is in shares: tushare's `vol` counts lots of
    100 shares and is multiplied by 100. Prices are the provider's (`price_basis`, noted when not unadjusted).
    `limit` counts trading days of the provider's calendar up to `end` (default: the provider's last date), so
    a suspended stock gets fewer bars and a note."""

    tz = SHANGHAI

    def __init__(self, provider: MarketDataProvider) -> None:
        self.provider = provider
        self.source = provider.name

    def _symbol(self, symbol: str) -> str:
        try:
            return normalize_codes([symbol])[0]
        except DataError as exc:
            raise KlineError(str(exc)) from exc

    def _fetch(self, request: KlineRequest) -> Klines:
        if request.timeframe != "1d":
            raise KlineError(_("A-share klines are daily only: ask for timeframe 1d, not {timeframe} (the {provider} "
                               "provider has no intraday or weekly bars)").format(timeframe=request.timeframe,
                                                                                  provider=self.provider.label()))
        end = request.end.strftime("%Y%m%d") if request.end is not None else self.provider.last_date()
        if end is None:
            raise KlineError(_("the {provider} provider has no daily bars at all").format(
                provider=self.provider.label()))
        try:
            if request.start is not None:
                start = request.start.strftime("%Y%m%d")
            else:
                lookback = (pd.Timestamp(end) - pd.Timedelta(days=2 * request.count + 20)).strftime("%Y%m%d")
                days = self.provider.calendar(lookback, end)
                start = days[-request.count] if len(days) >= request.count else lookback
            long = self.provider.daily(request.symbol, start, end, ["open", "high", "low", "close", "vol"])
        except DataError as exc:
            raise KlineError(str(exc)) from exc
        index = pd.DatetimeIndex(pd.to_datetime(long["trade_date"], format="%Y%m%d"), name="time")
        frame = pd.DataFrame({"open": long["open"].to_numpy(), "high": long["high"].to_numpy(),
                              "low": long["low"].to_numpy(), "close": long["close"].to_numpy(),
                              "volume": (long["vol"] * 100).round().to_numpy()},
                             index=index.tz_localize(SHANGHAI), dtype="float64")
        basis = {"forward-adjusted": N_("prices are forward-adjusted ({provider} provider)"),
                 "unknown": N_("the {provider} provider does not say whether its prices are adjusted")}
        notes = (_(basis[self.provider.price_basis]).format(provider=self.provider.label()),) \
            if self.provider.price_basis in basis else ()
        return Klines(request.symbol, "1d", self.source, frame, notes)


class CryptoKlines(KlineProvider):
    """Spot klines of a crypto exchange through ccxt, e.g. BTC/USDT on binance; times in UTC.

    Only spot markets are loaded (`defaultType` spot and `fetchMarkets` types ['spot']), so binance's
    futures hosts are never called. `api_url` replaces the scheme and host of every API URL of the exchange,
    keeping their paths: with `http://127.0.0.1:8080`, binance's klines come from
    `http://127.0.0.1:8080/api/v3/klines` and no other host is contacted. The last bar may still be forming
    (noted). `timeout` is per HTTP request, in seconds."""

    def __init__(self, exchange_id: str = "binance", api_url: str | None = None, timeout: float = 10) -> None:
        ccxt = import_ccxt()
        if exchange_id not in ccxt.exchanges:
            near = difflib.get_close_matches(exchange_id, ccxt.exchanges, n=3)
            hint = _("; did you mean {names}?").format(names=", ".join(near)) if near else ""
            raise KlineError(_("ccxt knows no exchange {exchange!r}{hint}").format(exchange=exchange_id, hint=hint))
        self.source = self.exchange_id = exchange_id
        self.api_url, self.timeout = api_url, timeout
        self._ccxt = ccxt
        self._lock = threading.Lock()
        self.exchange = getattr(ccxt, exchange_id)({"timeout": int(timeout * 1000), "enableRateLimit": True})
        if not self.exchange.has.get("fetchOHLCV"):
            raise KlineError(_("{exchange} serves no klines through ccxt (no fetchOHLCV)").format(
                exchange=exchange_id))
        spot_only(self.exchange)
        if api_url:
            point_at(self.exchange, api_url)

    def _symbol(self, symbol: str) -> str:
        text = symbol.strip().upper().replace("-", "/").replace("_", "/")
        if not (_PAIR.match(text) or _COMPACT.match(text)):
            raise KlineError(_("malformed crypto symbol {symbol!r}: use BASE/QUOTE like BTC/USDT, or the "
                               "exchange's id like BTCUSDT").format(symbol=symbol))
        return text

    def _fetch(self, request: KlineRequest) -> Klines:
        with self._lock:
            try:
                self.exchange.load_markets()
                symbol = self._market(request.symbol)
                tf = request.timeframe
                if tf not in (self.exchange.timeframes or {}):
                    raise KlineError(_("{exchange} has no {timeframe} klines; it has: {timeframes}").format(
                        exchange=self.exchange_id, timeframe=tf, timeframes=", ".join(self.exchange.timeframes or {})))
                bar_ms = self.exchange.parse_timeframe(tf) * 1000
                since, params = self._window(request, bar_ms)
                rows = self.exchange.fetch_ohlcv(symbol, tf, since=since, limit=request.count, params=params)
            except self._ccxt.BaseError as exc:
                raise self._readable(exc) from exc
        notes: list[str] = []
        if request.limit is None and request.start is not None and since is None and len(rows) >= request.count:
            notes.append(truncated_note())  # a full batch of the last bars: the range starts earlier
        frame = pd.DataFrame(rows, columns=["time", *KLINE_COLUMNS], dtype="float64")
        frame.index = pd.DatetimeIndex(pd.to_datetime(frame.pop("time"), unit="ms", utc=True), name="time")
        if request.start is not None:
            frame = frame[frame.index >= request.start]
        if request.end is not None:
            frame = frame[frame.index <= request.end]
        if request.end is None and not frame.empty and _ms(frame.index[-1]) + bar_ms > _now_ms():
            notes.append(_("the last bar (opened {time} UTC) is still forming").format(
                time=f"{frame.index[-1]:%Y-%m-%d %H:%M}"))
        return Klines(symbol, tf, self.source, frame, tuple(notes))

    def _window(self, request: KlineRequest, bar_ms: int) -> tuple[int | None, dict[str, int]]:
        """ccxt's `since` and params: the whole [start, end] when it fits in `count` bars, else the last `count`
        bars up to `end`."""
        params = {} if request.end is None else {"until": _ms(request.end)}
        if request.start is None:
            return None, params
        bars = (params.get("until", _now_ms()) - _ms(request.start)) // bar_ms + 1
        return (_ms(request.start) if bars <= request.count else None), params

    def _market(self, symbol: str) -> str:
        """The exchange's unified spot symbol for `symbol` (BTC/USDT, or the compact BTCUSDT)."""
        markets = self.exchange.markets
        if symbol in markets:
            return symbol
        aliases: dict[str, str] = {}
        for unified, market in markets.items():
            aliases.setdefault(str(market["id"]).upper(), unified)
            aliases.setdefault(f"{market['base']}{market['quote']}".upper(), unified)
        if symbol in aliases:
            return aliases[symbol]
        near = difflib.get_close_matches(symbol, list(markets), n=3)
        hint = _("did you mean {names}?").format(names=", ".join(near)) if near else _("use BASE/QUOTE like BTC/USDT")
        raise KlineError(_("unknown symbol {symbol} on {exchange} (spot markets); {hint}").format(
            symbol=symbol, exchange=self.exchange_id, hint=hint))

    def _readable(self, exc: Exception) -> KlineError:
        """A ccxt error as a message for the user; the raw one goes to the log."""
        log.warning("%s klines failed: %s", self.exchange_id, exc)
        ccxt, name = self._ccxt, self.exchange_id
        status = re.search(r"\s([1-5]\d\d)\s", f" {exc} ")
        code = status.group(1) if status else None
        detail = str(exc)[:300]
        if isinstance(exc, ccxt.BadSymbol):
            return KlineError(_("{exchange} does not know that symbol: {detail}").format(exchange=name, detail=detail))
        if isinstance(exc, ccxt.DDoSProtection | ccxt.RateLimitExceeded):
            if code == "418":
                return KlineFetchError(_("{exchange} has banned this IP for too many requests (HTTP 418); wait until "
                                         "the ban lifts before asking again").format(exchange=name))
            return KlineFetchError(_("{exchange} is rate-limiting requests (HTTP {code}); wait a minute and ask "
                                     "again").format(exchange=name, code=code or 429))
        if isinstance(exc, ccxt.RequestTimeout):
            return KlineFetchError(_("{exchange} did not answer within {seconds:g} s; ask again later").format(
                exchange=name, seconds=self.timeout))
        if isinstance(exc, ccxt.ExchangeNotAvailable):
            return KlineFetchError(_("{exchange} is unavailable (HTTP {code}); ask again later").format(
                exchange=name, code=code or "?"))
        if isinstance(exc, ccxt.NetworkError):
            if self.api_url:
                return KlineFetchError(_("cannot reach {exchange} at {url}: {detail}").format(
                    exchange=name, url=self.api_url, detail=detail))
            return KlineFetchError(_("cannot reach {exchange}: {detail}").format(exchange=name, detail=detail))
        if isinstance(exc, ccxt.ExchangeError):
            return KlineError(_("{exchange} refused the request: {detail}").format(exchange=name, detail=detail))
        return KlineFetchError(_("{exchange} failed: {detail}").format(exchange=name, detail=detail))


def import_ccxt() -> ModuleType:
    """The ccxt module, or a KlineError saying how to install it."""
    try:
        import ccxt
    except ImportError as exc:
        raise KlineError(_("crypto klines need the ccxt package: {install}").format(install=CRYPTO_INSTALL)) from exc
    return ccxt


def spot_only(exchange: Any) -> None:
    """Make ccxt load spot markets only (binance would also call its futures hosts)."""
    exchange.options["defaultType"] = "spot"
    options = exchange.options.get("fetchMarkets")
    types = options.get("types") if isinstance(options, dict) else None
    if isinstance(types, list) and "spot" in types:
        exchange.options["fetchMarkets"] = {**options, "types": ["spot"]}
    elif isinstance(types, dict) and "spot" in types:
        exchange.options["fetchMarkets"] = {**options, "types": {kind: kind == "spot" for kind in types}}


def point_at(exchange: Any, api_url: str) -> None:
    """Send every API request of `exchange` to `api_url`'s scheme and host, keeping each URL's path."""
    base = urlsplit(api_url)
    if base.scheme not in ("http", "https") or not base.netloc:
        raise KlineError(_("crypto API URL {url!r} is not an http(s) URL like https://api.binance.com").format(
            url=api_url))
    exchange.urls["api"] = _rebase(exchange.urls["api"], base)


def _rebase(value: Any, base: SplitResult) -> Any:
    if isinstance(value, dict):
        return {key: _rebase(item, base) for key, item in value.items()}
    if isinstance(value, str) and urlsplit(value).scheme in ("http", "https"):
        parts = urlsplit(value)
        return urlunsplit((base.scheme, base.netloc, base.path.rstrip("/") + parts.path, parts.query, ""))
    return value


def check_timeframe(timeframe: str) -> str:
    """`timeframe` if it is one of TIMEFRAMES (1m … 1M, case matters: 1M is a month)."""
    text = str(timeframe).strip()
    if text in TIMEFRAMES:
        return text
    near = [tf for tf in TIMEFRAMES if tf.lower() == text.lower()]
    hint = _("did you mean {names}?").format(names=near[0]) + " " if near else ""
    raise KlineError(_("unknown timeframe {timeframe!r}; {hint}use one of {known}").format(
        timeframe=timeframe, hint=hint, known=", ".join(TIMEFRAMES)))


def check_limit(limit: int | None) -> None:
    """A limit is a whole number of bars from 1 to MAX_LIMIT, or None."""
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise KlineError(_("limit {limit!r} is not a whole number of bars; ask for 1 to {most}").format(
            limit=limit, most=MAX_LIMIT))
    if not 1 <= limit <= MAX_LIMIT:
        raise KlineError(_("limit {limit} is out of range; ask for 1 to {most} bars").format(limit=limit,
                                                                                            most=MAX_LIMIT))


def truncated_note() -> str:
    return _("the range holds more than {most} bars; these are its last {most} (narrow start/end)").format(
        most=MAX_LIMIT)


def symbol_kind(symbol: str) -> Literal["a-share", "crypto"]:
    """a-share for a ts_code (600519.SH); crypto for a pair (BTC/USDT) or a compact pair ending in a known
    quote currency (BTCUSDT)."""
    text = symbol.strip().upper()
    if _TS_CODE.match(text):
        return "a-share"
    if _PAIR.match(text.replace("-", "/").replace("_", "/")):
        return "crypto"
    if _COMPACT.match(text) and any(text.endswith(q) and len(text) > len(q) for q in CRYPTO_QUOTES):
        return "crypto"
    if re.fullmatch(r"\d{6}", text):
        raise KlineError(_("{symbol!r} needs its exchange suffix: {code}.SH (Shanghai), {code}.SZ (Shenzhen) or "
                           "{code}.BJ (Beijing)").format(symbol=symbol, code=text))
    raise KlineError(_("cannot tell what {symbol!r} is: use a ts_code like 600519.SH for A-shares, or a pair like "
                       "BTC/USDT for crypto").format(symbol=symbol))


def klines_for(symbol: str, settings: Settings, provider: MarketDataProvider) -> KlineProvider:
    """The kline provider for `symbol`: A-share daily from `provider`, crypto from the configured exchange."""
    if symbol_kind(symbol) == "a-share":
        return AShareKlines(provider)
    return _crypto(settings.crypto_exchange, settings.crypto_api_url)


@lru_cache(maxsize=8)
def _crypto(exchange_id: str, api_url: str | None) -> CryptoKlines:
    """One CryptoKlines per exchange and URL, so markets load once per process."""
    return CryptoKlines(exchange_id, api_url)


def _moment(value: Moment | None, tz: str, what: str) -> pd.Timestamp | None:
    if value is None:
        return None
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        stamp = pd.NaT
    if stamp is pd.NaT:
        raise KlineError(_("{what} {value!r} is not a date or time; use e.g. 20240301, 2024-03-01 or "
                           "2024-03-01T08:00").format(what=_(what), value=value))
    return stamp.tz_localize(tz) if stamp.tzinfo is None else stamp.tz_convert(tz)


def _ms(stamp: pd.Timestamp) -> int:
    return stamp.value // 10**6


def _now_ms() -> int:
    return int(time.time() * 1000)


def _span(start: pd.Timestamp | None, end: pd.Timestamp | None) -> str:
    if start is None and end is None:
        return ""
    return _(" between {start} and {end}").format(start=start if start is not None else _("the first bar"),
                                                  end=end if end is not None else _("now"))
