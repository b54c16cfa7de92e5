"""The rule workflow's words: its Chinese words, the usages and its subcommands (their handlers in
graphs/rule/commands.py, imported at the first call), light enough for help and the grammar."""

from __future__ import annotations

from graphs.grammar import Words
from graphs.workflow import Lazy, Subcommand
from tools.i18n import N_

ADD_USAGE = ('rule add SYMBOL "REQUIREMENTS" [tz=ZONE] [size=SHARES|value=CNY] [threshold=0..1] [account=NAME] '
             "[kind=words|language]")
SCHEDULE_USAGE = 'rule schedule ID "CRON"|off [tz=ZONE] [anyway REASON]'
ANYWAY_USAGE = 'rule schedule ID "CRON" anyway REASON'  # a schedule over the gate: the reason is required
RUN_USAGE = "rule run ID"  # the IDs: `rule list`


def _handler(name: str) -> Lazy:
    """`rule NAME`'s handler, imported at its first call."""
    return Lazy(f"graphs.rule.commands:{name}_command")


WORDS = Words(commands={
    "规则": "rule", "运行": "run", "执行": "run", "添加": "add", "新增": "add", "日志": "log", "定时": "schedule",
    "暂停": "pause", "恢复": "resume", "删除": "delete", "回测": "backtest", "我的": "mine", "本频道": "channel",
    "强制": "anyway", "仍然": "anyway",  # a schedule over the gate: `规则 定时 3 "30 9 * * 1-5" 强制 理由`
})

SUBCOMMANDS: dict[str, Subcommand] = {
    "add": Subcommand(ADD_USAGE, N_("save a trading rule (words for the model, or the rule language)"),
                      _handler("add")),
    "list": Subcommand("rule list [channel|mine|all]", N_("saved rules"), _handler("list")),
    "show": Subcommand("rule show ID", N_("one rule and its latest runs"), _handler("show")),
    "log": Subcommand("rule log ID [EXECUTION]", N_("a run's steps as a timeline (the latest run by default)"),
                      _handler("log")),
    "schedule": Subcommand(SCHEDULE_USAGE, N_("run on trading days at cron times (Asia/Shanghai), once a backtest "
                                              "passed the gate, or anyway with the reason (audited)"),
                           _handler("schedule"), free_text_from=2),
    "pause": Subcommand("rule pause ID [REASON]", N_("stop its schedule (owner or admin)"), _handler("pause"),
                        free_text_from=1),
    "resume": Subcommand("rule resume ID", N_("start its schedule again (owner or admin)"), _handler("resume")),
    "delete": Subcommand("rule delete ID", N_("delete it and its logs (owner or admin)"), _handler("delete")),
    "backtest": Subcommand("rule backtest ID START END", N_("backtest a rule-language rule with the paper account's "
                           "costs, beside buy-and-hold"), _handler("backtest")),
    "help": Subcommand("rule help", N_("these commands"), _handler("help")),
}
