"""`quantdesk serve` under load: 200 signed app_mention events, 50 at a time, at a real `quantdesk serve`
process (on SQLite, then on PostgreSQL as the README documents for production; its worker starting every run
meanwhile) and, in the same run, at a bare Bolt app with a no-op listener behind the same HTTP server
(bot/slack/http.py), the reference. Per row: p50/p95/p99 ack latency, non-2xx answers, p99 / the bare app's, and how
many mentions got the bot's first post in their thread. Goal, on PostgreSQL: p99 <= 2x the bare app's, no non-2xx,
every thread answered.

`python -m bench slack_scale`; `run(quick=True)`: 20 events, 10 at a time, nothing judged (tests call it)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from slack_bolt import App
from slack_sdk import WebClient

from bench.pg import PostgresUnavailable, scratch_database
from bench.slack_load import GOAL_RATIO, Load, answered, fire, sizes, verdict
from bot.slack.http import make_server
from testkit.fakes.slack_server import SlackServer
from testkit.slack import SECRET, BotProcess
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

ANSWER_TIMEOUT, QUICK_ANSWER_TIMEOUT = 300.0, 30.0  # seconds to wait for every thread's first post


@dataclass(frozen=True)
class Row:
    name: str
    load: Load
    answered: int | None  # None for the bare app, which posts nothing


def _serve_on(slack: SlackServer, database_url: str, data_dir: Path, prefix: str, quick: bool) -> tuple[Load, int]:
    """Fire at a `quantdesk serve` process (with its worker) on `database_url`; then count the threads answered."""
    if database_url.startswith("postgresql"):
        engine = make_engine(database_url)
        upgrade(engine)
        engine.dispose()
    bot = BotProcess(slack.url, database_url, data_dir)
    try:
        load = fire(bot.url, prefix, *sizes(quick))
        return load, answered(slack, load.threads, QUICK_ANSWER_TIMEOUT if quick else ANSWER_TIMEOUT)
    finally:
        bot.stop()


def run(quick: bool = False) -> list[Row]:
    """Fire at the bare app, serve on SQLite and serve on PostgreSQL; print and return the rows."""
    events, concurrency = sizes(quick)
    with SlackServer() as slack, tempfile.TemporaryDirectory() as tmp:
        bare = App(name="bare", client=WebClient(token="xoxb-bench", base_url=slack.url), signing_secret=SECRET)
        bare.event("app_mention")(lambda: None)
        server = make_server(bare, "127.0.0.1", 0)
        server.serve_in_thread()
        try:
            rows = [Row("bare Bolt app", fire(f"http://127.0.0.1:{server.port}/slack/events", "1", events,
                                              concurrency), None),
                    Row("serve, SQLite", *_serve_on(slack, f"sqlite:///{Path(tmp) / 'bench.db'}", Path(tmp), "2",
                                                    quick))]
            try:
                with scratch_database() as url:
                    rows.append(Row("serve, PostgreSQL", *_serve_on(slack, url, Path(tmp) / "pg", "3", quick)))
            except PostgresUnavailable as exc:
                print(f"PostgreSQL row skipped: {exc}")
        finally:
            server.shutdown()
    print(f"ack latency, {events} signed app_mention events, {concurrency} at a time; reference: the bare Bolt app "
          f"in this run; goal on PostgreSQL: p99 <= {GOAL_RATIO:.0f}x the bare app's, 0 non-2xx, every thread answered")
    print(f"  {'':18} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'p99/bare':>9} {'answered':>9}  goal")
    reference = rows[0].load
    for row in rows:
        p50, p95, p99 = (row.load.percentile(q) for q in (0.50, 0.95, 0.99))
        ratio = p99 / reference.percentile(0.99)
        shown = "-" if row.answered is None else f"{row.answered}/{len(row.load.threads)}"
        goal = verdict(row.name, row.load, reference, row.answered, quick) if "PostgreSQL" in row.name else "-"
        print(f"  {row.name:18} {p50:8.1f} {p95:8.1f} {p99:8.1f} {row.load.bad:8d} {ratio:8.2f}x {shown:>9}  "
              f"{goal}")
    return rows


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
