"""The real Bolt app behind `quantdesk serve` (HTTP mode): signed requests in over HTTP, a fake Slack Web API
recording every call out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from slack_sdk.models.views import View

from bot.stores.decisions import DecisionStore
from bot.stores.threads import AuditLog, ThreadRegistry, thread_id_for
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.slack import (
    BotProcess,
    action_body,
    blocks_valid,
    button_of,
    command_body,
    event_body,
    in_thread,
    mention,
    message,
    new_ts,
    post,
    question_call,
    review_call,
    view_body,
)
from testkit.wait import wait_until
from tools.factors.store import FactorStore
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine

ALICE, BOB, CAROL = "UALICE", "UBOB", "UCAROL"
BOT_ENV = {"QUANTDESK_APPROVERS": CAROL}


def test_mention_clarify_reply_result_with_chart(slack: SlackServer, bot: BotProcess) -> None:
    channel, root = "C100", new_ts()
    status, _ = post(bot.url, event_body(mention(channel, ALICE, "signal rsi 600519.SH", root)), "application/json")
    assert status == 200
    question = question_call(slack, channel, root)
    assert "date range" in question.args["text"]
    blocks_valid(question)
    post(bot.url, event_body(message(channel, ALICE, "20190101 20200601", new_ts(), thread_ts=root)),
         "application/json")
    result = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                                 and str(c.args.get("text", "")).startswith("Signal rsi"))[0]
    blocks = blocks_valid(result)
    assert blocks[0]["type"] == "header"
    complete = slack.fake.wait_for("files.completeUploadExternal", where=lambda c: c.args.get("channel_id") == channel
                                   and c.args.get("thread_ts") == root)[0]
    files = complete.args["files"]
    files = json.loads(files) if isinstance(files, str) else files
    assert len(files) == 3
    uploads = {c.args["file_id"]: c.body for c in slack.fake.of("upload")}
    assert any(body[:8] == b"\x89PNG\r\n\x1a\n" for f in files if (body := uploads.get(f["id"])))
    # the question was updated to show who answered, without buttons
    updated = slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == question.response["ts"]
                                  and "blocks" in c.args)[0]
    assert "UALICE" in json.dumps(updated.args["blocks"]) and "actions" not in json.dumps(updated.args["blocks"])


def test_slash_command_starts_a_thread(slack: SlackServer, bot: BotProcess) -> None:
    channel = "C200"
    response_url = slack.url.replace("/api/", "/respond/cmd1")
    status, body = post(bot.url, command_body("signal ma_cross 000001.SZ,600000.SH 20190101 20200601", channel, BOB,
                                              response_url), "application/x-www-form-urlencoded")
    assert status == 200 and body == ""
    root_call = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                    and "thread_ts" not in c.args)[0]
    assert "asked: `/quant signal ma_cross" in root_call.args["text"]
    slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                        and str(c.args.get("text", "")).startswith("Signal ma_cross"))


def test_help_and_unknown_subcommands_are_ephemeral(slack: SlackServer, bot: BotProcess) -> None:
    for text, expected in [("help", "`signal STRATEGY"), ("factor list", "No factors saved yet"),
                           ("factor show nothing_here", "No factor named 'nothing_here'"),
                           ("lang", "Usage: `lang zh`")]:
        url = slack.url.replace("/api/", f"/respond/{text.split()[0]}")
        post(bot.url, command_body(text, "C300", BOB, url), "application/x-www-form-urlencoded")
        reply = slack.fake.wait_for("respond", where=lambda c, t=expected: t in c.args.get("text", ""))[0]
        assert reply.args["response_type"] == "ephemeral"


def test_not_in_channel_explains_how_to_invite(slack: SlackServer, bot: BotProcess) -> None:
    slack.fake.not_in_channels.add("C404")
    url = slack.url.replace("/api/", "/respond/invite")
    post(bot.url, command_body("signal rsi 600519.SH 20190101 20200101", "C404", BOB, url),
         "application/x-www-form-urlencoded")
    reply = slack.fake.wait_for("respond", where=lambda c: "/invite @QuantDesk" in c.args.get("text", ""))[0]
    assert reply.args["response_type"] == "ephemeral"


def test_retries_and_double_delivery_start_one_run(slack: SlackServer, bot: BotProcess) -> None:
    channel, ts = "C500", new_ts()
    event = mention(channel, ALICE, "signal rsi 600519.SH", ts)
    body = event_body(event, event_id="EvDUP1")
    post(bot.url, body, "application/json")
    post(bot.url, body, "application/json", retry=1)
    post(bot.url, body, "application/json", retry=2)
    post(bot.url, event_body(message(channel, ALICE, event["text"], ts)), "application/json")  # message twin
    question_call(slack, channel, ts)
    # The marker: an answer sent after every copy was delivered. It is handled under the same thread lock after
    # anything a copy could have started, so once its result is in, a copy that got through would have shown:
    # a second run's status here, or (the thread now waits on a question) a new top-level "asked:" thread.
    post(bot.url, event_body(message(channel, ALICE, "20190101 20200601", new_ts(), thread_ts=ts)),
         "application/json")
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, ts)(c)
                        and str(c.args.get("text", "")).startswith("Signal rsi"))
    posted = [c for c in slack.fake.of("chat.postMessage") if c.args.get("channel") == channel]
    working = [c for c in posted if in_thread(channel, ts)(c) and "working" in str(c.args.get("text"))]
    assert len(working) == 2  # the first run and the answer's resume, nothing for the three copies
    assert len([c for c in posted if ":question:" in json.dumps(c.args.get("blocks") or "")]) == 1
    assert [c for c in posted if "thread_ts" not in c.args] == []  # no copy was taken for a new request


def test_buttons_authorisation_and_double_click(slack: SlackServer, bot: BotProcess) -> None:
    channel, root = "C600", new_ts()
    post(bot.url, event_body(mention(channel, ALICE, "signal 600519.SH,000001.SZ,600036.SH 20190101 20200601", root)),
         "application/json")
    question = question_call(slack, channel, root)
    blocks = blocks_valid(question)
    button = next(e for b in blocks if b["type"] == "actions" for e in b["elements"]
                  if e["text"]["text"] == "momentum")
    message_ts = question.response["ts"]
    action = {"action_id": button["action_id"], "block_id": "clarify_0", "value": button["value"],
              "text": button["text"]}
    post(bot.url, action_body(BOB, channel, message_ts, root, action), "application/x-www-form-urlencoded")
    refusal = slack.fake.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") == BOB
                                  and c.args.get("channel") == channel)[0]
    assert "Only the person who started this request" in refusal.args["text"]
    # whether the refused click claimed or resumed anything shows below: had it, both later clicks would hear
    # "Already handled." (there would be one "handled" too many) and the thread would have a second resume
    post(bot.url, action_body(CAROL, channel, message_ts, root, action), "application/x-www-form-urlencoded")
    post(bot.url, action_body(ALICE, channel, message_ts, root, action), "application/x-www-form-urlencoded")
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                        and str(c.args.get("text", "")).startswith("Signal momentum"))
    # the approver and the requester clicked at once: exactly one wins, the other hears "Already handled."
    handled = slack.fake.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") in (ALICE, CAROL)
                                  and c.args.get("channel") == channel)
    assert [c.args["text"] for c in handled] == ["Already handled."]
    post(bot.url, action_body(ALICE, channel, message_ts, root, action), "application/x-www-form-urlencoded")
    stale = slack.fake.wait_for("chat.postEphemeral", 2, where=lambda c: c.args.get("user") in (ALICE, CAROL)
                                and c.args.get("channel") == channel)
    assert stale[1].args["text"] == "Already handled."  # a click on an answered question
    results = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
               and str(c.args.get("text", "")).startswith("Signal momentum")]
    assert len(results) == 1
    working = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
               and "working" in str(c.args.get("text"))]
    assert len(working) == 2  # the first run and one resume: neither BOB's refused click nor the loser resumed


def test_upload_failure_is_reported_and_loses_nothing(slack: SlackServer, bot: BotProcess) -> None:
    slack.fake.fail_uploads = True
    try:
        channel, root = "C700", new_ts()
        post(bot.url, event_body(mention(channel, ALICE, "signal channel 600519.SH 20190101 20200601", root)),
             "application/json")
        note = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                                   and "could not upload" in str(c.args.get("text", "")))[0]
        assert "kept" in note.args["text"] and ".png" in note.args["text"] and "/" not in note.args["text"]
        store = ArtifactStore(make_engine(bot.database_url))  # the files are in the database, for any replica
        charts = [a for a in store.list(thread_id_for(TEAM, channel, root)) if a["kind"] == "chart"]
        assert charts and store.get(charts[0]["id"]).data[:4] == b"\x89PNG"
    finally:
        slack.fake.fail_uploads = False


def test_bad_signature_is_rejected(bot: BotProcess) -> None:
    import urllib.request

    body = event_body(mention("C1", ALICE, "hi", new_ts()))
    request = urllib.request.Request(bot.url, data=body.encode(), method="POST", headers={
        "Content-Type": "application/json", "X-Slack-Request-Timestamp": str(int(time.time())),
        "X-Slack-Signature": "v0=deadbeef"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 401


def test_direct_messages_work_like_mentions(slack: SlackServer, bot: BotProcess) -> None:
    channel, ts = "D900", new_ts()
    post(bot.url, event_body(message(channel, ALICE, "signal bollinger 600519.SH 20190101 20200601", ts,
                                     channel_type="im")), "application/json")
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, ts)(c)
                        and str(c.args.get("text", "")).startswith("Signal bollinger"))


def test_two_replies_at_once_are_serialised(slack: SlackServer, bot: BotProcess) -> None:
    import threading

    channel, root = "C800", new_ts()
    post(bot.url, event_body(mention(channel, ALICE, "signal rsi 600519.SH 20190101 20200601", root)),
         "application/json")
    done = lambda c: in_thread(channel, root)(c) and str(c.args.get("text", "")).startswith("Signal ")  # noqa: E731
    slack.fake.wait_for("chat.postMessage", where=done)
    replies = [event_body(message(channel, ALICE, text, new_ts(), thread_ts=root))
               for text in ("window=10", "window=20")]
    senders = [threading.Thread(target=post, args=(bot.url, body, "application/json")) for body in replies]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join()
    slack.fake.wait_for("chat.postMessage", 3, where=done)
    thread_calls = [c for c in slack.fake.calls if c.method == "chat.postMessage" and in_thread(channel, root)(c)]
    kinds = ["start" if "working" in str(c.args.get("text")) else "end" for c in thread_calls
             if "working" in str(c.args.get("text")) or done(c)]
    assert kinds == ["start", "end"] * 3  # each run finished before the next one started


def test_a_paused_run_is_resumed_by_a_click_in_a_new_process(slack: SlackServer, pg_url: str,
                                                             tmp_path: Path) -> None:
    """SIGKILL while the run waits on a question; a new process on the same database takes the click."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUANTDESK_", "DATABASE_"))}
    upgraded = subprocess.run([sys.executable, "-m", "bot.cli", "db", "upgrade"], capture_output=True, text=True,
                              env={**env, "DATABASE_URL": pg_url, "QUANTDESK_DATA_DIR": str(tmp_path)})
    assert upgraded.returncode == 0, upgraded.stderr
    channel, root = "C950", new_ts()
    thread_id = thread_id_for(TEAM, channel, root)
    registry = ThreadRegistry(make_engine(pg_url))
    first = BotProcess(slack.url, pg_url, tmp_path / "a")
    try:
        post(first.url, event_body(mention(channel, ALICE, "signal 600519.SH,000001.SZ,600036.SH 20190101 "
                                                           "20200601", root)), "application/json")
        question = question_call(slack, channel, root)
        # paused: the registry holds the question's message, the run is over; now the process dies uncleanly
        wait_until(lambda: (info := registry.get(thread_id)) is not None and info.status == "waiting"
                   and any(p.get("ts") == question.response["ts"] for p in info.pending.values()),
                   "the registry to record the pending question")
    finally:
        status = first.kill()
    assert status == -signal.SIGKILL
    blocks = blocks_valid(question)
    button = next(e for b in blocks if b["type"] == "actions" for e in b["elements"]
                  if e["text"]["text"] == "mean_reversion")
    action = {"action_id": button["action_id"], "block_id": "clarify_0", "value": button["value"],
              "text": button["text"]}
    second = BotProcess(slack.url, pg_url, tmp_path / "b")
    try:
        post(second.url, action_body(ALICE, channel, question.response["ts"], root, action),
             "application/x-www-form-urlencoded")
        is_result = lambda c: in_thread(channel, root)(c) and str(c.args.get("text", "")).startswith(  # noqa: E731
            "Signal mean_reversion")
        result = slack.fake.wait_for("chat.postMessage", where=is_result)[0]
        blocks_valid(result)
        # a second click after the restart is "already handled"; the first decision stays the only one
        post(second.url, action_body(ALICE, channel, question.response["ts"], root, action),
             "application/x-www-form-urlencoded")
        slack.fake.wait_for("chat.postEphemeral", where=lambda c: c.args.get("channel") == channel
                            and c.args.get("text") == "Already handled.")
        wait_until(lambda: registry.get(thread_id).status == "done", "the thread to be marked done")
    finally:
        second.stop()
    assert len([c for c in slack.fake.of("chat.postMessage") if is_result(c)]) == 1
    answered = [c for c in slack.fake.of("chat.update") if c.args.get("ts") == question.response["ts"]]
    assert len(answered) == 1 and "mean_reversion" in json.dumps(answered[0].args["blocks"])
    engine = make_engine(pg_url)
    assert [e["action"] for e in AuditLog(engine).entries(thread_id)] == ["respond"]


def _opened_view(slack: SlackServer, n: int) -> dict:
    call = slack.fake.wait_for("views.open", n)[n - 1]
    view = call.args["view"]
    view = json.loads(view) if isinstance(view, str) else view
    View(**view).validate_json()
    return view


def test_factor_review_edit_modal_uses_the_edited_code(slack: SlackServer, bot: BotProcess) -> None:
    channel, root = "C700", new_ts()
    post(bot.url, event_body(mention(channel, ALICE, "factor momentum 20190301 20200601 window=20 name=slack_mom",
                                     root)), "application/json")
    first = review_call(slack, channel, root)
    assert "return close / close.shift(20) - 1" in json.dumps(first.args["blocks"])
    approve = button_of(first, "review_approve")
    # someone else may not decide
    post(bot.url, action_body(BOB, channel, first.response["ts"], root, approve), "application/x-www-form-urlencoded")
    slack.fake.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") == BOB
                        and "Only the person who started" in c.args.get("text", ""))
    # Edit opens a modal prefilled with the body
    views_before = len(slack.fake.of("views.open"))
    post(bot.url, action_body(ALICE, channel, first.response["ts"], root, button_of(first, "review_edit")),
         "application/x-www-form-urlencoded")
    view = _opened_view(slack, views_before + 1)
    assert view["blocks"][1]["element"]["initial_value"] == "return close / close.shift(20) - 1\n"
    metadata = view["private_metadata"]
    # a forbidden import is refused inside the modal, before anything runs
    status, body = post(bot.url, view_body(ALICE, "review_edit_modal", metadata,
                                           {"code": {"code": "import os\nreturn os.environ"}}),
                        "application/x-www-form-urlencoded")
    assert status == 200 and json.loads(body)["response_action"] == "errors"
    assert "import of 'os' is not allowed" in json.loads(body)["errors"]["code"]
    # code nested too deeply to parse or check is refused in the form too, and the bot serves the next request
    for depth in (500, 100_000):  # a RecursionError and a MemoryError inside the parser or the check (issue 38)
        status, body = post(bot.url, view_body(ALICE, "review_edit_modal", metadata,
                                               {"code": {"code": "return " + "-" * depth + "close"}}),
                            "application/x-www-form-urlencoded")
        assert status == 200 and json.loads(body)["errors"]["code"] == (
            "line 1: the code is nested too deeply or is too large to check")
    # a broken edit is dry-run, refused and asked again with the failure shown
    broken = view_body(ALICE, "review_edit_modal", metadata, {"code": {"code": "return close.stack()"}})
    status, body = post(bot.url, broken, "application/x-www-form-urlencoded")
    assert status == 200 and body == ""
    second = review_call(slack, channel, root, 2)
    assert "Checks failed" in json.dumps(second.args["blocks"]) and "review_approve" not in json.dumps(
        second.args["blocks"])
    # a second submission of the old form is "already handled", in the form
    _, stale = post(bot.url, view_body(ALICE, "review_edit_modal", metadata, {"code": {"code": "return close"}}),
                    "application/x-www-form-urlencoded")
    assert json.loads(stale)["errors"]["code"] == "Already handled."
    # a good edit, named in the form (a name the library cannot hold is refused there), is shown again
    post(bot.url, action_body(ALICE, channel, second.response["ts"], root, button_of(second, "review_edit")),
         "application/x-www-form-urlencoded")
    view = _opened_view(slack, views_before + 2)
    good = {"code": {"code": "return close / close.shift(10) - 1"}, "name": {"name": "Slack Mom"}}
    _, refused = post(bot.url, view_body(ALICE, "review_edit_modal", view["private_metadata"], good),
                      "application/x-www-form-urlencoded")
    assert json.loads(refused)["errors"]["name"].startswith("factor name 'Slack Mom': use lower-case letters")
    good["name"]["name"] = "slack_mom10"
    post(bot.url, view_body(ALICE, "review_edit_modal", view["private_metadata"], good),
         "application/x-www-form-urlencoded")
    third = review_call(slack, channel, root, 3)
    blocks = json.dumps(blocks_valid(third))
    assert "Code review: slack_mom10" in blocks and "Your edit passed its checks; approve saves it as slack_mom10" \
        in blocks
    assert "Changes against the code first reviewed" in blocks and "-return close / close.shift(20) - 1\\n+return " \
        "close / close.shift(10) - 1" in blocks
    updated = slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == second.response["ts"]
                                  and "blocks" in c.args)[0]
    assert "edited by <@UALICE>" in json.dumps(updated.args["blocks"]) and "actions" not in json.dumps(
        updated.args["blocks"])
    post(bot.url, action_body(ALICE, channel, third.response["ts"], root, button_of(third, "review_approve")),
         "application/x-www-form-urlencoded")
    result = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                                 and str(c.args.get("text", "")).startswith("Factor slack_mom10"))[0]
    assert "edit by <@UALICE>" in json.dumps(blocks_valid(result))
    slack.fake.wait_for("files.completeUploadExternal", where=lambda c: c.args.get("thread_ts") == root)
    engine = make_engine(bot.database_url)
    saved = FactorStore(engine).latest("slack_mom10")
    assert "close.shift(10)" in saved.code and saved.reviewer == ALICE and saved.decision == "edit"
    assert saved.description.startswith("Edited by UALICE from slack_mom: was `return close / close.shift(20) - 1`")
    actions = [e["action"] for e in AuditLog(engine).entries(thread_id_for(TEAM, channel, root))]
    assert actions == ["edit", "edit", "approve"]


def test_factor_reject_modal_records_the_reason(slack: SlackServer, bot: BotProcess) -> None:
    channel, root = "C710", new_ts()
    response_url = slack.url.replace("/api/", "/respond/factor1")
    post(bot.url, command_body("factor volatility 20190301 20200601 name=slack_vol", channel, ALICE, response_url),
         "application/x-www-form-urlencoded")
    root_call = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                    and "thread_ts" not in c.args)[0]
    root = root_call.response["ts"]
    review = review_call(slack, channel, root)
    views_before = len(slack.fake.of("views.open"))
    post(bot.url, action_body(CAROL, channel, review.response["ts"], root, button_of(review, "review_reject")),
         "application/x-www-form-urlencoded")  # CAROL is a configured approver
    view = _opened_view(slack, views_before + 1)
    reason = {"reason": {"reason": "too noisy"}}
    post(bot.url, view_body(CAROL, "review_reject_modal", view["private_metadata"], reason),
         "application/x-www-form-urlencoded")
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                        and str(c.args.get("text", "")).startswith("Rejected: factor slack_vol"))
    info = FactorStore(make_engine(bot.database_url)).latest("slack_vol", status=None)
    assert info.status == "rejected" and info.reviewer == CAROL and info.spec["reject_reason"] == "too noisy"


def _factor_thread(slack: SlackServer, bot: BotProcess, channel: str, text: str) -> tuple[str, object]:
    """Mention the bot with a factor request, approve its code review as ALICE; (thread root, review call)."""
    root = new_ts()
    post(bot.url, event_body(mention(channel, ALICE, text, root)), "application/json")
    review = review_call(slack, channel, root)
    post(bot.url, action_body(ALICE, channel, review.response["ts"], root, button_of(review, "review_approve")),
         "application/x-www-form-urlencoded")
    return root, review


def _approval_call(slack: SlackServer, channel: str, root: str):  # noqa: ANN202
    return slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                               and str(c.args.get("text", "")).startswith("Approval needed"))[0]


def test_saving_a_near_duplicate_asks_for_approval(slack: SlackServer, bot: BotProcess) -> None:
    channel = "C720"
    first, _ = _factor_thread(slack, bot, channel, "factor reversal 20190301 20200601 window=7 name=slack_rev_a")
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, first)(c)
                        and str(c.args.get("text", "")).startswith("Factor slack_rev_a v1 saved"))

    # the same values under another name: approval with the duplicate's details, Approve / Reject
    root, _ = _factor_thread(slack, bot, channel, "factor reversal 20190301 20200601 window=7 name=slack_rev_b")
    approval = _approval_call(slack, channel, root)
    blocks = json.dumps(blocks_valid(approval))
    assert "Approval: save slack_rev_b" in blocks and "slack_rev_a v1 (1.000)" in blocks
    assert "review_edit" not in blocks and "Reject: Nothing is saved." in blocks
    # a reply does not decide it; another user's click is refused
    post(bot.url, event_body(message(channel, ALICE, "yes save it", new_ts(), thread_ts=root)), "application/json")
    slack.fake.wait_for("chat.postEphemeral", where=lambda c: c.args.get("thread_ts") == root
                        and "waiting for approval" in c.args.get("text", ""))
    post(bot.url, action_body(BOB, channel, approval.response["ts"], root, button_of(approval, "review_approve")),
         "application/x-www-form-urlencoded")
    slack.fake.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") == BOB
                        and c.args.get("channel") == channel and "Only the person" in c.args.get("text", ""))
    # a configured approver rejects with a reason: nothing is saved
    views_before = len(slack.fake.of("views.open"))
    post(bot.url, action_body(CAROL, channel, approval.response["ts"], root, button_of(approval, "review_reject")),
         "application/x-www-form-urlencoded")
    view = _opened_view(slack, views_before + 1)
    assert "Nothing is saved." in json.dumps(view["blocks"])
    post(bot.url, view_body(CAROL, "review_reject_modal", view["private_metadata"],
                            {"reason": {"reason": "same as slack_rev_a"}}), "application/x-www-form-urlencoded")
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                        and str(c.args.get("text", "")).startswith("Not saved: factor slack_rev_b"))
    updated = slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == approval.response["ts"]
                                  and "blocks" in c.args)[0]
    assert "rejected by <@UCAROL>" in json.dumps(updated.args["blocks"])
    engine = make_engine(bot.database_url)
    assert FactorStore(engine).latest("slack_rev_b", status=None) is None
    assert [e["action"] for e in AuditLog(engine).entries(thread_id_for(TEAM, channel, root))] == ["approve", "reject"]

    # approved: saved, with the duplicate reported and the approver stored
    root, _ = _factor_thread(slack, bot, channel, "factor reversal 20190301 20200601 window=7 name=slack_rev_c")
    approval = _approval_call(slack, channel, root)
    post(bot.url, action_body(ALICE, channel, approval.response["ts"], root, button_of(approval, "review_approve")),
         "application/x-www-form-urlencoded")
    result = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                                 and str(c.args.get("text", "")).startswith("Factor slack_rev_c v1 saved"))[0]
    assert "near duplicate of slack_rev_a v1" in json.dumps(blocks_valid(result))
    assert FactorStore(engine).latest("slack_rev_c").spec["duplicate_approved_by"] == ALICE


def test_a_button_or_form_whose_value_is_not_the_bots_is_answered_plainly_and_decides_nothing(
        slack: SlackServer, bot: BotProcess) -> None:
    """Issue 28 item 21: a truncated or edited value used to raise in the listener (HTTP 500, nobody told)."""
    channel, root = "C610", new_ts()
    post(bot.url, event_body(mention(channel, ALICE, "signal 600519.SH,000001.SZ,600036.SH 20190101 20200601", root)),
         "application/json")
    question = question_call(slack, channel, root)
    button = next(e for b in blocks_valid(question) if b["type"] == "actions" for e in b["elements"])
    message_ts = question.response["ts"]
    for action_id, value in ((button["action_id"], button["value"][:-7]), ("review_approve", '{"t": "x"}'),
                             ("review_edit", "not json"), ("run_stop", "[1, 2]"), ("decision_retry", "")):
        action = {"action_id": action_id, "block_id": "b", "value": value, "text": {"type": "plain_text", "text": "x"}}
        status, _ = post(bot.url, action_body(ALICE, channel, message_ts, root, action),
                         "application/x-www-form-urlencoded")
        assert status == 200, action_id
    told = slack.fake.wait_for("chat.postEphemeral", 5, where=lambda c: c.args.get("channel") == channel)
    assert all("not one I wrote" in c.args["text"] for c in told)
    status, answer = post(bot.url, view_body(ALICE, "review_reject_modal", "{cut", {"reason": {"reason": "no"}}),
                          "application/x-www-form-urlencoded")
    assert status == 200 and "not one I opened" in answer
    engine = make_engine(bot.database_url)
    thread = ThreadRegistry(engine).get(thread_id_for(TEAM, channel, root))
    assert thread is not None and thread.status == "waiting"  # the question is still open
    assert [d for d in DecisionStore(engine).stuck() if d.thread_id == thread.thread_id] == []  # nothing recorded
    engine.dispose()
