"""The process tests/bot/core/test_reply_crash.py kills between a thread reply's decision row and its apply: the real
core on the Slack surface, whose queue never takes the apply job. A request asks a question; the reply is recorded as
its decision, then queueing its apply writes the marker file and sleeps until the SIGKILL.

Usage: python -m testkit.children.reply_crash DATABASE_URL DATA_DIR SLACK_URL CHANNEL ROOT MARKER"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from bot.core import Place
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_server import TEAM
from testkit.wait import wait_until
from tools.settings import Settings

ALICE = "UALICE"
REQUEST = "signal ma_cross 600519.SH 20190101"  # asks for the end date
REPLY = "20190101 20200601"


def main(url: str, data: str, slack_url: str, channel: str, root: str, marker: str) -> None:
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=data, QUANTDESK_DATA_PROVIDER="sample",
                        OPENAI_API_KEY=None, OPENAI_BASE_URL=None, SLACK_BOT_TOKEN="xoxb-test",
                        SLACK_SIGNING_SECRET="secret", SLACK_API_URL=slack_url)
    app = build_context(settings)

    def never_applied(interrupt_id: str, thread_id: str) -> bool:
        partial = Path(f"{marker}.partial")
        partial.write_text(f"decision {interrupt_id} of {thread_id} recorded in process {os.getpid()}\n")
        os.replace(partial, marker)  # the marker appears whole or not at all
        while True:  # until the SIGKILL
            time.sleep(3600)

    with open_checkpointer(url) as saver:
        core = slack_core(app, saver)
        core.queue.submit_decision = never_applied  # type: ignore[method-assign]
        core.queue.start_worker(core)
        place = Place(TEAM, channel, root, ALICE)
        core.intake.submit_text(place, REQUEST, f"msg:{channel}:{root}")
        wait_until(lambda: core.runner.pending(place.thread_id), "the question", 120)
        core.intake.submit_text(place, REPLY, f"msg:{channel}:{float(root) + 1:.6f}")
        time.sleep(3600)
    sys.exit(3)


if __name__ == "__main__":
    main(*sys.argv[1:7])
