"""Replay: walk the desk over past dates (`analyze CODE START..END every=5d`). Each date is a full decision with
point-in-time data, in the replay's own memory namespace (empty at its start, so nothing written later can leak
into an earlier date; reflections appear only once their horizon has passed) and its own replay account, where
orders fill without approval at that date's close. The replay stops cleanly when its token budget is spent, and
reports the paper P&L against buy-and-hold and the hit rate of the ratings, with an equity chart.

Each date is a LangGraph task whose answer (the step, the replay account's ledger after the date as JSON, the close,
the tokens) is saved with the thread's checkpoint as the date finishes, written in the background. A replay resumed
after a crash takes the finished dates' answers back in order and goes on from the last one's ledger: only the date
in progress and those after it are decided again (and a date that finished in the instant before the crash, while
its answer was still being written)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.func import task
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.memory import HORIZON_DAYS
from graphs.analyze.nodes.prepare import REPLAY_PREFIX
from graphs.analyze.state import AnalyzeState
from graphs.context import thread_id
from graphs.progress import report_progress
from tools.broker.boards import OrderRuleError
from tools.broker.clock import day
from tools.broker.config import TradingConfig
from tools.broker.fees import fill_fees
from tools.broker.money import price_of
from tools.broker.protocol import Broker
from tools.broker.replay import ReplayBroker, ReplayLedger
from tools.broker.rules import lot_rule
from tools.broker.sizing import FEE_MARGIN
from tools.broker.store import AccountError
from tools.desk.log import rating_word, resolve_due
from tools.desk.snapshot import price_bars
from tools.i18n import _

Desk = CompiledStateGraph[AnalyzeState, AnalyzeDeps, AnalyzeState, AnalyzeState]  # the desk one replay date runs


@dataclass(frozen=True)
class _Replay:
    """What every date of one replay shares (a task's input is not checkpointed: only its answer is)."""

    ctx: AnalyzeDeps
    paper: TradingConfig  # the paper account's rates and starting cash, which the replay account shares
    desk: Desk
    request: dict[str, Any]
    requester: str | None
    thread: str  # the replay's thread; each date's desk runs in one of its own, within the artifacts' 64 characters
    run: str
    namespace: str
    account: str


def make_replay_node(desk: Desk) -> Callable[..., dict[str, Any]]:
    """The replay node, deciding each date with `desk` (the desk compiled once, for replay dates)."""

    def replay_node(state: AnalyzeState, runtime: Runtime[AnalyzeDeps],
                    config: RunnableConfig) -> dict[str, Any]:
        return _replay(desk, state, runtime.context, config)

    return replay_node


def _replay(desk: Desk, state: AnalyzeState, ctx: AnalyzeDeps, config: RunnableConfig) -> dict[str, Any]:
    request = state["request"]
    code, dates, run = request["ts_code"], request["replay_dates"], state["run_id"]
    paper = ctx.paper
    if paper is None:  # the adapters always configure one (graphs/dependencies.py)
        raise LookupError("no paper account is configured")
    replay = _Replay(ctx, paper, desk, request, state.get("requester"), thread_id(config), run,
                     f"{REPLAY_PREFIX}{run}", f"replay-{run[:12]}")
    ledger = ReplayLedger(paper.starting_cash, paper.rates)
    steps: list[dict[str, Any]] = []
    closes: dict[str, Decimal] = {}  # the stock's close on each date decided
    spent, stopped = 0, None
    for number, date in enumerate(dates, 1):
        left = ctx.replay_token_budget - spent
        if left <= 0:
            stopped = _("stopped before {date}: the replay's token budget of {budget} is spent").format(
                date=date, budget=f"{ctx.replay_token_budget:,}")
            break
        if ctx.stop_requested():  # the runner honours a stop only between nodes, and this node holds every date
            stopped = (_("stopped at your request after date {n} of {total} ({last}); {date} and the dates after it "
                         "were not decided").format(n=len(steps), total=len(dates), last=steps[-1]["date"], date=date)
                       if steps else
                       _("stopped at your request before the first of {total} dates; {date} and the dates after it "
                         "were not decided").format(total=len(dates), date=date))
            ctx.stop_honoured()  # the report of the dates done is shown, not a bare "Stopped"
            break
        done = replay_date(ledger.to_json(), date, left, replay).result()
        ledger = ReplayLedger.from_json(done["ledger"], paper.rates)
        closes[date] = Decimal(done["close"])
        spent += done["tokens"]
        steps.append(done["step"])
        report_progress(_("replay"), f"{number}/{len(dates)} {date}: {rating_word(steps[-1]['rating'])}")
        if done["stopped"]:
            stopped = done["stopped"]
            break
    resolved = resolve_due(ctx.engine, ctx.provider, namespace=replay.namespace,
                           as_of_date=str(ctx.provider.last_date()), horizon=HORIZON_DAYS)
    hits = [r.hit for r in resolved if r.hit is not None]
    benchmark = _buy_and_hold(paper, code, closes)
    result = {"kind": "replay", "request": request, "namespace": replay.namespace, "account": replay.account,
              "steps": steps, "equity": [(d, str(e)) for d, e in ledger.marks],
              "benchmark": [(d, str(v)) for d, v in benchmark],
              "starting_cash": str(ledger.starting_cash), "fills": len(ledger.fills), "tokens": spent,
              "hit_rate": f"{sum(hits)}/{len(hits)}" if hits else _("n/a (no rating resolved yet)"),
              "stopped": stopped, "price_basis": ctx.provider.price_basis}
    if ledger.marks:
        from tools.research.charts import account_equity  # matplotlib on first draw: not at the start

        held = dict(benchmark)  # buy-and-hold marked on the dates decided: the ledger's marks
        compared = [float(held[d]) for d, _ in ledger.marks] if all(d in held for d, _ in ledger.marks) else None
        chart = account_equity([d for d, _ in ledger.marks], [float(e) for _, e in ledger.marks],
                               float(ledger.starting_cash), _("Replay of the desk on {code}: equity").format(code=code),
                               compared, _("buy-and-hold {code}").format(code=code))
        result["artifacts"] = [ctx.artifacts.put(thread_id(config), run, "chart", f"replay_{code}.png",
                                                 _("replay of {code}").format(code=code), "image/png", chart)]
    return {"result": result}


@task
def replay_date(ledger_json: dict[str, Any], date: str, left: int, replay: _Replay) -> dict[str, Any]:
    """The desk's decision on `date`, trading in the ledger as the previous date left it, with at most `left` tokens.
    The answer is JSON: the step, the ledger after the date, the date's close, the tokens spent and why the replay
    stops here (None: it goes on). The function's name is the task's, in the checkpoints."""
    ctx, request = replay.ctx, replay.request
    code = request["ts_code"]
    ledger = ReplayLedger.from_json(ledger_json, replay.paper.rates)
    close = price_of(price_bars(ctx.provider, code, date, 1)["close"].iloc[-1])
    broker: Broker = ReplayBroker(ledger, replay.account, date, {code: close})  # the replay's own, registered kind
    inner = dataclasses.replace(ctx, desk_namespace=replay.namespace, broker=_only(broker),
                                decision_token_budget=min(ctx.decision_token_budget, left))
    ask = (f"analyze {code} {date} depth={request['depth']} analysts={','.join(request['analysts'])} "
           f"session={request['session']}")
    out = replay.desk.invoke({"messages": [HumanMessage(ask)], "requester": replay.requester},
                             {"configurable": {"thread_id": f"{replay.thread}:{replay.run[:12]}:{date}",
                                               "account": replay.account}},
                             context=inner)
    result = out.get("result") or {}
    broker.mark(date)
    stop = result.get("stopped") or out.get("final_reply")
    return {"step": {**_step(date, result, ledger.marks[-1][1], out.get("final_reply")), "stopped": bool(stop)},
            "ledger": ledger.to_json(), "close": str(close), "tokens": int(result.get("tokens") or 0),
            "stopped": _("stopped at {date}: {why}").format(date=date, why=stop) if stop else None}


def _only(broker: Broker) -> Callable[[str, str | None], Broker]:
    """The account opener of a replay date: its replay account, and no other (a replay trades nowhere else)."""

    def opened(name: str, by: str | None) -> Broker:
        if name != broker.name:
            raise AccountError(_("a replay trades only in its own account {account}, not in {name}").format(
                account=broker.name, name=name))
        return broker

    return opened


def _step(date: str, result: dict[str, Any], equity: Decimal, reply: str | None) -> dict[str, Any]:
    risk = result.get("risk_summary") or {}
    record = result.get("execution_record") or {}
    return {"date": date, "rating": risk.get("rating") or "-", "target": risk.get("target_position"),
            "order": record.get("message") or reply or result.get("stopped") or "-", "equity": str(equity),
            "tokens": int(result.get("tokens") or 0)}


def _buy_and_hold(paper: TradingConfig, code: str, closes: dict[str, Decimal]) -> list[tuple[str, Decimal]]:
    """Buying as many whole lots as the starting cash allows at the first date's close (fees paid), then holding,
    marked at the `closes` of the dates decided."""
    if not closes:
        return []
    dates, cash = list(closes), paper.starting_cash
    try:
        lot = lot_rule(code, day(dates[0]))
    except OrderRuleError:
        return []
    shares = lot.round_down(int(cash * (1 - FEE_MARGIN) / closes[dates[0]]))
    value = closes[dates[0]] * shares
    left = cash - value - (fill_fees(code, "buy", value, day(dates[0]), paper.rates).total if shares else 0)
    return [(d, left + closes[d] * shares) for d in dates]
