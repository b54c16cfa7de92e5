"""A question, code review or order card whose post Slack refuses (HTTP 500, then `ratelimited`, then
`msg_too_long`) against a real `quantdesk serve` on PostgreSQL, with the reconciler at its default interval: the
message gets there through all three faults, once, and the reply or click resumes the run (issue 12). A review
or approval whose blocks Slack refuses keeps its buttons (header and buttons only), with the details as a file
beside it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from testkit.fakes.slack_server import Call, Fault, SlackServer
from testkit.pg import migrated_pg_database
from testkit.slack import (
    BotProcess,
    action_body,
    blocks_valid,
    button_of,
    event_body,
    in_thread,
    mention,
    message,
    new_ts,
    post,
    result_call,
    text_of,
)

ALICE, TRADER = "UALICE", "UTRADER"
FORM = "application/x-www-form-urlencoded"
APPEARS_WITHIN = 120.0  # seconds before the test gives up: a deadline for a hung run, not a speed target


@dataclass(frozen=True)
class Case:
    request: str
    is_message: Callable[[dict[str, Any]], bool]  # which posts are the question (the faults apply to these)
    answer: str | None  # a thread reply answers it; None: the first button (approve) decides it
    user: str
    result: str  # the result's text starts with this


def _blocks_text(args: dict[str, Any]) -> str:
    return json.dumps(args.get("blocks") or "")


CASES = {
    "clarify question, answered by a reply": Case(
        "signal ma_cross 600519.SH 20190101", lambda a: ":question:" in _blocks_text(a)
        or str(a.get("text", "")).startswith("Which date range"), "20190101 20200601", ALICE, "Signal ma_cross"),
    "code review, approved by a click": Case(
        "factor momentum 20190301 20200601 window=20 name=refused_review",
        lambda a: str(a.get("text", "")).startswith("Code review for factor"), None, ALICE,
        "Factor refused_review v1 saved"),
    "order card, approved by a trader's click": Case(
        "order 600519.SH buy 100", lambda a: str(a.get("text", "")).startswith("Approval needed: "), None, TRADER,
        "Order "),
}


@pytest.fixture(scope="module")
def bot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SlackServer, BotProcess]]:
    """One `quantdesk serve` on a migrated PostgreSQL database of its own, at the default reconcile interval."""
    with migrated_pg_database() as url, SlackServer() as slack:
        process = BotProcess(slack.url, url, tmp_path_factory.mktemp("faults"), QUANTDESK_TRADERS=TRADER)
        try:
            yield slack, process
        finally:
            process.stop()


@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_question_gets_there_once_and_its_answer_resumes_the_run(
        bot: tuple[SlackServer, BotProcess], name: str) -> None:
    slack, process = bot
    case, channel, root = CASES[name], f"CFAULT{list(CASES).index(name)}", new_ts()
    where = case.is_message
    slack.fake.inject("chat.postMessage", Fault.server_error(500, where=where), Fault.ratelimited(where=where),
                      Fault.slack_error("msg_too_long", where=where))
    status, _ = post(process.url, event_body(mention(channel, ALICE, case.request, root)), "application/json")
    assert status == 200

    def shown(call: Call) -> bool:
        return in_thread(channel, root)(call) and call.ok and case.is_message(call.args)

    (question,) = slack.fake.wait_for("chat.postMessage", where=shown, timeout=APPEARS_WITHIN)
    assert slack.fake.pending_faults("chat.postMessage") == []  # it got there through all three faults
    refused = [c.fault for c in slack.fake.of("chat.postMessage") if c.fault and in_thread(channel, root)(c)]
    assert [(f.status, f.error) for f in refused] == [(500, "internal_error"), (429, "ratelimited"),
                                                      (200, "msg_too_long")]
    if case.answer is not None:  # no buttons to keep: the plain text, and a reply answers it
        assert "plain text" in text_of(question) and "blocks" not in question.args
        status, _ = post(process.url, event_body(message(channel, ALICE, case.answer, new_ts(), thread_ts=root)),
                         "application/json")
    else:  # the header and the buttons, the details as a file beside them
        blocks = blocks_valid(question)
        assert blocks[0]["type"] == "header" and "refused the full message" in json.dumps(blocks)
        details = slack.fake.wait_for("files.completeUploadExternal", where=lambda c: c.args.get("thread_ts") == root)
        assert "(details)" in json.dumps(details[0].args)
        status, _ = post(process.url, action_body(case.user, channel, question.response["ts"], root,
                                                  button_of(question, "review_approve")), FORM)
    assert status == 200
    result = result_call(slack, channel, root, case.result)
    blocks_valid(result)
    results = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c) and c.ok
               and text_of(c).startswith(case.result)]
    assert len(results) == 1
    assert "Traceback" not in process.output(), process.output()[-3000:]
