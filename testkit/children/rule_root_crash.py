"""The process tests/bot/core/test_rule_schedule_run.py kills between a scheduled run's root post and its enqueue: one
scheduler pass of a core whose job queue never takes the message. Its submit writes the marker file (the
root is in Slack by then), then sleeps until the SIGKILL.

Usage: python -m testkit.children.rule_root_crash DATABASE_URL DATA_DIR SLACK_URL TICK MARKER"""

from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from pathlib import Path

from bot.jobs import Message
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.slack import run_background_job
from tools.settings import Settings


def main(url: str, data: str, slack_url: str, tick: str, marker: str) -> None:
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=data, QUANTDESK_DATA_PROVIDER="sample",
                        OPENAI_API_KEY=None, OPENAI_BASE_URL=None, SLACK_BOT_TOKEN="xoxb-test",
                        SLACK_SIGNING_SECRET="secret", SLACK_API_URL=slack_url)
    app = build_context(settings)

    def never_queued(message: Message) -> bool:
        partial = Path(f"{marker}.partial")
        partial.write_text(f"{message.key} rooted at {message.thread_ts} in process {os.getpid()}\n")
        os.replace(partial, marker)  # the marker appears whole or not at all
        while True:  # until the SIGKILL
            time.sleep(3600)

    with open_checkpointer(url) as saver:
        core = slack_core(app, saver)
        core.queue.submit_text = never_queued  # type: ignore[method-assign]
        run_background_job(core, "rule schedules", datetime.fromisoformat(tick))
    print("the scheduler pass finished although the queue never took the run", file=sys.stderr)
    sys.exit(3)


if __name__ == "__main__":
    main(*sys.argv[1:6])
