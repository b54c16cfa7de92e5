"""Feishu's callbacks as the listener checks them (`quantdesk serve --surface feishu`, HTTP callbacks): the URL
check answered with its challenge; a body encrypted with another key, signed with another key, unsigned, or carrying
another verification token is refused and nothing of it is taken; a button value the bot never wrote decides
nothing; and a reply Feishu rate-limits or refuses is posted again, once."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from testkit.fakes.feishu_server import Fault, FeishuServer
from testkit.feishu import (
    ENCRYPT_KEY,
    FeishuBot,
    card_action,
    card_text,
    deliver,
    message_event,
    new_id,
    url_verification,
)
from testkit.wait import wait_until

ALICE = "ou_alice"
BOT_ENV = {"QUANTDESK_RECONCILE_INTERVAL": "0.5"}


@pytest.fixture(autouse=True)
def _no_faults_left_behind(feishu: FeishuServer) -> None:
    feishu.fake.clear_faults()


def _replies(feishu: FeishuServer, root: str) -> list[str]:
    return [card_text(c.card or {}) for c in feishu.fake.thread(root)]


def _help_answered(feishu: FeishuServer, bot: FeishuBot, chat: str) -> str:
    """A good message after the refused ones: once its answer is in, the earlier ones had their chance."""
    root = new_id()
    assert deliver(bot.url, message_event(chat, ALICE, "help", root))[0] == 200
    wait_until(lambda: _replies(feishu, root), "the help")
    return root


def test_the_url_check_is_answered_with_its_challenge(bot: FeishuBot) -> None:
    status, answer = deliver(bot.url, url_verification("challenge-123"))
    assert (status, answer) == (200, {"challenge": "challenge-123"})
    status, _answer = deliver(bot.url, url_verification("challenge-456", token="another-token"))
    assert status != 200


def _status(url: str, data: bytes | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_health_other_paths_and_oversized_bodies(bot: FeishuBot) -> None:
    base = bot.url.rsplit("/feishu/events", 1)[0]
    assert _status(f"{base}/healthz") == 200
    assert _status(f"{base}/slack/events", b"{}") == 404
    assert _status(bot.url, b"x" * (2 << 20)) == 413


@pytest.mark.parametrize("tamper", [
    {"key": "another-encrypt-key"},  # encrypted and signed with another key
    {"sign_key": "another-encrypt-key"},  # encrypted right, signed wrong
    {"headers": {"X-Lark-Signature": ""}},  # no signature
    {"key": "", "sign_key": ENCRYPT_KEY, "token": "another-token"},  # plain, signed right, another token
    {"token": "another-token"},  # encrypted and signed right, another verification token inside
])
def test_a_callback_failing_its_checks_is_refused(feishu: FeishuServer, bot: FeishuBot,
                                                 tamper: dict) -> None:
    chat, root = "oc_checks", new_id()
    token = tamper.pop("token", None)
    event = message_event(chat, ALICE, "help", root, **({"token": token} if token else {}))
    status, _answer = deliver(bot.url, event, **tamper)
    assert status != 200
    _help_answered(feishu, bot, chat)
    assert _replies(feishu, root) == []


def test_a_click_failing_its_signature_decides_nothing(feishu: FeishuServer, bot: FeishuBot) -> None:
    chat = "oc_checks_click"
    root = new_id()
    deliver(bot.url, message_event(chat, ALICE, "factor momentum 20190301 20200601 window=20 name=feishu_sig", root))
    review = wait_until(lambda: next((c for c in feishu.fake.thread(root) if c.card
                                      and "Code review" in card_text(c.card)), None), "the review")
    approve = next(b for e in (review.card or {})["elements"] for b in e.get("actions") or []
                   if b["text"]["content"] == "Approve")
    status, _answer = deliver(bot.url, card_action(ALICE, chat, review.message_id, approve["value"]),
                              sign_key="another-encrypt-key")
    assert status != 200
    forged = {**approve["value"], "i": "not-an-interrupt"}
    status, answer = deliver(bot.url, card_action(ALICE, chat, review.message_id, forged))
    assert status == 200 and answer["toast"]["type"] == "error" and "card" not in answer
    assert not [c for c in feishu.fake.of("im.message.patch") if c.args["_message_id"] == review.message_id]
    status, answer = deliver(bot.url, card_action(ALICE, chat, review.message_id, {"k": "nonsense"}))
    assert status == 200 and answer["toast"]["content"].startswith("This button is not one I wrote")


def test_a_rate_limited_or_refused_reply_is_posted_again_once(feishu: FeishuServer, bot: FeishuBot) -> None:
    """The client tries a rate-limited call again; a reply Feishu refuses (an error, a proxy's page) stays for the
    background service, which posts it again with the same uuid: one question in the thread."""
    chat, root = "oc_faults", new_id()
    feishu.fake.inject("im.message.reply", Fault.rate_limited(), Fault.server_error(), Fault.error_page(),
                       Fault.server_error())
    deliver(bot.url, message_event(chat, ALICE, "signal rsi 600519.SH", root))
    wait_until(lambda: [r for r in _replies(feishu, root) if "date range" in r], "the question, posted again")
    faults = [c for c in feishu.fake.of("im.message.reply") if c.fault is not None]
    assert [c.fault.status for c in faults if c.fault] == [429, 500, 502, 500]
    questions = [c for c in feishu.fake.thread(root) if "date range" in card_text(c.card or {})]
    assert len({c.message_id for c in questions}) == 1
    assert all(json.loads(c.args["content"]) for c in questions)
