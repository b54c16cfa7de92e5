"""Every card the Feishu renderer builds passes the card schema the fake Open API enforces (a header, known
elements, buttons with values, forms with a submit, no more than 50 elements, no more than 30,000 bytes), however
long or many its texts; and the core's mrkdwn is said in Feishu's markdown."""

from __future__ import annotations

import json
from functools import cache

import pytest

from bot.cards import card_of
from bot.core.surface import Answered, Decided, Notice, Result, RetryOffer, Status
from bot.feishu import render
from bot.feishu.surface import card_for
from graphs.interrupts import approval_request, clarify_request, code_review_request
from graphs.views import Table, View
from testkit.fakes.feishu_server import card_problems

ORDER_SCHEMA = {"quantity": {"type": "integer", "title": "Quantity", "minimum": 100, "multiple_of": 100},
                "limit_price": {"type": "number", "title": "Limit price", "minimum": 0.01}}


def _fine(card: dict) -> dict:
    assert card_problems(card) == []
    assert len(render.content(card).encode()) <= render.CARD_BYTES_MAX
    assert card_problems(json.loads(render.content(card))) == []
    return card


@cache
def _cards() -> list[dict]:
    clarify = card_of(clarify_request("Which strategy? " + "x" * 6000, [f"choice {n}" * 8 for n in range(40)]))
    review = card_of(code_review_request("mom", "return close / close.shift(20) - 1\n" * 400, "", "s" * 9000,
                                         "f" * 3000, ["approve", "edit", "reject"], "process", "d" * 9000))
    approval = card_of(approval_request("order", "Buy 100 600519.SH", {f"field_{n}": "v" * 3000 for n in range(80)},
                                        "why " * 2000, "nothing is bought", ("approve", "edit", "reject"),
                                        ORDER_SCHEMA))
    huge = View("Signal", "summary " * 3000, lines=["line " * 500] * 60, facts=[(f"f{n}", "v" * 2000)
                                                                                 for n in range(120)],
                table=Table(["a", "b"], [[str(n), "x" * 50] for n in range(3000)]), code="c" * 40000,
                notes=["note " * 400] * 80, warnings=["careful " * 300] * 30)
    questions = [render.question_card("feishu-t", "i-1", c, "ou_alice") for c in (clarify, review, approval)]
    return [
        *questions,
        *(render.processing(q, "processing…") for q in questions),
        render.edit_form("feishu-t", "i-1", review),  # type: ignore[arg-type]
        render.fields_form("feishu-t", "i-1", approval),  # type: ignore[arg-type]
        render.reject_form("feishu-t", "i-1", "mom", "nothing is bought"),
        render.view_card(huge),
        *(card_for(c) for c in (Status("feishu-t", ":hourglass_flowing_sand: working…"),
                                Status("feishu-t", "done", running=False), Result(text="Done."),
                                Notice("a fill for ou_bob", users=("ou_bob",)), Notice("stopped", failure=True),
                                Decided("Code review: mom", "ou_alice", "approve"),
                                Answered("Which dates?", "ou_alice", "20200101 20200601"),
                                RetryOffer("i-1", "the database failed"))),
    ]


@pytest.mark.parametrize("n", range(len(_cards())))
def test_every_card_passes_the_schema_within_limits(n: int) -> None:
    _fine(_cards()[n])


def test_a_long_approval_keeps_its_buttons() -> None:
    approval = _cards()[2]
    labels = [b["text"]["content"] for e in approval["elements"] for b in e.get("actions") or []]
    assert labels == ["Approve", "Edit", "Reject"]


def test_the_processing_card_has_every_button_disabled_and_no_form() -> None:
    processing = render.processing(render.edit_form("feishu-t", "i-1", card_of(code_review_request(
        "mom", "return close", "", "", None, ["approve", "edit", "reject"], "process"))), "processing…")
    assert all(e["tag"] != "form" for e in processing["elements"])
    assert processing["elements"][-1]["elements"][0]["content"] == "⏳ processing…"


def test_the_cores_mrkdwn_is_feishu_markdown() -> None:
    text = render.md(":white_check_mark: *done* for ou_bob · ```*kept*```", ["ou_bob"])
    assert text == "✅ **done** for <at id=ou_bob></at> · ```*kept*```"
    assert render.plain(":x: *Refused*") == "❌ Refused"
