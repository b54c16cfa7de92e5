"""People and places as Slack shows them (issue 39, items 5 and 6), against `quantdesk serve` and the fake Slack Web
API on the bundled sample: the Block Kit of an order card, a card its checks refuse (in an English and a Chinese
session), the card once decided, the order's result and a trader's Home name every person by a mention and the
channel's account by a channel link, never by a raw id; what Slack shows as typed (headers, the notification text)
names them by their workspace names. Every payload is validated by slack_sdk.models."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from slack_sdk.models.views import View

from testkit.fakes.slack_server import Call, SlackServer
from testkit.slack import (
    BotProcess,
    action_body,
    blocks_valid,
    button_of,
    command_body,
    event_body,
    home_opened,
    in_thread,
    post,
    result_call,
    text_of,
)
from testkit.wait import wait_until

TRADER, ALICE, ZHANG = "UPTRADER", "UPALICE", "UPZHANG"
CHANNEL, CHINESE = "C0QUANT", "C0ZHDESK"
IDS = (TRADER, ALICE, ZHANG, CHANNEL, CHINESE)
NAMES = {TRADER: "tom.trader", ALICE: "alice", ZHANG: "张伟"}
CHANNELS = {CHANNEL: "quant-desk", CHINESE: "zh-desk"}
FORM = "application/x-www-form-urlencoded"
LINKS = re.compile(r"<@U[A-Z0-9]+>|<#C[A-Z0-9]+>|<https?://[^>]*>")  # a mention, a channel link, a link


@dataclass
class Desk:
    slack: SlackServer
    bot: BotProcess


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    data = tmp_path_factory.mktemp("people")
    with SlackServer() as slack:
        slack.fake.names.update(NAMES)
        slack.fake.channel_names.update(CHANNELS)
        slack.fake.locales[ZHANG] = "zh-CN"
        process = BotProcess(slack.url, f"sqlite:///{data / 'q.db'}", data, QUANTDESK_TRADERS=TRADER,
                             QUANTDESK_RECONCILE_INTERVAL="0.5")
        try:
            yield Desk(slack, process)
        finally:
            process.stop()


def _texts(value: Any) -> list[str]:
    """Every text object's text in blocks or a view (not button values, block ids or metadata)."""
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    if not isinstance(value, dict):
        return []
    if value.get("type") in ("mrkdwn", "plain_text") and isinstance(value.get("text"), str):
        return [value["text"]]
    return [t for v in value.values() for t in _texts(v)]


def _raw_ids(blocks: Any) -> list[str]:
    """The ids shown other than inside a mention or a link element."""
    return [i for text in _texts(blocks) for i in IDS if i in LINKS.sub("", text)]


def _named_plainly(call: Call) -> str:
    """The notification text, which must name people and channels by name: no id, no markup."""
    text = text_of(call)
    assert not [i for i in IDS if i in text] and "<@" not in text and "<#" not in text, text
    return text


def _propose(desk: Desk, channel: str, text: str, user: str, prefix: str) -> tuple[str, Call]:
    """`/quant order …` by `user`: the thread's root and the card posted in it (its notification starts `prefix`)."""
    status, _body = post(desk.bot.url, command_body(text, channel, user,
                                                    desk.slack.url.replace("/api/", "/respond/x")), FORM)
    assert status == 200
    roots = desk.slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                     and not c.args.get("thread_ts") and text_of(c).endswith(f"`/quant {text}`"))
    root = str(roots[-1].response["ts"])
    (card,) = desk.slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c) and c.ok
                                       and text_of(c).startswith(prefix))
    return root, card


def _facts(blocks: list[dict[str, Any]]) -> dict[str, str]:
    found = [f["text"] for b in blocks if b["type"] == "section" for f in b.get("fields", [])]
    return dict(text.lstrip("*").split("*\n", 1) for text in found)


def test_an_order_card_its_decision_and_its_result_name_people_and_the_channel(desk: Desk) -> None:
    root, card = _propose(desk, CHANNEL, "order 600519.SH buy 100", ALICE, "Approval needed: ")
    blocks = blocks_valid(card)
    assert _raw_ids(blocks) == []
    facts = _facts(blocks)
    assert facts["Why"] == f"manual order by <@{ALICE}>" and facts["Account"] == f"<#{CHANNEL}>"
    assert _named_plainly(card) == "Approval needed: BUY 100 600519.SH 贵州茅台 at market"

    ts = str(card.response["ts"])
    approve = button_of(card, "review_approve")
    status, _body = post(desk.bot.url, action_body(TRADER, CHANNEL, ts, root, approve), FORM)
    assert status == 200
    (decided,) = desk.slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == ts)
    shown = blocks_valid(decided)
    assert _raw_ids(shown) == [] and f"approved by <@{TRADER}>" in json.dumps(shown)
    assert _named_plainly(decided).endswith("approve by tom.trader")

    result = result_call(desk.slack, CHANNEL, root, "Order ")
    blocks = blocks_valid(result)
    assert _raw_ids(blocks) == []
    facts = _facts(blocks)
    assert facts["Decided by"] == f"<@{TRADER}>" and facts["Account"] == f"<#{CHANNEL}>"
    _named_plainly(result)


@pytest.mark.parametrize(("user", "channel", "header", "can"), [
    (ALICE, CHANNEL, "Refused by the checks: BUY 1,000 600519.SH", "You can edit or reject it."),
    (ZHANG, CHINESE, "未通过检查：", "可以编辑或拒绝。")])
def test_a_card_its_checks_refuse_says_so_first_and_names_people_and_the_channel(
        desk: Desk, user: str, channel: str, header: str, can: str) -> None:
    # 1,000 shares near 1,700 CNY are more than the 1,000,000 CNY of starting cash: the cash check fails
    _root, card = _propose(desk, channel, "order 600519.SH buy 1000", user, header)
    blocks = blocks_valid(card)
    assert blocks[0]["type"] == "header" and blocks[0]["text"]["text"].startswith(header)
    assert _raw_ids(blocks) == []
    assert [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]] == \
        ["review_edit", "review_reject"]
    description = next(b["text"]["text"] for b in blocks if b["type"] == "section" and "text" in b).splitlines()
    marks = [line.split(" ")[0] for line in description[1:] if line.split(" ")[0] in ("FAIL", "PASS", "未通过", "通过")]
    assert marks and marks == sorted(marks, key=lambda m: m not in ("FAIL", "未通过"))  # the failed checks first
    assert any(f"<@{user}>" in value for value in _facts(blocks).values())  # why: a manual order by them
    text = _named_plainly(card)
    assert text.startswith(header) and text.endswith(can)


def test_a_traders_home_names_people_and_the_channel(desk: Desk) -> None:
    _propose(desk, CHANNEL, "order 000001.SZ buy 100", ALICE, "Approval needed: ")
    status, _body = post(desk.bot.url, event_body(home_opened(TRADER)), "application/json")
    assert status == 200

    def published() -> dict[str, Any] | None:
        view = desk.slack.fake.home(TRADER)
        return view if view is not None and "000001.SZ" in json.dumps(view, ensure_ascii=False) else None
    view = wait_until(published, "the trader's Home with the card")
    View(**view).validate_json()
    assert len(view["blocks"]) <= 100 and _raw_ids(view["blocks"]) == []
    texts = _texts(view["blocks"])
    assert any(f"<#{CHANNEL}>" in t for t in texts) and "Account #quant-desk" in texts  # a header is plain text
