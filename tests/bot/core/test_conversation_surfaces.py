"""Issue 37, what it must show: the console, `/quant`, a message in a Slack thread and the assistant pane give the
same answer to the same text, in both languages, because all four hand it to the core's one dispatcher. Each
phrasing runs on the four surfaces (the console as a real `quantdesk chat` process, Slack through `quantdesk
serve` with signed requests against the fake Web API); what every surface shows must hold the answer the phrasing
asks for. What each phrasing is read as, over a larger table, is tests/graphs/test_conversation.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.console import quantdesk
from testkit.fakes.slack_server import Call, SlackServer
from testkit.slack import BotProcess, command_body, event_body, mention, message, new_ts, post, text_of
from testkit.wait import wait_until

ZHANG, ALICE = "UZHANG", "UALICE"  # zh-CN and en-US in Slack
SEPARATOR = {"zh": "lang zh", "en": "lang en"}
SEPARATOR_SAID = {"zh": "今后我用中文回复你。每个线程沿用发起人的语言。",
                  "en": "From now on I answer you in English. A thread keeps the language of the person who started "
                        "it."}

# what the core answers at once: (language, typed, what every surface's answer holds)
ANSWERED = [
    ("zh", "帮助", "模拟账户与交易台命令"), ("zh", "账户", "总资产 1,000,000.00 元"),
    ("zh", "持仓", "总资产 1,000,000.00 元"), ("zh", "委托 全部", "没有委托"), ("zh", "规则清单", "没有规则"),
    ("zh", "列出规则", "没有规则"), ("zh", "列出所有因子", "因子库还是空的"), ("zh", "因子列表", "因子库还是空的"),
    ("zh", "删除规则2", "没有规则 2"), ("zh", "恢复规则 2", "没有规则 2"),
    ("zh", "回测规则 2 20200101 20200601", "没有规则 2"), ("zh", "时钟", "当前交易日为 20200727"),
    ("zh", "授权", "没有交易授权范围"), ("zh", "决策", "还没有决策"), ("zh", "交易开关", "交易已开启"),
    ("zh", "撤单 99", "没有委托 99"), ("zh", "规则 回测", "rule backtest ID START END"),
    ("zh", "显示规则 9", "没有规则 9"), ("zh", "规则日志 9", "没有规则 9"), ("zh", "暂停规则 9 等财报", "没有规则 9"),
    ("zh", "规则 恢复 9", "没有规则 9"), ("zh", "今日委托", "今天没有委托"), ("zh", "未成交委托", "没有未成交委托"),
    ("zh", "所有规则", "没有规则（全部）"), ("zh", "规则 清单", "没有规则"),
    ("zh", "决策 600519.SH", "还没有决策（600519.SH）"),
    ("zh", "状态", "没有未结束的 QuantDesk 线程"), ("zh", "委托", "没有未成交委托"), ("zh", "撤单 12", "没有委托 12"),
    ("zh", "交易授权", "没有交易授权范围"),
    ("en", "help", "paper account and desk commands"), ("en", "account", "Equity 1,000,000.00"),
    ("en", "orders all", "No orders in account"), ("en", "rule list", "No rules"), ("en", "delete rule 2", "no rule 2"),
    ("en", "factor list", "No factors saved yet"), ("en", "clock", "the session is 20200727"),
    ("en", "decisions", "No decisions"),
    ("en", "trading", "Trading is on."), ("en", "cancel 99", "no order 99"),
    ("en", "rule show 9", "no rule 9"), ("en", "rule log 9", "no rule 9"), ("en", "rule pause 9 earnings", "no rule 9"),
    ("en", "rule resume 9", "no rule 9"), ("en", "orders today", "No orders today in account"),
    ("en", "orders open", "No open orders in account"), ("en", "rule list mine", "No rules (mine)"),
    ("en", "mandate", "has no mandate"), ("en", "decisions 600519.SH", "No decisions yet (for 600519.SH)"),
    ("en", "status", "no open QuantDesk threads"), ("en", "cancel 12", "no order 12"),
    ("en", "factor show nothing_here", "No factor named 'nothing_here'"),
]
# a request: (language, typed, what the first thing its thread shows holds: a question, a card or a result); the
# limit 12.1 is below 000001.SZ's limit-down of 12.15 on 20200727, where a new simulated clock starts
STARTED = [
    ("zh", "买入 000001.SZ 200股 限价 12.1", "跌停价"), ("zh", "信号 均线金叉 贵州茅台", "哪个日期区间"),
    ("zh", "分析贵州茅台", "技术指标（未配置 LLM）"), ("zh", "买平安银行2手", "买入 200 股 000001.SZ"),
    ("zh", "卖出 601318.SH 300股", "禁止卖空"), ("en", "sell 601318.SH 300", "no short selling"),
    ("en", "buy 000001.SZ 200 limit=12.1", "limit-down"), ("en", "signal ma_cross 600519.SH", "Which date range"),
    ("en", "analyze 600519.SH", "indicators (no LLM configured)"),
]


BOT_ENV = {"QUANTDESK_TRADERS": f"{ZHANG},{ALICE}"}  # both trade, as the console's operator does with no trader named


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackServer]:
    with SlackServer() as server:
        server.fake.locales.update({ZHANG: "zh-CN", ALICE: "en-US"})
        yield server


def _console(folder: Path, language: str, lines: list[str]) -> list[str]:
    """Each line's answer in one `quantdesk chat` session, told apart by a `lang` line between them."""
    folder.mkdir()
    script = [SEPARATOR[language]]
    for line in lines:
        script += [line, SEPARATOR[language]]
    out = quantdesk(["chat"], folder, "\n".join(script) + "\n")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    answers = out.stdout.split(SEPARATOR_SAID[language] + "\n")
    assert len(answers) == len(lines) + 2, out.stdout  # before the first separator, each line's, after the last
    return answers[1:-1]


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], str]:
    """Every phrasing's console answer: the answered ones in one session per language, then the requests."""
    folder = tmp_path_factory.mktemp("console")
    answers: dict[tuple[str, str], str] = {}
    for language in ("zh", "en"):
        for table, name in ((ANSWERED, "answered"), (STARTED, "started")):
            lines = [typed for lang, typed, _expected in table if lang == language]
            answers.update({(language, typed): answer for typed, answer in
                            zip(lines, _console(folder / f"{name}-{language}", language, lines), strict=True)})
    return answers


def _user(language: str) -> str:
    return ZHANG if language == "zh" else ALICE


def _shown(call: Call) -> str:
    """A message as a person reads it: its text and every text in its blocks."""
    return text_of(call) + "\n" + json.dumps(call.args.get("blocks") or [], ensure_ascii=False)


def _slash(slack: SlackServer, bot: BotProcess, text: str, user: str, channel: str) -> str:
    hook = f"cmd{new_ts()}"
    status, _body = post(bot.url, command_body(text, channel, user, slack.url.replace("/api/", f"/respond/{hook}")),
                         "application/x-www-form-urlencoded")
    assert status == 200
    (reply,) = slack.fake.wait_for("respond", where=lambda c: c.args.get("_hook") == hook)
    return _shown(reply)


def _in_thread(slack: SlackServer, channel: str, root: str, holds: str) -> str:
    """The first message of the thread that holds `holds` (waited for), as shown."""
    found = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                and c.args.get("thread_ts") == root and holds in _shown(c))
    return _shown(found[0])


def _mention(slack: SlackServer, bot: BotProcess, text: str, user: str, channel: str, holds: str) -> str:
    root = new_ts()
    post(bot.url, event_body(mention(channel, user, text, root)), "application/json")
    return _in_thread(slack, channel, root, holds)


def _pane(slack: SlackServer, bot: BotProcess, text: str, user: str, holds: str) -> str:
    """A message typed in an assistant thread (the app's direct messages)."""
    channel, root = f"D{user}", new_ts()
    post(bot.url, event_body(message(channel, user, text, root, thread_ts=root, channel_type="im")),
         "application/json")
    return _in_thread(slack, channel, root, holds)


@pytest.mark.parametrize(("language", "typed", "expected"), ANSWERED)
def test_the_four_surfaces_answer_a_command_the_same(slack: SlackServer, bot: BotProcess,
                                                     console: dict[tuple[str, str], str], language: str, typed: str,
                                                     expected: str) -> None:
    user, channel = _user(language), f"CSAME{language.upper()}"
    shown = {"console": console[(language, typed)], "/quant": _slash(slack, bot, typed, user, channel),
             "thread": _mention(slack, bot, typed, user, channel, expected),
             "pane": _pane(slack, bot, typed, user, expected)}
    assert all(expected in answer for answer in shown.values()), shown


@pytest.mark.parametrize(("language", "typed", "expected"), STARTED)
def test_the_four_surfaces_start_a_request_the_same(slack: SlackServer, bot: BotProcess,
                                                    console: dict[tuple[str, str], str], language: str, typed: str,
                                                    expected: str) -> None:
    user, channel = _user(language), f"CSTART{language.upper()}"
    assert expected in console[(language, typed)]
    assert expected in _mention(slack, bot, typed, user, channel, expected)
    assert expected in _pane(slack, bot, typed, user, expected)
    hook = f"cmd{new_ts()}"  # `/quant` roots a thread in the channel and runs it there; nothing said in private
    post(bot.url, command_body(typed, channel, user, slack.url.replace("/api/", f"/respond/{hook}")),
         "application/x-www-form-urlencoded")
    root = wait_until(lambda: next((c.response["ts"] for c in slack.fake.of("chat.postMessage")
                                    if c.args.get("channel") == channel and not c.args.get("thread_ts")
                                    and f"`/quant {typed}`" in text_of(c) and c.ok), None), "the thread's root")
    assert expected in _in_thread(slack, channel, root, expected)
    assert not [c for c in slack.fake.of("respond") if c.args.get("_hook") == hook]


def test_the_table_has_sixty_phrasings_thirty_of_them_chinese() -> None:
    phrasings = [*ANSWERED, *STARTED]
    assert len(phrasings) >= 60 and sum(language == "zh" for language, _typed, _expected in phrasings) >= 30


def test_an_unknown_word_typed_outside_a_thread_is_answered_in_a_thread_of_its_own(slack: SlackServer,
                                                                                   bot: BotProcess) -> None:
    """`/quant 香蕉` is not dropped: without an LLM, the router says what runs without one, in the person's
    language, in a thread rooted in the channel."""
    channel = "CUNKNOWN"
    post(bot.url, command_body("香蕉", channel, ZHANG, slack.url.replace("/api/", "/respond/banana")),
         "application/x-www-form-urlencoded")
    root = wait_until(lambda: next((c.response["ts"] for c in slack.fake.of("chat.postMessage")
                                    if c.args.get("channel") == channel and not c.args.get("thread_ts") and c.ok),
                                   None), "the thread's root")
    assert "无需 LLM 我可以运行这些" in _in_thread(slack, channel, root, "无需 LLM")
