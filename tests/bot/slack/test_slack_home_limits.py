"""The App Home within Slack's limits (issue 26): an account with 300 positions, 50 rules, six accounts and eight
waiting cards give a Home of at most 100 blocks that slack_sdk validates, the first rows of each long list and a
"More" button whose modal shows the rest; the panels come from the real stores on the sample data."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from slack_sdk.models.views import View
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from bot.cards import ClarifyCard
from bot.core.surface import Home, HomeCard, Place, Question
from bot.slack.home import home_view, more_modal
from graphs.context import WorkflowContext
from graphs.home_panels import account_panels, rule_panels
from testkit.rules import add_scheduled
from tools.broker.paper import PaperBroker, PaperConfig
from tools.broker.records import PaperPosition
from tools.broker.store import ensure_account
from tools.data.local import SampleProvider
from tools.i18n import using
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox
from tools.settings import Settings
from tools.storage.artifacts import ArtifactStore

OWNER = "UOWNER"


def _link(place: Place) -> str:
    return f"https://example.slack.com/archives/{place.channel}/p{place.thread_ts.replace('.', '')}"


def _sections(view: dict[str, Any]) -> list[str]:
    return [b["text"]["text"] for b in view["blocks"] if b["type"] == "section" and "text" in b]


def _valid(view: dict[str, Any]) -> dict[str, Any]:
    View(**view).validate_json()
    assert len(view["blocks"]) <= 100
    assert all(len(text) <= 3000 for text in _sections(view))
    return view


def _context(engine: Engine, sandbox: Sandbox) -> WorkflowContext:
    provider = SampleProvider()
    paper = PaperConfig.from_settings(Settings())
    codes = sorted(provider.known_codes() or [])[:260]
    codes += [f"{688000 + n}.SH" for n in range(300 - len(codes))]  # codes the sample has no prices of
    ensure_account(engine, "CBIG", paper.starting_cash, OWNER)
    with Session(engine) as session, session.begin():
        session.add_all([PaperPosition(account="CBIG", ts_code=code, quantity=100 * (n + 1),
                                       cost_fen=1_000_000 + n, realised_fen=0) for n, code in enumerate(codes)])
    for n in range(5):
        ensure_account(engine, f"CSMALL{n}", paper.starting_cash, OWNER)
    store = RuleStore(engine, frozenset())
    for n in range(50):
        add_scheduled(store, OWNER, "CBIG", "600519.SH",
                      f"buy when close > ma({n + 5}); sell when close < ma({n + 5})", "30 14 * * 1-5",
                      source="language")
    return WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           paper=paper, rules=store,
                           broker=lambda name, by: PaperBroker(engine, provider, name, paper, opened_by=by))


def _cards(n: int) -> tuple[HomeCard, ...]:
    return tuple(HomeCard(Question(f"slack-T-C-{i}", f"int{i:04d}", ClarifyCard(
        question=f"Which dates for request {i}?", choices=("2019", "2020", "2021")), OWNER),
        Place("T", "C", f"17000000{i:02d}.000100", OWNER)) for i in range(n))


def test_a_home_with_300_positions_and_50_rules_stays_within_slack_limits(sqlite_engine: Engine,
                                                                           sandbox: Sandbox) -> None:
    ctx = _context(sqlite_engine, sandbox)
    accounts = account_panels(ctx, OWNER)
    rules = rule_panels(ctx, OWNER)
    big = next(p for p in accounts if p.name == "account:CBIG")
    assert len(big.rows) == 300 and len(rules[0].rows) == 50
    assert [a.words for a in rules[0].rows[0].actions] == [("rule", "pause", "1"), ("rule", "run", "1")]

    home = Home(OWNER, _cards(8), (*accounts, *rules), {}, "Rule 3 paused.")
    view = _valid(home_view(home, _link))
    text = json.dumps(view)
    assert "Rule 3 paused." in text and "Which dates for request 0?" in text and "Account CBIG" in text
    more = [json.loads(e["accessory"]["value"])["p"] for e in view["blocks"] if e.get("accessory")]
    assert "waiting" in more and "account:CBIG" in more  # long lists offer the rest

    modal = _valid(more_modal("Account CBIG", big, [], _link))
    shown = "\n".join(_sections(modal))
    assert all(p.text.split(":")[0] in shown for p in big.rows[:300])  # every position, in one modal
    rules_modal = _valid(more_modal("Your rules", rules[0], [], _link))
    assert "Rule 1 " in json.dumps(rules_modal)
    cards_modal = _valid(more_modal("Waiting for you", None, list(_cards(8)), _link))
    assert "Which dates for request 7?" in json.dumps(cards_modal)


def test_an_empty_home_says_so(sqlite_engine: Engine) -> None:
    view = _valid(home_view(Home("UNEW"), _link))
    assert "Nothing waits for you" in json.dumps(view)


def test_position_figures_are_the_brokers(sqlite_engine: Engine, sandbox: Sandbox) -> None:
    ctx = _context(sqlite_engine, sandbox)
    big = next(p for p in account_panels(ctx, OWNER) if p.name == "account:CBIG")
    first = big.rows[0].text
    assert "100 shares, 100 sellable today (T+1)" in first and f"cost {Decimal('10000.00'):,.2f}" in first


def test_a_home_speaks_the_language_in_effect(sqlite_engine: Engine, sandbox: Sandbox) -> None:
    ctx = _context(sqlite_engine, sandbox)
    with using("zh-CN"):
        home = Home(OWNER, _cards(1), (*account_panels(ctx, OWNER), *rule_panels(ctx, OWNER)))
        view = _valid(home_view(home, _link))
    text = json.dumps(view, ensure_ascii=False)
    assert "等待你处理" in text and "账户 CBIG" in text and "你的规则" in text and "今日可卖" in text
    assert "Waiting for you" not in text
