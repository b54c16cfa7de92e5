"""A local HTTP server speaking tushare Pro's protocol over real data, with tushare's row limit and errors,
and injectable transport faults (HTTP error statuses, connections dropped without an answer)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

import pandas as pd

from testkit.fakes.loopback import LoopbackServer

ROW_LIMIT = 6000
GOOD_TOKEN = "good-token"
NO_PERMISSION_TOKEN = "weak-token"
RATE_LIMITED_TOKEN = "busy-token"


DROP = "drop"  # a fault: close the connection without answering

DATE_COLUMNS = ("trade_date", "cal_date")  # what start_date / end_date select on
# Endpoints whose start_date / end_date select on another column, as tushare documents them: income on the
# announcement date, fina_indicator on the report period, the news feeds on their publication time.
DATE_COLUMN_OF = {"income": "ann_date", "fina_indicator": "end_date", "anns_d": "ann_date",
                  "news": "datetime", "major_news": "pub_time"}
ROW_LIMITS = {"income": 500, "fina_indicator": 100, "news": 1500, "major_news": 200, "anns_d": 2000}  # else ROW_LIMIT
UNPAGED = ("news", "major_news")  # a call answers the newest rows up to the limit and never has_more
EQUAL_PARAMS = ("trade_date", "exchange", "is_open", "list_status", "report_type", "src")  # select equal column
DEFAULT_PARAMS = {"stock_basic": {"list_status": "L"},  # as tushare: only listed stocks unless asked
                  "income": {"report_type": "1"}}  # and only consolidated statements


@dataclass
class FakeTushare:
    """Serves `tables` (api_name -> long frame); records every answered request body.

    Params select rows like tushare's: ts_code (a comma list), start_date / end_date (on trade_date or
    cal_date, or the endpoint's column in `DATE_COLUMN_OF`), and trade_date, exchange, is_open, list_status,
    report_type, src (equal values, on tables with that column). Pages hold at most the endpoint's row limit;
    the news feeds in `UNPAGED` answer one truncated page, as tushare does (waditu/tushare#1715).

    `faults` are consumed one per POST before answering: an int is answered with that HTTP status, `DROP`
    closes the connection without a response. `posts` counts every POST, faulty or not."""

    tables: dict[str, pd.DataFrame]
    rate_limited_calls: int = 0
    requests: list[dict] = field(default_factory=list)
    faults: list[int | str] = field(default_factory=list)
    posts: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def next_fault(self) -> int | str | None:
        with self._lock:
            self.posts += 1
            return self.faults.pop(0) if self.faults else None

    def answer(self, body: dict) -> dict:
        self.requests.append(body)
        token = body.get("token")
        if token == NO_PERMISSION_TOKEN:
            return {"code": 40203, "msg": "抱歉，您没有访问该接口的权限", "data": None}
        if token == RATE_LIMITED_TOKEN and self.rate_limited_calls > 0:
            self.rate_limited_calls -= 1
            return {"code": 40203, "msg": "抱歉，您每分钟最多访问该接口500次", "data": None}
        if token not in (GOOD_TOKEN, RATE_LIMITED_TOKEN):
            return {"code": 40101, "msg": "您的token不对，请确认。", "data": None}
        table = self.tables.get(body.get("api_name", ""))
        if table is None:
            return {"code": 40101, "msg": f"接口名 {body.get('api_name')} 不存在", "data": None}
        params = {**DEFAULT_PARAMS.get(body["api_name"], {}), **(body.get("params") or {})}
        rows = table
        if params.get("ts_code"):
            rows = rows[rows["ts_code"].isin(str(params["ts_code"]).split(","))]
        for name in EQUAL_PARAMS:
            if params.get(name) not in (None, "") and name in rows.columns:
                rows = rows[rows[name].astype(str) == str(params[name])]
        own_day = DATE_COLUMN_OF.get(body["api_name"])
        day = own_day or next((c for c in DATE_COLUMNS if c in rows.columns), None)
        if day and params.get("start_date"):
            rows = rows[rows[day] >= params["start_date"]]
        if day and params.get("end_date"):
            rows = rows[rows[day] <= params["end_date"]]
        fields = [f for f in str(body.get("fields") or "").split(",") if f] or list(table.columns)
        dated = (own_day,) if own_day else DATE_COLUMNS
        order = [c for c in (*dated, "ts_code", "start_date") if c in rows.columns]
        rows = rows.sort_values(order, ascending=[c == "ts_code" for c in order])  # newest first, as tushare
        offset = int(params.get("offset") or 0)
        row_limit = ROW_LIMITS.get(body["api_name"], ROW_LIMIT)
        limit = min(int(params.get("limit") or row_limit), row_limit)
        page = rows.iloc[offset : offset + limit]
        items = [[None if pd.isna(v) else v for v in row] for row in page[fields].itertuples(index=False)]
        return {
            "request_id": str(len(self.requests)),
            "code": 0,
            "msg": "",
            "data": {"fields": fields, "items": items,
                     "has_more": offset + limit < len(rows) and body["api_name"] not in UNPAGED},
        }


class _Handler(BaseHTTPRequestHandler):
    fake: FakeTushare

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        fault = self.fake.next_fault()
        if fault == DROP:
            self.close_connection = True
            return
        if isinstance(fault, int):
            self.send_error(fault)
            return
        data = json.dumps(self.fake.answer(body), ensure_ascii=False).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


class TushareServer(LoopbackServer):
    """Runs a FakeTushare on 127.0.0.1 with an ephemeral port."""

    def __init__(self, fake: FakeTushare) -> None:
        super().__init__(type("Handler", (_Handler,), {"fake": fake}))
        self.fake = fake
        self.url = f"http://127.0.0.1:{self.port}"
