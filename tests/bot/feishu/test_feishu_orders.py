"""Orders in Feishu, end to end (`quantdesk serve --surface feishu` against the fake Open API, the bundled sample
data on its simulated clock): a mention proposes an order as an approval card; a non-trader's Approve is refused in
a toast and records nothing; a trader's is answered with the card disabled and "processing" and fills once (the
same click delivered again fills nothing more); an order above the four-eyes threshold needs a second, different
trader; a rejection through the card's form records its reason and places nothing. Each in both delivery modes
(HTTP callbacks, the long connection: the `courier` fixture)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.stores.records import DecisionRecord
from bot.stores.threads import thread_id_for
from bot.surfaces import FEISHU_TEAM
from testkit.fakes.feishu_server import Call, FeishuServer, card_problems
from testkit.feishu import Courier, button, buttons, card_action, card_text, message_event, new_id
from testkit.wait import wait_until
from tools.broker.records import PaperOrder
from tools.storage.db import make_engine

TRADER, TRADER2 = "ou_trader", "ou_trader2"
ALICE = "ou_alice"  # asks for orders; not a trader
# four eyes above 200,000 CNY: 100 shares of 600519.SH (near 1,700) need one trader, 200 shares two
BOT_ENV = {"QUANTDESK_TRADERS": f"{TRADER},{TRADER2}", "QUANTDESK_MAX_POSITION_WEIGHT": "0.5",
           "QUANTDESK_SECOND_APPROVAL_ABOVE": "200000", "QUANTDESK_RECONCILE_INTERVAL": "0.5"}
NOT_A_TRADER = "Only traders can approve or edit orders (`roles` lists them); you can reject it."


@dataclass(frozen=True)
class Proposal:
    chat: str
    root: str
    card: Call

    @property
    def thread(self) -> str:
        return thread_id_for(FEISHU_TEAM, self.chat, self.root)


def _propose(feishu: FeishuServer, courier: Courier, chat: str, text: str, user: str = ALICE) -> Proposal:
    root = new_id()
    status, _answer = courier.send(message_event(chat, user, text, root))
    assert status == 200
    return Proposal(chat, root, _approval_card(feishu, root))


def _approval_card(feishu: FeishuServer, root: str, n: int = 1) -> Call:
    return wait_until(lambda: len(found := [c for c in feishu.fake.thread(root) if c.card
                                            and c.card["header"]["title"]["content"].startswith("Approval: ")]) >= n
                      and found[n - 1], f"approval card {n} in {root}")


def _click(courier: Courier, user: str, proposal: Proposal, card: Call, label: str,
           form: dict[str, str] | None = None) -> dict:
    status, answer = courier.send(card_action(user, proposal.chat, card.message_id,
                                                  button(card.card or {}, label)["value"], form))
    assert status == 200
    return answer


def _orders(bot_db: str, thread: str) -> list[PaperOrder]:
    engine = make_engine(bot_db)
    try:
        with Session(engine) as session:
            return list(session.scalars(select(PaperOrder).where(PaperOrder.thread_id == thread)))
    finally:
        engine.dispose()


def _decisions(bot_db: str, thread: str) -> list[DecisionRecord]:
    engine = make_engine(bot_db)
    try:
        with Session(engine) as session:
            return list(session.scalars(select(DecisionRecord).where(DecisionRecord.thread_id == thread)))
    finally:
        engine.dispose()


def _filled(bot_db: str, thread: str) -> list[PaperOrder]:
    return wait_until(lambda: [o for o in _orders(bot_db, thread) if o.status == "filled"], "a filled order")


def _patched(feishu: FeishuServer, card: Call, words: str) -> Call:
    return feishu.fake.wait_for("im.message.patch", where=lambda c: c.args["_message_id"] == card.message_id
                                and words in card_text(c.card or {}))[0]


def test_only_a_trader_approves_and_the_order_fills_once(feishu: FeishuServer, courier: Courier) -> None:
    proposal = _propose(feishu, courier, "oc_orders_one", "order 600519.SH buy 100")
    card = proposal.card.card or {}
    assert [b["text"]["content"] for b in buttons(card)] == ["Approve", "Edit", "Reject"]
    assert "Estimated cost" in card_text(card) and "600519.SH" in card_text(card)
    # the requester is no trader: refused in a toast, nothing recorded, the card untouched
    answer = _click(courier, ALICE, proposal, proposal.card, "Approve")
    assert answer["toast"] == {"type": "error", "content": NOT_A_TRADER} and "card" not in answer
    assert _decisions(courier.bot.database_url, proposal.thread) == []
    # a trader's click: the card comes back disabled and "processing"; the same click again decides nothing
    answer = _click(courier, TRADER, proposal, proposal.card, "Approve")
    shown = answer["card"]["data"]
    assert card_problems(shown) == [] and all(b.get("disabled") for b in buttons(shown))
    assert "processing" in card_text(shown)
    again = _click(courier, TRADER, proposal, proposal.card, "Approve")
    assert again["toast"]["content"] == "Already handled."
    (order,) = _filled(courier.bot.database_url, proposal.thread)
    assert (order.quantity, order.approved_by, order.proposed_by) == (100, TRADER, ALICE)
    _patched(feishu, proposal.card, "approved by")
    wait_until(lambda: [c for c in feishu.fake.thread(proposal.root) if c.card
                        and "Order filled" in card_text(c.card)], "the fill's result card")
    decided = _decisions(courier.bot.database_url, proposal.thread)
    assert [(d.decided_by, d.source) for d in decided] == [(TRADER, "button")]
    assert len(_orders(courier.bot.database_url, proposal.thread)) == 1


def test_four_eyes_needs_a_second_different_trader(feishu: FeishuServer, courier: Courier) -> None:
    proposal = _propose(feishu, courier, "oc_orders_four", "order 600519.SH buy 200")
    _click(courier, TRADER, proposal, proposal.card, "Approve")
    second = _approval_card(feishu, proposal.root, 2)
    refused = _click(courier, TRADER, proposal, second, "Approve")
    assert refused["toast"]["type"] == "error"
    assert refused["toast"]["content"] == f"{TRADER} already approved this order; a second, different trader must " \
                                          "approve it"
    assert _orders(courier.bot.database_url, proposal.thread) == [] or all(
        o.status != "filled" for o in _orders(courier.bot.database_url, proposal.thread))
    _click(courier, TRADER2, proposal, second, "Approve")
    (order,) = _filled(courier.bot.database_url, proposal.thread)
    assert order.approved_by == f"{TRADER},{TRADER2}" and order.quantity == 200


def test_a_rejection_through_the_cards_form_places_nothing(feishu: FeishuServer, courier: Courier) -> None:
    proposal = _propose(feishu, courier, "oc_orders_reject", "order 600519.SH buy 100")
    answer = _click(courier, ALICE, proposal, proposal.card, "Reject")  # the requester may reject
    form_card = answer["card"]["data"]
    assert card_problems(form_card) == []
    form = next(e for e in form_card["elements"] if e["tag"] == "form")
    submit = next(e for e in form["elements"] if e.get("action_type") == "form_submit")
    empty = courier.send(card_action(ALICE, proposal.chat, proposal.card.message_id, submit["value"],
                                         {"reason": "  "}))[1]
    assert empty["toast"] == {"type": "error", "content": "A rejection needs a reason."}
    status, answer = courier.send(card_action(ALICE, proposal.chat, proposal.card.message_id, submit["value"],
                                                  {"reason": "not today"}))
    assert status == 200 and answer["toast"]["type"] == "success"
    _patched(feishu, proposal.card, "rejected by")
    (decision,) = _decisions(courier.bot.database_url, proposal.thread)
    assert (decision.decision, decision.source) == ({"type": "reject", "message": "not today"}, "card form")
    wait_until(lambda: _decisions(courier.bot.database_url, proposal.thread)[0].applied_at, "the rejection applied")
    assert [o for o in _orders(courier.bot.database_url, proposal.thread) if o.status == "filled"] == []
