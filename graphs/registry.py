"""The workflow registry: the one place a workflow is named. The main router, the `/quant` subcommand table,
the console, help, the result renderers and the background service all read it. Adding a workflow is one package
plus one entry.

Reading it is light: what help and the grammar need (words, usages, summaries, the libraries' names) is imported,
and every graph, presenter, command handler and background job is named by its module (`Lazy`), imported at its
first use, so `help` is answered before any graph is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from graphs import syntax  # the command grammar, built from this module's tables at its first read
from graphs.analyze.grammar import USAGE as ANALYZE_USAGE
from graphs.analyze.grammar import WORDS as ANALYZE_WORDS
from graphs.analyze.grammar import starts_request as analyze_starts
from graphs.analyze.models import MODELS as DESK_MODELS
from graphs.background import BackgroundJob
from graphs.factor.library import FACTORS
from graphs.factor.models import MODELS as FACTOR_MODELS
from graphs.factor.spec import SAVE_USAGE, STATUS_USAGE
from graphs.factor.spec import WORDS as FACTOR_WORDS
from graphs.factor.spec import looks_structured as factor_structured
from graphs.factor.spec import starts_request as factor_starts
from graphs.grammar import Words, first_word
from graphs.order.grammar import USAGE as ORDER_USAGE
from graphs.order.grammar import WORDS as ORDER_WORDS
from graphs.order.grammar import looks_structured as order_structured
from graphs.order.grammar import starts_request as order_starts
from graphs.rule.grammar import RUN_USAGE as RULE_RUN_USAGE
from graphs.rule.grammar import SUBCOMMANDS as RULE_SUBCOMMANDS
from graphs.rule.grammar import WORDS as RULE_WORDS
from graphs.rule.models import MODELS as RULE_MODELS
from graphs.signal.grammar import WORDS as SIGNAL_WORDS
from graphs.signal.grammar import looks_structured as signal_structured
from graphs.signal.grammar import starts_request as signal_starts
from graphs.signal.library import STRATEGIES
from graphs.signal.models import MODELS as SIGNAL_MODELS
from graphs.workflow import CommandCall, Lazy, Subcommand, Workflow, runnable_names
from tools.i18n import N_, _

if TYPE_CHECKING:
    from graphs.background import BackgroundCall, Notice
    from graphs.context import WorkflowContext
    from graphs.home import HomeSection
    from graphs.views import View

def _factor_view(name: str) -> Callable[[CommandCall], View]:
    """`factor list` / `factor show`: graphs/factor/present.py's view of the saved factors, imported at the call."""
    view = Lazy(f"graphs.factor.present:{name}")

    def run(call: CommandCall) -> View:
        result: View = view(call.context.engine, call.args)
        return result

    return run


def _decision_outcomes(ctx: WorkflowContext, call: BackgroundCall) -> list[Notice]:
    """The desk's decisions whose outcome is due, resolved (graphs/analyze/resolution.py)."""
    from graphs.analyze.resolution import resolve_pass

    return resolve_pass(ctx)


SIGNAL = Workflow(
    name="signal",
    summary=N_("turn a trading idea into a daily buy/sell signal on some stocks and backtest it against buy-and-hold"),
    usage="signal STRATEGY CODES START END [name=value ...]",
    example="signal ma_cross 000001.SZ,600000.SH 20200101 20200630 fast=5 slow=20",
    notes=(N_("strategies: {strategies}"),
           N_("momentum's top/bottom are fractions of the codes (top=0.3 = the best 30%)")),
    note_values=lambda provider: {"strategies": runnable_names({s.name: s.fields for s in STRATEGIES.values()},
                                                               provider)},
    starts_request=signal_starts, looks_structured=signal_structured,
    build=Lazy("graphs.signal.graph:build_signal_graph"), present=Lazy("graphs.signal.present:present_signal"),
    deps=Lazy("graphs.signal.deps:SignalDeps"), measure=Lazy("graphs.signal.measures:measure_signal"),
    models=SIGNAL_MODELS, words=SIGNAL_WORDS,
)

FACTOR = Workflow(
    name="factor",
    summary=N_("write, check and evaluate a cross-sectional stock-selection factor (IC, quantile returns), with "
               "your code review before anything is saved"),
    usage="factor KIND [CODES] START END [window=N] [name=NAME]",
    example="factor momentum 20190301 20200601 window=20",
    notes=(N_("kinds: {kinds}"),
           N_("combo: a weighted sum of kinds, e.g. factor combo 0.5*momentum(20) - volatility(20) 20190301 20200601"),
           N_("CODES default to the data provider's whole universe")),
    note_values=lambda provider: {"kinds": runnable_names({f.name: f.fields for f in FACTORS.values()}, provider)},
    starts_request=factor_starts, looks_structured=factor_structured,
    build=Lazy("graphs.factor.graph:build_factor_graph"), present=Lazy("graphs.factor.present:present_factor"),
    deps=Lazy("graphs.factor.deps:FactorDeps"),
    subcommands={"list": Subcommand("factor list", N_("saved factors (newest version of each)"),
                                    _factor_view("factor_list")),
                 "show": Subcommand("factor show NAME", N_("one factor: versions, reviewer, metrics, code"),
                                    _factor_view("factor_show")),
                 "save": Subcommand(SAVE_USAGE, N_("put a factor the library gate refused in the team library anyway, "
                                                   "with the reason (audited)"),
                                    Lazy("graphs.factor.save_anyway:factor_save"), free_text_from=1),
                 "status": Subcommand(STATUS_USAGE, N_("the team library's factors with their decay state (active, "
                                                       "weakening, dead)"),
                                      Lazy("graphs.factor.decay_view:factor_status"))},
    measure=Lazy("graphs.factor.measures:measure_factor"), models=FACTOR_MODELS, words=FACTOR_WORDS,
)

ORDER = Workflow(
    name="order",
    summary=N_("a manual order on the paper account: every A-share rule and risk limit checked, then a trader's "
               "approval before it is placed"),
    usage=ORDER_USAGE,
    example="order 600519.SH buy 100 limit=1700",
    notes=(N_("the account defaults to the channel's (the console's own in `quantdesk chat`)"),
           N_("market orders fill at the next session's open on live data, at the simulated session's close on past "
              "data (`clock` shows and moves it)")),
    starts_request=order_starts, looks_structured=order_structured,
    build=Lazy("graphs.order.graph:build_order_graph"), present=Lazy("graphs.order.present:present_order"),
    deps=Lazy("graphs.order.deps:OrderDeps"), words=ORDER_WORDS,
)

RULE = Workflow(
    name="rule",
    summary=N_("check a saved trading rule now: step by step with indicator tools (every step logged), "
               "buy/sell/hold with a confidence, and an order for a trader's approval when it clears the rule's "
               "threshold"),
    usage=RULE_RUN_USAGE,
    example="rule run 1",
    notes=(N_('save one first: rule add 600519.SH "buy when close > ma(30) and rsi(14) < 70; sell when close < '
              'ma(30)" size=100 (the rule language runs without an LLM; plain words need one)'),),
    starts_request=lambda text: first_word(text) == "rule",
    looks_structured=lambda text: False,
    build=Lazy("graphs.rule.graph:build_rule_graph"), present=Lazy("graphs.rule.present:present_rule_run"),
    deps=Lazy("graphs.rule.deps:RuleDeps"), subcommands=RULE_SUBCOMMANDS,
    measure=Lazy("graphs.rule.measures:measure_rule_run"),
    after_failure=Lazy("graphs.rule.background:rule_run_failed"), models=RULE_MODELS, words=RULE_WORDS,
)

ANALYZE = Workflow(
    name="analyze",
    summary=N_("a trading decision on one stock: market, news, sentiment and fundamentals analysts in parallel, a "
               "bull/bear debate, a risk review, then an order for a trader's approval"),
    usage=ANALYZE_USAGE,
    example="analyze 600519.SH depth=2",
    notes=(N_("DATE defaults to the latest trading day in the data; every tool sees data up to that day's close "
              "only"),
           N_("session=pre_open decides before DATE's open on data up to the previous close (the default before "
              "09:30 Asia/Shanghai on a live trading day); session=post_close after its close"),
           N_("depth 1-5 sets the debate rounds; without an LLM you get the indicator and fundamentals tables"),
           N_("figures the agents write that no tool returned are flagged on the card")),
    starts_request=analyze_starts, looks_structured=lambda text: False,
    build=Lazy("graphs.analyze.graph:build_analyze_graph"), present=Lazy("graphs.analyze.present:present_decision"),
    deps=Lazy("graphs.analyze.deps:AnalyzeDeps"), measure=Lazy("graphs.analyze.measures:measure_decision"),
    models=DESK_MODELS, words=ANALYZE_WORDS,
)

WORKFLOWS: dict[str, Workflow] = {w.name: w for w in (SIGNAL, FACTOR, ORDER, RULE, ANALYZE)}

COMMANDS: dict[str, Subcommand] = {
    "account": Subcommand("account [NAME] | account reset NAME", N_("a paper account: cash, positions with marks "
                          "and P&L, an equity chart; reset is for traders and asks for confirmation"),
                          Lazy("graphs.order.commands:account_command")),
    "orders": Subcommand("orders [open|today|all] [NAME]", N_("orders of a paper account"),
                         Lazy("graphs.order.commands:orders_command")),
    "trading": Subcommand("trading [on|off] [REASON]", N_("the kill switch: while off nothing is submitted or "
                          "filled (traders switch it)"),
                          Lazy("graphs.order.commands:trading_command"), free_text_from=1),
    "decisions": Subcommand("decisions [CODE]", N_("the decision desk's past decisions and how they turned out"),
                            Lazy("graphs.analyze.commands:decisions_command")),
    "mandate": Subcommand("mandate [NAME] | mandate NAME set|clear ...", N_("a paper account's mandate: allowed or "
                          "blocked codes, boards and ST, orders a day, gross exposure, turnover a day (its admins "
                          "change it)"), Lazy("graphs.order.mandate_command:mandate_command")),
    "cancel": Subcommand("cancel ORDER", N_("cancel an order that has not filled yet (traders)"),
                         Lazy("graphs.order.commands:cancel_command"), min_args=1),
    "resolve": Subcommand("resolve ORDER filled PRICE|cancelled|unsent", N_("say what became of an order its live "
                          "broker does not know (unknown), after checking at the broker (traders)"),
                          Lazy("graphs.order.commands:resolve_command"), min_args=2),
    "clock": Subcommand("clock [next | set DATE]", N_("the paper accounts' session clock: live on live data; on "
                        "static data one simulated clock a trader moves to the next (or a given) trading day, "
                        "settling orders, marking accounts and letting T+1 pass"),
                        Lazy("graphs.order.clock:clock_command")),
    "roles": Subcommand("roles [list] | roles grant|revoke trader|admin ID [account=NAME] | roles map|unmap LOGIN [ID]",
                        N_("who trades and administers which account, and which console login acts as whom: stored "
                           "in the database, changed by admins (each change audited)"),
                        Lazy("graphs.access:roles_command")),
    "runs": Subcommand("runs [channel] | runs show|export ID", N_("recent runs with what made each (data, models, "
                       "code, every model call): yours or the channel's; show one, or export it as JSON with the "
                       "rows it read"), Lazy("graphs.runs.commands:runs_command")),
    "rerun": Subcommand("rerun ID [live]", N_("run a recorded run again from its record (the same data and model "
                        "answers: every number must match), or live on today's data and model, with what changed"),
                        Lazy("graphs.runs.commands:rerun_command"), min_args=1),
    "usage": Subcommand("usage [day|month] [DATE]", N_("model tokens and cost per person, channel, workflow and "
                        "model"), Lazy("graphs.runs.commands:usage_command")),
    "budget": Subcommand("budget raise PERSON TOKENS", N_("raise one person's token budget for today (admins; "
                         "audited)"), Lazy("graphs.runs.commands:budget_command"), min_args=1),
}

# the commands' Chinese words (each workflow's are in its package)
COMMAND_WORDS = Words(commands={
    "账户": "account", "持仓": "account", "委托": "orders", "交易开关": "trading", "开": "on", "关": "off",
    "时钟": "clock", "下一日": "next", "下个交易日": "next", "设置": "set", "重置": "reset", "今日": "today",
    "今天": "today", "未成交": "open", "授权": "mandate", "交易授权": "mandate", "撤单": "cancel", "清除": "clear",
    "角色": "roles", "授予": "grant", "撤销": "revoke", "映射": "map", "解除映射": "unmap", "交易员": "trader",
    "管理员": "admin", "运行记录": "runs", "重跑": "rerun", "用量": "usage", "预算": "budget", "订单结果": "resolve",
})
# every Chinese word the grammar reads besides the conversation's own (graphs.grammar.vocabulary)
WORDS: tuple[Words, ...] = (COMMAND_WORDS, *(w.words for w in WORKFLOWS.values()))

# work the bot's background service runs whether or not anybody asks (graphs/background.py)
BACKGROUND: dict[str, BackgroundJob] = {
    "rule schedules": BackgroundJob(5.0, Lazy("graphs.rule.background:rule_schedule_job")),
    "order settlement": BackgroundJob(60.0, Lazy("graphs.order.background:settlement_job"), on_broker_news=True),
    "decision outcomes": BackgroundJob(60.0, _decision_outcomes),
    "factor decay": BackgroundJob(60.0, Lazy("graphs.factor.decay:decay_job")),
    "broker reconciliation": BackgroundJob(60.0, Lazy("graphs.order.reconcile:reconciliation_job")),
}


# what a person's home shows besides the questions waiting for them, in this order (graphs/home.py)
HOME: dict[str, HomeSection] = {
    "account": Lazy("graphs.home_panels:account_panels"),
    "rules": Lazy("graphs.home_panels:rule_panels"),
    "desk": Lazy("graphs.home_panels:desk_panels"),
    "factors": Lazy("graphs.home_panels:factor_panels"),
    "runs": Lazy("graphs.runs.panels:runs_panels"),
}


def suggested_prompts(ctx: WorkflowContext, channel: str | None, room: int,
                      user: str | None = None) -> list[tuple[str, str]]:
    """At most `room` (title, request) prompts that work as typed: a signal, an analysis and, when the channel in
    view has a paper account `user` may name (a role on it), that account; else a factor."""
    from graphs.context import has_role
    from graphs.order.deps import accounts

    has_account = (channel is not None and channel in accounts(ctx).names()
                   and has_role(ctx, user, channel))
    account = [(_("My account"), f"account {channel}")] if has_account else [(_("A factor"), FACTOR.example)]
    return [(_("A signal"), SIGNAL.example), (_("An analysis"), ANALYZE.example), *account][:room]


def command_for(text: str) -> tuple[Subcommand, list[str]] | None:
    """The command `text` calls (top-level like `account`, or a workflow's like `factor list`, in either language
    and either order: `删除规则 2`) and its arguments, as the command grammar reads it (graphs/syntax.py), if any."""
    return syntax.command_for(text)


def workflow_for(text: str) -> Workflow | None:
    """The workflow a new request names (its keyword or one of its kinds first), if any."""
    return next((w for w in WORKFLOWS.values() if w.starts_request(text)), None)


def lazy_parts() -> list[Lazy]:
    """Every part the registry names lazily: graphs, presenters, deps, measures, handlers, jobs and home panels."""
    handlers = [*COMMANDS.values(), *(s for w in WORKFLOWS.values() for s in w.subcommands.values())]
    parts = [*(p for w in WORKFLOWS.values() for p in (w.build, w.present, w.deps, w.measure, w.after_failure)),
             *(c.run for c in handlers), *(j.run for j in BACKGROUND.values()), *HOME.values()]
    return [part for part in parts if isinstance(part, Lazy)]


def import_all() -> None:
    """Import every part the registry names lazily: a surface's core does at its start, so nobody's first command,
    card or result waits for an import."""
    for part in lazy_parts():
        part.resolve()
