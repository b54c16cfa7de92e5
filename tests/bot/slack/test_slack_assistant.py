"""Slack's assistant pane (issue 26, items 2 and 3) against `quantdesk serve` as a real process and the fake Slack
Web API: a new assistant thread gets four suggested prompts that work as typed, new ones when the person looks at a
channel with an account; a request typed there runs once as that thread's run, names the thread, shows its status
in the pane (set, set again, cleared before the result; no status message), and a question pauses with the status
cleared; a command is answered in the thread at once, once."""

from __future__ import annotations

import json
from typing import Any

from testkit.fakes.slack_server import TEAM, Call, SlackServer
from testkit.slack import BotProcess, command_body, event_body, in_thread, message, new_ts, post, text_of
from testkit.wait import wait_until

ALICE = "UALICE"
DM = "DASSIST"
FORM = "application/x-www-form-urlencoded"
SIGNAL = "signal ma_cross 000001.SZ,600000.SH 20200101 20200630 fast=5 slow=20"


BOT_ENV = {"QUANTDESK_ASSISTANT_STATUS_REFRESH": "0.2",
           "QUANTDESK_ACCOUNT_ADMINS": f"CVIEW={ALICE}"}  # naming an account needs a role on it


def _thread_event(kind: str, thread_ts: str, channel_in_view: str | None = None,
                  user: str = ALICE) -> dict[str, Any]:
    context = {"team_id": TEAM, **({"channel_id": channel_in_view} if channel_in_view else {})}
    return {"type": kind, "event_ts": thread_ts,
            "assistant_thread": {"user_id": user, "context": context, "channel_id": DM, "thread_ts": thread_ts}}


def _prompts(slack: SlackServer, thread_ts: str, n: int = 1) -> list[dict[str, str]]:
    calls = slack.fake.wait_for("assistant.threads.setSuggestedPrompts", n,
                                where=lambda c: c.args.get("thread_ts") == thread_ts)
    prompts = calls[n - 1].args["prompts"]
    return json.loads(prompts) if isinstance(prompts, str) else prompts


def _type(bot: BotProcess, thread_ts: str, text: str, ts: str | None = None, retry: int | None = None) -> str:
    ts = ts or new_ts()
    status, _ = post(bot.url, event_body(message(DM, ALICE, text, ts, thread_ts=thread_ts, channel_type="im")),
                     "application/json", retry=retry)
    assert status == 200
    return ts


def _statuses(slack: SlackServer, thread_ts: str) -> list[Call]:
    return [c for c in slack.fake.calls if c.method == "assistant.threads.setStatus"
            and c.args.get("thread_ts") == thread_ts]


def _index(slack: SlackServer, call: Call) -> int:
    return next(i for i, c in enumerate(slack.fake.calls) if c is call)


def test_a_new_thread_gets_prompts_that_work(slack: SlackServer, bot: BotProcess) -> None:
    thread_ts = new_ts()
    post(bot.url, event_body(_thread_event("assistant_thread_started", thread_ts)), "application/json")
    prompts = _prompts(slack, thread_ts)
    assert [p["title"] for p in prompts] == ["A signal", "An analysis", "A factor", "What waits for me"]
    assert all(p["message"] for p in prompts)

    _type(bot, thread_ts, "status")  # "What waits for me"
    reply = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(DM, thread_ts)(c))[0]
    assert text_of(reply) == "You have no open QuantDesk threads."

    # looking at a channel that has a paper account: its account is offered, to one with a role on it, and works
    hook = slack.url.replace("/api/", "/respond/acct")
    post(bot.url, command_body("account", "CVIEW", ALICE, hook), FORM)
    slack.fake.wait_for("respond", where=lambda c: c.args.get("_hook") == "acct")
    post(bot.url, event_body(_thread_event("assistant_thread_context_changed", thread_ts, "CVIEW")),
         "application/json")
    prompts = _prompts(slack, thread_ts, 2)
    assert {"title": "My account", "message": "account CVIEW"} in prompts
    _type(bot, thread_ts, "account CVIEW")
    account = wait_until(lambda: [c for c in slack.fake.of("chat.postMessage") if in_thread(DM, thread_ts)(c)
                                  and text_of(c).startswith("Equity ")], "the account in the thread")
    assert "1,000,000.00" in text_of(account[0])

    # someone with no role on that account is offered a factor instead (naming it would be refused)
    other = new_ts()
    post(bot.url, event_body(_thread_event("assistant_thread_context_changed", other, "CVIEW", "UBOB")),
         "application/json")
    assert [p["title"] for p in _prompts(slack, other)] == ["A signal", "An analysis", "A factor",
                                                             "What waits for me"]


def test_a_request_runs_once_with_its_status_set_refreshed_and_cleared(slack: SlackServer, bot: BotProcess) -> None:
    thread_ts = new_ts()
    post(bot.url, event_body(_thread_event("assistant_thread_started", thread_ts)), "application/json")
    typed = _type(bot, thread_ts, SIGNAL)
    _type(bot, thread_ts, SIGNAL, ts=typed, retry=1)  # Slack delivers it again
    result = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(DM, thread_ts)(c) and c.ok
                                 and text_of(c).startswith("Signal "))[0]
    statuses = _statuses(slack, thread_ts)
    texts = [c.args["status"] for c in statuses]
    assert texts[-1] == "" and all(texts[:-1]) and len(texts) >= 3, texts  # set, set again, then cleared
    assert texts[0].startswith("is working")
    assert _index(slack, statuses[-1]) < _index(slack, result)  # cleared before the result
    posts = [c for c in slack.fake.of("chat.postMessage") if in_thread(DM, thread_ts)(c)]
    assert not [c for c in posts if "working" in text_of(c)]  # the pane shows the status, not a message
    assert len([c for c in posts if text_of(c).startswith("Signal ")]) == 1  # handled once
    titles = [c for c in slack.fake.of("assistant.threads.setTitle") if c.args.get("thread_ts") == thread_ts]
    assert [c.args["title"] for c in titles] == [SIGNAL]


def test_a_question_pauses_with_the_status_cleared(slack: SlackServer, bot: BotProcess) -> None:
    thread_ts = new_ts()
    _type(bot, thread_ts, "signal rsi 600519.SH")  # no dates: it asks which
    question = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(DM, thread_ts)(c)
                                   and ":question:" in json.dumps(c.args.get("blocks")))[0]
    statuses = _statuses(slack, thread_ts)
    cleared = [c for c in statuses if c.args["status"] == ""]
    assert cleared and _index(slack, cleared[0]) < _index(slack, question)
    assert all(_index(slack, c) < _index(slack, cleared[0]) for c in statuses if c.args["status"])
