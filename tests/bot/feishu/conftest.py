"""The fake Feishu Open API and one `quantdesk serve --surface feishu` per test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testkit.fakes.feishu_server import FeishuServer
from testkit.feishu import FeishuBot


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
