"""The Feishu surface on the long connection (no token, no encrypt key: `lark_oapi.ws.Client`), end to end against
the fake Open API and a fake long-connection server speaking the SDK's frames: a mention's clarify question answered
in its thread; a code review approved from its card, the click answered at once with the card disabled and
"processing"; an order refused for a non-trader and filled once for a trader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.stores.threads import thread_id_for
from bot.surfaces import FEISHU_TEAM
from testkit.fakes.feishu_server import Call, FeishuServer, card_problems
from testkit.fakes.feishu_ws import LongConnectionServer
from testkit.feishu import FeishuBot, button, buttons, card_action, card_text, message_event, new_id
from testkit.wait import wait_until
from tools.broker.records import PaperOrder
from tools.storage.db import make_engine

ALICE, TRADER = "ou_alice", "ou_trader"
CARD_ANSWER_SECONDS = 3.0  # Feishu's callback window


@pytest.fixture(scope="module")
def link() -> Iterator[LongConnectionServer]:
    with LongConnectionServer() as server:
        yield server


@pytest.fixture(scope="module")
def feishu(link: LongConnectionServer) -> Iterator[FeishuServer]:  # the module's own: it hands out `link`
    with FeishuServer() as server:
        server.fake.ws_url = link.url
        yield server


@pytest.fixture(scope="module")
def bot(feishu: FeishuServer, link: LongConnectionServer, tmp_path_factory: pytest.TempPathFactory,
        ) -> Iterator[FeishuBot]:
    data: Path = tmp_path_factory.mktemp("feishu_ws")
    process = FeishuBot(feishu.url, f"sqlite:///{data / 'q.db'}", data, FEISHU_VERIFICATION_TOKEN="",
                        FEISHU_ENCRYPT_KEY="", QUANTDESK_TRADERS=TRADER, QUANTDESK_MAX_POSITION_WEIGHT="0.5")
    link.wait_connected()
    yield process
    process.stop()


def _say(link: LongConnectionServer, chat: str, user: str, text: str, root: str | None = None,
         mention: bool = True) -> str:
    message_id = new_id()
    code, _data, _seconds = link.deliver(message_event(chat, user, text, message_id, root, mention_bot=mention))
    assert code == 200
    return message_id


def _card_in(feishu: FeishuServer, root: str, words: str) -> Call:
    return wait_until(lambda: next((c for c in feishu.fake.thread(root) if c.card and words in card_text(c.card)),
                                   None), f"a card saying {words!r}")


def _click(link: LongConnectionServer, user: str, chat: str, card: Call, label: str) -> dict:
    value = button(card.card or {}, label)["value"]
    code, data, seconds = link.deliver(card_action(user, chat, card.message_id, value))
    assert code == 200 and data is not None and seconds < CARD_ANSWER_SECONDS
    return data


def test_a_clarify_question_is_answered_in_its_thread(feishu: FeishuServer, link: LongConnectionServer,
                                                      bot: FeishuBot) -> None:
    chat = "oc_ws_clarify"
    root = _say(link, chat, ALICE, "signal rsi 600519.SH")
    question = _card_in(feishu, root, "date range")
    _say(link, chat, ALICE, "20190101 20200601", root=root, mention=False)
    _card_in(feishu, root, "Signal rsi")
    feishu.fake.wait_for("im.message.patch", where=lambda c: c.args["_message_id"] == question.message_id
                         and "20190101 20200601" in card_text(c.card or {}))


def test_a_code_review_is_approved_from_its_card(feishu: FeishuServer, link: LongConnectionServer,
                                                 bot: FeishuBot) -> None:
    chat = "oc_ws_review"
    root = _say(link, chat, ALICE, "factor momentum 20190301 20200601 window=20 name=feishu_ws_mom")
    review = _card_in(feishu, root, "Code review: feishu_ws_mom")
    answer = _click(link, ALICE, chat, review, "Approve")
    shown = answer["card"]["data"]
    assert card_problems(shown) == [] and all(b.get("disabled") for b in buttons(shown))
    assert "processing" in card_text(shown)
    _card_in(feishu, root, "Factor feishu_ws_mom")


def test_an_order_is_refused_for_a_non_trader_and_filled_once_for_a_trader(
        feishu: FeishuServer, link: LongConnectionServer, bot: FeishuBot) -> None:
    chat = "oc_ws_order"
    root = _say(link, chat, ALICE, "order 600519.SH buy 100")
    card = _card_in(feishu, root, "Approval: ")
    refused = _click(link, ALICE, chat, card, "Approve")
    assert refused["toast"]["type"] == "error" and "card" not in refused
    assert _click(link, TRADER, chat, card, "Approve")["toast"]["type"] == "success"
    engine = make_engine(bot.database_url)
    thread = thread_id_for(FEISHU_TEAM, chat, root)
    try:
        def filled() -> list[PaperOrder]:
            with Session(engine) as session:
                return list(session.scalars(select(PaperOrder).where(PaperOrder.thread_id == thread,
                                                                     PaperOrder.status == "filled")))
        (order,) = wait_until(filled, "the filled order")
        assert order.approved_by == TRADER
    finally:
        engine.dispose()
