"""The App Home (issue 26, item 1) against `quantdesk serve` as a real process (Bolt over signed HTTP) and the fake
Slack Web API, on the bundled sample data (an approved order fills at once at the last close): a trader approves an
order from their Home (one fill, the thread's card updated, the Home republished without it); the requester, not
a trader, sees the card read-only and a forged click decides nothing; a Home whose publish Slack refused (500)
is published by the background service; Home views validate and stay within 100 blocks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from slack_sdk.models.views import View
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from bot.slack.render import button_value
from bot.stores.homes import HomeStore
from bot.stores.records import DecisionRecord
from bot.stores.threads import thread_id_for
from testkit.fakes.slack_server import TEAM, WORKSPACE_URL, Call, Fault, SlackServer
from testkit.slack import (
    BotProcess,
    action_body,
    button_of,
    command_body,
    event_body,
    home_action_body,
    home_opened,
    in_thread,
    post,
    text_of,
)
from testkit.wait import wait_until
from tools.broker.records import PaperFill, PaperOrder
from tools.storage.db import make_engine

TRADER, TRADER2, TRADER3 = "UTRADER", "UTRADER2", "UTRADER3"
ALICE = "UALICE"  # asks for the order; not a trader
BOB = "UBOB"  # neither
ORDER = "order 600519.SH buy 100"
FORM = "application/x-www-form-urlencoded"
NOT_A_TRADER = "Only traders can approve or edit orders (`roles` lists them); you can reject it."
# four eyes above 200,000 CNY: ORDER (100 shares near 1,700) needs one trader, FOUR_EYES (200 shares) two; a
# position of 200 shares is 34% of the starting cash, within a 50% position weight limit
FOUR_EYES = "order 600519.SH buy 200"
ENV = {"QUANTDESK_RECONCILE_INTERVAL": "0.5", "QUANTDESK_TRADERS": f"{TRADER},{TRADER2},{TRADER3}",
       "QUANTDESK_SECOND_APPROVAL_ABOVE": "200000", "QUANTDESK_MAX_POSITION_WEIGHT": "0.5"}


@dataclass
class Desk:
    slack: SlackServer
    bot: BotProcess
    engine: Engine


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    data = tmp_path_factory.mktemp("home")
    url = f"sqlite:///{data / 'q.db'}"
    with SlackServer() as slack:
        process = BotProcess(slack.url, url, data, **ENV)
        engine = make_engine(url)
        try:
            yield Desk(slack, process, engine)
        finally:
            process.stop()
            engine.dispose()


@dataclass(frozen=True)
class Card:
    channel: str
    root: str
    call: Call

    @property
    def ts(self) -> str:
        return str(self.call.response["ts"])

    @property
    def interrupt_id(self) -> str:
        return str(json.loads(button_of(self.call, "review_approve")["value"])["i"])

    @property
    def thread(self) -> str:
        return thread_id_for(TEAM, self.channel, self.root)


def _propose(desk: Desk, channel: str, text: str = ORDER, user: str = ALICE) -> Card:
    status, _ = post(desk.bot.url, command_body(text, channel, user, desk.slack.url.replace("/api/", "/respond/x")),
                     FORM)
    assert status == 200
    (root,) = desk.slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                       and not c.args.get("thread_ts"))
    ts = str(root.response["ts"])
    return Card(channel, ts, _nth_card(desk, channel, ts, 1))


def _nth_card(desk: Desk, channel: str, root: str, n: int) -> Call:
    """The n-th approval card posted in the thread."""
    return desk.slack.fake.wait_for("chat.postMessage", n, where=lambda c: in_thread(channel, root)(c) and c.ok
                                    and text_of(c).startswith("Approval needed: "))[n - 1]


def _open_home(desk: Desk, user: str) -> None:
    status, _ = post(desk.bot.url, event_body(home_opened(user)), "application/json")
    assert status == 200


def _publishes(desk: Desk, user: str) -> list[Call]:
    return [c for c in desk.slack.fake.of("views.publish") if c.args.get("user_id") == user]


def _view(call: Call) -> dict[str, Any]:
    view = call.args["view"]
    return json.loads(view) if isinstance(view, str) else view


def _home_where(desk: Desk, user: str, check: Any, what: str) -> dict[str, Any]:
    """Wait for a Home published for `user` that passes `check`; validated by slack_sdk."""
    def found() -> dict[str, Any] | None:
        view = desk.slack.fake.home(user)
        return view if view is not None and check(view) else None
    view = wait_until(found, what, timeout=30)
    View(**view).validate_json()
    assert len(view["blocks"]) <= 100
    return view


def _text(view: dict[str, Any]) -> str:
    return json.dumps(view, ensure_ascii=False)


def _buttons(view: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]]


def _waiting(view: dict[str, Any]) -> list[dict[str, Any]]:
    """The blocks of the Home's "Waiting for you" section."""
    blocks = view["blocks"]
    start = next((i for i, b in enumerate(blocks) if b["type"] == "header"
                  and b["text"]["text"] == "Waiting for you"), None)
    if start is None:
        return []
    end = next((i for i in range(start, len(blocks)) if blocks[i]["type"] == "divider"), len(blocks))
    return blocks[start:end]


def _shows(view: dict[str, Any], card: Card) -> bool:
    """Whether the card is among what waits (its link to the thread)."""
    return f"p{card.root.replace('.', '')}?" in json.dumps(_waiting(view))


def _click(desk: Desk, user: str, action: dict[str, Any]) -> None:
    status, _ = post(desk.bot.url, home_action_body(user, action), FORM)
    assert status == 200


def _notice(view: dict[str, Any]) -> str:
    first = view["blocks"][1]
    return str(first.get("text", {}).get("text", "")) if first["type"] == "section" else ""


def _fills(engine: Engine, thread: str) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(PaperFill).join(
            PaperOrder, PaperFill.order_id == PaperOrder.id).where(PaperOrder.thread_id == thread)) or 0


def test_a_trader_approves_an_order_from_home(desk: Desk) -> None:
    card = _propose(desk, "CHOME1")
    for user in (TRADER, TRADER2):
        _open_home(desk, user)
    view = _home_where(desk, TRADER, lambda v: _shows(v, card), "the card on the trader's Home")
    approve = next(b for b in _buttons(view) if b["action_id"] == "review_approve"
                   and json.loads(b["value"])["i"] == card.interrupt_id)
    assert json.loads(approve["value"])["t"] == card.thread  # a Home button carries its thread
    links = json.dumps(view)
    assert f"{WORKSPACE_URL}archives/{card.channel}/p{card.root.replace('.', '')}" in links

    _click(desk, TRADER, approve)
    updated = desk.slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == card.ts
                                       and "approve by UTRADER" in text_of(c))
    assert updated[0].args["channel"] == card.channel
    wait_until(lambda: _fills(desk.engine, card.thread) == 1, "the order's fill")
    after = _home_where(desk, TRADER, lambda v: not _shows(v, card) and "600519.SH" in json.dumps(v),
                        "the trader's Home without the card, with the position")
    assert "Account CHOME1" in json.dumps(after)
    _home_where(desk, TRADER2, lambda v: not _shows(v, card), "the other trader's Home without it")

    _click(desk, TRADER, approve)  # a second click by the same person, from the Home
    _home_where(desk, TRADER, lambda v: "Already handled." in _notice(v), "already handled, said on the Home")
    assert _fills(desk.engine, card.thread) == 1
    with Session(desk.engine) as session:
        assert session.scalar(select(func.count()).select_from(DecisionRecord).where(
            DecisionRecord.interrupt_id == card.interrupt_id)) == 1


def test_the_requester_sees_the_card_read_only_and_a_forged_click_is_refused(desk: Desk) -> None:
    card = _propose(desk, "CHOME2")
    _open_home(desk, ALICE)
    _open_home(desk, BOB)
    view = _home_where(desk, ALICE, lambda v: _shows(v, card), "the card on the requester's Home")
    assert not [b for b in _buttons(view) if b["action_id"].startswith("review_")]
    assert f"Read-only here: {NOT_A_TRADER}" in json.dumps(_waiting(view))
    bob = _home_where(desk, BOB, lambda v: True, "Bob's Home")
    assert not _shows(bob, card)  # neither asked it nor may decide it

    forged = {"action_id": "review_approve", "value": button_value(card.thread, card.interrupt_id, "approve")}
    _click(desk, ALICE, forged)
    _home_where(desk, ALICE, lambda v: NOT_A_TRADER in _notice(v), "the refusal on the Home")
    with Session(desk.engine) as session:
        assert session.get(DecisionRecord, card.interrupt_id) is None
    assert _fills(desk.engine, card.thread) == 0


def test_a_refused_publish_is_published_by_the_background_service(desk: Desk) -> None:
    user = "UFAIL"
    desk.slack.fake.inject("views.publish", Fault.server_error(where=lambda args: args.get("user_id") == user))
    _open_home(desk, user)
    calls = wait_until(lambda: len(found := _publishes(desk, user)) >= 2 and found, "a second views.publish")
    assert calls[0].fault is not None and calls[0].response["error"] == "internal_error"
    assert calls[1].ok and calls[1].at > calls[0].at
    View(**_view(calls[1])).validate_json()
    state = wait_until(lambda: (s := HomeStore(desk.engine).get(user)) and s.published_version == s.version and s,
                       "the home marked published")
    assert state.attempts == 0 and state.last_error is None


def test_a_home_click_whose_value_is_not_the_bots_does_nothing(desk: Desk) -> None:
    user = "UODD"
    _open_home(desk, user)
    _home_where(desk, user, lambda v: True, "the Home")
    _click(desk, user, {"action_id": "home_action_0", "value": json.dumps({"p": "rules", "w": ["rule", "delete", "1"],
                                                                           "c": ""})})
    view = _home_where(desk, user, lambda v: "not on your home" in _notice(v), "the refusal")
    assert "Rule 1 deleted" not in json.dumps(view)



def test_a_rule_is_paused_resumed_and_run_from_its_owners_home(desk: Desk) -> None:
    owner, channel = "URULES", "CHOME3"
    hook = desk.slack.url.replace("/api/", "/respond/ruleadd")
    post(desk.bot.url, command_body('rule add 600519.SH "buy when close > ma(30); sell when close < ma(30)" size=100',
                                    channel, owner, hook), FORM)
    saved = desk.slack.fake.wait_for("respond", where=lambda c: c.args.get("_hook") == "ruleadd")[0]
    rule_id = text_of(saved).split()[1]
    _open_home(desk, owner)
    view = _home_where(desk, owner, lambda v: f"Rule {rule_id} · 600519.SH · active" in _text(v),
                       "the rule on its owner's Home")
    pause = next(b for b in _buttons(view) if b["text"]["text"] == "Pause")
    assert json.loads(pause["value"])["w"] == ["rule", "pause", rule_id]

    _click(desk, BOB, pause)  # not his rule: the button is not on his Home
    _home_where(desk, BOB, lambda v: "not on your home" in _notice(v), "the refusal on Bob's Home")
    _click(desk, owner, pause)
    paused = _home_where(desk, owner, lambda v: f"Rule {rule_id} is paused" in _notice(v), "the pause, said")
    assert f"Rule {rule_id} · 600519.SH · paused" in _text(paused)
    resume = next(b for b in _buttons(paused) if b["text"]["text"] == "Resume")
    _click(desk, owner, resume)
    _home_where(desk, owner, lambda v: f"Rule {rule_id} · 600519.SH · active" in _text(v), "the rule resumed")

    run_now = next(b for b in _buttons(desk.slack.fake.home(owner) or {}) if b["text"]["text"] == "Run now")
    _click(desk, owner, run_now)
    root = desk.slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                    and not c.args.get("thread_ts") and f"rule run {rule_id}" in text_of(c))[0]
    assert text_of(root) == f"<@{owner}> asked: `rule run {rule_id}`"
    thread = str(root.response["ts"])
    status = desk.slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, thread)(c)
                                      and "working" in text_of(c))[0]
    desk.slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == status.response["ts"]
                             and text_of(c).startswith((":white_check_mark: done",
                                                        ":speech_balloon: waiting for your answer")))


def test_the_second_approval_is_offered_to_neither_the_first_approver_nor_the_proposer(desk: Desk) -> None:
    """Maker-checker in the policy (issue 29, item 1): on a four-eyes order's second card, Approve is not on the Home
    of the trader who approved first nor of the proposer (they may still reject it), and their clicks, on the Home
    or in the thread, are refused before anything is recorded; a third trader approves and it fills once."""
    first = _propose(desk, "CHOME5", FOUR_EYES, user=TRADER2)  # a trader proposes it (the maker)
    approve = button_of(first.call, "review_approve")
    status, _ = post(desk.bot.url, action_body(TRADER, first.channel, first.ts, first.root, approve), FORM)
    assert status == 200
    second = Card(first.channel, first.root, _nth_card(desk, first.channel, first.root, 2))
    assert second.interrupt_id != first.interrupt_id
    refusals = {TRADER: f"{TRADER} already approved this order; a second, different trader must approve it",
                TRADER2: f"{TRADER2} proposed this order and cannot be its second approver (maker-checker): another "
                         "trader must approve it"}
    for user, refusal in refusals.items():
        _open_home(desk, user)
        view = _home_where(desk, user, lambda v: _shows(v, second), f"the second card on {user}'s Home")
        offered = [b["action_id"] for b in _buttons(view) if json.loads(b["value"]).get("i") == second.interrupt_id]
        assert offered == ["review_edit", "review_reject"]
        mentioned = refusal.replace(user, f"<@{user}>", 1)  # the Home names the card's people as mentions
        assert f"Approve is not offered to you: {mentioned}" in _text(_waiting(view))
        forged = {"action_id": "review_approve", "value": button_value(second.thread, second.interrupt_id, "approve")}
        _click(desk, user, forged)  # refused by the same policy (no row below); its Home notice can be lost to a
        # publish in flight for the card's other changes, so the words are checked on the thread's click
        status, _ = post(desk.bot.url, action_body(user, second.channel, second.ts, second.root,
                                                   button_of(second.call, "review_approve")), FORM)
        assert status == 200
        desk.slack.fake.wait_for("chat.postEphemeral", where=lambda c, u=user, r=refusal: c.args.get("user") == u
                                 and text_of(c) == r)
    with Session(desk.engine) as session:
        assert session.get(DecisionRecord, second.interrupt_id) is None
    _open_home(desk, TRADER3)
    view = _home_where(desk, TRADER3, lambda v: _shows(v, second), "the second card on the third trader's Home")
    approve = next(b for b in _buttons(view) if b["action_id"] == "review_approve"
                   and json.loads(b["value"])["i"] == second.interrupt_id)
    _click(desk, TRADER3, approve)
    wait_until(lambda: _fills(desk.engine, second.thread) == 1, "the order's fill")
    with Session(desk.engine) as session:
        assert session.scalars(select(PaperOrder.approved_by).where(PaperOrder.thread_id == second.thread)
                               ).all() == [f"{TRADER},{TRADER3}"]
