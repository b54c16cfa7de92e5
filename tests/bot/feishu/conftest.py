"""The fake Feishu Open API and one `quantdesk serve --surface feishu` per test module; `courier`: the module's
bot in each delivery mode Feishu offers (HTTP callbacks, then the long connection), its tests run once for each."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.fakes.feishu_server import FeishuServer
from testkit.fakes.feishu_ws import LongConnectionServer
from testkit.feishu import Courier, FeishuBot


@pytest.fixture(scope="module")
def feishu() -> Iterator[FeishuServer]:
    with FeishuServer() as server:
        yield server


@pytest.fixture(scope="module")
def bot(feishu: FeishuServer, request: pytest.FixtureRequest,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[FeishuBot]:
    """The module's `BOT_ENV` (environment variables) if it has one, on SQLite in a folder of its own."""
    data = tmp_path_factory.mktemp("feishu")
    process = FeishuBot(feishu.url, f"sqlite:///{data / 'q.db'}", data, **getattr(request.module, "BOT_ENV", {}))
    yield process
    process.stop()


@pytest.fixture(scope="module", params=["http", "long connection"])
def courier(feishu: FeishuServer, request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Courier]:
    """The module's bot (its `BOT_ENV`, on SQLite) taking events by HTTP callbacks or over the long connection (no
    verification token and no encrypt key: `lark_oapi.ws.Client`)."""
    data = tmp_path_factory.mktemp("feishu")
    env = getattr(request.module, "BOT_ENV", {})
    feishu.fake.forget_calls()  # what the module's other mode did is not this one's
    if request.param == "http":
        process = FeishuBot(feishu.url, f"sqlite:///{data / 'q.db'}", data, **env)
        yield Courier(process)
        process.stop()
        return
    with LongConnectionServer() as link:
        feishu.fake.ws_url = link.url
        process = FeishuBot(feishu.url, f"sqlite:///{data / 'q.db'}", data, FEISHU_VERIFICATION_TOKEN="",
                            FEISHU_ENCRYPT_KEY="", **env)
        link.wait_connected()
        yield Courier(process, link)
        process.stop()
        feishu.fake.ws_url = None
