"""A thread reply takes the path of every decision (issue 24): its decision row is written first, then a job
applies it. SIGKILL between the two: after a restart it is applied exactly once, and the reply's own job, run
again, is not read as a second answer or a new request."""

from __future__ import annotations

from pathlib import Path

from bot.slack.serve import slack_core
from bot.startup import build_context
from bot.stores.decisions import DecisionStore
from bot.stores.threads import thread_id_for
from graphs.checkpointer import open_checkpointer
from testkit.child_process import kill_child_when
from testkit.children.reply_crash import REPLY
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.slack import in_thread, run_background_pass, text_of
from testkit.wait import wait_until
from tools.settings import Settings

CHANNEL, ROOT = "C7100", "1800000100.000100"


def test_a_reply_recorded_before_a_crash_is_applied_once_after_the_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    marker = tmp_path / "recorded"
    with SlackServer() as slack:
        kill_child_when("testkit.children.reply_crash", [url, str(tmp_path), slack.url, CHANNEL, ROOT, str(marker)],
                        tmp_path, [(marker.exists, "the reply's decision row, before its apply")], 180.0)
        settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path),
                            QUANTDESK_DATA_PROVIDER="sample", OPENAI_API_KEY=None, OPENAI_BASE_URL=None,
                            SLACK_BOT_TOKEN="xoxb-test", SLACK_API_URL=slack.url)
        app = build_context(settings)
        thread = thread_id_for(TEAM, CHANNEL, ROOT)
        (recorded,) = [d for d in DecisionStore(app.engine).stuck() if d.thread_id == thread]
        assert (recorded.source, recorded.decision["message"], recorded.applied) == ("thread reply", REPLY, False)

        def results() -> list[str]:
            return [text_of(c) for c in slack.fake.of("chat.postMessage")
                    if in_thread(CHANNEL, ROOT)(c) and text_of(c).startswith("Signal ma_cross")]

        assert results() == []  # nothing was applied in the killed process
        with open_checkpointer(url) as saver:
            core = slack_core(app, saver)
            run_background_pass(core)  # queues the recorded, unapplied decision first
            worker = core.queue.start_worker(core)  # then the reply's unfinished job again, after the apply
            try:
                store = DecisionStore(app.engine)
                wait_until(lambda: store.get(recorded.interrupt_id).applied,  # type: ignore[union-attr]
                           "the decision applied after the restart", 120)
                wait_until(results, "the result in the thread", 60)
                core.queue.wait_idle(thread)  # type: ignore[attr-defined]
                run_background_pass(core)
                core.queue.wait_idle(thread)  # type: ignore[attr-defined]
                assert core.runner.pending(thread) == []
            finally:
                worker.stop()
        assert len(results()) == 1  # applied once; the reply was neither a second answer nor a new request
        questions = [c for c in slack.fake.of("chat.postMessage") if in_thread(CHANNEL, ROOT)(c)
                     and "Which date range" in text_of(c)]
        assert len(questions) == 1
