"""The process tests/bot/core/test_stream_crash.py kills mid-stream: the real core on the Slack surface streams a long
report into a thread; the fake Slack takes its second chunk (chat.appendStream) and never answers, until the SIGKILL.

Usage: python -m testkit.children.stream_crash DATABASE_URL DATA_DIR SLACK_URL CHANNEL ROOT KEY"""

from __future__ import annotations

import sys
import time

from bot.core import Place
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_server import TEAM
from tools.settings import Settings

ALICE = "UALICE"
TITLE = "Market analyst's report"
REPORT = "\n".join(f"{n}. The 20-day average rose above the 60-day average on day {n}." for n in range(1, 60))


def settings(url: str, data: str, slack_url: str) -> Settings:
    """The child's and the restarted process's settings: claims lapse after a second (the crashed one's too)."""
    return Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=data, QUANTDESK_DATA_PROVIDER="sample",
                    OPENAI_API_KEY=None, OPENAI_BASE_URL=None, SLACK_BOT_TOKEN="xoxb-test",
                    SLACK_SIGNING_SECRET="secret", SLACK_API_URL=slack_url, QUANTDESK_DECISION_CLAIM_SECONDS=1)


def main(url: str, data: str, slack_url: str, channel: str, root: str, key: str) -> None:
    app = build_context(settings(url, data, slack_url))
    with open_checkpointer(url) as saver:
        core = slack_core(app, saver)
        core.threads.open(TEAM, channel, root, ALICE)
        core.outbox.stream(Place(TEAM, channel, root, ALICE), key, TITLE, REPORT)  # held mid-stream
        time.sleep(3600)
    sys.exit(3)


if __name__ == "__main__":
    main(*sys.argv[1:7])
