"""A local HTTP server speaking Binance's public spot REST API: `/api/v3/exchangeInfo` and `/api/v3/klines` with
real-shaped answers and Binance's error bodies, a record of every request, and injectable HTTP faults."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qsl, urlsplit

from testkit.fakes.loopback import LoopbackServer

HOUR_MS = 3_600_000
T0 = 1_709_251_200_000  # 2024-03-01 00:00 UTC

# BTCUSDT 1h from T0, as (open, high, low, close, volume); served as Binance's 12-field rows by `kline_row`
BTCUSDT_1H = (
    ("61130.99000000", "61400.00000000", "60777.00000000", "61286.74000000", "1365.84210000"),
    ("61286.74000000", "61700.00000000", "61200.01000000", "61605.21000000", "1101.52840000"),
    ("61605.21000000", "62050.00000000", "61532.00000000", "61954.39000000", "1410.30950000"),
    ("61954.40000000", "62012.88000000", "61611.11000000", "61741.80000000", "980.11235000"),
    ("61741.80000000", "61990.00000000", "61602.50000000", "61932.06000000", "871.40011000"),
)

INTERVAL_MS = {"1m": 60_000, "3m": 180_000, "5m": 300_000, "15m": 900_000, "30m": 1_800_000, "1h": HOUR_MS,
               "2h": 2 * HOUR_MS, "4h": 4 * HOUR_MS, "6h": 6 * HOUR_MS, "8h": 8 * HOUR_MS, "12h": 12 * HOUR_MS,
               "1d": 24 * HOUR_MS, "3d": 72 * HOUR_MS, "1w": 168 * HOUR_MS, "1M": 720 * HOUR_MS}

SPOT_PATHS = ("/api/v3/exchangeInfo", "/api/v3/klines")

TOO_MANY = {"code": -1003, "msg": "Too many requests; current limit of IP(127.0.0.1) is 6000 requests per minute. "
                                  "Please use the websocket for live updates to avoid polling the API."}
BANNED = {"code": -1003, "msg": "Way too many requests; IP(127.0.0.1) banned until 1709254800000. "
                               "Please use the websocket for live updates to avoid bans."}


def kline_row(open_ms: int, interval_ms: int, ohlcv: tuple[str, str, str, str, str]) -> list:
    """One kline exactly as Binance sends it: open time, OHLCV strings, close time, quote volume, trade count,
    taker buy base and quote volumes, and the unused field."""
    open_, high, low, close, volume = ohlcv
    quote_volume = f"{float(volume) * float(close):.8f}"
    taker_base = f"{float(volume) * 0.5:.8f}"
    taker_quote = f"{float(quote_volume) * 0.5:.8f}"
    return [open_ms, open_, high, low, close, volume, open_ms + interval_ms - 1, quote_volume, 12_345,
            taker_base, taker_quote, "0"]


def default_klines() -> dict[tuple[str, str], list[list]]:
    return {("BTCUSDT", "1h"): [kline_row(T0 + i * HOUR_MS, HOUR_MS, bar) for i, bar in enumerate(BTCUSDT_1H)]}


def spot_symbol(base: str, quote: str, tick: str, step: str) -> dict:
    """One entry of exchangeInfo's `symbols`, shaped like Binance's spot answer."""
    return {
        "symbol": base + quote, "status": "TRADING", "baseAsset": base, "baseAssetPrecision": 8,
        "quoteAsset": quote, "quotePrecision": 8, "quoteAssetPrecision": 8, "baseCommissionPrecision": 8,
        "quoteCommissionPrecision": 8,
        "orderTypes": ["LIMIT", "LIMIT_MAKER", "MARKET", "STOP_LOSS", "STOP_LOSS_LIMIT", "TAKE_PROFIT",
                       "TAKE_PROFIT_LIMIT"],
        "icebergAllowed": True, "ocoAllowed": True, "otoAllowed": True, "quoteOrderQtyMarketAllowed": True,
        "allowTrailingStop": True, "cancelReplaceAllowed": True, "amendAllowed": True,
        "isSpotTradingAllowed": True, "isMarginTradingAllowed": True,
        "filters": [
            {"filterType": "PRICE_FILTER", "minPrice": tick, "maxPrice": "1000000.00000000", "tickSize": tick},
            {"filterType": "LOT_SIZE", "minQty": step, "maxQty": "9000.00000000", "stepSize": step},
            {"filterType": "ICEBERG_PARTS", "limit": 10},
            {"filterType": "MARKET_LOT_SIZE", "minQty": "0.00000000", "maxQty": "100.00000000",
             "stepSize": "0.00000000"},
            {"filterType": "TRAILING_DELTA", "minTrailingAboveDelta": 10, "maxTrailingAboveDelta": 2000,
             "minTrailingBelowDelta": 10, "maxTrailingBelowDelta": 2000},
            {"filterType": "PERCENT_PRICE_BY_SIDE", "bidMultiplierUp": "5", "bidMultiplierDown": "0.2",
             "askMultiplierUp": "5", "askMultiplierDown": "0.2", "avgPriceMins": 5},
            {"filterType": "NOTIONAL", "minNotional": "5.00000000", "applyMinToMarket": True,
             "maxNotional": "9000000.00000000", "applyMaxToMarket": False, "avgPriceMins": 5},
            {"filterType": "MAX_NUM_ORDERS", "maxNumOrders": 200},
            {"filterType": "MAX_NUM_ALGO_ORDERS", "maxNumAlgoOrders": 5},
        ],
        "permissions": [], "permissionSets": [["SPOT", "MARGIN"]],
        "defaultSelfTradePreventionMode": "EXPIRE_MAKER",
        "allowedSelfTradePreventionModes": ["EXPIRE_TAKER", "EXPIRE_MAKER", "EXPIRE_BOTH"],
    }


def default_symbols() -> list[dict]:
    return [spot_symbol("BTC", "USDT", "0.01000000", "0.00001000"),
            spot_symbol("ETH", "USDT", "0.01000000", "0.00010000"),
            spot_symbol("ETH", "BTC", "0.00001000", "0.00010000")]


@dataclass
class FakeBinance:
    """Binance's public spot API over `symbols` (exchangeInfo entries) and `klines` ((symbol, interval) -> rows).

    klines selects like Binance: startTime / endTime on open time, limit 500 by default and 1000 at most; with
    startTime the first `limit` rows from it, else the last `limit` rows up to endTime.

    Every request is recorded as (path, query) in `requests`; a path outside `SPOT_PATHS` is answered 404 and
    also recorded in `unexpected`. `faults` are consumed one per request, before answering: 429 and 418 come
    with Binance's bodies and Retry-After, any other status with an empty JSON body."""

    symbols: list[dict] = field(default_factory=default_symbols)
    klines: dict[tuple[str, str], list[list]] = field(default_factory=default_klines)
    faults: list[int] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, object, dict[str, str]]:
        """(status, JSON body, extra headers) for one GET."""
        with self._lock:
            self.requests.append((path, query))
            fault = self.faults.pop(0) if self.faults else None
            if path not in SPOT_PATHS:
                self.unexpected.append(path)
        if fault == 429:
            return 429, TOO_MANY, {"Retry-After": "60"}
        if fault == 418:
            return 418, BANNED, {"Retry-After": "3600"}
        if fault is not None:
            return fault, {}, {}
        if path == "/api/v3/exchangeInfo":
            return 200, self.exchange_info(), {}
        if path == "/api/v3/klines":
            return self.kline_rows(query)
        return 404, {}, {}

    def exchange_info(self) -> dict:
        return {
            "timezone": "UTC", "serverTime": T0 + 10 * HOUR_MS,
            "rateLimits": [
                {"rateLimitType": "REQUEST_WEIGHT", "interval": "MINUTE", "intervalNum": 1, "limit": 6000},
                {"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": 100},
                {"rateLimitType": "ORDERS", "interval": "DAY", "intervalNum": 1, "limit": 200000},
                {"rateLimitType": "RAW_REQUESTS", "interval": "MINUTE", "intervalNum": 5, "limit": 61000},
            ],
            "exchangeFilters": [],
            "symbols": self.symbols,
        }

    def kline_rows(self, query: dict[str, str]) -> tuple[int, object, dict[str, str]]:
        symbol, interval = query.get("symbol", ""), query.get("interval", "")
        if symbol not in {s["symbol"] for s in self.symbols}:
            return 400, {"code": -1121, "msg": "Invalid symbol."}, {}
        if interval not in INTERVAL_MS:
            return 400, {"code": -1120, "msg": "Invalid interval."}, {}
        limit = min(int(query.get("limit", 500)), 1000)
        rows = self.klines.get((symbol, interval), [])
        if "startTime" in query:
            rows = [r for r in rows if r[0] >= int(query["startTime"])]
        if "endTime" in query:
            rows = [r for r in rows if r[0] <= int(query["endTime"])]
        return 200, rows[:limit] if "startTime" in query else rows[-limit:], {}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeBinance

    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        status, body, headers = self.fake.answer(url.path, dict(parse_qsl(url.query)))
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-MBX-USED-WEIGHT-1M", str(len(self.fake.requests)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


class ExchangeServer(LoopbackServer):
    """Runs a FakeBinance on 127.0.0.1 with an ephemeral port."""

    def __init__(self, fake: FakeBinance | None = None) -> None:
        self.fake = fake or FakeBinance()
        super().__init__(type("Handler", (_Handler,), {"fake": self.fake}))
        self.url = f"http://127.0.0.1:{self.port}"
