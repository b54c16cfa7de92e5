"""Drive `quantdesk serve --surface feishu`: Feishu's callbacks (events and card actions) encrypted with the encrypt
key (AES-256-CBC) and signed (X-Lark-Signature) as Feishu sends them, over real HTTP."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from itertools import count
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from testkit.fakes.feishu_server import BOT_OPEN_ID
from testkit.slack import DrainedProcess

APP_ID = "cli_quantdesk_test"
APP_SECRET = "feishu-test-secret"
VERIFICATION_TOKEN = "feishu-verification-token"
ENCRYPT_KEY = "feishu-encrypt-key"
TENANT = "tenant_quantdesk"
_ids = count(1)


def new_id(prefix: str = "om_user") -> str:
    """A message (or event) id no other test of this run uses."""
    return f"{prefix}{int(time.time() * 1000) % 10**9:09d}{next(_ids):05d}"


def encrypt(plaintext: str, key: str = ENCRYPT_KEY) -> str:
    """Feishu's encryption of a callback body: AES-256-CBC under sha256(key), a random IV before the ciphertext,
    PKCS#7 padding, base64."""
    iv = os.urandom(16)
    padder = padding.PKCS7(128).padder()
    data = padder.update(plaintext.encode()) + padder.finalize()
    encryptor = Cipher(algorithms.AES(hashlib.sha256(key.encode()).digest()), modes.CBC(iv)).encryptor()
    return base64.b64encode(iv + encryptor.update(data) + encryptor.finalize()).decode()


def signed_headers(body: bytes, key: str = ENCRYPT_KEY) -> dict[str, str]:
    """X-Lark-Request-Timestamp, -Nonce and X-Lark-Signature: sha256(timestamp + nonce + key + body)."""
    timestamp, nonce = str(int(time.time())), secrets.token_hex(8)
    signature = hashlib.sha256((timestamp + nonce + key).encode() + body).hexdigest()
    return {"X-Lark-Request-Timestamp": timestamp, "X-Lark-Request-Nonce": nonce, "X-Lark-Signature": signature,
            "Content-Type": "application/json; charset=utf-8"}


def deliver(url: str, payload: dict[str, Any], key: str = ENCRYPT_KEY, sign_key: str | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """POST a callback as Feishu does: encrypted with `key` (unencrypted when empty) and signed with `sign_key`
    (default: `key`); the status and the JSON answer."""
    body = json.dumps({"encrypt": encrypt(json.dumps(payload), key)} if key else payload).encode()
    sent = {**signed_headers(body, key if sign_key is None else sign_key), **(headers or {})}
    request = urllib.request.Request(url, data=body, headers=sent, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _header(event_type: str, token: str) -> dict[str, Any]:
    return {"event_id": new_id("ev_"), "token": token, "create_time": str(int(time.time() * 1000)),
            "event_type": event_type, "tenant_key": TENANT, "app_id": APP_ID}


def message_event(chat: str, user: str, text: str, message_id: str, root: str | None = None,
                  chat_type: str = "group", mention_bot: bool = True, token: str = VERIFICATION_TOKEN,
                  ) -> dict[str, Any]:
    """An `im.message.receive_v1` callback: a text message, @-mentioning the bot first when `mention_bot`."""
    mentions = [{"key": "@_user_1", "id": {"open_id": BOT_OPEN_ID, "union_id": "on_bot"}, "name": "QuantDesk",
                 "tenant_key": TENANT}] if mention_bot else []
    message = {"message_id": message_id, "create_time": str(int(time.time() * 1000)), "chat_id": chat,
               "chat_type": chat_type, "message_type": "text",
               "content": json.dumps({"text": f"@_user_1 {text}" if mention_bot else text}, ensure_ascii=False),
               "mentions": mentions}
    if root:
        message.update(root_id=root, parent_id=root)
    return {"schema": "2.0", "header": _header("im.message.receive_v1", token),
            "event": {"sender": {"sender_id": {"open_id": user, "union_id": f"on_{user}"}, "sender_type": "user",
                                 "tenant_key": TENANT}, "message": message}}


def card_action(user: str, chat: str, message_id: str, value: dict[str, Any],
                form_value: dict[str, Any] | None = None, token: str = VERIFICATION_TOKEN) -> dict[str, Any]:
    """A `card.action.trigger` callback: a button (or a form's submit button) clicked on the card `message_id`."""
    action: dict[str, Any] = {"value": value, "tag": "button"}
    if form_value is not None:
        action.update(form_value=form_value, name="submit")
    return {"schema": "2.0", "header": _header("card.action.trigger", token),
            "event": {"operator": {"tenant_key": TENANT, "open_id": user, "union_id": f"on_{user}"},
                      "token": new_id("c-"), "action": action, "host": "im_message", "delivery_type": "url",
                      "context": {"open_message_id": message_id, "open_chat_id": chat}}}


def url_verification(challenge: str, token: str = VERIFICATION_TOKEN) -> dict[str, Any]:
    return {"challenge": challenge, "token": token, "type": "url_verification"}


def buttons(card: dict[str, Any]) -> list[dict[str, Any]]:
    """Every button of a card, in action rows and forms."""
    found = []
    for element in card.get("elements") or []:
        for item in element.get("actions") or element.get("elements") or []:
            if isinstance(item, dict) and item.get("tag") == "button":
                found.append(item)
    return found


def button(card: dict[str, Any], label: str) -> dict[str, Any]:
    return next(b for b in buttons(card) if b["text"]["content"] == label)


def card_text(card: dict[str, Any]) -> str:
    """A card's header and texts, joined (to look for words in)."""
    return json.dumps(card, ensure_ascii=False)


def process_env(domain: str, database_url: str, data_dir: Path, **env: str) -> dict[str, str]:
    """The environment of a Feishu `serve` under test: this one without QuantDesk's, Slack's, OpenAI's or Feishu's
    settings, pointed at the fake, HTTP callbacks checked by the test's token and key, `env` over all that."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("QUANTDESK_", "SLACK_", "OPENAI_", "FEISHU_"))}
    environ.update({"FEISHU_APP_ID": APP_ID, "FEISHU_APP_SECRET": APP_SECRET,
                    "FEISHU_VERIFICATION_TOKEN": VERIFICATION_TOKEN, "FEISHU_ENCRYPT_KEY": ENCRYPT_KEY,
                    "FEISHU_DOMAIN": domain, "DATABASE_URL": database_url, "QUANTDESK_DATA_DIR": str(data_dir),
                    "QUANTDESK_LOG_LEVEL": "WARNING", **env})
    return environ


class FeishuBot(DrainedProcess):
    """`quantdesk serve --surface feishu` pointed at the fake Open API: on an ephemeral port (`url` is its callback
    address), or on the long connection when `FEISHU_VERIFICATION_TOKEN` and `FEISHU_ENCRYPT_KEY` are set empty."""

    def __init__(self, domain: str, database_url: str, data_dir: Path, **env: str) -> None:
        self.database_url = database_url
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--surface", "feishu", "--host",
                                 "127.0.0.1", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=process_env(domain, database_url, data_dir, **env))
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if "listening on" not in line and "long connection" not in line:
            proc.kill()
            raise RuntimeError(f"bot did not start: {line}{proc.stderr.read()}")  # type: ignore[union-attr]
        self.url = line.split("listening on ", 1)[1].strip() if "listening on" in line else ""
        super().__init__(proc)


class Courier:
    """How a test's Feishu events reach the bot: HTTP callbacks to its port (encrypted and signed), or frames over
    its long connection (`link`, a testkit.fakes.feishu_ws.LongConnectionServer). `send` answers alike for both."""

    def __init__(self, bot: FeishuBot, link: Any = None) -> None:
        self.bot, self.link = bot, link

    def send(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and the answer (a click's toast and card) of one event or card callback."""
        if self.link is None:
            return deliver(self.bot.url, payload)
        code, data, _seconds = self.link.deliver(payload)
        return code, data or {}
