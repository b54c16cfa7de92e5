"""Every Block Kit payload the renderer builds is valid according to slack_sdk.models and within limits."""

from __future__ import annotations

import json

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.cards import card_of
from bot.slack.names import dressed
from bot.slack.render import (
    answered_message,
    approval_edit_modal,
    approval_message,
    clarify_message,
    compact_message,
    reply_message,
    status_message,
    view_message,
)
from graphs.interrupts import approval_request, clarify_request, validate_args
from graphs.signal.library import STRATEGIES
from graphs.signal.nodes.report import CONVENTIONS
from graphs.signal.present import present_signal
from graphs.views import View as ResultView


def _valid(message: dict) -> list[dict]:
    assert message["text"], "every message needs a plain-text fallback"
    assert len(message["blocks"]) <= 50
    for raw in message["blocks"]:
        block = Block.parse(raw)
        assert block is not None, raw
        block.validate_json()
        assert block.to_dict() == raw
    return message["blocks"]


def test_clarify_with_choices_makes_buttons() -> None:
    payload = clarify_request("Which strategy?", list(STRATEGIES))
    blocks = _valid(clarify_message("slack-abc", "int-1", card_of(payload)))
    buttons = [e for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert [b["text"]["text"] for b in buttons] == list(STRATEGIES)
    assert json.loads(buttons[0]["value"]) == {"t": "slack-abc", "i": "int-1", "d": "ma_cross"}
    assert len({b["action_id"] for b in buttons}) == len(buttons)


def test_long_texts_are_clipped_to_slack_limits() -> None:
    payload = clarify_request("x" * 5000, ["y" * 200])
    blocks = _valid(clarify_message("slack-abc", "int-1", card_of(payload)))
    assert len(blocks[0]["text"]["text"]) == 3000
    assert len(blocks[1]["elements"][0]["text"]["text"]) == 75


def test_answered_message_has_no_buttons() -> None:
    blocks = _valid(answered_message("Which dates?", "U123", "20200101 20200601"))
    assert all(b["type"] != "actions" for b in blocks)
    assert "<@U123>" in blocks[0]["text"]["text"]


@pytest.fixture
def result() -> dict:
    return {
        "title": "ma_cross (fast=5, slow=20)", "codes": [f"{600000 + i}.SH" for i in range(30)],
        "first_date": "2019-01-02", "last_date": "2020-06-01", "shape": [342, 30],
        "counts": {"buy": 10, "sell": 12, "hold": 100, "missing": 4},
        "metrics": {"total_return": 0.12, "annual_return": 0.08, "sharpe": 1.1, "max_drawdown": -0.1,
                    "benchmark_total_return": 0.3, "benchmark_sharpe": 1.4, "benchmark_max_drawdown": -0.2,
                    "excess_return": -0.18, "exposure": 0.39, "buys": 20, "sells": 20, "round_trips": 18,
                    "trades": 40, "win_rate": 0.5, "open_positions": 2, "open_in_profit": 1,
                    "turnover": 0.02, "fee_rate": 0.0005, "fees": 0.004,
                    "benchmark_annual_return": 0.2, "benchmark_exposure": 1.0, "benchmark_trades": 30,
                    "benchmark_fees": 0.0005, "bars": 341},
        "conventions": CONVENTIONS, "warnings": ["w" * 4000, "two"],
    }


def test_signal_result_blocks(result: dict) -> None:
    message = view_message(present_signal(result))
    blocks = _valid(message)
    assert blocks[0]["type"] == "header"
    assert "and 18 more" in blocks[1]["text"]["text"]
    assert "12.00%" in message["text"] and "Sharpe 1.10" in message["text"]
    assert "buy-and-hold 30.00% (excess -18.00%)" in message["text"] and "exposure 39%" in message["text"]
    assert len(blocks[2]["fields"]) == 10


def test_plain_reply() -> None:
    _valid(reply_message("Cancelled; nothing was run."))


def test_approval_shows_details_within_limits_and_its_decisions() -> None:
    args = {f"field_{i}": ["x" * 900, "y" * 900, "z" * 900] if i == 0 else i for i in range(14)}
    payload = approval_request("place_order", "buy 600519.SH", args, "d" * 5000, on_reject="No order is sent.")
    blocks = _valid(approval_message("slack-abc", "int-9", card_of(payload), "U1"))
    fields = next(b for b in blocks if b.get("fields"))["fields"]
    assert len(fields) == 10 and len(fields[0]["text"]) == 2000 and fields[0]["text"].startswith("*Field 0*")
    buttons = next(b for b in blocks if b["type"] == "actions")["elements"]
    assert [b["action_id"] for b in buttons] == ["review_approve", "review_reject"]
    assert json.loads(buttons[1]["value"]) == {"t": "slack-abc", "i": "int-9", "d": "reject"}
    assert "<@U1> or a configured approver can decide. Reject: No order is sent." in json.dumps(blocks)


def test_a_refused_message_compacts_to_its_header_and_buttons_and_one_without_buttons_does_not() -> None:
    payload = approval_request("place_order", "buy 600519.SH", {"quantity": 100}, "d" * 5000, on_reject="-")
    full = approval_message("slack-abc", "int-9", card_of(payload), "U1")
    blocks = _valid(compact_message(full))  # type: ignore[arg-type]
    assert [b["type"] for b in blocks] == ["header", "section", "actions"]
    assert blocks[0] == full["blocks"][0] and blocks[2] == next(b for b in full["blocks"] if b["type"] == "actions")
    assert "attached below as a file" in blocks[1]["text"]["text"]
    assert compact_message(clarify_message("slack-abc", "int-1", card_of(clarify_request("Which dates?")))) is None


def test_approval_with_edit_needs_a_schema_and_gets_a_form_built_from_it() -> None:
    with pytest.raises(ValueError, match="schema"):
        approval_request("place_order", "buy", {"shares": 100}, "d", on_reject="x", allowed=("approve", "edit"))
    schema = {"shares": {"type": "integer", "title": "Shares", "minimum": 100, "maximum": 10_000},
              "limit": {"type": "number", "title": "Limit price"}}
    payload = approval_request("place_order", "buy 600519.SH", {"shares": 300, "limit": 1700.5, "code": "600519.SH"},
                               "d", on_reject="No order.", allowed=("approve", "edit", "reject"), args_schema=schema)
    card = card_of(payload)
    buttons = next(b for b in _valid(approval_message("t", "i", card, "U1")) if b["type"] == "actions")["elements"]
    assert [b["action_id"] for b in buttons] == ["review_approve", "review_edit", "review_reject"]
    modal = approval_edit_modal("t", "i", "171.1", card)
    View(**modal).validate_json()  # slack_sdk's own checks of a modal
    inputs = {b["block_id"]: b for b in modal["blocks"] if b["type"] == "input"}
    assert set(inputs) == {"shares", "limit"} and inputs["shares"]["element"]["initial_value"] == "300"
    assert validate_args(schema, payload["args"], {"shares": "250"}) == (
        {"shares": 250, "limit": 1700.5, "code": "600519.SH"}, [])
    assert validate_args(schema, payload["args"], {"shares": "50", "limit": "abc", "code": "000001.SZ"})[1] == [
        "code cannot be edited", "Shares must be at least 100", "Limit price must be a number, not 'abc'"]


def test_status_message_has_a_stop_button_while_running_and_none_after() -> None:
    running = status_message("slack-abc", ":hourglass_flowing_sand: planning …")
    blocks = _valid(running)
    button = blocks[1]["elements"][0]
    assert button["action_id"] == "run_stop" and json.loads(button["value"]) == {"t": "slack-abc"}
    finished = _valid(status_message("slack-abc", ":white_check_mark: done", running=False))
    assert [b["type"] for b in finished] == ["section"]


class _Names:
    @staticmethod
    def person(user: str) -> str:
        return {"UALICE": "alice"}.get(user, user)

    @staticmethod
    def channel(channel: str) -> str:
        return "#quant"


def test_people_and_channel_accounts_are_mentions_and_links_in_mrkdwn_and_names_elsewhere() -> None:
    message = {"text": "Order by UALICE in C0QUANT", "blocks": [
        {"type": "header", "text": {"type": "plain_text", "text": "Account C0QUANT"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "by UALICE in C0QUANT, desk-b and UALICEX; 由UALICE下单"
                                                               " · <https://x.slack.com/archives/C0QUANT|thread>"
                                                               "\n```approved by UALICE```"}},
        {"type": "actions", "elements": [{"type": "button", "action_id": "a", "value": "UALICE C0QUANT",
                                          "text": {"type": "plain_text", "text": "Ask UALICE"}}]}]}
    shown = dressed(message, ["UALICE"], ["C0QUANT", "desk-b"], _Names())
    assert shown["text"] == "Order by alice in #quant"  # the notification: plain names
    header, section, actions = shown["blocks"]
    assert header["text"]["text"] == "Account #quant"
    assert section["text"]["text"] == ("by <@UALICE> in <#C0QUANT>, desk-b and UALICEX; 由<@UALICE>下单 · "
                                       "<https://x.slack.com/archives/C0QUANT|thread>\n```approved by alice```")
    assert actions["elements"][0]["value"] == "UALICE C0QUANT" and actions["elements"][0]["text"]["text"] == \
        "Ask alice"
    assert dressed({"text": "asked by UALICE"}, ["UALICE"], [])["text"] == "asked by <@UALICE>"  # no blocks
    view = ResultView(title="Paper account C0QUANT", summary="Equity", facts=[("Decided by", "UALICE")],
                      users=["UALICE"], accounts=["C0QUANT"])
    blocks = _valid(view_message(view, _Names()))
    assert blocks[0]["text"]["text"] == "Paper account #quant" and blocks[2]["fields"][0]["text"] == \
        "*Decided by*\n<@UALICE>"
