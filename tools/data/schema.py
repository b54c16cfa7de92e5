"""The tushare schema QuantDesk speaks, and validation of what users ask for."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime

from tools.i18n import N_, _

DAILY = "daily"
DAILY_BASIC = "daily_basic"

KEY_COLUMNS = ("ts_code", "trade_date")
BAR_FIELDS = ("open", "high", "low", "close", "pre_close", "pct_chg", "vol", "amount")
INDICATOR_FIELDS = (
    "turnover_rate",
    "volume_ratio",
    "pe",
    "pe_ttm",
    "pb",
    "ps",
    "ps_ttm",
    "total_mv",
    "circ_mv",
)
DATASET_FIELDS: dict[str, tuple[str, ...]] = {DAILY: BAR_FIELDS, DAILY_BASIC: INDICATOR_FIELDS}

_TS_CODE = re.compile(r"^\d{6}\.(SZ|SH|BJ)$")


class DataError(ValueError):
    """A request for market data that cannot be served; the message tells the user what to change."""


def dataset_of(field: str) -> str:
    """The dataset (daily or daily_basic) a field belongs to."""
    for dataset, fields in DATASET_FIELDS.items():
        if field in fields:
            return dataset
    known = ", ".join(BAR_FIELDS + INDICATOR_FIELDS)
    raise DataError(_("unknown field {field!r}; known fields: {known}").format(field=field, known=known))


def codes_text(codes: Iterable[object], most: int = 10) -> str:
    """Codes for a message: the first `most`, then how many more (a universe's worth is not spelled out)."""
    listed = [str(code) for code in codes]
    shown = ", ".join(listed[:most])
    return shown + (_(" and {n} more").format(n=len(listed) - most) if len(listed) > most else "")


def normalize_codes(codes: str | Iterable[str]) -> list[str]:
    """Upper-case, de-duplicate and check ts_codes, keeping the caller's order."""
    items = codes.split(",") if isinstance(codes, str) else list(codes)
    result: list[str] = []
    for raw in items:
        code = raw.strip().upper()
        if not code:
            continue
        if not _TS_CODE.match(code):
            raise DataError(_("malformed ts_code {code!r}: expected six digits and an exchange suffix, like "
                              "000001.SZ, 600000.SH or 430047.BJ").format(code=raw.strip()))
        if code not in result:
            result.append(code)
    if not result:
        raise DataError(_("no ts_code given; name at least one, like 000001.SZ"))
    return result


def normalize_date(value: str | date, what: str = N_("date")) -> str:
    """Accept YYYYMMDD, YYYY-MM-DD or a date; return YYYYMMDD."""
    if isinstance(value, datetime):
        return value.strftime("%Y%m%d")
    if isinstance(value, date):
        return value.strftime("%Y%m%d")
    text = str(value).strip()
    for fmt in ("%Y%m%d", "%Y-%m-%d", "%Y/%m/%d"):
        try:
            return datetime.strptime(text, fmt).strftime("%Y%m%d")
        except ValueError:
            continue
    raise DataError(_("{what} {text!r} is not a date; use YYYYMMDD, like 20230131").format(what=_(what), text=text))


def check_range(start: str | date, end: str | date, today: date | None = None) -> tuple[str, str]:
    """Normalize a date range and reject reversed or future ranges."""
    start_s = normalize_date(start, N_("start date"))
    end_s = normalize_date(end, N_("end date"))
    if start_s > end_s:
        raise DataError(_("start date {start} is after end date {end}").format(start=start_s, end=end_s))
    today_s = (today or date.today()).strftime("%Y%m%d")
    if start_s > today_s:
        raise DataError(_("start date {start} is in the future (today is {today})").format(start=start_s,
                                                                                            today=today_s))
    if end_s > today_s:
        raise DataError(_("end date {end} is in the future (today is {today}); end at {today} or earlier").format(
            end=end_s, today=today_s))
    return start_s, end_s


def check_fields(dataset: str, fields: Iterable[str] | None, available: Iterable[str], provider: str) -> list[str]:
    """Resolve the requested fields of a dataset; a field the provider lacks is an error, never a fill."""
    schema_fields = DATASET_FIELDS[dataset]
    have = [f for f in schema_fields if f in set(available)]
    wanted = list(fields) if fields is not None else have
    for field in wanted:
        if field not in schema_fields:
            home = next((_("; {field!r} is in {dataset}").format(field=field, dataset=ds)
                         for ds, fs in DATASET_FIELDS.items() if field in fs), "")
            raise DataError(_("field {field!r} is not part of tushare {dataset}{home}; the fields of {dataset} are: "
                              "{fields}").format(field=field, dataset=dataset, home=home,
                                                 fields=", ".join(schema_fields)))
        if field not in have:
            raise DataError(_("field {field!r} ({dataset}) is not available from the {provider} provider; it "
                              "offers: {offered}. Configure TUSHARE_TOKEN for the full daily_basic set.").format(
                field=field, dataset=dataset, provider=provider, offered=", ".join(have) or _("none")))
    return wanted
