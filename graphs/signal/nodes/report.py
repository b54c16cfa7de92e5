"""Report: backtest the validated signal, draw the chart, store the artifacts (in the database, keyed by the
request, so a re-run of this node stores nothing twice), and summarise — as data for the adapters (nothing here
talks to Slack)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs import names
from graphs.context import thread_id, workspace
from graphs.progress import report_progress
from graphs.signal.deps import SignalDeps
from graphs.signal.groups import empty_group_warnings
from graphs.signal.library import STRATEGIES
from graphs.signal.state import SignalState
from tools.data.schema import normalize_date
from tools.i18n import N_, _
from tools.research.backtest import BacktestResult, degeneracy_warnings, run_backtest
from tools.research.date_span import span_note
from tools.research.holdout import split_sessions
from tools.research.trials import Trial, TrialStore, judge, universe_key
from tools.storage.artifacts import ArtifactRef, ArtifactStore
from tools.storage.workspace import WorkspaceError

CONVENTIONS = N_("next-bar execution at the open (close when no open); each code trades its own 1/N sleeve of the "
               "capital and weights drift between trades (no rebalancing, so none is charged); a code without a price "
               "(suspended) keeps its position and earns the move across the gap; long-only unless configured; fees "
               "on traded notional; Sharpe = mean/std of daily returns x sqrt(252), rf = 0; benchmark = equal-weight "
               "buy-and-hold of the same codes from the first bar (each code's 1/N bought at its first price and "
               "held, a later listing waits in cash); exposure = mean share of equity invested")  # shown translated


def signal_counts(signal: pd.DataFrame) -> dict[str, int]:
    return {"buy": int((signal == 1).sum().sum()), "sell": int((signal == -1).sum().sum()),
            "hold": int((signal == 0).sum().sum()), "missing": int(signal.isna().sum().sum())}


def report_node(state: SignalState, config: RunnableConfig, runtime: Runtime[SignalDeps]) -> dict[str, Any]:
    ctx = runtime.context
    report_progress(_("backtest and chart"))
    ws = workspace(ctx, config)
    signal_name = state["signal_name"]
    assert signal_name is not None  # the routes reach the report only with a validated signal
    signal = ws.get(signal_name)
    close = ws.get("ohlcv/close")
    try:
        price = ws.get("ohlcv/open")
    except WorkspaceError:
        price = close
    backtest = run_backtest(signal, price, fee_rate=ctx.fee_rate, long_only=ctx.long_only)
    params = (state.get("user_intent") or {}).get("params") or {}
    strategy = STRATEGIES.get(params.get("strategy") or "")
    warnings = [*state.get("warnings", []),
                *(empty_group_warnings(strategy.name, strategy.groups, params.get("strategy_params") or {},
                                       signal.shape[1]) if strategy else []),
                *degeneracy_warnings(signal, backtest).values()]
    name = signal_name.split("/", 1)[1]
    title = params.get("strategy") or name
    if params.get("strategy_params"):
        title += " (" + ", ".join(f"{k}={v:g}" for k, v in params["strategy_params"].items()) + ")"
    split, judged = split_parts(signal, price, ctx)
    judged = backtest.daily_returns if judged is None else judged
    artifacts = _store_artifacts(ctx.artifacts, thread_id(config), _run_key(state.get("messages", [])), name,
                                 title, signal, close, backtest)
    result: dict[str, Any] = {
        "workflow": "signal",
        "title": title,
        "strategy": params.get("strategy"),
        "params": params.get("strategy_params") or {},
        "description": params.get("strategy_desc"),
        "codes": [str(c) for c in signal.columns],
        "shape": list(signal.shape),
        "first_date": f"{signal.index.min():%Y-%m-%d}",
        "last_date": f"{signal.index.max():%Y-%m-%d}",
        "counts": signal_counts(signal),
        "metrics": backtest.metrics.as_dict(),
        "split": split,
        "honesty": _judged(ctx, thread_id(config), state.get("requester"), params, signal, judged),
        "notes": _span_notes(params, signal.index),
        "conventions": CONVENTIONS,
        "warnings": warnings,
        "signal_name": state["signal_name"],
        "code": state.get("signal_code"),
        "artifacts": artifacts,
    }
    brief = (f"Backtested {title} on {len(result['codes'])} code(s): total return "
             f"{result['metrics']['total_return']:.2%}, Sharpe {result['metrics']['sharpe']:.2f}")
    return {"result": result, "messages": [AIMessage(brief)], "current_task": "end",
            "execution_history": [*state.get("execution_history", []), "report: done"]}


def split_parts(signal: pd.DataFrame, price: pd.DataFrame,
                ctx: SignalDeps) -> tuple[dict[str, Any], pd.Series | None]:
    """The period's in-sample part and holdout backtested apart, each from flat and beside its own buy-and-hold:
    {split, in_sample, holdout} (the parts None when the holdout would be under the minimum), and the in-sample
    part's daily returns (None without a holdout)."""
    if signal.empty:
        return {"split": None, "in_sample": None, "holdout": None}, None
    split = split_sessions(list(pd.DatetimeIndex(signal.index).strftime("%Y%m%d")), ctx.holdout_fraction)
    if not split.held_out:
        return {"split": split.as_dict(), "in_sample": None, "holdout": None}, None
    cut, first = pd.Timestamp(split.in_sample_end), pd.Timestamp(split.holdout_start)

    def part(rows: slice) -> BacktestResult:
        return run_backtest(signal.loc[rows], price.loc[rows], fee_rate=ctx.fee_rate, long_only=ctx.long_only)

    inside = part(slice(None, cut))
    return ({"split": split.as_dict(), "in_sample": inside.metrics.as_dict(),
             "holdout": part(slice(first, None)).metrics.as_dict()}, inside.daily_returns)


def _judged(ctx: SignalDeps, thread: str, person: str | None, params: dict[str, Any], signal: pd.DataFrame,
            returns: pd.Series) -> dict[str, Any] | None:
    """Record this backtest as a trial of its thread (strategy, parameters, codes, period) and judge it among the
    thread's signal trials (DSR; PBO from 8)."""
    if returns.dropna().size < 3:
        return None
    codes = [str(c) for c in signal.columns]
    first, last = f"{signal.index.min():%Y%m%d}", f"{signal.index.max():%Y%m%d}"
    variant = json.dumps({"strategy": params.get("strategy"), "params": params.get("strategy_params") or {}},
                         sort_keys=True)
    key = f"{thread}:{universe_key(codes)}:{first}:{last}:" + hashlib.sha256(variant.encode()).hexdigest()[:12]
    store = TrialStore(ctx.engine)
    store.record([Trial(key, thread, person, "signal", str(params.get("strategy") or "signal"), universe_key(codes),
                        first, last, returns)])
    trials = [r for r in store.of_thread(thread) if r.kind == "signal"]
    return judge(returns, trials, store.count_of(person)).as_dict()


def _span_notes(params: dict[str, Any], dates: pd.Index) -> list[str]:
    """Which dates ran, when the data begins after the start asked for or ends before the end."""
    if not params.get("start_date") or not params.get("end_date") or dates.empty:
        return []
    note = span_note(normalize_date(params["start_date"], N_("start date")), normalize_date(params["end_date"],
                                                                                          N_("end date")),
                     f"{dates.min():%Y%m%d}", f"{dates.max():%Y%m%d}")
    return [note] if note else []


def _run_key(messages: list[AnyMessage]) -> str:
    """The artifacts' idempotency key: the request this report answers (its last human message)."""
    last = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
    return f"signal/report:{last.id}"


def _store_artifacts(store: ArtifactStore, thread: str, run_key: str, name: str, title: str, signal: pd.DataFrame,
                     close: pd.DataFrame, backtest: BacktestResult) -> list[ArtifactRef]:
    from tools.research.charts import equity_and_signal_counts, price_with_trades  # matplotlib on first draw

    if signal.shape[1] == 1:
        code = signal.columns[0]
        named = f"{code} {names.table().names.get(code, '')}".strip()  # 600519.SH 贵州茅台
        png = price_with_trades(close[code], backtest.positions[code], f"{title} — {named}", equity=backtest.equity,
                                benchmark=backtest.benchmark_equity)
    else:
        png = equity_and_signal_counts(backtest.equity, signal,
                                       _("{title} — equity of {n} codes").format(title=title, n=signal.shape[1]),
                                       benchmark=backtest.benchmark_equity, exposure=backtest.exposure)
    metrics = pd.Series(backtest.metrics.as_dict()).rename("value").to_csv(index_label="metric")
    files = {
        "chart": (f"{name}.png", _("{title}: chart"), "image/png", png),
        "signal_csv": (f"{name}_signal.csv", _("{title}: signal (CSV)"), "text/csv",
                       signal.to_csv(date_format="%Y%m%d").encode()),
        "signal_parquet": (f"{name}_signal.parquet", _("{title}: signal (Parquet)"), "application/vnd.apache.parquet",
                           signal.to_parquet()),
        "metrics_csv": (f"{name}_metrics.csv", _("{title}: metrics (CSV)"), "text/csv", metrics.encode()),
    }
    return [store.put(thread, run_key, kind, filename, described.format(title=title), mime, data)
            for kind, (filename, described, mime, data) in files.items()]
