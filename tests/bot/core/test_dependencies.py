"""Every adapter builds the workflows' context from the settings in one place (graphs/dependencies.py): the
bot's runner (which the console and the Slack workers use) once ignored the desk's budgets and its news and
fundamentals folders, which only the LangGraph server read."""

from __future__ import annotations

from pathlib import Path

from bot.runner import Runner
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from graphs.studio import context_from_settings
from tools.data.news import LocalNews, LocalPosts
from tools.settings import Settings


def test_the_runner_and_the_server_read_the_same_settings(tmp_path: Path) -> None:
    news = tmp_path / "news"
    news.mkdir()
    url = f"sqlite:///{tmp_path / 'q.db'}"
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data"),
                        QUANTDESK_DECISION_TOKEN_BUDGET=12_345, QUANTDESK_REPLAY_TOKEN_BUDGET=67_890,
                        QUANTDESK_LLM_MAX_ANSWER_TOKENS=4_096, QUANTDESK_NEWS_DIR=str(news))
    app = build_context(settings)
    with open_checkpointer(url) as saver:
        runner = Runner(app, saver).context
    server = context_from_settings(settings)
    for ctx in (runner, server):
        assert (ctx.decision_token_budget, ctx.replay_token_budget, ctx.max_answer_tokens) == (12_345, 67_890, 4_096)
        assert isinstance(ctx.news, LocalNews) and isinstance(ctx.posts, LocalPosts)
        assert ctx.fundamentals is not None and ctx.rules is not None and ctx.broker is not None
