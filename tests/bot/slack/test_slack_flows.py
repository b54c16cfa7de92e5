"""Slack flows on the real Bolt app (HTTP mode, signed requests) against the fake Slack Web API: a new request typed
into a waiting thread, progress from the nodes on the status message, the registry's help and not-available
answers, what results show, and Slack failing under the progress updates."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest

from graphs.registry import COMMANDS, WORKFLOWS
from testkit.fakes.slack_server import Call, Fault, SlackServer
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
    result_call,
    review_call,
    text_of,
)

ALICE, BOB = "UALICE", "UBOB"
WORKING = ":hourglass_flowing_sand: working…"
DONE = ":white_check_mark: done"
WAITING = ":speech_balloon: waiting for your answer"
SIGNAL_REQUEST = "signal ma_cross 000001.SZ,600000.SH 20200101 20200630"
SIGNAL_STEPS = ["planning", "data", "signal", "checks", "backtest and chart"]
@pytest.fixture(autouse=True)
def _no_faults_left_behind(slack: SlackServer) -> Iterator[None]:
    yield
    slack.fake.clear_faults()


def _post_event(bot: BotProcess, event: dict) -> None:
    status, _ = post(bot.url, event_body(event), "application/json")
    assert status == 200


def _command(slack: SlackServer, bot: BotProcess, text: str, channel: str, user: str = BOB) -> Call:
    """Run `/quant TEXT`; the ephemeral answer it got on its response_url."""
    hook = f"cmd{new_ts()}"
    status, body = post(bot.url, command_body(text, channel, user, slack.url.replace("/api/", f"/respond/{hook}")),
                        "application/x-www-form-urlencoded")
    assert status == 200 and body == ""
    (reply,) = slack.fake.wait_for("respond", where=lambda c: c.args.get("_hook") == hook)
    return reply


def _status_calls(slack: SlackServer, channel: str, root: str) -> list[Call]:
    """The thread's status messages ("working…"), in the order they were posted."""
    return [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c) and text_of(c) == WORKING]


def _updates_of(slack: SlackServer, channel: str, ts: str) -> list[Call]:
    return [c for c in slack.fake.of("chat.update") if c.args.get("channel") == channel and c.args.get("ts") == ts]


def _steps(update_text: str) -> list[str]:
    """The step labels a progress update shows: ":hourglass_flowing_sand: a → b (detail) …" -> ["a", "b (detail)"]."""
    assert update_text.startswith(":hourglass_flowing_sand: ") and update_text.endswith(" …"), update_text
    return update_text.removeprefix(":hourglass_flowing_sand: ").removesuffix(" …").split(" → ")


def _label(step: str) -> str:
    return step.split(" (")[0]


def _progress_of(updates: list[Call]) -> list[list[str]]:
    return [_steps(text_of(c)) for c in updates if text_of(c).startswith(":hourglass_flowing_sand: ")]


def _assert_grows(progress: list[list[str]]) -> None:
    """Each update repeats the steps before it and adds one, or gives the last step new detail."""
    for before, after in zip(progress, progress[1:], strict=False):
        assert after[:len(before) - 1] == before[:-1], (before, after)
        grew = len(after) == len(before) + 1 and after[len(before) - 1] == before[-1]
        new_detail = len(after) == len(before) and _label(after[-1]) == _label(before[-1])
        assert grew or new_detail, (before, after)


# --- a complete new request typed into a thread that waits on a question ----------------------------------------


def test_a_new_request_in_a_waiting_thread_starts_its_own_thread(slack: SlackServer, bot: BotProcess) -> None:
    channel, root = "C1100", new_ts()
    _post_event(bot, mention(channel, ALICE, "signal rsi 600519.SH", root))
    question = question_call(slack, channel, root)
    assert "date range" in text_of(question)
    blocks_valid(question)

    _post_event(bot, message(channel, ALICE, SIGNAL_REQUEST, new_ts(), thread_ts=root))
    top = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                              and "thread_ts" not in c.args and c.ok)[0]
    assert text_of(top) == f"<@{ALICE}> asked: `{SIGNAL_REQUEST}`"
    new_root = top.response["ts"]
    result = result_call(slack, channel, new_root, "Signal ma_cross")
    assert blocks_valid(result)[0]["type"] == "header"
    note = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                               and "its own thread" in text_of(c))[0]
    assert "still open" in text_of(note)
    # the old thread ran nothing for it: one status (its first run), no result, its question untouched
    assert len(_status_calls(slack, channel, root)) == 1
    assert not [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
                and text_of(c).startswith("Signal ")]
    assert _updates_of(slack, channel, question.response["ts"]) == []

    # the old question is still open, and its answer finishes the old request in the old thread
    _post_event(bot, message(channel, ALICE, "20190101 20200601", new_ts(), thread_ts=root))
    old_result = result_call(slack, channel, root, "Signal rsi")
    blocks_valid(old_result)
    answered = slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == question.response["ts"])[0]
    assert f"<@{ALICE}>" in json.dumps(answered.args["blocks"]) and "20190101 20200601" in json.dumps(
        answered.args["blocks"])
    # one new thread, one result in each
    assert len([c for c in slack.fake.of("chat.postMessage") if c.args.get("channel") == channel
                and "thread_ts" not in c.args]) == 1
    for thread_root, prefix in ((root, "Signal rsi"), (new_root, "Signal ma_cross")):
        assert len([c for c in slack.fake.of("chat.postMessage") if in_thread(channel, thread_root)(c)
                    and text_of(c).startswith(prefix)]) == 1


# --- progress reported by the nodes ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SignalRun:
    channel: str
    root: str
    status: Call
    result: Call


@pytest.fixture(scope="module")
def signal_run(slack: SlackServer, bot: BotProcess) -> SignalRun:
    channel, root = "C1200", new_ts()
    _post_event(bot, mention(channel, ALICE, SIGNAL_REQUEST, root))
    result = result_call(slack, channel, root, "Signal ma_cross")
    (status,) = _status_calls(slack, channel, root)
    return SignalRun(channel, root, status, result)


def test_signal_progress_updates_the_status_message(slack: SlackServer, signal_run: SignalRun) -> None:
    updates = _updates_of(slack, signal_run.channel, signal_run.status.response["ts"])
    assert updates and all(c.ok for c in updates)
    assert text_of(updates[-1]) == DONE
    progress = _progress_of(updates)
    assert len(progress) == len(updates) - 1  # every update but the last shows the steps so far
    assert [_label(s) for s in progress[-1]] == SIGNAL_STEPS
    _assert_grows(progress)
    # "done" is shown before the result is posted
    assert slack.fake.calls.index(updates[-1]) < slack.fake.calls.index(signal_run.result)


@dataclass(frozen=True)
class FactorRun:
    channel: str
    root: str
    review: Call
    result: Call


@pytest.fixture(scope="module")
def factor_run(slack: SlackServer, bot: BotProcess) -> FactorRun:
    """A factor request reviewed and approved by its requester."""
    channel, root = "C1300", new_ts()
    _post_event(bot, mention(channel, ALICE, "factor momentum 20190301 20200601 window=20 name=flows_mom", root))
    review = review_call(slack, channel, root)
    post(bot.url, action_body(ALICE, channel, review.response["ts"], root, button_of(review, "review_approve")),
         "application/x-www-form-urlencoded")
    result = result_call(slack, channel, root, "Factor flows_mom")
    return FactorRun(channel, root, review, result)


def test_factor_progress_shows_dry_run_and_review(slack: SlackServer, factor_run: FactorRun) -> None:
    first, second = _status_calls(slack, factor_run.channel, factor_run.root)
    updates = _updates_of(slack, factor_run.channel, first.response["ts"])
    assert text_of(updates[-1]) == WAITING
    progress = _progress_of(updates)
    _assert_grows(progress)
    labels = [_label(s) for s in progress[-1]]
    assert labels[-1] == "review" and "dry run" in labels, labels  # the review is the last step before the pause
    assert labels.index("code") < labels.index("dry run") < labels.index("review")
    assert "dry run (attempt 1)" in progress[-1]  # the node's detail is shown with its label
    # the status is cleared ("waiting for your answer") before the review is asked
    assert slack.fake.calls.index(updates[-1]) < slack.fake.calls.index(factor_run.review)
    # after the approval, a second status message follows the rest of the run to "done"
    after = _updates_of(slack, factor_run.channel, second.response["ts"])
    assert text_of(after[-1]) == DONE
    rest = [_label(s) for s in _progress_of(after)[-1]]
    assert "evaluation" in rest and "saving" in rest and "dry run" not in rest, rest
    assert rest.index("evaluation") < rest.index("saving")


# --- the registry's answers to /quant ---------------------------------------------------------------------------


def test_help_lists_every_workflow_in_the_registry(slack: SlackServer, bot: BotProcess) -> None:
    text = _command(slack, bot, "help", "C1450").args["text"]
    assert "`signal " in text and "`factor " in text
    for workflow in WORKFLOWS.values():
        assert f"`{workflow.usage}`" in text and f"e.g. {workflow.example}" in text
        assert workflow.summary in text
        for sub in workflow.subcommands.values():
            assert f"`{sub.usage}`" in text
    for command in COMMANDS.values():
        assert f"`{command.usage}`" in text
    commands = set(re.findall(r"^• `(\w+)", text, re.MULTILINE))
    assert commands == set(WORKFLOWS) | set(COMMANDS) | {"status", "lang", "help", "pending", "cancel", "approve",
                                                          "edit", "reject"}  # nothing offered as if it worked


# --- what results show ------------------------------------------------------------------------------------------


def test_a_factor_result_names_its_reviewer_and_counts_dates(factor_run: FactorRun) -> None:
    blocks = blocks_valid(factor_run.result)
    shown = json.dumps(blocks)
    assert f"approve by <@{ALICE}>" in shown
    table = next(b["text"]["text"] for b in blocks if b["type"] == "section" and "text" in b
                 and b["text"]["text"].startswith("```") and "period" in b["text"]["text"])
    header, *rows = table.strip("`").strip().splitlines()
    columns = header.split()
    assert columns[:2] == ["period", "dates"]
    assert rows and all(re.fullmatch(r"\d+d", row.split()[0]) for row in rows)
    assert all(int(row.split()[1]) > 0 for row in rows)  # each period says over how many dates it was measured


def test_a_signal_result_compares_with_buy_and_hold(signal_run: SignalRun) -> None:
    blocks = blocks_valid(signal_run.result)
    assert re.search(r"against buy-and-hold -?\d+\.\d+%", text_of(signal_run.result)), text_of(signal_run.result)
    facts = [f["text"] for b in blocks if b["type"] == "section" for f in b.get("fields", [])]
    total = r"\*Total return\*\nstrategy -?\d+\.\d+% · buy-and-hold -?\d+\.\d+%"  # each figure named
    assert any(re.fullmatch(total, f) for f in facts), facts


# --- Slack failing under the progress updates -------------------------------------------------------------------


def _run_with_faults(slack: SlackServer, bot: BotProcess, channel: str, *faults: Fault) -> tuple[str, Call]:
    """Inject `faults` on chat.update in `channel`, run a signal request there; (thread root, result)."""
    in_channel = lambda args: args.get("channel") == channel  # noqa: E731
    slack.fake.inject("chat.update", *(replace(f, where=in_channel) for f in faults))
    root = new_ts()
    _post_event(bot, mention(channel, ALICE, SIGNAL_REQUEST, root))
    return root, result_call(slack, channel, root, "Signal ma_cross")


def test_failing_progress_updates_do_not_break_the_run(slack: SlackServer, bot: BotProcess) -> None:
    channel = "C1500"
    faults = [Fault.server_error(500), Fault.server_error(502, page=b"<html>502 Bad Gateway</html>"),
              Fault.slack_error("msg_too_long"), Fault.server_error(503), Fault.slack_error("message_not_found")]
    root, result = _run_with_faults(slack, bot, channel, *faults)
    blocks_valid(result)
    assert slack.fake.pending_faults("chat.update") == []  # every fault was met by a progress update
    (status,) = _status_calls(slack, channel, root)
    updates = _updates_of(slack, channel, status.response["ts"])
    assert [c.ok for c in updates[:len(faults)]] == [False] * len(faults)
    assert text_of(updates[-1]) == DONE and updates[-1].ok  # later updates still go out
    assert [_label(s) for s in _steps(text_of(updates[-2]))] == SIGNAL_STEPS  # no step was lost on the way
    assert "Traceback" not in bot.output()


def test_a_ratelimited_progress_update_is_retried(slack: SlackServer, bot: BotProcess) -> None:
    channel = "C1510"
    root, _result = _run_with_faults(slack, bot, channel, Fault.ratelimited(retry_after=0))
    (status,) = _status_calls(slack, channel, root)
    first, retried = _updates_of(slack, channel, status.response["ts"])[:2]
    assert first.fault is not None and first.fault.status == 429 and retried.ok
    assert text_of(retried) == text_of(first)  # the same update again, after Retry-After


def test_a_dropped_connection_under_a_progress_update_does_not_break_the_run(slack: SlackServer,
                                                                             bot: BotProcess) -> None:
    channel = "C1520"
    # the client's connection-error handler retries once; both attempts find the connection closed
    in_channel = lambda args: args.get("channel") == channel  # noqa: E731
    slack.fake.inject("chat.update", Fault.dropped(where=in_channel), Fault.dropped(where=in_channel))
    root = new_ts()
    _post_event(bot, mention(channel, ALICE, SIGNAL_REQUEST, root))
    outcome = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c) and c.ok and (
        text_of(c).startswith("Signal ma_cross") or "went wrong" in text_of(c) or "failed" in text_of(c)))[0]
    assert text_of(outcome).startswith("Signal ma_cross"), text_of(outcome)


def test_a_status_message_that_cannot_be_posted_does_not_stop_the_run(slack: SlackServer, bot: BotProcess) -> None:
    channel, root = "C1530", new_ts()
    slack.fake.inject("chat.postMessage", Fault.server_error(500, where=lambda args: args.get("channel") == channel
                                                             and args.get("text") == WORKING))
    _post_event(bot, mention(channel, ALICE, SIGNAL_REQUEST, root))
    blocks_valid(result_call(slack, channel, root, "Signal ma_cross"))
    assert slack.fake.pending_faults("chat.postMessage") == []
    assert [c for c in slack.fake.of("chat.update") if c.args.get("channel") == channel] == []  # nothing to update


def test_a_choice_button_answers_the_question_and_the_run_goes_on(slack: SlackServer, bot: BotProcess) -> None:
    """`factor` without its kind asks which factor, with the library's kinds as buttons: a click answers it (the
    question shows who chose what, without buttons) and the run goes on to the code review."""
    channel, root = "C7300", new_ts()
    _post_event(bot, mention(channel, ALICE, "factor 20190301 20200601 window=20 name=choice_click", root))
    question = question_call(slack, channel, root)
    choice = button_of(question, "clarify_choice_0")
    assert text_of(question).startswith("Which factor?") and choice["text"]["text"] == "momentum"
    status, _ = post(bot.url, action_body(ALICE, channel, question.response["ts"], root, choice),
                     "application/x-www-form-urlencoded")
    assert status == 200
    review = review_call(slack, channel, root)
    assert text_of(review).startswith("Code review for factor choice_click")
    answered = slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == question.response["ts"])
    assert f"<@{ALICE}>:* momentum" in json.dumps(answered[-1].args["blocks"])
    assert "actions" not in json.dumps(answered[-1].args["blocks"])
