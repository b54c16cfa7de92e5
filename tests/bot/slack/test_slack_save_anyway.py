"""A scripted Slack session on the real Bolt app and the fake Slack API: a factor the library gate refuses (the
threshold set out of reach) is saved anyway with a reason typed in its thread; the reason shows on the factor's
Home row and in the audit export."""

from __future__ import annotations

import io
import json

import bot.stores.records  # noqa: F401 - audit_log's table, which the export reads beside order_events
from testkit.fakes.slack_server import SlackServer
from testkit.slack import (
    BotProcess,
    action_body,
    button_of,
    event_body,
    home_opened,
    in_thread,
    mention,
    message,
    new_ts,
    post,
    result_call,
    review_call,
    text_of,
)
from testkit.wait import wait_until
from tools.audit.export import export_csv
from tools.storage.db import make_engine

BOT_ENV = {"QUANTDESK_DSR_THRESHOLD": "0.999999"}
ALICE = "UALICE"
NAME = "anyway_rev3"
REASON = "a textbook short-term reversal; watching its decay"


def _posted(call_args: dict) -> str:
    return json.dumps(call_args, ensure_ascii=False)


def test_a_factor_saved_over_the_gate_with_a_reason(slack: SlackServer, bot: BotProcess) -> None:
    channel, root = "C4200", new_ts()
    status, _ = post(bot.url, event_body(mention(channel, ALICE, f"factor reversal 20190301 20200601 window=3 "
                                                              f"name={NAME}", root)), "application/json")
    assert status == 200
    review = review_call(slack, channel, root)
    post(bot.url, action_body(ALICE, channel, review.response["ts"], root, button_of(review, "review_approve")),
         "application/x-www-form-urlencoded")
    result = result_call(slack, channel, root, f"Factor {NAME}")
    shown = _posted(result.args)
    assert "Not in the team library: deflated Sharpe: probability" in shown and "below the threshold 1.00" in shown
    assert f"factor save {NAME} REASON" in shown
    reply_ts = new_ts()
    status, _ = post(bot.url, event_body(message(channel, ALICE, f"factor save {NAME} {REASON}", reply_ts,
                                                 thread_ts=root)), "application/json")
    assert status == 200
    (saved,) = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                                   and "saved to the team library anyway" in _posted(c.args))
    assert REASON in _posted(saved.args)
    status, _ = post(bot.url, event_body(home_opened(ALICE)), "application/json")
    assert status == 200
    row = f"in the team library, saved anyway by <@{ALICE}>: {REASON}"  # the saver named as a mention
    home = wait_until(lambda: (view := slack.fake.home(ALICE)) is not None and row in _posted(view) and view,
                      "the Home row with the reason")
    assert NAME in _posted(home)
    exported = io.StringIO()
    export_csv(make_engine(bot.database_url), "global", None, exported)
    (audited,) = [line for line in exported.getvalue().splitlines() if "saved anyway" in line]
    assert REASON in audited and NAME in audited and ALICE in audited
    assert text_of(result).startswith(f"Factor {NAME}")
