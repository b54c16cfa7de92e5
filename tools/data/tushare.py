"""A provider speaking tushare Pro's HTTP API: POST {api_name, token, params, fields} → {code, msg, data}."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import date, timedelta

import pandas as pd
from tenacity import (
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
    wait_incrementing,
)

from tools.data.calendar import TradingCalendar, published_calendar
from tools.data.provider import MarketDataProvider
from tools.data.schema import DATASET_FIELDS, KEY_COLUMNS, DataError
from tools.data.securities import Security, day_or_none, st_periods_from_names, text_or_none
from tools.i18n import N_, _

log = logging.getLogger(__name__)

PAGE_SIZE = 6000  # tushare returns at most 6,000 rows of daily / daily_basic per call
CODES_PER_CALL = 50
RATE_LIMIT_RETRIES = 3
TRANSIENT_RETRIES = 3  # transport errors and HTTP 5xx; waits double from `retry_backoff`
LIST_STATUSES = ("L", "D", "P")  # listed, delisted, paused: stock_basic answers only "L" unless asked
NAMECHANGE_PER_CODE = 20  # up to this many codes, namechange is asked per code, else its whole table once
LAST_DATE_TRIES = 10  # open days `last_date` looks back for published bars


class TushareError(DataError):
    """tushare refused or failed a request; the message says what to do."""


def _explain(code: int, msg: str, api_name: str) -> TushareError:
    text = msg or _("no message")
    if code == 40101 or "token" in text.lower():
        return TushareError(_("tushare rejected the token (code {code}: {text}); check TUSHARE_TOKEN").format(
            code=code, text=text))
    if "每分钟" in text or "最多访问" in text or "频率" in text or "rate" in text.lower():
        return TushareRateLimited(_("tushare rate limit hit for {api} (code {code}: {text}); wait a minute or raise "
                                    "your quota").format(api=api_name, code=code, text=text))
    if code == 40203 or "权限" in text or "permission" in text.lower():
        return TushareError(_("the token has no permission for tushare {api} (code {code}: {text}); your tushare "
                              "points may be too low for this interface").format(api=api_name, code=code, text=text))
    return TushareError(_("tushare {api} failed (code {code}: {text})").format(api=api_name, code=code, text=text))


class TushareRateLimited(TushareError):
    """Per-minute quota exhausted."""


class _Transient(Exception):
    """A failure worth retrying: the request did not reach tushare or tushare's server failed (HTTP 5xx). Its
    message is English (the retries are logged); `text` is it in the language in effect."""

    def __init__(self, template: str, **values: object) -> None:
        super().__init__(template.format(**values))
        self.template, self.values = template, values

    def text(self) -> str:
        return _(self.template).format(**self.values)


def _say_transient(state: RetryCallState) -> None:
    wait = state.next_action.sleep if state.next_action else 0.0
    log.warning("%s; retry %d in %.1f s", state.outcome.exception() if state.outcome else "?", state.attempt_number,
                wait)


def _say_rate_limited(state: RetryCallState) -> None:
    wait = state.next_action.sleep if state.next_action else 0.0
    log.warning("tushare rate limit; retrying in %.0f s", wait)


class TushareProvider(MarketDataProvider):
    """tushare Pro over HTTP, with paging, code batching, readable errors and bounded retries: transport errors
    and HTTP 5xx with doubling waits from `retry_backoff`, rate limits with waits of `backoff_seconds` × n;
    other HTTP 4xx answers and tushare's own errors (token, permission, bad input) are never retried."""

    name = "tushare"
    price_basis = "unadjusted"  # the daily endpoint's prices

    def __init__(self, token: str, api_url: str = "http://api.tushare.pro", *, timeout: float = 30.0,
                 sleep: Callable[[float], None] = time.sleep, backoff_seconds: float = 20.0,
                 retries: int = TRANSIENT_RETRIES, retry_backoff: float = 1.0,
                 today: Callable[[], date] = date.today) -> None:
        if not token:
            raise TushareError(_("TUSHARE_TOKEN is empty; get a token at tushare.pro and set it"))
        import httpx  # with the first tushare provider: the console's light layer imports this module unused

        self._token = token
        self._client = httpx.Client(base_url=api_url, timeout=timeout)
        self._api_url = api_url
        self._sleep = sleep
        self._backoff = backoff_seconds
        self._retries = retries
        self._retry_backoff = retry_backoff
        self._today = today
        self._trading_calendar = published_calendar(self.trade_cal)

    def __repr__(self) -> str:
        return f"TushareProvider(api_url={self._api_url!r})"

    def available_fields(self, dataset: str) -> tuple[str, ...]:
        return DATASET_FIELDS[dataset]

    def query(self, api_name: str, params: dict[str, object], fields: list[str]) -> pd.DataFrame:
        """All pages of one tushare API call as a frame with `fields` columns."""
        frames: list[pd.DataFrame] = []
        offset = 0
        while True:
            payload = self._post(api_name, {**params, "limit": PAGE_SIZE, "offset": offset}, fields)
            columns = payload.get("fields") or fields
            items = payload.get("items") or []
            frames.append(pd.DataFrame(items, columns=columns))
            if not payload.get("has_more") and len(items) < PAGE_SIZE:
                break
            if not items:
                break
            offset += len(items)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=fields)

    def _post(self, api_name: str, params: dict[str, object], fields: list[str]) -> dict:
        """One call's data: rate limits waited out (`backoff_seconds` × n), each try with its own transient
        retries (doubling waits from `retry_backoff`); anything else tushare says is raised as it is."""
        body = {"api_name": api_name, "token": self._token, "params": params, "fields": ",".join(fields)}
        rate_limited = Retrying(retry=retry_if_exception_type(TushareRateLimited),
                                stop=stop_after_attempt(RATE_LIMIT_RETRIES + 1),
                                wait=wait_incrementing(start=self._backoff, increment=self._backoff),
                                sleep=self._sleep, reraise=True, before_sleep=_say_rate_limited)
        return rate_limited(self._answer, api_name, body)

    def _answer(self, api_name: str, body: dict[str, object]) -> dict:
        transient = Retrying(retry=retry_if_exception_type(_Transient), stop=stop_after_attempt(self._retries + 1),
                             wait=wait_exponential(multiplier=self._retry_backoff, min=0), sleep=self._sleep,
                             before_sleep=_say_transient)
        try:
            answer = transient(self._send, api_name, body)
        except RetryError as exc:
            attempt = exc.last_attempt
            failure = attempt.exception()
            raise TushareError(_("{error} (gave up after {n} attempts)").format(
                error=failure.text() if isinstance(failure, _Transient) else failure, n=attempt.attempt_number)) \
                from None
        code = int(answer.get("code", -1))
        if code == 0:
            return answer.get("data") or {}
        raise _explain(code, str(answer.get("msg") or ""), api_name)

    def _send(self, api_name: str, body: dict[str, object]) -> dict:
        """One POST and its decoded answer; raises `_Transient` for what a retry may fix."""
        import httpx

        try:
            response = self._client.post("", json=body)
        except httpx.TransportError as exc:
            raise _Transient(N_("cannot reach tushare at {url}: {error}"), url=self._api_url,
                             error=type(exc).__name__) from None
        except httpx.HTTPError as exc:
            raise TushareError(_("cannot talk to tushare at {url}: {error}").format(
                url=self._api_url, error=type(exc).__name__)) from None
        if response.status_code >= 500:
            raise _Transient(N_("tushare answered HTTP {status} for {api}"), status=response.status_code, api=api_name)
        if response.status_code != 200:
            raise TushareError(_("tushare answered HTTP {status} for {api}").format(status=response.status_code,
                                                                                   api=api_name))
        try:
            return response.json()
        except ValueError:
            raise TushareError(_("tushare sent a reply that is not JSON for {api}").format(api=api_name)) from None

    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        columns = [*KEY_COLUMNS, *fields]
        parts = []
        for i in range(0, len(codes), CODES_PER_CALL):
            batch = codes[i : i + CODES_PER_CALL]
            params = {"ts_code": ",".join(batch), "start_date": start, "end_date": end}
            parts.append(self.query(dataset, params, columns))
        frame = pd.concat(parts, ignore_index=True)
        if frame.empty:
            return pd.DataFrame(columns=columns)
        frame["ts_code"] = frame["ts_code"].astype(str)
        frame["trade_date"] = frame["trade_date"].astype(str)
        for field in fields:
            frame[field] = pd.to_numeric(frame[field], errors="coerce").astype("float64")
        return frame.drop_duplicates(subset=list(KEY_COLUMNS))

    def _stock_basic(self, fields: list[str]) -> pd.DataFrame:
        """stock_basic for every list status (listed, delisted, paused)."""
        return pd.concat([self.query("stock_basic", {"list_status": status}, fields) for status in LIST_STATUSES],
                         ignore_index=True)

    def stock_names(self) -> dict[str, str]:
        """Every stock's current name from stock_basic: three calls, whatever the number of stocks."""
        basics = self._stock_basic(["ts_code", "name"]).drop_duplicates("ts_code")
        return {str(code): name for code, raw in zip(basics["ts_code"], basics["name"], strict=True)
                if (name := text_or_none(raw))}

    def _securities(self, codes: list[str]) -> dict[str, Security]:
        basics = self._stock_basic(["ts_code", "name", "list_date"])
        basics = basics[basics["ts_code"].isin(codes)].drop_duplicates("ts_code").set_index("ts_code")
        known = [code for code in codes if code in basics.index]
        if not known:
            return {}
        fields = ["ts_code", "name", "start_date", "end_date"]
        if len(known) <= NAMECHANGE_PER_CODE:
            changes = pd.concat([self.query("namechange", {"ts_code": code}, fields) for code in known],
                                ignore_index=True)
        else:
            changes = self.query("namechange", {}, fields)
        st = st_periods_from_names(changes[changes["ts_code"].isin(known)])
        return {code: Security(code, text_or_none(basics.at[code, "name"]), day_or_none(basics.at[code, "list_date"]),
                               st.get(code)) for code in known}

    @property
    def trading_calendar(self) -> TradingCalendar:
        return self._trading_calendar

    def trade_cal(self, start: str, end: str) -> list[tuple[str, bool]]:
        """Every date `trade_cal` lists within [start, end] (YYYYMMDD), open or not: the published calendar."""
        days = self.query("trade_cal", {"exchange": "SSE", "start_date": start, "end_date": end},
                          ["cal_date", "is_open"])
        return [(str(d), o == 1) for d, o in zip(days["cal_date"], pd.to_numeric(days["is_open"], errors="coerce"),
                                                   strict=True)]

    def _calendar(self, start: str, end: str) -> list[str]:
        params = {"exchange": "SSE", "start_date": start, "end_date": end, "is_open": "1"}
        days = self.query("trade_cal", params, ["cal_date", "is_open"])
        days = days[pd.to_numeric(days["is_open"], errors="coerce") == 1]
        return sorted(set(days["cal_date"].astype(str)))

    def last_date(self) -> str | None:
        """The latest open day up to today whose `daily` bars are out, looking back `LAST_DATE_TRIES` open days."""
        today = self._today()
        recent = self.calendar(today - timedelta(days=3 * LAST_DATE_TRIES), today)[-LAST_DATE_TRIES:]
        for day in reversed(recent):
            if self._post("daily", {"trade_date": day, "limit": 1, "offset": 0}, list(KEY_COLUMNS)).get("items"):
                return day
        return None

    def close(self) -> None:
        self._client.close()
