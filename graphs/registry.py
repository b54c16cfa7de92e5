"""The workflow registry: the one place a workflow is named. The main router, the `/quant` subcommand table,
the console, help and the result renderers all read it. Adding a workflow is one package plus one entry."""

from __future__ import annotations

from graphs.factor.graph import build_factor_graph
from graphs.factor.library import FACTORS
from graphs.factor.present import factor_list, factor_show, present_factor
from graphs.factor.spec import looks_structured as factor_structured
from graphs.factor.spec import starts_request as factor_starts
from graphs.signal.grammar import looks_structured as signal_structured
from graphs.signal.grammar import starts_request as signal_starts
from graphs.signal.graph import build_signal_graph
from graphs.signal.library import STRATEGIES
from graphs.signal.present import present_signal
from graphs.workflow import Subcommand, Workflow

SIGNAL = Workflow(
    name="signal",
    summary="turn a trading idea into a daily buy/sell signal on some stocks and backtest it against buy-and-hold",
    usage="signal STRATEGY CODES START END [name=value ...]",
    example="signal ma_cross 000001.SZ,600000.SH 20200101 20200630 fast=5 slow=20",
    notes=("strategies: " + ", ".join(STRATEGIES),
           "momentum's top/bottom are fractions of the codes (top=0.3 = the best 30%)"),
    starts_request=signal_starts, looks_structured=signal_structured, build=build_signal_graph,
    present=present_signal,
)

FACTOR = Workflow(
    name="factor",
    summary="write, check and evaluate a cross-sectional stock-selection factor (IC, quantile returns), with your "
            "code review before anything is saved",
    usage="factor KIND [CODES] START END [window=N] [name=NAME]",
    example="factor momentum 20190301 20200601 window=20",
    notes=("kinds: " + ", ".join(FACTORS) + ", combo (e.g. factor combo 0.5*momentum(20) - volatility(20) "
           "20190301 20200601)", "CODES default to the data provider's whole universe"),
    starts_request=factor_starts, looks_structured=factor_structured, build=build_factor_graph,
    present=present_factor,
    subcommands={"list": Subcommand("factor list", "saved factors (newest version of each)", factor_list),
                 "show": Subcommand("factor show NAME", "one factor: versions, reviewer, metrics, code", factor_show)},
)

WORKFLOWS: dict[str, Workflow] = {w.name: w for w in (SIGNAL, FACTOR)}

PLANNED = {"analyze": "multi-analyst trading decision", "rule": "execution rules"}


def not_available(name: str) -> str:
    """The one answer for a workflow that is planned but not built yet."""
    built = ", ".join(f"`{n}`" for n in WORKFLOWS)
    return f"The {PLANNED.get(name, name)} workflow (`{name}`) is not available yet; these are: {built}."


def workflow_for(text: str) -> Workflow | None:
    """The workflow a new request names (its keyword or one of its kinds first), if any."""
    return next((w for w in WORKFLOWS.values() if w.starts_request(text)), None)
