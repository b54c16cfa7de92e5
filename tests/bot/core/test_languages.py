"""Issue 25, item 1: the language setting. A person's choice is stored in the bot's own table and survives restarts;
a Slack user's locale counts where the table maps it; a thread keeps its starter's language while each person's
ephemerals and refusals are in their own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from bot.stores.languages import LanguageStore
from bot.stores.threads import ThreadRegistry
from testkit.console import quantdesk
from testkit.fakes.slack_server import SlackServer
from testkit.slack import (
    BotProcess,
    blocks_valid,
    command_body,
    event_body,
    mention,
    message,
    new_ts,
    post,
    question_call,
    text_of,
)
from tools.storage.db import make_engine
from tools.storage.migrate import current_revision, downgrade, upgrade
from tools.storage.models import Base

ZHANG, ALICE, LIN = "UZHANG", "UALICE", "ULINTW"  # zh-CN, en-US and zh-TW locales in Slack


def test_migration_0017_up_and_down_and_the_models_agree(own_url: str) -> None:
    engine = make_engine(own_url)
    upgrade(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        differences = [d for d in compare_metadata(context, Base.metadata)
                       if "person_languages" in repr(d) or "'language'" in repr(d)]
    assert differences == []
    downgrade(engine, "0016")
    assert current_revision(engine) == "0016"
    assert "person_languages" not in inspect(engine).get_table_names()
    assert "language" not in {c["name"] for c in inspect(engine).get_columns("threads")}
    upgrade(engine)
    assert "language" in {c["name"] for c in inspect(engine).get_columns("threads")}
    engine.dispose()


def test_a_choice_survives_a_restart_and_a_thread_keeps_its_language(own_url: str) -> None:
    engine = make_engine(own_url)
    upgrade(engine)
    store = LanguageStore(engine)
    assert store.chosen("U1") is None
    store.choose("U1", "zh-CN")
    store.choose("U1", "en")
    store.choose("U1", "zh-CN")
    threads = ThreadRegistry(engine)
    info, created = threads.open("T", "C", "1.1", "U1", language="zh-CN")
    assert created and info.language == "zh-CN"
    assert threads.open("T", "C", "1.1", "U2", language="en")[0].language == "zh-CN"  # the starter's, for good
    engine.dispose()
    again = make_engine(own_url)
    assert LanguageStore(again).chosen("U1") == "zh-CN"
    assert LanguageStore(again).chosen("U2") is None
    assert ThreadRegistry(again).find("T", "C", "1.1").language == "zh-CN"  # type: ignore[union-attr]
    again.dispose()


def test_console_lang_is_kept_across_sessions(tmp_path: Path) -> None:
    first = quantdesk(["chat"], tmp_path, "bars\nlang zh\nbars\nlang fr\n")
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "usage: bars CODES START END [FIELD ...]",
        "今后我用中文回复你。每个线程沿用发起人的语言。",
        "用法：bars CODES START END [FIELD ...]",
        "用法：`lang zh`（中文）或 `lang en`（English）。你现在使用的语言是 zh-CN。"]
    second = quantdesk(["chat"], tmp_path, "bars\n语言 en\nbars\n")  # a new process: the choice was stored
    assert second.stdout.splitlines() == [
        "用法：bars CODES START END [FIELD ...]",
        "From now on I answer you in English. A thread keeps the language of the person who started it.",
        "usage: bars CODES START END [FIELD ...]"]


def test_the_workspace_default_speaks_to_those_who_never_chose(tmp_path: Path) -> None:
    out = quantdesk(["chat"], tmp_path, "bars\n", QUANTDESK_LANGUAGE="zh-CN")
    assert out.stdout.splitlines() == ["用法：bars CODES START END [FIELD ...]"]


def test_quantdesk_language_as_typed_starts_the_console_in_chinese(tmp_path: Path) -> None:
    out = quantdesk(["chat"], tmp_path, "help\n", QUANTDESK_LANGUAGE="zh")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "工作流请求（新请求开启新线程；其他输入继续当前线程）："
    assert "  帮助                              本帮助" in lines


@pytest.mark.parametrize("command", [["chat"], ["serve", "--port", "0"], ["worker"], ["db", "upgrade"]])
def test_an_unknown_quantdesk_language_stops_the_start_with_one_line(tmp_path: Path, command: list[str]) -> None:
    out = quantdesk(command, tmp_path, "help\n", QUANTDESK_LANGUAGE="klingon")
    assert out.returncode == 2 and out.stdout == ""
    (line,) = out.stderr.splitlines()
    assert line.startswith("quantdesk: QUANTDESK_LANGUAGE: 'klingon' is not a language QuantDesk speaks; use zh-CN (")
    assert all(word in line for word in ("zh-Hans", "cn", "中文", "en-GB", "english", "英语"))
    assert not (tmp_path / "data").exists()  # refused before anything was created


def test_lang_takes_what_people_type_for_a_language(tmp_path: Path) -> None:
    out = quantdesk(["chat"], tmp_path, "lang 中文\nbars\nlang english\nbars\nlang zh_CN\nbars\nlang zh_TW\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "今后我用中文回复你。每个线程沿用发起人的语言。",
        "用法：bars CODES START END [FIELD ...]",
        "From now on I answer you in English. A thread keeps the language of the person who started it.",
        "usage: bars CODES START END [FIELD ...]",
        "今后我用中文回复你。每个线程沿用发起人的语言。",
        "用法：bars CODES START END [FIELD ...]",
        "用法：`lang zh`（中文）或 `lang en`（English）。你现在使用的语言是 zh-CN。"]


# --- Slack ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def slack() -> Iterator[SlackServer]:
    with SlackServer() as server:
        server.fake.locales.update({ZHANG: "zh-CN", ALICE: "en-US", LIN: "zh-TW"})
        yield server


def _command(slack: SlackServer, bot: BotProcess, text: str, user: str, channel: str = "CLANG") -> str:
    hook = f"cmd{new_ts()}"
    status, _body = post(bot.url, command_body(text, channel, user, slack.url.replace("/api/", f"/respond/{hook}")),
                         "application/x-www-form-urlencoded")
    assert status == 200
    (reply,) = slack.fake.wait_for("respond", where=lambda c: c.args.get("_hook") == hook)
    return text_of(reply)


def test_slack_answers_each_person_in_their_locale_or_their_choice(slack: SlackServer, bot: BotProcess) -> None:
    chinese, english = "*QuantDesk* — 在线程中直接输入", "*QuantDesk* — type these in a thread"
    assert _command(slack, bot, "help", ZHANG).startswith(chinese)
    assert _command(slack, bot, "help", ALICE).startswith(english)
    assert _command(slack, bot, "help", LIN).startswith(english)  # zh-TW: the default
    assert _command(slack, bot, "lang zh", LIN) == "今后我用中文回复你。每个线程沿用发起人的语言。"
    assert _command(slack, bot, "帮助", LIN).startswith(chinese)
    assert _command(slack, bot, "lang English", ZHANG).startswith("From now on I answer you in English")
    assert _command(slack, bot, "help", ZHANG).startswith(english)
    assert _command(slack, bot, "lang zh_CN", ZHANG).startswith("今后")  # as typed: the console's words work here
    asked = [c for c in slack.fake.of("users.info") if c.args.get("user") == ZHANG]
    assert len(asked) == 1 and asked[0].args.get("include_locale") in (True, "true", "1", 1)  # read once


def test_a_thread_speaks_its_starters_language_and_others_are_refused_in_theirs(slack: SlackServer,
                                                                                 bot: BotProcess) -> None:
    root = new_ts()
    status, _body = post(bot.url, event_body(mention("CLANG", ZHANG, "信号 均线交叉 600519.SH", root)),
                         "application/json")
    assert status == 200
    question = question_call(slack, "CLANG", root)
    blocks = blocks_valid(question)
    assert text_of(question) == ("哪个日期区间？请给出开始和结束日期，格式 YYYYMMDD 或 2020年1月1日，例如 20200101 "
                                 "20200630。")
    assert blocks[-1]["elements"][0]["text"] == "在此线程中回复。"
    status, _body = post(bot.url, event_body(message("CLANG", ALICE, "20190102 20191231", new_ts(), root)),
                         "application/json")
    (refusal,) = slack.fake.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") == ALICE)
    assert text_of(refusal) == "Only the person who started this request or a configured approver can answer it."
    post(bot.url, event_body(message("CLANG", ZHANG, "20190102 20191231", new_ts(), root)), "application/json")
    answered = slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == question.response["ts"]
                                   and "已回答" in text_of(c))[0]
    assert json.dumps(answered.args.get("blocks"), ensure_ascii=False).count("20190102 20191231") == 1
    done = slack.fake.wait_for("chat.update", where=lambda c: c.args.get("channel") == "CLANG"
                               and text_of(c) == ":white_check_mark: 完成")
    assert done


def test_a_command_typed_while_a_question_waits_runs_and_is_never_the_answer(slack: SlackServer,
                                                                             bot: BotProcess) -> None:
    root = new_ts()
    post(bot.url, event_body(mention("CACCT", ZHANG, "帮我生成一个均线交叉信号 贵州茅台", root)), "application/json")
    question = question_call(slack, "CACCT", root)
    post(bot.url, event_body(message("CACCT", ZHANG, "账户", new_ts(), root)), "application/json")
    account = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == root
                                  and text_of(c).startswith("总资产 1,000,000.00 元（开户以来 +0.00）"))
    assert account
    post(bot.url, event_body(message("CACCT", ZHANG, "帮助", new_ts(), root)), "application/json")
    assert slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == root  # the help
                               and text_of(c).startswith("*QuantDesk* — 在线程中直接输入"))
    post(bot.url, event_body(message("CACCT", ZHANG, "2019年1月2日 至 2019年12月31日", new_ts(), root)),
         "application/json")
    answers = slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == question.response["ts"]
                                  and "已回答" in text_of(c))
    assert len(answers) == 1 and "2019年1月2日 至 2019年12月31日" in json.dumps(answers[0].args.get("blocks"),
                                                                          ensure_ascii=False)
    assert slack.fake.wait_for("chat.update", where=lambda c: c.args.get("channel") == "CACCT"
                               and text_of(c) == ":white_check_mark: 完成")


def test_a_chinese_users_review_and_order_cards_are_chinese_and_valid(slack: SlackServer, bot: BotProcess) -> None:
    root = new_ts()
    post(bot.url, event_body(mention("CCARD", ZHANG, "因子 动量 2019年3月1日 2020年6月1日 window＝20", root)),
         "application/json")
    (review,) = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == root
                                    and text_of(c).startswith("因子 momentum_20 代码审核"))
    blocks = blocks_valid(review)
    assert text_of(review) == "因子 momentum_20 代码审核：检查通过"
    assert blocks[0]["text"]["text"] == "代码审核：momentum_20"
    assert [e["text"]["text"] for e in blocks[-2]["elements"]] == ["批准", "编辑", "拒绝"]
    order_root = new_ts()
    post(bot.url, event_body(mention("CCARD", ZHANG, "下单 贵州茅台 买入 100股", order_root)), "application/json")
    (card,) = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("thread_ts") == order_root
                                  and text_of(c).startswith("需要审批"))
    blocks = blocks_valid(card)
    assert text_of(card) == "需要审批：买入 100 股 600519.SH 贵州茅台，市价"
    shown = json.dumps(blocks, ensure_ascii=False)
    assert "通过 交易开关：交易开关已打开" in shown and "*预计金额*" in shown and "目前没有交易员" in shown
