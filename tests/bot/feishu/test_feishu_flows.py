"""The Feishu surface end to end: `quantdesk serve --surface feishu` as a real process taking encrypted, signed
callbacks over HTTP, then events over its long connection (the `courier` fixture: every test runs in both delivery
modes), against the fake Feishu Open API. A mention's clarify question answered by a reply in its
thread; a factor's code review approved from its card (the click answered at once with the card disabled and
"processing"), edited through the card's form; a Chinese speaker answered in Chinese; and every card the bot sent
passes the card schema the fake enforces."""

from __future__ import annotations

from sqlalchemy import text

from testkit.fakes.feishu_server import Call, FeishuServer, card_problems
from testkit.feishu import (
    Courier,
    button,
    buttons,
    card_action,
    card_text,
    message_event,
    new_id,
)
from testkit.wait import wait_until
from tools.storage.db import make_engine

ALICE, BOB = "ou_alice", "ou_bob"


def _say(courier: Courier, chat: str, user: str, text: str, root: str | None = None, mention: bool = True,
         chat_type: str = "group") -> str:
    """A person's message (a new thread's root unless `root`); its id."""
    message_id = new_id()
    status, answer = courier.send(message_event(chat, user, text, message_id, root, chat_type, mention))
    assert status == 200, answer
    return message_id


def _card_in(feishu: FeishuServer, root: str, words: str, n: int = 1) -> Call:
    """The n-th card replied in the thread whose texts hold `words`."""
    return wait_until(lambda: len(found := [c for c in feishu.fake.thread(root)
                                            if c.card and words in card_text(c.card)]) >= n and found[n - 1],
                      f"a card saying {words!r} in {root}", seen=lambda: [card_text(c.card or {})[:120]
                                                                           for c in feishu.fake.thread(root)])


def _patched(feishu: FeishuServer, message_id: str, words: str) -> Call:
    return feishu.fake.wait_for("im.message.patch", where=lambda c: c.args["_message_id"] == message_id
                                and words in card_text(c.card or {}))[0]


def test_a_clarify_question_is_answered_in_its_thread(feishu: FeishuServer, courier: Courier) -> None:
    chat = "oc_flows_clarify"
    root = _say(courier, chat, ALICE, "signal rsi 600519.SH")
    question = _card_in(feishu, root, "date range")
    assert question.args["reply_in_thread"] is True
    _say(courier, chat, ALICE, "20190101 20200601", root=root, mention=False)  # a plain reply in the thread
    result = _card_in(feishu, root, "Signal rsi")
    assert result.card is not None and result.card["header"]["template"] == "green"
    answered = _patched(feishu, question.message_id, "20190101 20200601")
    assert f"<at id={ALICE}></at>" in card_text(answered.card or {})
    # the chart went up as an image and was posted in the thread
    image = feishu.fake.wait_for("im.image.create")[0]
    assert image.args["image_type"] == "message"
    wait_until(lambda: [c for c in feishu.fake.thread(root) if c.args.get("msg_type") == "image"], "the chart")


def _all_done(database_url: str) -> bool:
    """Every message taken in has had its run end (the inbox row's done_at is set as its job ends)."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT done_at FROM inbox")).all()
    finally:
        engine.dispose()
    return bool(rows) and all(row.done_at is not None for row in rows)


def test_the_status_cards_stop_is_for_the_requester(feishu: FeishuServer, courier: Courier) -> None:
    chat = "oc_flows_stop"
    root = _say(courier, chat, ALICE, "signal rsi 600519.SH")
    _card_in(feishu, root, "date range")  # the run waits: nothing runs once its job has ended
    wait_until(lambda: _all_done(courier.bot.database_url), "the request's job to end")
    status = next(c for c in feishu.fake.thread(root) if c.card and "Stop" in card_text(c.card))
    stop = button(status.card or {}, "Stop")["value"]
    bob = courier.send(card_action(BOB, chat, status.message_id, stop))[1]
    assert bob["toast"]["content"].startswith("Only the person who started this request")
    alice = courier.send(card_action(ALICE, chat, status.message_id, stop))[1]
    assert alice["toast"] == {"type": "info", "content": "Nothing is running in this thread any more."}


def test_a_group_message_without_a_mention_outside_a_thread_is_not_taken(feishu: FeishuServer,
                                                                         courier: Courier) -> None:
    chat = "oc_flows_quiet"
    quiet = _say(courier, chat, BOB, "help", mention=False)
    loud = _say(courier, chat, BOB, "help")
    _card_in(feishu, loud, "QuantDesk")
    assert feishu.fake.thread(quiet) == []


def test_a_factor_review_is_approved_from_its_card(feishu: FeishuServer, courier: Courier) -> None:
    chat = "oc_flows_review"
    root = _say(courier, chat, ALICE, "factor momentum 20190301 20200601 window=20 name=feishu_mom")
    review = _card_in(feishu, root, "Code review: feishu_mom")
    card = review.card or {}
    assert "return close / close.shift(20) - 1" in card_text(card)
    assert [b["text"]["content"] for b in buttons(card)] == ["Approve", "Edit", "Reject"]
    # a reply in the thread does not decide a review: the replier alone is told so (an ephemeral card)
    _say(courier, chat, ALICE, "looks good", root=root, mention=False)
    hint = feishu.fake.wait_for("ephemeral.send", where=lambda c: c.args["chat_id"] == chat)[0]
    assert hint.args["open_id"] == ALICE and "waiting for review" in card_text(hint.args["card"])
    approve = button(card, "Approve")
    # someone else may not decide: a toast says why, the card stays as it is
    status, answer = courier.send(card_action(BOB, chat, review.message_id, approve["value"]))
    assert status == 200 and answer["toast"]["type"] == "error"
    assert "Only the person who started" in answer["toast"]["content"] and "card" not in answer
    # the requester's click is answered with the card disabled and "processing"
    status, answer = courier.send(card_action(ALICE, chat, review.message_id, approve["value"]))
    assert status == 200 and answer["toast"]["type"] == "success"
    shown = answer["card"]["data"]
    assert card_problems(shown) == []
    assert all(b.get("disabled") for b in buttons(shown)) and "processing" in card_text(shown)
    _patched(feishu, review.message_id, "approved by")
    _card_in(feishu, root, "Factor feishu_mom")
    # a second click on the same card decides nothing
    status, answer = courier.send(card_action(ALICE, chat, review.message_id, approve["value"]))
    assert status == 200 and answer["toast"]["content"] == "Already handled."


def test_a_factor_review_is_edited_in_the_cards_form(feishu: FeishuServer, courier: Courier) -> None:
    chat = "oc_flows_edit"
    root = _say(courier, chat, ALICE, "factor momentum 20190301 20200601 window=20 name=feishu_edit")
    review = _card_in(feishu, root, "Code review: feishu_edit")
    status, answer = courier.send(card_action(ALICE, chat, review.message_id,
                                                  button(review.card or {}, "Edit")["value"]))
    assert status == 200
    form_card = answer["card"]["data"]
    assert card_problems(form_card) == []
    form = next(e for e in form_card["elements"] if e["tag"] == "form")
    code = next(e for e in form["elements"] if e.get("name") == "code")
    assert code["input_type"] == "multiline_text" and code["default_value"].startswith("return close / close")
    submit = next(e for e in form["elements"] if e.get("action_type") == "form_submit")
    # a forbidden import is said in a toast; nothing is decided
    status, answer = courier.send(card_action(ALICE, chat, review.message_id, submit["value"],
                                                  {"code": "import os\nreturn os.environ", "name": ""}))
    assert status == 200 and answer["toast"]["type"] == "error" and "import" in answer["toast"]["content"]
    status, answer = courier.send(card_action(ALICE, chat, review.message_id, submit["value"],
                                                  {"code": "return close / close.shift(10) - 1", "name": ""}))
    assert status == 200 and answer["toast"]["type"] == "success"
    _patched(feishu, review.message_id, "edited by")
    again = _card_in(feishu, root, "close.shift(10)")
    assert "Code review" in card_text(again.card or {})


def test_a_chinese_speaker_is_answered_in_chinese(feishu: FeishuServer, courier: Courier) -> None:
    chat = "oc_flows_zh"
    first = _say(courier, chat, "ou_wang", "lang zh", chat_type="p2p", mention=False)
    _card_in(feishu, first, "中文")
    root = _say(courier, chat, "ou_wang", "signal rsi 600519.SH", chat_type="p2p", mention=False)
    question = _card_in(feishu, root, "哪个日期区间")
    assert question.card is not None and question.card["header"]["title"]["content"] == "问题"
    _say(courier, chat, "ou_wang", "20190101 20200601", root=root, chat_type="p2p", mention=False)
    _card_in(feishu, root, "回测")  # the result, in Chinese too


def test_every_card_sent_passes_the_card_schema(feishu: FeishuServer, courier: Courier) -> None:
    """Every card the flows of this module sent through this process, none refused, and the process logged no
    failure. The module's tests may be spread over several xdist workers, each with its own bot: this one sends a
    question of its own first, so it never checks an empty list."""
    root = _say(courier, "oc_flows_schema", ALICE, "signal rsi 600519.SH")
    _card_in(feishu, root, "date range")
    cards = feishu.fake.cards()
    assert cards
    refused = [c.response for c in cards if c.response.get("code") == 230099]
    assert refused == []
    for call in cards:
        assert card_problems(call.card if call.card is not None else call.args.get("card")) == []
    assert "Traceback" not in courier.bot.output() and "failed" not in courier.bot.output(), courier.bot.output()
