"""The background service: what runs whether or not anybody asks, in `quantdesk serve` and in `quantdesk chat`.

Each pass queues again accepted decisions that were never applied (a crash, a database or network error) and
messages recorded but never queued, posts again what the surface refused, then runs the background jobs the
workflows declare (the registry's BACKGROUND: rule schedules, order settlement, the desk's resolution), each at
its own interval, posting their notices once, publishes the homes still due (a refused publish), and last
witnesses the audit chains' new heads outside the database (bot/core/witness.py).
Decisions, posts and homes are claimed row by row, so several processes can run one without doing anything twice;
each takes only its own surface's threads (the core's scope)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime

from bot.core.core import Core
from bot.core.witness import HeadWitness
from graphs.background import BackgroundCall, BackgroundJob, Notice
from graphs.registry import BACKGROUND
from tools.broker import news as broker_news
from tools.rules.schedule import CatchUp
from tools.settings import get_settings

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 5.0  # at most 10 s between passes


class BackgroundService:
    def __init__(self, core: Core, interval: float = INTERVAL_SECONDS, catch_up: CatchUp = "once",
                 serves: Callable[[str], bool] = lambda channel: True,
                 jobs: dict[str, BackgroundJob] | None = None,
                 on_notice: Callable[[Notice], None] | None = None,
                 clock: Callable[[], datetime] | None = None, witness: HeadWitness | None = None) -> None:
        """`serves`: whether a channel is this surface's (a rule runs where its channel is served); `on_notice`
        hears each notice a job handed back (the console says what ran); `clock`: the jobs' now (aware; None: the
        wall clock); `witness`: where new audit heads go (None: QUANTDESK_AUDIT_WITNESS_FILE only)."""
        self.core, self.interval, self.catch_up, self.serves = core, interval, catch_up, serves
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now(UTC))
        self.jobs = BACKGROUND if jobs is None else jobs
        self.on_notice = on_notice
        self.witness = witness or HeadWitness(core, get_settings().audit_witness_file)
        self._stop = threading.Event()
        self._news = threading.Event()  # a broker reported an order or a trade (tools/broker/news.py)
        self._unlisten: Callable[[], None] | None = None
        self._first_pass = threading.Event()  # set when the first pass ended, failed or not
        self._thread: threading.Thread | None = None
        self._ran_at: dict[str, float] = {}
        self._started = datetime.now(UTC)  # decisions made before are an earlier process's (`run_once`)
        self._reshown: set[str] = set()  # those this process has shown on their cards
        self._pass = threading.Lock()  # one jobs pass at a time (a surface may ask for one besides the loop's)

    def run_once(self, now: datetime | None = None) -> None:
        """One pass: due decisions back on the queue (an earlier process's, never tried, shown on their cards first),
        unqueued messages back on the queue, every post without a message posted again, then each background job
        whose interval has passed (`now`: the jobs' clock)."""
        core = self.core
        for decision in core.decisions.due(scope=core.scope):
            if (decision.attempts == 0 and decision.decided_at < self._started
                    and decision.interrupt_id not in self._reshown):
                # an earlier process decided it and never tried it: it may have died before its confirm showed it
                self._reshown.add(decision.interrupt_id)
                core.decider.reshow(decision)
            core.reapply(decision.interrupt_id, decision.thread_id)
        core.queue.requeue_unqueued()
        for post in core.posts.unposted(scope=core.scope):
            try:
                core.repost(post.key)
            except Exception:  # noqa: BLE001 - the surface or the database is down: the post stays for the next pass
                log.warning("re-posting %s failed; will try again", post.key, exc_info=True)
        self.run_jobs(now)
        if core.homes is not None:
            core.homes.publish_due()
        if self.witness.active:
            try:
                self.witness.publish()
            except Exception:  # noqa: BLE001 - the file or the channel is unreachable: the next pass publishes
                log.warning("witnessing the audit heads failed; will try again", exc_info=True)

    def run_jobs(self, now: datetime | None = None, force: bool = False, news: bool = False) -> None:
        """The workflows' background jobs that are due (all of them with `force`; with `news`, at once the ones a
        broker's report of an order concerns). A job that fails is logged, and the others still run."""
        with self._pass:
            self._run_jobs(now, force, news)

    def _run_jobs(self, now: datetime | None, force: bool, news: bool = False) -> None:
        call = BackgroundCall(now or self.clock(), self.core.owner, self.core.start_scheduled, self.catch_up,
                              self.serves)
        moment = time.monotonic()
        for name, job in self.jobs.items():
            last = self._ran_at.get(name)
            if news and not job.on_broker_news:
                continue
            if not (force or news) and last is not None and moment - last < job.every_seconds:
                continue
            self._ran_at[name] = moment
            try:
                notices = job.run(self.core.runner.context, call)
            except Exception:  # noqa: BLE001 - the next job, and the service's other work, must still run
                log.exception("the %s job failed; it runs again next time", name)
                continue
            for notice in notices:
                said = replace(notice, text=self.core.notice_text(notice))
                self.core.notify(said.thread_id, said.key, said.said(), said.users)
                if self.on_notice is not None:
                    self.on_notice(said)

    def start(self) -> None:
        """Run a pass now and then every `interval` seconds, in a daemon thread, until `stop()`; between passes,
        the jobs a broker's report of an order concerns run as soon as it comes (a fill reaches its card at once)."""
        self._unlisten = broker_news.listen(self._news.set)
        self._thread = threading.Thread(target=self._loop, name="quantdesk-background", daemon=True)
        self._thread.start()

    def wait_first_pass(self, timeout: float) -> bool:
        """Wait until the first pass ended (True) or `timeout` seconds passed (False)."""
        return self._first_pass.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        self._news.set()  # ends the wait between passes
        if self._unlisten is not None:
            self._unlisten()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # noqa: BLE001 - the loop must survive a database outage
                log.exception("background pass failed")
            self._first_pass.set()
            self._between_passes()

    def _between_passes(self) -> None:
        """Wait `interval` seconds for the next pass, running the broker-news jobs whenever a broker reports."""
        next_pass = time.monotonic() + self.interval
        while not self._stop.is_set() and (left := next_pass - time.monotonic()) > 0:
            if not self._news.wait(left) or self._stop.is_set():
                continue
            self._news.clear()
            try:
                self.run_jobs(news=True)
            except Exception:  # noqa: BLE001 - the loop must survive a database outage
                log.exception("background pass on a broker's report failed")
