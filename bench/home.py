"""Fill → republished App Home: `quantdesk serve`'s Bolt app, worker and background service in process on SQLite
against the fake Slack Web API, on the sample data (an approved order fills at once). Each round proposes an order,
a trader approves it from their Home, and the time is taken from the fill's row in the database (its fill time) and
from the click, to the trader's next published Home that shows the fill; goal: fill → Home <= 5 s.

`python -m bench home`; `run(quick=True)`: 2 rounds, nothing judged (tests call it)."""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from bench import goals
from bot.core.background import BackgroundService
from bot.jobs import start_serve_worker
from bot.slack.app import build_app
from bot.slack.http import make_server
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_server import SlackServer
from testkit.slack import SECRET, command_body, event_body, home_action_body, home_opened, post
from testkit.wait import wait_until
from tools.broker.records import PaperFill, PaperOrder
from tools.settings import Settings

GOAL_S = 5.0
ROUNDS, QUICK_ROUNDS = 10, 2
TRADER, REQUESTER = "UBENCHTRADER", "UBENCHASKER"
FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Round:
    fill_to_home: float  # seconds from the fill's time to the Home that shows it
    click_to_home: float  # seconds from the Approve click to that Home


def _round(slack: SlackServer, url: str, engine: Any, channel: str) -> Round:
    post(url, command_body("order 600519.SH buy 100", channel, REQUESTER, slack.url.replace("/api/", "/respond/b")),
         FORM)
    root = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                               and not c.args.get("thread_ts"))[0].response["ts"]

    def approve() -> dict[str, Any] | None:
        view = slack.fake.home(TRADER) or {}
        buttons = [e for b in view.get("blocks", []) if b["type"] == "actions" for e in b["elements"]
                   if e["action_id"] == "review_approve"]
        return next((b for b in buttons if root.replace(".", "") in json.dumps(view)), None)

    button = wait_until(approve, "the card on the trader's Home")
    published = len(slack.fake.of("views.publish"))
    clicked = time.time()  # the Home is timed when the fake took its publish; the fill by its row's time
    post(url, home_action_body(TRADER, {"action_id": "review_approve", "value": button["value"]}), FORM)

    def fill() -> tuple[int, datetime] | None:
        with Session(engine) as session:
            row = session.execute(select(PaperOrder.id, PaperFill.created_at)
                                  .join(PaperOrder, PaperFill.order_id == PaperOrder.id)
                                  .where(PaperOrder.account == channel)).first()
        return (row[0], row[1]) if row else None

    order_id, filled = wait_until(fill, "the fill")
    filled_at = (filled if filled.tzinfo else filled.replace(tzinfo=UTC)).timestamp()

    def shown() -> float | None:
        for call in slack.fake.of("views.publish")[published:]:
            view = call.args["view"]
            text = view if isinstance(view, str) else json.dumps(view, ensure_ascii=False)
            if call.args.get("user_id") == TRADER and call.ok and f"Order {order_id}: buy 100 600519.SH" in text \
                    and "filled 100" in text:
                return call.at + (time.time() - time.monotonic())  # when the fake took the publish, wall clock
        return None

    home_at = wait_until(shown, "the Home showing the fill")
    return Round(home_at - filled_at, home_at - clicked)


def run(quick: bool = False) -> list[Round]:
    rounds = QUICK_ROUNDS if quick else ROUNDS
    with SlackServer() as slack, tempfile.TemporaryDirectory() as tmp:
        settings = Settings(SLACK_BOT_TOKEN="xoxb-bench", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack.url,
                            QUANTDESK_DATA_DIR=tmp, DATABASE_URL=f"sqlite:///{Path(tmp) / 'bench.db'}",
                            QUANTDESK_TRADERS=TRADER)
        ctx = build_context(settings)
        with open_checkpointer(settings.database_url_value) as checkpointer:
            core = slack_core(ctx, checkpointer)
            app = build_app(settings, core.surface.client, core)  # type: ignore[attr-defined]
            worker = start_serve_worker(core.queue, core)
            background = BackgroundService(core, settings.reconcile_interval_seconds)
            background.start()
            server = make_server(app, "127.0.0.1", 0)
            server.serve_in_thread()
            url = f"http://127.0.0.1:{server.port}/slack/events"
            try:
                post(url, event_body(home_opened(TRADER)), "application/json")
                results = [_round(slack, url, ctx.engine, f"CBENCH{n}") for n in range(rounds)]
            finally:
                server.shutdown()
                background.stop()
                if worker is not None:
                    worker.stop()
    worst = max(r.fill_to_home for r in results)
    verdict = goals.judge(f"fill → Home <= {GOAL_S:.0f} s", worst <= GOAL_S, quick)
    print(f"fill → the trader's republished App Home, {rounds} order(s) approved from the Home "
          f"({datetime.now(UTC):%Y-%m-%d}); goal: fill → Home <= {GOAL_S:.0f} s")
    print(f"  {'':16} {'p50 s':>7} {'max s':>7}  goal")
    for label, values in (("fill → Home", [r.fill_to_home for r in results]),
                          ("click → Home", [r.click_to_home for r in results])):
        ordered = sorted(values)
        mark = verdict if label == "fill → Home" else "-"
        print(f"  {label:16} {ordered[len(ordered) // 2]:7.2f} {ordered[-1]:7.2f}  {mark}")
    return results


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
