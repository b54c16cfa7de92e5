"""A trader's click survives SIGKILL in Feishu: the host of `quantdesk serve --surface feishu` is killed as soon as
the click is answered (its decision row written, its apply perhaps not started); a new process on the same database
applies it exactly once: one fill, one result card. A host killed while its card update hangs leaves the card as the
click answered it ("processing"): the new process shows the decision on it. The click comes by HTTP callback and
over the long connection."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.stores.records import DecisionRecord, PostRecord
from bot.stores.threads import thread_id_for
from bot.surfaces import FEISHU_TEAM
from testkit.fakes.feishu_server import Fault, FeishuServer
from testkit.fakes.feishu_ws import LongConnectionServer
from testkit.feishu import Courier, FeishuBot, button, card_action, card_text, deliver, message_event, new_id
from testkit.wait import wait_until
from tools.broker.records import PaperOrder
from tools.storage.db import make_engine

TRADER, ALICE = "ou_trader", "ou_alice"
ENV = {"QUANTDESK_TRADERS": TRADER, "QUANTDESK_MAX_POSITION_WEIGHT": "0.5", "QUANTDESK_RECONCILE_INTERVAL": "0.5",
       "QUANTDESK_DECISION_CLAIM_SECONDS": "2", "QUANTDESK_JOB_STALLED_TIMEOUT": "3"}


def _settled(url: str, thread: str) -> bool:
    """The decision applied and every post of the thread complete: nothing more can be posted."""
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            decisions = session.scalars(select(DecisionRecord).where(DecisionRecord.thread_id == thread)).all()
            posts = session.scalars(select(PostRecord).where(PostRecord.thread_id == thread)).all()
    finally:
        engine.dispose()
    return bool(decisions) and all(d.applied_at for d in decisions) and all(p.completed_at for p in posts)


@pytest.fixture(params=["http", "long connection"])
def link(request: pytest.FixtureRequest, feishu: FeishuServer) -> Iterator[LongConnectionServer | None]:
    """None for HTTP callbacks, else the long connection the bot opens (no verification token, no encrypt key)."""
    if request.param == "http":
        yield None
        return
    with LongConnectionServer() as server:
        feishu.fake.ws_url = server.url
        yield server
        feishu.fake.ws_url = None


def _bot(feishu: FeishuServer, url: str, tmp_path: Path, link: LongConnectionServer | None) -> Courier:
    quiet = {"FEISHU_VERIFICATION_TOKEN": "", "FEISHU_ENCRYPT_KEY": ""} if link is not None else {}
    courier = Courier(FeishuBot(feishu.url, url, tmp_path, **ENV, **quiet), link)
    if link is not None:
        link.wait_connected()
    return courier


def test_sigkill_right_after_a_click_fills_the_order_once(feishu: FeishuServer, tmp_path: Path,
                                                          link: LongConnectionServer | None) -> None:
    url, chat, root = f"sqlite:///{tmp_path / 'q.db'}", "oc_crash", new_id()
    first = _bot(feishu, url, tmp_path, link)
    assert first.send(message_event(chat, ALICE, "order 600519.SH buy 100", root))[0] == 200
    card = wait_until(lambda: next((c for c in feishu.fake.thread(root) if c.card
                                    and "Approval: " in card_text(c.card)), None), "the approval card")
    status, answer = first.send(card_action(TRADER, chat, card.message_id, button(card.card or {}, "Approve")["value"]))
    assert status == 200 and answer["toast"]["type"] == "success"  # the decision row is in the database
    assert first.bot.kill_host() == -9
    again = _bot(feishu, url, tmp_path, link).bot
    thread = thread_id_for(FEISHU_TEAM, chat, root)
    try:
        wait_until(lambda: _settled(url, thread), "the decision applied and every post complete", 60)
    finally:
        again.stop()
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            orders = session.scalars(select(PaperOrder).where(PaperOrder.thread_id == thread)).all()
    finally:
        engine.dispose()
    assert [(o.status, o.approved_by) for o in orders] == [("filled", TRADER)]
    results = {c.message_id for c in feishu.fake.thread(root) if c.card and "Order filled" in card_text(c.card)}
    assert len(results) == 1


def test_a_card_the_killed_host_never_updated_shows_the_decision_after_the_restart(feishu: FeishuServer,
                                                                                    tmp_path: Path) -> None:
    url, chat, root = f"sqlite:///{tmp_path / 'q.db'}", "oc_shown", new_id()
    bot = FeishuBot(feishu.url, url, tmp_path, **ENV)
    assert deliver(bot.url, message_event(chat, ALICE, "order 600519.SH buy 100", root))[0] == 200
    card = wait_until(lambda: next((c for c in feishu.fake.thread(root) if c.card
                                    and "Approval: " in card_text(c.card)), None), "the approval card")
    arrived, release = threading.Event(), threading.Event()
    feishu.fake.inject("im.message.patch", Fault.stalled(arrived, release, card.message_id))
    status, answer = deliver(bot.url, card_action(TRADER, chat, card.message_id,
                                                  button(card.card or {}, "Approve")["value"]))
    assert status == 200 and "processing" in card_text(answer["card"]["data"])
    assert arrived.wait(60), "the confirm never tried to show the decision on the card"
    assert bot.kill_host() == -9  # while Feishu does not answer that update
    release.set()

    def shown() -> str:
        return card_text(json.loads(feishu.fake.messages[card.message_id]["content"]))

    assert "approved by" not in shown()
    again = FeishuBot(feishu.url, url, tmp_path, **ENV)
    thread = thread_id_for(FEISHU_TEAM, chat, root)
    try:
        wait_until(lambda: "approved by" in shown(), "the card showing the decision", 60, seen=shown)
        wait_until(lambda: _settled(url, thread), "the decision applied and every post complete", 60)
    finally:
        again.stop()
    assert TRADER in shown()
