"""The trading decision desk (issue 14) end to end in Slack: `quantdesk serve` as a real process (Bolt over signed
HTTP) against the fake Slack Web API, on the bundled sample data. The agents are scripted by role marker on the fake
OpenAI-compatible server (the same answers testkit/desk.py gives the in-process desk), so the bot builds its
models from OPENAI_BASE_URL like any deployment. `/quant analyze` shows each analyst finishing on the status message,
proposes the sized order for a trader's approval, and after the approval posts the decision card with its chart and
Markdown report; without an LLM it answers the indicator table; `decisions` lists the decision; a code without its
exchange is answered with the fix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.models.blocks import Block
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from bot.stores.threads import thread_id_for
from testkit.desk import MARKET_REPORT, ROLES, TRADER, clock_at_data_end, desk_scripts
from testkit.fakes.chat import answer
from testkit.fakes.openai_server import API_KEY, OpenAIServer
from testkit.fakes.slack_server import TEAM, Call, SlackServer
from testkit.slack import (
    BotProcess,
    action_body,
    blocks_valid,
    button_of,
    command_body,
    in_thread,
    new_ts,
    post,
    text_of,
)
from testkit.wait import wait_until
from tools.broker.records import PaperFill, PaperOrder
from tools.data.local import SampleProvider
from tools.desk.log import list_decisions
from tools.runs.store import RunStore
from tools.storage.db import make_engine

CODE = "600519.SH"
ANALYZE = f"analyze {CODE}"
ALICE = "UALICE"  # asks for the decision; not a trader
BOB = "UBOB"  # reads the decision log
MAIN_MODEL, LIGHT_MODEL = "desk-main-model", "desk-light-model"  # the light model writes the analysts' summaries
SUMMARIES = 4  # each analyst's first post-close memory summary of the day (tools.desk.memory)
FORM = "application/x-www-form-urlencoded"
WORKING = ":hourglass_flowing_sand: working…"
WAITING = ":speech_balloon: waiting for your answer"
DONE = ":white_check_mark: done"
NOT_A_TRADER = "Only traders can approve or edit orders (`roles` lists them); you can reject it."
ANALYSTS = ("market analyst", "news analyst", "sentiment analyst", "fundamentals analyst")
TITLE = f"贵州茅台 {CODE} · 20200824: Buy, target 20%"  # the sample's last trading day
CHART, REPORT = f"decision_{CODE}_20200824.png", f"decision_{CODE}_20200824.md"
LONG_RUN = 180.0  # seconds: four analysts, two debates and two judges over HTTP


# --- fixtures ---------------------------------------------------------------------------------------------------


@dataclass
class Desk:
    """A `quantdesk serve` process and its database."""

    slack: SlackServer
    bot: BotProcess
    engine: Engine


@pytest.fixture(scope="module")
def desk_models() -> Iterator[OpenAIServer]:
    """The desk's agents, one answer queue per role marker (main model) and the light model's summaries; at the
    end, if the decision ran on this xdist worker (the module's tests may be spread over several, and a test that
    asks no model can run alone), every request was scripted and every scripted answer was asked for."""
    with OpenAIServer() as server:
        for marker, steps in desk_scripts().items():
            server.fake.script(marker, *steps)
        server.fake.script(LIGHT_MODEL, *[answer("summary of the day") for _ in range(SUMMARIES)])
        yield server
        if server.fake.exchanges:
            server.fake.check()


def _desk(slack: SlackServer, data: Path, **env: str) -> Iterator[Desk]:
    url = f"sqlite:///{data / 'q.db'}"
    process = BotProcess(slack.url, url, data, QUANTDESK_TRADERS=TRADER, **env)
    engine = make_engine(url)
    try:
        yield Desk(slack, process, engine)
    finally:
        process.stop()
        engine.dispose()


@pytest.fixture(scope="module")
def desk(slack: SlackServer, desk_models: OpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    """An LLM configured (the fake endpoint), one trader; the simulated clock (a new one starts 20 sessions before
    the data's last day) moved to 20200824, the day the desk decides on, so its order fills there."""
    for running in _desk(slack, tmp_path_factory.mktemp("desk"), OPENAI_API_KEY=API_KEY,
                         OPENAI_BASE_URL=desk_models.url, QUANTDESK_MODEL=MAIN_MODEL,
                         QUANTDESK_LIGHT_MODEL=LIGHT_MODEL):
        clock_at_data_end(running.engine, SampleProvider())
        yield running


@pytest.fixture(scope="module")
def plain(slack: SlackServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    """No LLM configured (BotProcess drops every OPENAI_ variable)."""
    yield from _desk(slack, tmp_path_factory.mktemp("plain"))


# --- driving Slack ----------------------------------------------------------------------------------------------


def _ask(desk: Desk, channel: str, text: str, user: str = ALICE) -> str:
    """`/quant TEXT` for a workflow: the bot roots a thread with a top-level post; its ts."""
    status, body = post(desk.bot.url, command_body(text, channel, user, desk.slack.url.replace("/api/", "/respond/x")),
                        FORM)
    assert status == 200 and body == ""
    (root,) = desk.slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                       and not c.args.get("thread_ts") and text_of(c).endswith(f"`/quant {text}`"))
    assert text_of(root) == f"<@{user}> asked: `/quant {text}`"
    return str(root.response["ts"])


def _command(desk: Desk, text: str, channel: str, user: str) -> Call:
    """`/quant TEXT` for a command: the answer it got on its response_url."""
    hook = f"cmd{new_ts()}"
    status, body = post(desk.bot.url, command_body(text, channel, user,
                                                   desk.slack.url.replace("/api/", f"/respond/{hook}")), FORM)
    assert status == 200 and body == ""
    (reply,) = desk.slack.fake.wait_for("respond", where=lambda c: c.args.get("_hook") == hook)
    return reply


def _posted(desk: Desk, channel: str, root: str, what: str, found: Any, timeout: float = 60.0) -> Call:
    """The first message posted (successfully) in the thread for which `found(call)` holds (`what` it is)."""
    return wait_until(lambda: [c for c in desk.slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
                               and c.ok and found(c)], what, timeout)[0]


def _header(call: Call) -> str:
    blocks = call.args.get("blocks") or []
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    return str(blocks[0]["text"]["text"]) if blocks and blocks[0]["type"] == "header" else ""


def _click(desk: Desk, user: str, channel: str, root: str, card: Call, action_id: str) -> None:
    status, _ = post(desk.bot.url, action_body(user, channel, str(card.response["ts"]), root,
                                               button_of(card, action_id)), FORM)
    assert status == 200


def _ephemerals(desk: Desk, channel: str, root: str, user: str) -> list[str]:
    return [text_of(c) for c in desk.slack.fake.of("chat.postEphemeral") if c.args.get("user") == user
            and in_thread(channel, root)(c)]


def _updates_of(desk: Desk, channel: str, ts: str) -> list[Call]:
    return [c for c in desk.slack.fake.of("chat.update") if c.args.get("channel") == channel and c.args.get("ts") == ts]


def _steps(update: Call) -> list[str]:
    """The step labels a progress update shows: ":hourglass_flowing_sand: a (detail) → b …" -> ["a", "b"]."""
    text = text_of(update)
    assert text.startswith(":hourglass_flowing_sand: ") and text.endswith(" …"), text
    return [step.split(" (")[0] for step in text.removeprefix(":hourglass_flowing_sand: ").removesuffix(" …")
            .split(" → ")]


def _reply_text(reply: Call) -> str:
    assert reply.args["response_type"] == "ephemeral"
    for raw in reply.args.get("blocks") or []:
        Block.parse(raw).validate_json()
    return str(reply.args["text"])


def _facts(call: Call) -> dict[str, str]:
    found = [f["text"] for b in blocks_valid(call) if b["type"] == "section" for f in b.get("fields", [])]
    return dict(text.lstrip("*").split("*\n", 1) for text in found)


def _context(call: Call) -> list[str]:
    return [e["text"] for b in blocks_valid(call) if b["type"] == "context" for e in b["elements"]]


def _table(blocks: list[dict[str, Any]]) -> list[list[str]]:
    """The rows (split on spaces) of the message's preformatted table, its header first."""
    text = next(b["text"]["text"] for b in blocks if b["type"] == "section" and "text" in b
                and b["text"]["text"].startswith("```"))
    return [line.split() for line in text.strip("`").strip().splitlines()]


def _uploaded(desk: Desk, channel: str, root: str) -> dict[str, bytes]:
    """The files completed into the thread: {filename: bytes uploaded}."""
    names = {str(c.response["file_id"]): str(c.args.get("filename")) for c in desk.slack.fake.of(
        "files.getUploadURLExternal")}
    data = {str(c.args["file_id"]): c.body for c in desk.slack.fake.of("upload")}
    files: dict[str, bytes] = {}
    for done in desk.slack.fake.of("files.completeUploadExternal"):
        if done.ok and done.args.get("channel_id") == channel and done.args.get("thread_ts") == root:
            listed = done.args["files"]
            for file in json.loads(listed) if isinstance(listed, str) else listed:
                files[names[file["id"]]] = data.get(file["id"], b"")
    return files


def _orders(desk: Desk, account: str) -> list[PaperOrder]:
    with Session(desk.engine) as session:
        return list(session.scalars(select(PaperOrder).where(PaperOrder.account == account)).all())


def _fills(desk: Desk, account: str) -> list[PaperFill]:
    with Session(desk.engine) as session:
        return list(session.scalars(select(PaperFill).where(PaperFill.account == account)).all())


# --- a decision, from the request to the approved order ----------------------------------------------------------


@dataclass(frozen=True)
class Decided:
    channel: str
    root: str
    status: Call  # the run's status message, updated with its progress
    card: Call  # the order approval message
    refusal: list[str]  # what the requester was told on clicking Approve
    before_approval: tuple[list[PaperOrder], list[PaperFill]]  # the account after the refused click
    result: Call  # the decision card


@pytest.fixture(scope="module")
def decided(desk: Desk) -> Decided:
    """ALICE asks for a decision on 600519.SH; the desk proposes an order; ALICE clicks Approve (refused), then
    the trader does."""
    channel = "C14100"
    root = _ask(desk, channel, ANALYZE)
    card = _posted(desk, channel, root, "the approval message", lambda c: text_of(c).startswith("Approval needed: "),
                   timeout=LONG_RUN)
    status = _posted(desk, channel, root, "the status message", lambda c: text_of(c) == WORKING)
    _click(desk, ALICE, channel, root, card, "review_approve")
    refusal = wait_until(lambda: _ephemerals(desk, channel, root, ALICE), "the requester's refusal")
    before = (_orders(desk, channel), _fills(desk, channel))
    _click(desk, TRADER, channel, root, card, "review_approve")
    result = _posted(desk, channel, root, "the decision card", lambda c: _header(c).endswith(": Buy, target 20%"),
                     timeout=LONG_RUN)
    return Decided(channel, root, status, card, refusal, before, result)


def test_the_status_message_shows_each_analyst_finishing(desk: Desk, decided: Decided) -> None:
    updates = _updates_of(desk, decided.channel, str(decided.status.response["ts"]))
    assert updates and all(c.ok for c in updates)
    assert text_of(updates[-1]).startswith(WAITING)  # cleared before the approval was asked (then the run's usage)
    assert desk.slack.fake.calls.index(updates[-1]) < desk.slack.fake.calls.index(decided.card)
    progress = [_steps(c) for c in updates[:-1]]
    # one more analyst on each update while they finish (in whatever order their parallel branches end)
    finished = [[s for s in steps if s in ANALYSTS] for steps in progress]
    assert [len(f) for f in finished[:4]] == [1, 2, 3, 4], progress
    assert sorted(finished[3]) == sorted(ANALYSTS)
    # then the rest of the desk, in order, before the order is checked
    last = progress[-1]
    rest = ["fusion", "research debate", "research manager", "risk debate", "risk manager", "trader"]
    assert [s for s in last if s in rest] == rest, last
    assert all(last.index(analyst) < last.index("fusion") for analyst in ANALYSTS), last
    assert "research manager (Buy)" in text_of(updates[-2]) and "risk manager (Buy)" in text_of(updates[-2])


def test_the_reports_the_debate_and_the_traders_reasoning_stream_into_the_thread(desk: Desk, decided: Decided) -> None:
    fake = desk.slack.fake
    streams = [c for c in fake.of("chat.startStream") if in_thread(decided.channel, decided.root)(c) and c.ok]
    assert streams and all(c.args["recipient_user_id"] == ALICE and c.args["recipient_team_id"] == TEAM
                           for c in streams)  # to the human who asked, with their team in a channel
    messages = {m["ts"]: m for m in fake.replies(decided.channel, decided.root, with_metadata=True)}
    shown = [messages[str(c.response["ts"])] for c in streams]
    titles = [m["text"].split("\n", 1)[0] for m in shown]
    assert "*Market analyst's report*" in titles and "*The trader's reasoning*" in titles
    assert any(t.startswith("*Research debate, turn 1") for t in titles), titles
    market = next(m for m in shown if m["text"].startswith("*Market analyst's report*"))
    assert MARKET_REPORT in market["text"]
    stopped = {str(c.args["ts"]) for c in fake.of("chat.stopStream") if c.ok}
    assert stopped == {str(c.response["ts"]) for c in streams}  # each stopped, its post key in the metadata
    assert all(m["metadata"]["event_type"] == "quantdesk_post" for m in shown)
    assert fake.calls.index(streams[-1]) < fake.calls.index(decided.card)  # before the approval was asked


def test_every_agent_was_asked_what_its_script_answers(desk_models: OpenAIServer, decided: Decided) -> None:
    desk_models.fake.check()  # nothing left unscripted, nothing scripted left unasked, by the time the order is asked
    assert {e.body["model"] for e in desk_models.fake.exchanges} == {MAIN_MODEL, LIGHT_MODEL}
    assert len(desk_models.fake.of(ROLES["market"])) == 2  # a tool call, then the report with the tool's answer
    market_report = desk_models.fake.of(ROLES["market"])[1].body["messages"]
    assert market_report[-1]["role"] == "tool" and "1664.65" in market_report[-1]["content"]  # MA(20) on 20200824


def test_the_desk_proposes_one_lot_for_a_trader_to_approve(decided: Decided) -> None:
    # 20% of 1,000,000 CNY at 1,696.35 is 117.9 shares: one lot of 100
    assert text_of(decided.card) == f"Approval needed: BUY 100 {CODE} 贵州茅台 at market"
    blocks = blocks_valid(decided.card)
    assert blocks[0]["text"]["text"].startswith(f"Approval: BUY 100 {CODE}")
    facts = _facts(decided.card)
    assert facts["Quantity"] == "100" and facts["Account"] == f"<#{decided.channel}>"
    assert facts["Why"] == f"decision desk: Buy {CODE} as of 20200824, target 20% (confidence 0.60)"
    actions = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert actions == ["review_approve", "review_edit", "review_reject"]


def test_only_a_trader_approves_the_desk_order(desk: Desk, decided: Decided) -> None:
    assert decided.refusal == [NOT_A_TRADER]
    assert decided.before_approval == ([], [])  # the refused click placed nothing
    (order,) = wait_until(lambda: [o for o in _orders(desk, decided.channel) if o.status == "filled"],
                          "the filled order")
    assert order.side == "buy" and order.quantity == 100 and order.approved_by == TRADER
    assert [(f.quantity, f.trade_date) for f in _fills(desk, decided.channel)] == [(100, "20200824")]
    update = wait_until(lambda: [c for c in _updates_of(desk, decided.channel, str(decided.card.response["ts"]))
                                 if f"approved by <@{TRADER}>" in json.dumps(c.args)], "the card's update")[-1]
    assert "review_approve" not in json.dumps(update.args)  # no buttons left


def test_the_decision_card_shows_the_rating_target_and_data_gaps(desk: Desk, decided: Decided) -> None:
    result = decided.result
    blocks = blocks_valid(result)
    assert _header(result) == TITLE
    assert text_of(result) == "Buy, sized in code"  # the risk manager's final trade decision
    facts = _facts(result)
    assert facts["Rating"] == "Buy" and facts["Target position"] == "20% of the account"
    assert facts["Confidence"] == "0.60" and facts["Research view"] == "Buy (0.70)"
    assert facts["Price"].startswith("1696.35") and facts["Account"].startswith(f"<#{decided.channel}>: ")
    assert facts["Order"].startswith("Order ") and "filled" in facts["Order"] and "BUY 100" in facts["Order"]
    lines = blocks[1]["text"]["text"]
    assert "Bull: trend is up" in lines and "Bear: RSI is not low" in lines and "Risk: a sharp reversal" in lines
    warnings = [w for w in _context(result) if w.startswith(":warning: ")]
    gaps = [w for w in warnings if " data gap: " in w]
    assert gaps, _context(result)  # the sample has no news or sentiment source: said on the card
    assert {w.removeprefix(":warning: ").split(" data gap: ")[0] for w in gaps} >= {"news", "sentiment"}, gaps
    # posted once
    assert [c for c in desk.slack.fake.of("chat.postMessage") if in_thread(decided.channel, decided.root)(c)
            and _header(c) == TITLE] == [result]


def test_the_decision_is_recorded_in_the_decision_log(desk: Desk, decided: Decided) -> None:
    (logged,) = list_decisions(desk.engine, "live", CODE)
    assert logged.rating == "Buy" and logged.target_position == Decimal("0.2") and logged.confidence == 0.6
    assert logged.trade_date == "20200824" and logged.thread_id == thread_id_for(TEAM, decided.channel, decided.root)
    assert set(logged.report_ids) == {"market", "news", "sentiment", "fundamentals"}


def test_the_chart_and_the_markdown_report_are_uploaded_into_the_thread(desk: Desk, decided: Decided) -> None:
    # the result's files go up in one upload (files_upload_v2): once the chart is in the thread, so is the rest
    files = wait_until(lambda: CHART in (found := _uploaded(desk, decided.channel, decided.root)) and found,
                       "the chart in the thread", timeout=20)
    assert set(files) == {CHART, REPORT}, f"uploaded {sorted(files)}; the Markdown report {REPORT} is missing"
    assert files[CHART].startswith(b"\x89PNG")
    report = files[REPORT].decode()
    assert report.startswith(f"# Decision desk: {CODE} as of 20200824 (depth 1)")
    assert "## Market analyst" in report and "## Research debate" in report and "bull turn 1" in report


def test_a_live_rerun_shows_the_decisions_stability_on_its_card(desk: Desk, desk_models: OpenAIServer,
                                                                 decided: Decided) -> None:
    """`/quant rerun ID live` asks the desk again (the same answers scripted once more) and the decision's card, in
    its thread, is shown again in place with how often the live re-runs gave its rating."""
    thread = thread_id_for(TEAM, decided.channel, decided.root)
    (run,) = [r for r in RunStore(desk.engine).recent(user=ALICE, limit=50) if r.thread_id == thread]
    for marker, steps in desk_scripts().items():
        desk_models.fake.script(marker, *steps)
    desk_models.fake.script(LIGHT_MODEL, *[answer("summary of the day") for _ in range(SUMMARIES)])
    reply = _command(desk, f"rerun {run.id} live", decided.channel, ALICE)
    stability = "1 of 1 live re-runs gave the run's rating Buy (Buy 1)"
    assert _facts(reply)["stability"] == stability
    card_ts = str(decided.result.response["ts"])
    (update,) = wait_until(lambda: _updates_of(desk, decided.channel, card_ts), "the decision card shown again")
    assert update.ok and _header(update) == TITLE and _facts(update)["Stability"] == stability
    assert _facts(update)["Rating"] == "Buy"  # the rest of the card as it was
    desk_models.fake.check()  # the re-run asked every agent once more, nothing else


# --- the decision log command -----------------------------------------------------------------------------------


def test_decisions_lists_the_decision(desk: Desk, decided: Decided) -> None:
    (logged,) = list_decisions(desk.engine, "live", CODE)
    reply = _command(desk, f"decisions {CODE}", "C14300", BOB)
    assert _reply_text(reply) == f"1 decision (for {CODE})"
    header, *rows = _table(reply.args["blocks"])
    assert header == ["id", "code", "date", "rating", "target", "conf.", "outcome"]
    assert rows == [[logged.id, CODE, "20200824", "Buy", "20%", "0.60", "open"]]
    assert _reply_text(_command(desk, "decisions 000001.SZ", "C14300", BOB)).startswith(
        "No decisions yet (for 000001.SZ)")


# --- without an LLM ---------------------------------------------------------------------------------------------


def test_without_an_llm_the_desk_answers_the_indicator_table_and_what_needs_one(plain: Desk) -> None:
    channel = "C14200"
    root = _ask(plain, channel, ANALYZE)
    result = _posted(plain, channel, root, "the indicator reply",
                     lambda c: _header(c).startswith(f"{CODE} · 20200824: indicators"))
    blocks = blocks_valid(result)
    assert _header(result) == f"{CODE} · 20200824: indicators (no LLM configured)"
    assert "need an LLM" in text_of(result) and "OPENAI_API_KEY" in text_of(result)
    header, *rows = _table(blocks)
    assert header == ["indicator", "value"]
    table = {" ".join(row[:-1]): row[-1] for row in rows}
    assert table["MA(20)"] == "1,664.65" and table["RSI(14)"] == "59.31"  # checked by hand on the sample
    # no order was proposed and nothing was placed
    assert not [c for c in plain.slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
                and text_of(c).startswith("Approval needed: ")]
    assert _orders(plain, channel) == []
    assert list_decisions(plain.engine, "live", CODE) == []


# --- a request the desk cannot read -----------------------------------------------------------------------------


def test_a_code_without_its_exchange_is_answered_with_the_fix(desk: Desk) -> None:
    channel = "C14400"
    root = _ask(desk, channel, "analyze 600519")
    reply = _posted(desk, channel, root, "the answer", lambda c: "did you mean" in text_of(c))
    blocks_valid(reply)
    assert "did you mean 600519.SH" in text_of(reply), text_of(reply)
    assert "analyze CODE [DATE]" in text_of(reply)  # and the usage
    assert not [c for c in desk.slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
                and text_of(c).startswith("Approval needed: ")]
    assert _orders(desk, channel) == []
