"""The paper account's Slack flow end to end (issue 13): `quantdesk serve` as a real process (Bolt over signed
HTTP) against the fake Slack Web API, on the bundled sample data (a simulated clock: an approved order fills at
once at the last close). An order is proposed as an approval card; only traders (QUANTDESK_TRADERS) approve or
edit it; an edit outside the rules is refused in the modal; a rejection is recorded with its reason; a click
delivered twice fills once; with no traders nothing can be approved; and the account commands."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from bot.slack.home import typed_id
from bot.slack.render import button_value
from bot.stores.records import DecisionRecord, ThreadRecord
from bot.stores.threads import thread_id_for
from testkit.fakes.slack_server import TEAM, Call, SlackServer
from testkit.roles import ROOT, chat
from testkit.slack import (
    BotProcess,
    action_body,
    blocks_valid,
    button_of,
    command_body,
    event_body,
    home_action_body,
    home_opened,
    in_thread,
    mention,
    new_ts,
    post,
    result_call,
    text_of,
    view_body,
)
from testkit.wait import wait_until
from tools.access.login import os_login
from tools.broker.records import OrderEvent, PaperAccount, PaperFill, PaperOrder, TradingSwitch
from tools.storage.db import make_engine

TRADER, TRADER2 = "UTRADER", "UTRADER2"
ALICE = "UALICE"  # asks for orders; not a trader
BOB = "UBOB"  # neither the requester nor a trader
ADMIN = "UADMIN"  # QUANTDESK_ADMINS where a test sets it
ORDER = "order 600519.SH buy 100"
FORM = "application/x-www-form-urlencoded"
SHANGHAI = ZoneInfo("Asia/Shanghai")
TTL = timedelta(minutes=120)  # QUANTDESK_ORDER_TTL_MINUTES' default: on the simulated clock, the only expiry
BUY_CHECKS = {"trading switch", "price data", "lot size", "price limit", "cash", "order value limit",
              "position weight limit", "daily loss limit"}
NOT_A_TRADER = "Only traders can approve or edit orders (`roles` lists them); you can reject it."
NO_TRADERS = ("Nobody is a trader (an admin grants it: `roles grant trader USER`), so nobody can approve or edit this "
              "order.")
ALREADY = "Already handled."
# 600519.SH closes near 1,700 on the sample's last day: 200 shares are 34% of the 1,000,000 starting cash, over
# the default 30% position weight limit; the edit test needs 200 shares to pass every check
ENV = {"QUANTDESK_MAX_POSITION_WEIGHT": "0.5", "QUANTDESK_RECONCILE_INTERVAL": "0.5"}


# --- fixtures ---------------------------------------------------------------------------------------------------


@dataclass
class Desk:
    """A `quantdesk serve` process and its database."""

    slack: SlackServer
    bot: BotProcess
    engine: Engine


def _desk(slack: SlackServer, data: Path, **env: str) -> Iterator[Desk]:
    url = f"sqlite:///{data / 'q.db'}"
    process = BotProcess(slack.url, url, data, **ENV, **env)
    engine = make_engine(url)
    try:
        yield Desk(slack, process, engine)
    finally:
        process.stop()
        engine.dispose()


@pytest.fixture(scope="module")
def desk(slack: SlackServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    """Two traders configured."""
    yield from _desk(slack, tmp_path_factory.mktemp("orders"), QUANTDESK_TRADERS=f"{TRADER},{TRADER2}",
                     QUANTDESK_ACCOUNT_ADMINS=f"desk-b={ALICE}")  # Alice may name desk-b


@pytest.fixture(scope="module")
def untraded(slack: SlackServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    """QUANTDESK_TRADERS unset."""
    yield from _desk(slack, tmp_path_factory.mktemp("untraded"))


# --- driving Slack ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proposal:
    channel: str
    root: str
    card: Call

    @property
    def thread(self) -> str:
        return thread_id_for(TEAM, self.channel, self.root)

    @property
    def ts(self) -> str:
        return str(self.card.response["ts"])

    @property
    def interrupt_id(self) -> str:
        return str(json.loads(button_of(self.card, "review_reject")["value"])["i"])


def _command(desk: Desk, text: str, channel: str, user: str) -> Call:
    """Run `/quant TEXT`; the ephemeral answer it got on its response_url."""
    hook = f"cmd{new_ts()}"
    status, body = post(desk.bot.url, command_body(text, channel, user,
                                                   desk.slack.url.replace("/api/", f"/respond/{hook}")), FORM)
    assert status == 200 and body == ""
    (reply,) = desk.slack.fake.wait_for("respond", where=lambda c: c.args.get("_hook") == hook)
    return reply


def _reply_text(reply: Call) -> str:
    assert reply.args["response_type"] == "ephemeral"
    for raw in reply.args.get("blocks") or []:
        Block.parse(raw).validate_json()
    return str(reply.args["text"])


def interrupt_value(desk: Desk, channel: str, root: str, n: int = 1) -> Call:
    """The n-th approval card posted in the thread (one its checks refuse too)."""
    return desk.slack.fake.wait_for("chat.postMessage", n, where=lambda c: in_thread(channel, root)(c) and c.ok
                                    and text_of(c).startswith(("Approval needed: ", "Refused by the checks: ")))[n - 1]


def _propose(desk: Desk, channel: str, text: str = ORDER, user: str = ALICE) -> Proposal:
    """`/quant order …`: the bot opens a thread with a top-level post and posts the approval card in it."""
    status, body = post(desk.bot.url, command_body(text, channel, user, desk.slack.url.replace("/api/", "/respond/x")),
                        FORM)
    assert status == 200 and body == ""
    (root,) = desk.slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                       and not c.args.get("thread_ts") and text_of(c).endswith(f"`/quant {text}`"))
    assert text_of(root) == f"<@{user}> asked: `/quant {text}`"
    ts = str(root.response["ts"])
    return Proposal(channel, ts, interrupt_value(desk, channel, ts))


def _click(desk: Desk, user: str, proposal: Proposal, action: dict[str, Any]) -> None:
    status, _ = post(desk.bot.url, action_body(user, proposal.channel, proposal.ts, proposal.root, action), FORM)
    assert status == 200


def _crafted(proposal: Proposal, decision: str) -> dict[str, Any]:
    """A button Slack never showed: the card's thread and interrupt, another decision."""
    return {"action_id": f"review_{decision}", "value": button_value(proposal.thread, proposal.interrupt_id,
                                                                     decision)}


def _ephemerals(desk: Desk, proposal: Proposal, user: str) -> list[str]:
    return [text_of(c) for c in desk.slack.fake.of("chat.postEphemeral") if c.args.get("user") == user
            and in_thread(proposal.channel, proposal.root)(c)]


def _ephemeral(desk: Desk, proposal: Proposal, user: str, n: int = 1) -> list[str]:
    """Wait for `n` ephemeral answers to `user` in the thread; all of them."""
    return wait_until(lambda: len(found := _ephemerals(desk, proposal, user)) >= n and found,
                      f"{n} ephemeral message(s) to {user}")


def _card_updates(desk: Desk, proposal: Proposal) -> list[Call]:
    return [c for c in desk.slack.fake.of("chat.update") if c.args.get("channel") == proposal.channel
            and c.args.get("ts") == proposal.ts]


def _modal(desk: Desk, proposal: Proposal, n: int = 1) -> dict[str, Any]:
    """The n-th form views.open was called with for this card, validated by slack_sdk."""
    def forms() -> list[dict[str, Any]]:
        views = [c.args["view"] for c in desk.slack.fake.of("views.open")]
        views = [json.loads(v) if isinstance(v, str) else v for v in views]
        return [v for v in views if json.loads(v["private_metadata"])["i"] == proposal.interrupt_id]
    view = wait_until(lambda: len(found := forms()) >= n and found, "views.open")[n - 1]
    View(**view).validate_json()
    return view


def _forms_opened(desk: Desk, proposal: Proposal) -> int:
    return sum(1 for c in desk.slack.fake.of("views.open") if proposal.interrupt_id in json.dumps(c.args))


def _submit(desk: Desk, user: str, view: dict[str, Any], values: dict[str, dict[str, str]]) -> tuple[int, str]:
    return post(desk.bot.url, view_body(user, view["callback_id"], view["private_metadata"], values), FORM)


def _results(desk: Desk, proposal: Proposal) -> list[Call]:
    return [c for c in desk.slack.fake.of("chat.postMessage") if in_thread(proposal.channel, proposal.root)(c)
            and c.ok and text_of(c).startswith("Order ")]


# --- reading the card and the database --------------------------------------------------------------------------


def _facts(card: Call) -> dict[str, str]:
    """The card's fields: {"Estimated cost": "169,635.00 + fees 45.80 at 1696.35", ...}."""
    found = [f["text"] for b in blocks_valid(card) if b["type"] == "section" for f in b.get("fields", [])]
    return dict(text.lstrip("*").split("*\n", 1) for text in found)


def _description(card: Call) -> list[str]:
    """The lines of the card's description: the verdict, every check, the notes."""
    blocks = blocks_valid(card)
    return next(b["text"]["text"] for b in blocks if b["type"] == "section" and "text" in b).splitlines()


def _checks(card: Call) -> dict[str, tuple[bool, str]]:
    lines = [re.fullmatch(r"(PASS|FAIL) ([^:]+): (.+)", line) for line in _description(card)]
    return {m.group(2): (m.group(1) == "PASS", m.group(3)) for m in lines if m}


def _buttons(card: Call) -> list[str]:
    return [e["action_id"] for b in blocks_valid(card) if b["type"] == "actions" for e in b["elements"]]


def _context(card: Call) -> str:
    return " ".join(e["text"] for b in blocks_valid(card) if b["type"] == "context" for e in b["elements"])


def _money(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def paper_orders(desk: Desk, account: str) -> list[PaperOrder]:
    with Session(desk.engine) as session:
        return list(session.scalars(select(PaperOrder).where(PaperOrder.account == account)
                                    .order_by(PaperOrder.id)).all())


def _fills(desk: Desk, account: str) -> list[PaperFill]:
    with Session(desk.engine) as session:
        return list(session.scalars(select(PaperFill).where(PaperFill.account == account)
                                    .order_by(PaperFill.id)).all())


def order_events(desk: Desk, proposal: Proposal) -> list[OrderEvent]:
    """The order audit trail of the thread's order (its client order id starts with the thread id)."""
    with Session(desk.engine) as session:
        return list(session.scalars(select(OrderEvent).where(OrderEvent.client_order_id.like(f"{proposal.thread}:%"))
                                    .order_by(OrderEvent.id)).all())


def _decisions(desk: Desk, proposal: Proposal) -> list[DecisionRecord]:
    with Session(desk.engine) as session:
        return list(session.scalars(select(DecisionRecord).where(DecisionRecord.thread_id == proposal.thread)).all())


def _filled(desk: Desk, account: str) -> list[PaperOrder]:
    return wait_until(lambda: [o for o in paper_orders(desk, account) if o.status == "filled"],
                      f"a filled order in {account}")


# --- the card ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def proposed(desk: Desk) -> Proposal:
    return _propose(desk, "C7100")


def test_an_order_is_proposed_as_an_approval_card_in_a_new_thread(desk: Desk, proposed: Proposal) -> None:
    card = proposed.card
    assert text_of(card) == "Approval needed: BUY 100 600519.SH 贵州茅台 at market"
    blocks = blocks_valid(card)
    assert blocks[0]["type"] == "header" and blocks[0]["text"]["text"].startswith("Approval: BUY 100 600519.SH")
    lines = _description(card)
    assert lines[0] == "All checks pass."
    checks = _checks(card)
    assert set(checks) == BUY_CHECKS and all(passed for passed, _ in checks.values()), checks
    assert len([line for line in lines if line.startswith(("PASS ", "FAIL "))]) == len(BUY_CHECKS)
    facts = _facts(card)
    assert facts["Order"] == "BUY 100 600519.SH 贵州茅台 at market" and facts["Quantity"] == "100"
    assert facts["Account"] == f"<#{proposed.channel}>"  # one account per channel, linked to it
    value, fees, price = re.fullmatch(r"([\d,.]+) \+ fees ([\d,.]+) at ([\d.]+)", facts["Estimated cost"]).groups()
    assert _money(value) == Decimal(price) * 100 and _money(fees) >= Decimal("5.00")  # the minimum commission
    assert _money(facts["Cash after"]) == Decimal("1000000.00") - _money(value) - _money(fees)
    assert facts["Position after"] == "100 shares"
    # a new simulated clock stands 20 sessions before the sample's last day (20200824): on Monday 20200727
    assert facts["Fills"] == "simulated fill at the last available close (20200727)"
    assert facts["Why"] == f"manual order by <@{ALICE}>"
    at, session = facts["Expires"].split(", or when the simulated clock moves on from ")
    expires = datetime.strptime(at, "%Y-%m-%d %H:%M Asia/Shanghai").replace(tzinfo=SHANGHAI)
    assert abs(expires - (datetime.now(SHANGHAI) + TTL)) < timedelta(minutes=3)  # the TTL, and the session:
    assert session == "20200727"  # a simulated session ends when the clock moves (`clock next`)
    assert _buttons(card) == ["review_approve", "review_edit", "review_reject"]
    assert "Only traders (`roles` lists them) can approve or edit this order" in _context(card)
    # the thread was opened by the command; nothing was placed by proposing
    assert paper_orders(desk, proposed.channel) == []
    assert [e.event for e in order_events(desk, proposed)] == ["proposed"]


def test_a_mention_proposes_an_order_in_its_thread(desk: Desk) -> None:
    channel, root = "C7110", new_ts()
    status, _ = post(desk.bot.url, event_body(mention(channel, ALICE, "order 000001.SZ buy 1,000 limit=14.50 "
                                                                      "account=desk-b rebalancing", root)),
                     "application/json")
    assert status == 200
    card = interrupt_value(desk, channel, root)
    facts = _facts(card)
    # within 20200727's band: the previous close 13.50 ± 10 % is 12.15 … 14.85
    assert facts["Order"] == "BUY 1,000 000001.SZ 平安银行 at limit 14.50" and facts["Account"] == "desk-b"
    assert facts["Limit price"] == "14.50" and facts["Why"] == "rebalancing"
    assert facts["Estimated cost"].startswith("14,500.00 + fees ")
    assert _buttons(card) == ["review_approve", "review_edit", "review_reject"]


# --- only traders approve ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Approved:
    proposal: Proposal
    refusal: list[str]
    after_refusal: tuple[list[DecisionRecord], list[PaperOrder], list[Call], list[OrderEvent]]


@pytest.fixture(scope="module")
def approved(desk: Desk, proposed: Proposal) -> Approved:
    """A non-trader (the requester) clicks Approve, then a trader does."""
    approve = button_of(proposed.card, "review_approve")
    _click(desk, ALICE, proposed, approve)
    refusal = _ephemeral(desk, proposed, ALICE)
    after = (_decisions(desk, proposed), paper_orders(desk, proposed.channel), _card_updates(desk, proposed),
             order_events(desk, proposed))
    _click(desk, TRADER, proposed, approve)
    return Approved(proposed, refusal, after)


def test_a_non_traders_approval_is_refused_and_changes_nothing(approved: Approved) -> None:
    assert approved.refusal == [NOT_A_TRADER]
    decisions, orders, card_updates, events = approved.after_refusal
    assert decisions == []  # no decision row: the click is refused before anything is recorded
    assert orders == []
    assert card_updates == []  # the card keeps its buttons
    assert [e.event for e in events] == ["proposed"]


def test_a_traders_approval_fills_the_order_once_and_reports_it(desk: Desk, approved: Approved) -> None:
    proposal = approved.proposal
    (order,) = _filled(desk, proposal.channel)
    assert (order.ts_code, order.side, order.quantity, order.price_type) == ("600519.SH", "buy", 100, "market")
    assert order.approved_by == TRADER and order.proposed_by == ALICE and order.thread_id == proposal.thread
    (fill,) = _fills(desk, proposal.channel)
    _value, fees, price = re.fullmatch(r"([\d,.]+) \+ fees ([\d,.]+) at ([\d.]+)",
                                       _facts(proposal.card)["Estimated cost"]).groups()
    assert (fill.order_id, fill.quantity, fill.trade_date) == (order.id, 100, "20200727")
    assert fill.price_fen == int(Decimal(price) * 100)  # at the last close the card quoted
    assert fill.basis == "simulated fill at the last available close"
    fill_fees = (fill.commission_fen + fill.stamp_duty_fen + fill.transfer_fee_fen + fill.handling_fee_fen
                 + fill.regulator_fee_fen)
    assert fill_fees == int(_money(fees) * 100)  # the card's fee estimate, to the fen
    # the result in the thread
    result = result_call(desk.slack, proposal.channel, proposal.root, "Order ")
    assert re.match(rf"Order {order.id} filled: BUY 100 600519\.SH at {re.escape(price)} on 20200727", text_of(result))
    assert blocks_valid(result)[0]["text"]["text"] == "Order filled"
    facts = _facts(result)
    assert facts["Decided by"] == f"<@{TRADER}>" and facts["Order"] == f"{order.id} (filled)"
    assert facts["Fill"] == f"100 at {price} on 20200727" and facts["Fees"].startswith("commission ")
    # the card shows who approved it, without buttons
    update = wait_until(lambda: _card_updates(desk, proposal), "the card's update")[-1]
    assert f"approved by <@{TRADER}>" in json.dumps(update.args) and "actions" not in json.dumps(update.args)
    # the audit trail, with who
    wait_until(lambda: "filled" in [e.event for e in order_events(desk, proposal)], "the filled event")
    events = order_events(desk, proposal)
    assert [e.event for e in events] == ["proposed", "approved", "submitted", "filled"]
    actors = {e.event: e.actor for e in events}
    assert actors["proposed"] == ALICE and actors["approved"] == TRADER and actors["submitted"] == TRADER
    assert events[2].detail["order_id"] == order.id and events[3].detail["order_id"] == order.id
    (decision,) = _decisions(desk, proposal)
    assert (decision.decided_by, decision.decision["type"], decision.source) == (TRADER, "approve", "button")
    wait_until(lambda: all(d.applied_at for d in _decisions(desk, proposal)), "the decision applied")
    assert len(_results(desk, proposal)) == 1


# --- edit -------------------------------------------------------------------------------------------------------


def test_an_edit_outside_the_rules_is_refused_in_the_modal(desk: Desk) -> None:
    proposal = _propose(desk, "C7200")
    edit = button_of(proposal.card, "review_edit")
    _click(desk, ALICE, proposal, edit)  # a non-trader gets no form
    assert _ephemeral(desk, proposal, ALICE) == [NOT_A_TRADER]
    assert _forms_opened(desk, proposal) == 0
    _click(desk, TRADER, proposal, edit)
    view = _modal(desk, proposal)
    assert view["callback_id"] == "approval_edit_modal"
    inputs = {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}
    assert set(inputs) == {"quantity"}  # a market order: only the quantity may change
    assert inputs["quantity"]["element"]["initial_value"] == "100"
    for value, problem in (("150", "Quantity (shares) must be a multiple of 100"),
                           ("50", "Quantity (shares) must be at least 100"),
                           ("many", "Quantity (shares) must be a whole number, not 'many'")):
        status, body = _submit(desk, TRADER, view, {"quantity": {"quantity": value}})
        assert status == 200, body
        answer = json.loads(body)
        assert answer["response_action"] == "errors", answer
        assert problem in answer["errors"]["quantity"], answer
    # nothing was decided: no decision row, no order, the card unchanged and still open
    assert _decisions(desk, proposal) == []
    assert paper_orders(desk, proposal.channel) == []
    assert _card_updates(desk, proposal) == []
    assert [e.event for e in order_events(desk, proposal)] == ["proposed"]


@dataclass(frozen=True)
class Edited:
    proposal: Proposal
    answer: tuple[int, str]  # the HTTP answer to the valid edit's view submission
    card: Call  # the card the edit produced
    orders_before_approval: list[PaperOrder]


@pytest.fixture(scope="module")
def edited(desk: Desk) -> Edited:
    """A trader edits the quantity to 200 (a valid lot) and submits; the re-checked card comes up and the trader
    approves it."""
    proposal = _propose(desk, "C7210")
    _click(desk, TRADER, proposal, button_of(proposal.card, "review_edit"))
    view = _modal(desk, proposal)
    answer = _submit(desk, TRADER, view, {"quantity": {"quantity": "200"}})
    card = interrupt_value(desk, proposal.channel, proposal.root, 2)
    orders = paper_orders(desk, proposal.channel)
    again = Proposal(proposal.channel, proposal.root, card)
    _click(desk, TRADER, again, button_of(card, "review_approve"))
    return Edited(proposal, answer, card, orders)


def test_a_valid_edit_is_a_new_card_with_every_check_run_again(edited: Edited) -> None:
    assert edited.orders_before_approval == []  # nothing placed on the edit alone
    assert _facts(edited.card)["Quantity"] == "200"
    description = _description(edited.card)
    assert description[0] == f"Edited by <@{TRADER}>: every check ran again on the edited order; decide it again."
    assert description[1] == "All checks pass." and _checks(edited.card)
    assert "review_approve" in _buttons(edited.card)


def test_a_valid_edit_fills_the_edited_quantity_once_approved(desk: Desk, edited: Edited) -> None:
    proposal = edited.proposal
    (order,) = _filled(desk, proposal.channel)
    assert order.quantity == 200 and order.approved_by == TRADER
    (fill,) = _fills(desk, proposal.channel)
    assert fill.quantity == 200 and fill.order_id == order.id
    result = result_call(desk.slack, proposal.channel, proposal.root, "Order ")
    assert re.match(rf"Order {order.id} filled: BUY 200 600519\.SH", text_of(result))
    wait_until(lambda: "filled" in [e.event for e in order_events(desk, proposal)], "the filled event")
    events = order_events(desk, proposal)
    assert [e.event for e in events] == ["proposed", "edited", "approved", "submitted", "filled"]
    assert events[1].actor == TRADER and events[1].detail["quantity"] == 200 and events[1].detail["passed"] is True
    decisions = {d.decision["type"]: d for d in _decisions(desk, proposal)}
    edit, approval = decisions.pop("edit"), decisions.pop("approve")
    assert decisions == {}
    assert edit.decision["type"] == "edit" and edit.decision["edited_action"]["args"]["quantity"] == 200
    assert edit.source == "modal" and edit.decided_by == TRADER
    assert (approval.decision["type"], approval.source, approval.decided_by) == ("approve", "button", TRADER)


def test_a_valid_edit_is_acked_and_shown_on_the_card(desk: Desk, edited: Edited) -> None:
    assert edited.answer == (200, "")  # acked: the modal closes
    update = wait_until(lambda: _card_updates(desk, edited.proposal), "the card's update", timeout=20)[-1]
    shown = json.dumps(update.args)
    assert f"edited by <@{TRADER}>" in shown and "the edited values are being checked again" in shown
    assert "actions" not in shown  # no buttons left
    assert "Failed to run listener function" not in desk.bot.output()


# --- reject -----------------------------------------------------------------------------------------------------


def test_a_rejection_places_nothing_and_records_its_reason(desk: Desk) -> None:
    proposal = _propose(desk, "C7300")
    reject = button_of(proposal.card, "review_reject")
    _click(desk, BOB, proposal, reject)  # neither the requester nor a trader
    assert _ephemeral(desk, proposal, BOB) == ["Only the requester, a configured approver or a trader can reject "
                                               "this order."]
    assert _forms_opened(desk, proposal) == 0
    _click(desk, ALICE, proposal, reject)  # the requester may reject, though not approve
    view = _modal(desk, proposal)
    assert view["callback_id"] == "review_reject_modal"
    assert _submit(desk, ALICE, view, {"reason": {"reason": "too big for today"}}) == (200, "")
    result = result_call(desk.slack, proposal.channel, proposal.root, "Order ")
    assert text_of(result) == f"Order rejected by {ALICE}: too big for today. Nothing was placed."
    assert blocks_valid(result)[0]["text"]["text"] == "Order rejected"
    update = wait_until(lambda: _card_updates(desk, proposal), "the card's update")[-1]
    assert f"rejected by <@{ALICE}>" in json.dumps(update.args) and "too big for today" in json.dumps(update.args)
    events = order_events(desk, proposal)
    assert [e.event for e in events] == ["proposed", "rejected"]
    assert events[1].actor == ALICE and events[1].detail == {"reason": "too big for today"}
    assert paper_orders(desk, proposal.channel) == [] and _fills(desk, proposal.channel) == []


def test_trading_off_closes_every_open_card_at_once(slack: SlackServer, tmp_path: Path) -> None:
    """Issue 29, item 5: a switch-off ends every open order card there and then, each a rejection on record by
    whoever switched it off and why, each card saying so; nothing is placed. Its own database: the switch is one."""
    for desk in _desk(slack, tmp_path, QUANTDESK_TRADERS=TRADER):
        cards = [_propose(desk, "C7990"), _propose(desk, "C7991")]
        reply = _reply_text(_command(desk, "trading off exchange outage", "C7990", TRADER))
        assert reply.endswith("2 open order cards were closed.")
        for proposal in cards:
            result = result_call(desk.slack, proposal.channel, proposal.root, "Order ")
            assert text_of(result) == (f"Order rejected by {TRADER}: trading was switched off by {TRADER}: exchange "
                                       "outage. Nothing was placed.")
            update = wait_until(lambda d=desk, p=proposal: _card_updates(d, p), "the card's update")[-1]
            assert f"rejected by <@{TRADER}>" in json.dumps(update.args)
            assert [e.event for e in order_events(desk, proposal)] == ["proposed", "rejected"]
            assert [d.source for d in _decisions(desk, proposal)] == ["trading switch"]
            assert paper_orders(desk, proposal.channel) == []


def test_a_switch_off_closes_the_open_cards_of_every_surface_sharing_the_database(slack: SlackServer,
                                                                                  tmp_path: Path) -> None:
    """Issue 29, item 5, across surfaces on one SQLite file: a switch-off in Slack closes the console's open order
    card (its row by who switched it off, its run applied there and then; the console shows the closure at its next
    prompt), and a switch-off in the console closes Slack's (the card updated and the result posted by the Slack
    process's background service)."""
    console = {"QUANTDESK_DATA_PROVIDER": "sample"}
    url = f"sqlite:///{tmp_path / 'q.db'}"
    for desk in _desk(slack, tmp_path, QUANTDESK_TRADERS=TRADER, QUANTDESK_ADMINS=ROOT):  # the first start seeds
        chat(tmp_path, url, TRADER, "order 000001.SZ buy 100", **console)
        with Session(desk.engine) as session:
            (thread,) = session.scalars(select(ThreadRecord.thread_id).where(ThreadRecord.status == "waiting")).all()
        assert thread.startswith("console-")
        reply = _reply_text(_command(desk, "trading off exchange outage", "C7992", TRADER))
        assert reply.endswith("1 open order card was closed.")
        with Session(desk.engine) as session:
            (decision,) = session.scalars(select(DecisionRecord).where(DecisionRecord.thread_id == thread)).all()
            assert (decision.source, decision.decided_by, decision.applied_at is not None) == (
                "trading switch", TRADER, True)
            assert session.get(ThreadRecord, thread).status == "done"  # type: ignore[union-attr]
            assert [e.event for e in session.scalars(select(OrderEvent).where(
                OrderEvent.client_order_id.like(f"{thread}:%")).order_by(OrderEvent.id))] == ["proposed", "rejected"]
        later = chat(tmp_path, url, TRADER, "pending", **console)
        # the result the Slack process left, shown before the first prompt; the console names the trader by the
        # login the database maps to them
        assert later[0] == (f"Order rejected by {os_login()}: trading was switched off by {os_login()}: exchange "
                            "outage. Nothing was placed.")
        assert later[-1] == "nothing is waiting for an answer"
        _reply_text(_command(desk, "trading on", "C7992", TRADER))

        proposal = _propose(desk, "C7993")
        lines = chat(tmp_path, url, TRADER, "trading off desk closed", **console)
        assert "1 open order card was closed." in lines
        result = result_call(desk.slack, proposal.channel, proposal.root, "Order ")
        assert text_of(result) == (f"Order rejected by {TRADER}: trading was switched off by {TRADER}: desk closed. "
                                   "Nothing was placed.")
        update = wait_until(lambda d=desk, p=proposal: _card_updates(d, p), "the card's update")[-1]
        assert f"rejected by <@{TRADER}>" in json.dumps(update.args) and "desk closed" in json.dumps(update.args)
        assert [d.source for d in _decisions(desk, proposal)] == ["trading switch"]
        assert [e.event for e in order_events(desk, proposal)] == ["proposed", "rejected"]
        assert paper_orders(desk, proposal.channel) == []


def test_an_admin_switches_trading_off_and_on_from_the_app_home_with_why(slack: SlackServer, tmp_path: Path) -> None:
    """Issue 29, item 5, one click for admins: the account panel of an admin's Home (only theirs) has "Trading off"
    with Slack's confirm dialog and a reason typed beside it; the click takes the typed command's path (the switch
    recorded with who and why, every open card closed); a trader's forged click of it is refused; left empty, the
    reason names the Home. Validated with slack_sdk."""
    for desk in _desk(slack, tmp_path, QUANTDESK_TRADERS=TRADER, QUANTDESK_ADMINS=ADMIN):
        _switch_from_home(desk)


def _switch_from_home(desk: Desk) -> None:
    admin = ADMIN
    proposal = _propose(desk, "C7995")

    def home(user: str, check: Any, what: str) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            view = desk.slack.fake.home(user)
            return view if view is not None and check(view) else None
        post(desk.bot.url, event_body(home_opened(user)), "application/json")
        view = wait_until(found, what)
        View(**view).validate_json()
        return view

    def switch_button(view: dict[str, Any], label: str) -> tuple[dict[str, Any], str]:
        block = next(b for b in view["blocks"] if b["type"] == "actions"
                     and any(e["text"]["text"] == label for e in b["elements"]))
        button = next(e for e in block["elements"] if e["text"]["text"] == label)
        return {**button, "block_id": block["block_id"]}, typed_id(block["block_id"], 0)

    view = home(admin, lambda v: "Account C7995" in json.dumps(v), "the admin's Home with the account")
    off, reason = switch_button(view, "Trading off")
    assert off["style"] == "danger" and off["confirm"]["style"] == "danger"
    assert off["confirm"]["text"]["text"].startswith("Switch trading off for every account?")
    assert any(b["type"] == "input" and b["block_id"] == reason and b["optional"] for b in view["blocks"])
    trader = home(TRADER, lambda v: "Account C7995" in json.dumps(v), "the trader's Home with the account")
    assert "Trading off" not in json.dumps(trader)  # not an admin: never shown

    def notices(user: str) -> str:
        return json.dumps([c.args["view"] for c in desk.slack.fake.of("views.publish")
                           if c.args.get("user_id") == user and c.ok])

    post(desk.bot.url, home_action_body(TRADER, off, {reason: "forged"}), FORM)
    wait_until(lambda: "That button is not on your home" in notices(TRADER), "the forged click refused")
    assert _switch(desk) is None or _switch(desk).enabled  # type: ignore[union-attr]

    post(desk.bot.url, home_action_body(admin, off, {reason: "exchange outage"}), FORM)
    result = result_call(desk.slack, proposal.channel, proposal.root, "Order ")
    assert text_of(result) == (f"Order rejected by {admin}: trading was switched off by {admin}: exchange outage. "
                               "Nothing was placed.")
    assert [d.source for d in _decisions(desk, proposal)] == ["trading switch"]
    wait_until(lambda: "1 open order card was closed." in notices(admin), "the switch-off said on the Home")
    on, reason = switch_button(home(admin, lambda v: "Trading on" in json.dumps(v), "the Home with Trading on"),
                               "Trading on")
    post(desk.bot.url, home_action_body(admin, on, {}), FORM)  # nothing typed
    wait_until(lambda: _switch(desk) is not None and _switch(desk).enabled, "trading on")  # type: ignore[union-attr]
    with Session(desk.engine) as session:
        rows = session.scalars(select(OrderEvent).where(OrderEvent.event.in_(("trading off", "trading on")))
                               .order_by(OrderEvent.id)).all()
    assert [(r.event, r.actor, r.detail) for r in rows] == [
        ("trading off", admin, {"reason": "exchange outage"}),
        ("trading on", admin, {"reason": f"from {admin}'s App Home, no reason typed"})]


# --- a retried or duplicated approval ---------------------------------------------------------------------------


def test_a_duplicated_approval_fills_once(desk: Desk) -> None:
    proposal = _propose(desk, "C7400")
    body = action_body(TRADER, proposal.channel, proposal.ts, proposal.root, button_of(proposal.card, "review_approve"))
    other = action_body(TRADER2, proposal.channel, proposal.ts, proposal.root,
                        button_of(proposal.card, "review_approve"))
    answers: list[int] = []
    # the same click delivered twice (once as Slack's retry) and a second trader's click, all at once
    senders = [threading.Thread(target=lambda b=b, r=r: answers.append(post(desk.bot.url, b, FORM, retry=r)[0]))
               for b, r in ((body, None), (body, 1), (other, None))]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(timeout=60)
    assert answers == [200, 200, 200]
    result_call(desk.slack, proposal.channel, proposal.root, "Order ")
    # the two clicks that lost are told so, one way or another
    handled = wait_until(lambda: len(found := _ephemerals(desk, proposal, TRADER)
                                     + _ephemerals(desk, proposal, TRADER2)) >= 2 and found, "two refusals")
    assert handled == [ALREADY, ALREADY]
    before = len(_ephemerals(desk, proposal, TRADER2))
    _click(desk, TRADER2, proposal, button_of(proposal.card, "review_approve"))  # and once more, afterwards
    assert _ephemeral(desk, proposal, TRADER2, before + 1)[-1] == ALREADY
    wait_until(lambda: all(d.applied_at for d in _decisions(desk, proposal)), "the decision applied")
    (decision,) = _decisions(desk, proposal)
    (order,) = paper_orders(desk, proposal.channel)
    assert decision.decided_by in (TRADER, TRADER2)
    assert order.status == "filled" and order.approved_by == decision.decided_by
    assert len(_fills(desk, proposal.channel)) == 1
    assert len(_results(desk, proposal)) == 1
    assert [e.event for e in order_events(desk, proposal)].count("filled") == 1


# --- no traders configured --------------------------------------------------------------------------------------


def test_with_no_traders_the_card_says_how_to_configure_them_and_nothing_can_be_approved(untraded: Desk) -> None:
    proposal = _propose(untraded, "C7500")
    assert _buttons(proposal.card) == ["review_reject"]  # no Approve, no Edit
    assert "Nobody is a trader, so nobody can approve this order: an admin grants the role with `roles grant " \
           "trader USER`" in _context(proposal.card)
    _click(untraded, ALICE, proposal, _crafted(proposal, "approve"))
    _click(untraded, TRADER, proposal, _crafted(proposal, "edit"))
    assert _ephemeral(untraded, proposal, ALICE) == [NO_TRADERS]
    assert _ephemeral(untraded, proposal, TRADER) == [NO_TRADERS]
    assert _forms_opened(untraded, proposal) == 0
    assert _decisions(untraded, proposal) == [] and paper_orders(untraded, proposal.channel) == []
    assert _card_updates(untraded, proposal) == []
    assert [e.event for e in order_events(untraded, proposal)] == ["proposed"]


# --- commands ---------------------------------------------------------------------------------------------------


def test_account_shows_the_filled_position_with_an_equity_chart(desk: Desk, approved: Approved) -> None:
    channel = approved.proposal.channel
    _filled(desk, channel)
    status, body = post(desk.bot.url, command_body("account", channel, BOB, desk.slack.url.replace(
        "/api/", "/respond/account")), FORM)
    assert status == 200 and body == ""
    # with an equity curve, the account goes to the channel, its chart uploaded beside it
    shown = desk.slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                     and not c.args.get("thread_ts") and text_of(c).startswith("Equity "))[0]
    blocks = blocks_valid(shown)
    assert blocks[0]["text"]["text"] == f"Paper account {channel}"
    table = next(b["text"]["text"] for b in blocks if b["type"] == "section" and "text" in b
                 and b["text"]["text"].startswith("```"))
    row = next(line for line in table.splitlines() if "600519.SH" in line).split()
    assert row[row.index("600519.SH") + 2:row.index("600519.SH") + 4] == ["100", "0"]  # held, none sellable (T+1)
    upload = desk.slack.fake.wait_for("files.completeUploadExternal",
                                      where=lambda c: c.args.get("thread_ts") == shown.response["ts"])[0]
    assert upload.ok


def test_account_of_a_fresh_channel_is_answered_privately(desk: Desk) -> None:
    text = _reply_text(_command(desk, "account", "C7600", BOB))
    assert text.startswith("Equity 1,000,000.00 CNY (+0.00 since the start), cash 1,000,000.00")


def test_orders_all_lists_the_filled_order(desk: Desk, approved: Approved) -> None:
    channel = approved.proposal.channel
    (order,) = _filled(desk, channel)
    reply = _command(desk, "orders all", channel, BOB)
    assert _reply_text(reply) == f"1 order in account {channel}"
    table = next(b["text"]["text"] for b in reply.args["blocks"] if b["type"] == "section" and "text" in b
                 and b["text"]["text"].startswith("```"))
    row = next(line.split() for line in table.strip("`").splitlines() if line.split()[:1] == [str(order.id)])
    price = str(Decimal(_fills(desk, channel)[0].price_fen) / 100)
    assert row[1:] == ["20200727", "BUY", "600519.SH", "100", "market", "filled", price, TRADER]
    assert _reply_text(_command(desk, "orders", channel, BOB)) == f"No open orders in account {channel}."
    assert _reply_text(_command(desk, "orders all", "C7601", BOB)) == "No orders in account C7601."


def test_cancel_usage_errors(desk: Desk) -> None:
    channel = "C7700"
    usage = ":warning: usage: cancel ORDER (the order's number, see `orders`)"
    assert _reply_text(_command(desk, "cancel abc", channel, TRADER)) == usage
    assert _reply_text(_command(desk, "cancel 1 2", channel, TRADER)) == usage
    assert _reply_text(_command(desk, "cancel 1", channel, BOB)) == \
        ":warning: Only traders (`roles` lists them) can cancel orders."
    assert _reply_text(_command(desk, "cancel 999999", channel, TRADER)) == \
        ":warning: there is no order 999999; see `orders all`"


def test_cancel_without_an_order_answers_its_usage(desk: Desk) -> None:
    text = _reply_text(_command(desk, "cancel", "C7720", TRADER))
    assert text == (":warning: Nothing runs or waits here: `cancel` and answers go in the request's thread; "
                    "`cancel ORDER` cancels an order. `help` lists what I can do.")


def test_reading_an_account_nobody_opened_opens_nothing(desk: Desk) -> None:
    text = _reply_text(_command(desk, "orders all typo-desk", "C7730", TRADER))  # a trader has a role on any
    assert text.startswith(":warning: there is no paper account named typo-desk")
    refused = _reply_text(_command(desk, "orders all typo-desk", "C7730", BOB))  # naming one needs a role on it
    assert refused.startswith(":warning: UBOB has no role on account typo-desk")
    with Session(desk.engine) as session:
        assert session.get(PaperAccount, "typo-desk") is None


def test_a_filled_order_cannot_be_cancelled(desk: Desk, approved: Approved) -> None:
    (order,) = _filled(desk, approved.proposal.channel)
    assert _reply_text(_command(desk, f"cancel {order.id}", "C7710", TRADER)) == \
        f":warning: order {order.id} is filled: only an open order can be cancelled"
    assert paper_orders(desk, approved.proposal.channel)[0].status == "filled"


def _switch(desk: Desk) -> TradingSwitch | None:
    with Session(desk.engine) as session:
        return session.get(TradingSwitch, 1)


def test_the_trading_switch_is_for_traders_and_shows_on_the_next_card(desk: Desk) -> None:
    channel = "C7800"
    refused = _reply_text(_command(desk, "trading off", channel, ALICE))
    assert refused == ":warning: Only traders (`roles` lists them) can switch trading on or off."
    assert _switch(desk) is None or _switch(desk).enabled  # type: ignore[union-attr]
    try:
        off = _reply_text(_command(desk, "trading off", channel, TRADER))
        assert off.startswith("Trading is OFF: nothing is submitted or filled")
        switch = _switch(desk)
        assert switch is not None and not switch.enabled and switch.changed_by == TRADER
        assert _reply_text(_command(desk, "trading", channel, BOB)).startswith(f"Trading is OFF (set by {TRADER}")
        proposal = _propose(desk, channel)
        checks = _checks(proposal.card)
        assert checks["trading switch"] == (False, "trading is switched off (`trading on` turns it back on)")
        assert all(passed for name, (passed, _) in checks.items() if name != "trading switch")
        assert _description(proposal.card)[:2] == [
            "Refused by the checks (failed first below): it cannot be approved as it is. Edit it (every check runs "
            "again) or reject it.", "FAIL trading switch: trading is switched off (`trading on` turns it back on)"]
        assert blocks_valid(proposal.card)[0]["text"]["text"].startswith("Refused by the checks: BUY 100 600519.SH")
        assert text_of(proposal.card).startswith("Refused by the checks: BUY 100 600519.SH")
        assert text_of(proposal.card).endswith(". Failed: trading switch: trading is switched off (`trading on` "
                                               "turns it back on). You can edit or reject it.")
        assert _buttons(proposal.card) == ["review_edit", "review_reject"]
    finally:
        on = _reply_text(_command(desk, "trading on", channel, TRADER))
    assert on.startswith("Trading is on")
    assert _switch(desk).enabled  # type: ignore[union-attr]
    with Session(desk.engine) as session:
        switches = session.scalars(select(OrderEvent).where(OrderEvent.event.in_(("trading on", "trading off")))
                                   .order_by(OrderEvent.id)).all()
        assert [(e.event, e.actor) for e in switches] == [("trading off", TRADER), ("trading on", TRADER)]
    assert paper_orders(desk, channel) == []


# --- saved rules through /quant --------------------------------------------------------------------------------


def test_a_rule_saved_with_quotes_runs_from_slash_and_proposes_its_order(desk: Desk) -> None:
    channel = "C7900"
    saved = _reply_text(_command(desk, 'rule add 600519.SH "buy when close > ma(30) and rsi(14) < 70; sell when '
                                       'close < ma(30)" size=100', channel, ALICE))
    assert "saved, in the rule language" in saved
    rule_id = saved.split("Rule ", 1)[1].split(" ", 1)[0]
    refused = _reply_text(_command(desk, f'rule schedule {rule_id} "30 14 * * 1-5"', channel, ALICE))
    assert refused.startswith(f":warning: Rule {rule_id} has no backtest yet, so the gate has no verdict on it.")
    scheduled = _reply_text(_command(desk, f'rule schedule {rule_id} "30 14 * * 1-5" anyway watching it on paper',
                                     channel, ALICE))
    assert "Scheduled over the gate by" in scheduled and scheduled.endswith("watching it on paper")
    shown = _command(desk, f"rule show {rule_id}", channel, BOB)
    assert _reply_text(shown).startswith(f"Rule {rule_id}, owned by")
    assert "30 14 * * 1-5 (Asia/Shanghai)" in json.dumps(shown.args["blocks"])
    assert _reply_text(_command(desk, f"rule delete {rule_id}", channel, BOB)).startswith(
        f":warning: rule {rule_id} belongs to")
    proposal = _propose(desk, channel, f"rule run {rule_id}")
    card = proposal.card
    assert "BUY 100 600519.SH" in text_of(card) and f"rule {rule_id} as of 20200727:" in json.dumps(card.args["blocks"])
    timeline = _command(desk, f"rule log {rule_id}", channel, BOB)
    assert "decision: BUY (confidence 1.00)" in json.dumps(timeline.args["blocks"], ensure_ascii=False)


def test_roles_in_slack_only_an_admin_changes_them_and_it_takes_effect_at_once(slack: SlackServer,
                                                                               tmp_path: Path) -> None:
    """`/quant roles` (issue 38, item 2): a non-admin's grant is refused in one line; an admin's grant is stored,
    chained on the global audit chain, and the new trader switches trading on the next command, no restart."""
    for desk in _desk(slack, tmp_path, QUANTDESK_TRADERS=TRADER, QUANTDESK_ADMINS=ADMIN):
        refused = _reply_text(_command(desk, f"roles grant trader {ALICE}", "C7995", ALICE))
        assert refused == f":warning: Only admins can change roles; {ALICE} is not one (`roles` lists them)."
        granted = _reply_text(_command(desk, f"roles grant trader {ALICE}", "C7995", ADMIN))
        assert "is now a trader globally" in granted, granted
        on = _reply_text(_command(desk, "trading on", "C7995", ALICE))
        assert on.startswith("Trading is on"), on
        with Session(desk.engine) as session:
            assert [(e.event, e.actor, e.account) for e in session.scalars(select(OrderEvent).where(
                OrderEvent.event.like("role%")).order_by(OrderEvent.id))] == [
                ("roles seeded", "environment", None), ("role granted", ADMIN, None)]
