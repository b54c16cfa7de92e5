"""The calls the Feishu surface makes, through the official SDK (lark-oapi): it fetches and renews the tenant access
token itself. A call Feishu refuses raises `FeishuError` (its code and message; a token it would not give, a page
that is no JSON, too); a rate limit (HTTP 429 or code 99991400) is tried again twice after a short pause; a dropped
connection or a call unanswered for TIMEOUT_SECONDS raises OSError."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import time
from typing import Any

import lark_oapi as lark
from lark_oapi.api.im.v1 import (
    CreateFileRequest,
    CreateFileRequestBody,
    CreateImageRequest,
    CreateImageRequestBody,
    CreateMessageRequest,
    CreateMessageRequestBody,
    PatchMessageRequest,
    PatchMessageRequestBody,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)
from lark_oapi.core.enum import AccessTokenType, HttpMethod
from lark_oapi.core.exception import AccessTokenException, ObtainAccessTokenException, UnmarshalException
from lark_oapi.core.model import BaseRequest

from tools.settings import Settings

log = logging.getLogger(__name__)

DOMAINS = {"feishu": lark.FEISHU_DOMAIN, "lark": lark.LARK_DOMAIN}
RATE_LIMITED = 99991400  # Feishu's "request trigger frequency limit"
RETRIES = 2
RETRY_PAUSE_SECONDS = 0.5
TIMEOUT_SECONDS = 30.0  # a call Feishu does not answer by then is a dropped connection (OSError)


class FeishuError(Exception):
    def __init__(self, code: int, msg: str) -> None:
        super().__init__(f"{code} {msg}")
        self.code = code


def domain_of(setting: str) -> str:
    """FEISHU_DOMAIN as the SDK takes it: feishu, lark, or an origin URL (the tests' fake)."""
    return DOMAINS.get(setting.strip().lower(), setting.strip().rstrip("/"))


def uuid_of(key: str) -> str:
    """A post's key as Feishu's idempotency uuid (at most 50 characters): within an hour, one message per uuid."""
    return hashlib.sha256(key.encode()).hexdigest()[:40]


class FeishuClient:
    def __init__(self, settings: Settings) -> None:
        secret = settings.feishu_app_secret.get_secret_value() if settings.feishu_app_secret else ""
        self.sdk = (lark.Client.builder().app_id(settings.feishu_app_id or "").app_secret(secret)
                    .domain(domain_of(settings.feishu_domain)).timeout(TIMEOUT_SECONDS)
                    .log_level(lark.LogLevel.WARNING).build())

    def _call(self, send: Any, request: Any) -> Any:
        for attempt in range(RETRIES + 1):
            try:
                response = send(request)
            except (ObtainAccessTokenException, AccessTokenException, UnmarshalException, ValueError) as exc:
                raise FeishuError(int(getattr(exc, "code", 0) or 0), type(exc).__name__) from exc  # not its body
            if response.success():
                return response
            status = response.raw.status_code if response.raw is not None else 0
            if (response.code == RATE_LIMITED or status == 429) and attempt < RETRIES:
                time.sleep(RETRY_PAUSE_SECONDS * (attempt + 1))
                continue
            raise FeishuError(int(response.code or status), str(response.msg or ""))
        raise AssertionError("unreachable")

    def send(self, chat_id: str, msg_type: str, content: str, key: str | None = None) -> str:
        """A new message in the chat (a thread's root); returns its message id."""
        body = CreateMessageRequestBody.builder().receive_id(chat_id).msg_type(msg_type).content(content)
        if key:
            body = body.uuid(uuid_of(key))
        request = CreateMessageRequest.builder().receive_id_type("chat_id").request_body(body.build()).build()
        return str(self._call(self.sdk.im.v1.message.create, request).data.message_id)

    def reply(self, message_id: str, msg_type: str, content: str, key: str | None = None) -> str:
        """A reply in the thread of `message_id` (the thread opens on the first); returns its message id."""
        body = (ReplyMessageRequestBody.builder().msg_type(msg_type).content(content).reply_in_thread(True))
        if key:
            body = body.uuid(uuid_of(key))
        request = ReplyMessageRequest.builder().message_id(message_id).request_body(body.build()).build()
        return str(self._call(self.sdk.im.v1.message.reply, request).data.message_id)

    def patch(self, message_id: str, content: str) -> None:
        """Replace a card the bot sent (its config has update_multi: everyone sees the new one)."""
        request = (PatchMessageRequest.builder().message_id(message_id)
                   .request_body(PatchMessageRequestBody.builder().content(content).build()).build())
        self._call(self.sdk.im.v1.message.patch, request)

    def upload_image(self, data: bytes) -> str:
        body = CreateImageRequestBody.builder().image_type("message").image(io.BytesIO(data)).build()
        request = CreateImageRequest.builder().request_body(body).build()
        return str(self._call(self.sdk.im.v1.image.create, request).data.image_key)

    def upload_file(self, data: bytes, filename: str) -> str:
        body = (CreateFileRequestBody.builder().file_type("stream").file_name(filename).file(io.BytesIO(data))
                .build())
        request = CreateFileRequest.builder().request_body(body).build()
        return str(self._call(self.sdk.im.v1.file.create, request).data.file_key)

    def _raw(self, method: HttpMethod, uri: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        request = (BaseRequest.builder().http_method(method).uri(uri).token_types({AccessTokenType.TENANT})
                   .body(body).build())
        response = self._call(self.sdk.request, request)
        raw = response.raw.content if response.raw is not None else b"{}"
        return dict(json.loads(raw or b"{}").get("data") or json.loads(raw or b"{}"))

    def ephemeral(self, chat_id: str, open_id: str, card: dict[str, Any]) -> None:
        """A card only `open_id` sees, in a group chat."""
        self._raw(HttpMethod.POST, "/open-apis/ephemeral/v1/send",
                  {"chat_id": chat_id, "open_id": open_id, "msg_type": "interactive", "card": card})

    def bot_open_id(self) -> str:
        """The bot's own open id (how a mention of it is told apart); the first call, so bad credentials show."""
        return str((self._raw(HttpMethod.GET, "/open-apis/bot/v3/info").get("bot") or {}).get("open_id") or "")
