"""The Home in the order a person must act (issue 39, item 7): the decisions waiting for them first, soonest expiry
first, then their own open questions newest first, then those they may answer for others; what the Home leaves to
its "More" is counted by kind; with many panels each keeps a "More" of its own within Slack's 100 blocks."""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.views import View

from bot.cards import card_of
from bot.core.home import ordered
from bot.core.surface import ASKED, DECIDE, OTHERS, Home, HomeCard, Place, Question
from bot.slack.home import HOME_CARDS, home_view
from graphs.home import HomePanel, HomeRow
from tools.i18n import using

USER = "UVIEWER"


def _card(n: int, group: str, expires: str | None = None) -> HomeCard:
    payload: dict[str, Any] = ({"type": "clarify", "question": f"Which dates for request {n}?"} if group != DECIDE
                               else {"type": "approval", "title": f"order {n}", "action": "place_order",
                                     "allowed": ["approve", "reject"], "args": {}})
    if expires:
        payload["expires_at"] = expires
    return HomeCard(Question(f"slack-T-C-{n}", f"int{n}", card_of(payload), USER),
                    Place("T", "C", f"1700000000.{n:06d}"), group=group)


def _link(place: Place) -> str:
    return f"https://example.slack.com/archives/{place.channel}/p{place.thread_ts.replace('.', '')}"


def test_decisions_come_first_by_expiry_then_own_questions_then_others_newest_first() -> None:
    oldest_first = [_card(1, ASKED), _card(2, OTHERS), _card(3, DECIDE, "2026-12-01T10:00:00+08:00"),
                    _card(4, ASKED), _card(5, DECIDE), _card(6, DECIDE, "2026-12-01T09:30:00+08:00"),
                    _card(7, OTHERS), _card(8, ASKED)]
    assert [c.question.interrupt_id for c in ordered(oldest_first)] == \
        ["int6", "int3", "int5", "int8", "int4", "int1", "int7", "int2"]


def test_the_order_waiting_for_the_trader_is_shown_before_stale_questions_and_the_rest_is_counted() -> None:
    # two stale clarify questions and three open date questions of theirs, then an order waiting for them
    cards = ordered([_card(n, ASKED) for n in range(1, 6)] + [_card(6, DECIDE, "2026-12-01T10:00:00+08:00"),
                                                               _card(7, OTHERS)])
    view = home_view(Home(USER, tuple(cards)), _link)
    View(**view).validate_json()
    buttons = [e for b in view["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert json.loads(buttons[0]["value"])["i"] == "int6"  # the first card on the Home, with its buttons
    more = next(b for b in view["blocks"] if b.get("accessory", {}).get("action_id") == "home_more")
    hidden = len(cards) - HOME_CARDS
    assert more["text"]["text"] == f"{hidden} more not shown here: 1 question of yours, 1 question you may answer."
    with using("zh-CN"):
        zh = home_view(Home(USER, tuple(cards)), _link)
    assert "另有 2 项未在此显示：1 个你的问题、1 个你可以回答的问题。" in json.dumps(zh, ensure_ascii=False)


def test_many_panels_each_keep_a_more_of_their_own_within_100_blocks() -> None:
    panels = tuple(HomePanel(f"panel{n}", f"Panel {n}", f"{n} rows", tuple(HomeRow(f"row {r}") for r in range(30)))
                   for n in range(40))
    view = home_view(Home(USER, tuple(_card(n, DECIDE) for n in range(8)), panels), _link)
    View(**view).validate_json()
    assert len(view["blocks"]) <= 100
    offered = [json.loads(b["accessory"]["value"])["p"] for b in view["blocks"]
               if b.get("accessory", {}).get("action_id") == "home_more"]
    assert offered == ["waiting", *(f"panel{n}" for n in range(40))]  # every panel, in full or as its "more"
