"""Data fetch: daily bars into ohlcv/, daily indicators into indicators/ of the thread's workspace.

Structured requests fetch exactly the fields their strategy needs (plus `open`, the backtest's execution
price, when the provider has it); free-form requests let the light model drive the two tools (ReAct)."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.runtime import Runtime

from graphs.common import AGENT_STEP_LIMIT
from graphs.context import model_required, workspace
from graphs.llm import AGENT_FAILURES, describe_model_failure
from graphs.progress import report_progress
from graphs.signal.deps import SignalDeps
from graphs.signal.models import MODELS
from graphs.signal.state import SignalState
from tools.data.cache import CachingProvider
from tools.data.local import LocalProvider
from tools.data.provider import MarketDataProvider
from tools.data.schema import BAR_FIELDS, DAILY, INDICATOR_FIELDS, DataError, dataset_of, normalize_date
from tools.i18n import N_, _
from tools.storage.workspace import Workspace

DATA_FETCH_PROMPT = """You fetch Chinese A-share data from tushare into the thread's workspace.

## Tools
1. daily_bar(ts_code, start_date, end_date): daily OHLCV bars (open, high, low, close, pre_close, pct_chg,
   vol in lots, amount in thousand CNY) → workspace ohlcv/<field>
2. daily_basic(ts_code, start_date, end_date, fields): daily indicators (pe, pe_ttm, pb, ps, ps_ttm,
   turnover_rate, volume_ratio, total_mv, circ_mv) → workspace indicators/<field>

## Task
- codes: {ts_code}
- date range: {start_date} to {end_date}
- indicators needed: {required_indicators}

## How
1. Always fetch bars first: almost every strategy needs prices.
2. Fetch indicators only when the strategy needs them.
3. Read each tool's answer. If it reports an error, do not retry the same arguments: stop and say why.
Dates are YYYYMMDD; codes carry the exchange suffix (000001.SZ, 600000.SH). Do not assume a date range.
Finish with a short summary of what was fetched or what failed.
"""


def data_end(provider: MarketDataProvider) -> str | None:
    """The last trade date of a provider with a fixed data set (a local folder or the bundled sample, also behind
    the cache), or None for a live source (tushare), whose data runs to today."""
    if isinstance(provider, CachingProvider):
        return data_end(provider.inner)
    return provider.date_range()[1] if isinstance(provider, LocalProvider) else None


def no_bars(provider: MarketDataProvider, start: str, end: str) -> str | None:
    """Why a range has no bars at all when it starts after the provider's data ends, else None."""
    last = data_end(provider)
    start, end = normalize_date(start, N_("start date")), normalize_date(end, N_("end date"))
    if not last or start <= last:
        return None
    return _("the data ends on {last}; your range {start}–{end} has no bars").format(last=last, start=start, end=end)


def missing_fields_reply(provider: MarketDataProvider, what: str, fields: tuple[str, ...] | list[str]) -> str | None:
    """A final reply when the provider lacks fields `what` needs: which, and which providers serve them."""
    missing: dict[str, list[str]] = {}
    for field in fields:
        if field not in provider.available_fields(dataset_of(field)):
            missing.setdefault(dataset_of(field), []).append(field)
    if not missing:
        return None
    offers = {dataset: ", ".join(provider.available_fields(dataset)) or _("none") for dataset in missing}
    lacks = _("; ").join(_("{fields} from {dataset} (it offers: {offers})").format(
        fields=", ".join(names), dataset=dataset, offers=offers[dataset]) for dataset, names in missing.items())
    sources = _(" or ").join(missing)
    return _("{what} needs data the {provider} provider does not have: {lacks}. These fields come from tushare's "
             "{sources} (set TUSHARE_TOKEN), or from a local folder whose {sources} files (.parquet or .csv, tushare "
             "schema) hold them (set QUANTDESK_LOCAL_DATA to that folder). Nothing was run.").format(
        what=what, provider=provider.label(), lacks=lacks, sources=sources)


def store_fields(provider: MarketDataProvider, ws: Workspace, fields: list[str], codes: str, start: str,
                 end: str, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """Fetch `fields` as wide frames into the workspace; returns their FrameInfo dicts. The provider's notes
    (e.g. codes without rows) go to `warnings` when given."""
    panel = provider.panel(fields, codes, start, end, warnings=warnings)
    infos = []
    for field, frame in panel.items():
        namespace = "ohlcv" if field in BAR_FIELDS else "indicators"
        infos.append(ws.put(f"{namespace}/{field}", frame).__dict__)
    return infos


def data_fetch_node(state: SignalState, config: RunnableConfig, runtime: Runtime[SignalDeps]) -> dict[str, Any]:
    report_progress(_("data"))
    ws = workspace(runtime.context, config)
    params = (state.get("user_intent") or {}).get("params") or {}
    if state.get("mode") == "structured":
        return _fetch_structured(state, runtime.context, ws, params)
    return _fetch_llm(state, runtime.context, ws, params)


def _fetch_structured(state: SignalState, ctx: SignalDeps, ws: Workspace, params: dict) -> dict[str, Any]:
    fields = list(params["fields"])
    if "open" in ctx.provider.available_fields(DAILY) and "open" not in fields:
        fields.append("open")
    notes: list[str] = []
    try:
        infos = store_fields(ctx.provider, ws, fields, params["ts_code"], params["start_date"], params["end_date"],
                             notes)
    except DataError as exc:
        error = _("data fetch failed: {error}").format(error=exc)
        return {"error_messages": [error], "error_log": [*state.get("error_log", []), error],
                "execution_history": [*state.get("execution_history", []), error]}
    return {**_fetched(state, infos), "warnings": [*state.get("warnings", []), *notes]}


def _fetched(state: SignalState, infos: list[dict[str, Any]]) -> dict[str, Any]:
    names = [i["name"] for i in infos]
    return {
        "frames": infos,
        "data_ready": any(n.startswith("ohlcv/") for n in names),
        "indicators_ready": any(n.startswith("indicators/") for n in names),
        "error_messages": [],
        "execution_history": [*state.get("execution_history", []), f"data fetch: {', '.join(names)}"],
    }


def _fetch_llm(state: SignalState, ctx: SignalDeps, ws: Workspace, params: dict) -> dict[str, Any]:
    stored: list[dict[str, Any]] = []
    errors: list[str] = []

    def run(fields: list[str], ts_code: str, start_date: str, end_date: str) -> str:
        try:
            empty = no_bars(ctx.provider, start_date, end_date)
            if empty:
                raise DataError(empty)
            infos = store_fields(ctx.provider, ws, fields, ts_code, start_date, end_date)
        except DataError as exc:
            errors.append(str(exc))
            return f"error: {exc}"
        stored.extend(infos)
        return "stored " + "; ".join(f"{i['name']} {i['rows']}x{i['cols']}" for i in infos)

    @tool
    def daily_bar(ts_code: str, start_date: str, end_date: str) -> str:
        """Fetch daily OHLCV bars for comma-separated ts_codes between two YYYYMMDD dates into ohlcv/."""
        fields: list[str] = [f for f in ("open", "high", "low", "close", "vol", "amount")
                  if f in ctx.provider.available_fields(DAILY)]
        return run(fields, ts_code, start_date, end_date)

    @tool
    def daily_basic(ts_code: str, start_date: str, end_date: str, fields: str = "pe,pb") -> str:
        """Fetch daily indicators (comma-separated fields such as pe,pb,turnover_rate) into indicators/."""
        wanted = [f.strip() for f in fields.split(",") if f.strip() and f.strip() not in ("ts_code", "trade_date")]
        unknown = [f for f in wanted if f not in INDICATOR_FIELDS]
        if unknown:
            return f"error: unknown indicator fields {', '.join(unknown)}; choose from {', '.join(INDICATOR_FIELDS)}"
        return run(wanted, ts_code, start_date, end_date)

    prompt = DATA_FETCH_PROMPT.format(
        ts_code=params.get("ts_code"), start_date=params.get("start_date"), end_date=params.get("end_date"),
        required_indicators=params.get("required_indicators") or [],
    )
    agent = create_agent(model_required(ctx, MODELS["data fetcher"]), tools=[daily_bar, daily_basic],
                         system_prompt=prompt)
    try:
        agent.invoke({"messages": [HumanMessage("Fetch the data for this task.")]},
                     {"recursion_limit": AGENT_STEP_LIMIT})
    except AGENT_FAILURES as exc:  # the agent's failure becomes an error for reflection
        errors.append(_("the data agent stopped: {failure}").format(failure=describe_model_failure(exc)))
    if not any(i["name"].startswith("ohlcv/") for i in stored):
        why = errors[-1] if errors else _("the model fetched no price data")
        error = _("data fetch failed: {error}").format(error=why)
        return {"error_messages": [error], "error_log": [*state.get("error_log", []), error],
                "execution_history": [*state.get("execution_history", []), error]}
    result = _fetched(state, stored)
    if errors:
        result["warnings"] = [*state.get("warnings", []), *errors]
    return result
