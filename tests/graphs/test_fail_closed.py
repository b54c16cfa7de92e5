"""Issue 38, items 4-7: controls fail closed, inputs are bounded, untrusted code is contained, and an endpoint's echoed
key is redacted. Each attack is made against a real database (SQLite and PostgreSQL) and answered with the one line a
trader or a compliance officer reads; the thread (or the sandbox) keeps working after it."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import Engine, MetaData, select
from sqlalchemy.orm import Session

from graphs.context import WorkflowContext
from graphs.factor.library import CombinationError, combination_parts
from graphs.factor.template import edit_problems
from graphs.llm import get_light_llm, get_llm
from graphs.order.grammar import OrderGrammarError, parse_order
from graphs.workflow import CommandError
from testkit.fakes.openai_server import API_KEY, OpenAIServer, echoing_error
from testkit.graph_thread import GraphThread
from testkit.llm import FREE_TEXT, LIGHT, settings_for
from testkit.mandate import ADMIN, TRADER, context, mandate
from testkit.paper import CONFIG, interrupt_value, paper_orders
from tools.broker.clock import SHANGHAI
from tools.broker.mandate import set_mandate
from tools.broker.notes import note_text
from tools.broker.orders import OrderRequest
from tools.broker.paper import PaperBroker
from tools.broker.records import PaperAccount
from tools.data.local import LocalProvider, SampleProvider
from tools.i18n import using
from tools.redact import MASK, RedactingFilter, remember_settings
from tools.sandbox import Sandbox
from tools.sandbox.policy import check_code
from tools.settings import Settings
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

NESTED = {500: "factor = " + "-" * 500 + "close", 100_000: "factor = " + "-" * 100_000 + "close"}
TOO_DEEP = "the code is nested too deeply or is too large to check"


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


@pytest.fixture
def account() -> str:
    return f"fc-{uuid.uuid4().hex[:8]}"


# --- (5/6) bounds: limit prices and quantities ---------------------------------------------------------------


@pytest.mark.parametrize(("typed", "refusal"), [
    ("order 000001.SZ buy 100 limit=1e30", "limit=1e30 is not a price: A-share prices are below 99,999.99 CNY"),
    # typed in Chinese: 限价 with an exponent is the whole value, not 1 with "e30" left over as a reason
    ("下单 000001.SZ 买入 100股 限价＝1e30", "limit=1e30 is not a price: A-share prices are below 99,999.99 CNY"),
    ("order 000001.SZ buy 99999999999999999999999",
     "the quantity 99999999999999999999999 is more than any order may ask for (at most 1,000,000 shares)"),
    ("order 000001.SZ buy 1" + "0" * 5000, "the quantity 10000000000000000000… is more than any order may ask for"),
    ("order 000001.SZ buy 1000100 limit=14.50",
     "one main board limit order is for at most 1,000,000 shares, not 1,000,100"),
    ("order 000001.SZ buy 100 limit=nan", "limit=nan must be a positive price"),
])
def test_an_unbounded_order_is_refused_in_one_line_and_the_thread_goes_on(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, account: str, typed: str,
        refusal: str) -> None:
    run = GraphThread(db_url, context(engine, sandbox, provider), requester=ADMIN)
    out = run.say(f"{typed} account={account}")
    assert "__interrupt__" not in out
    problem = next(line for line in out["final_reply"].splitlines() if refusal in line)
    assert len(problem) < 200  # one short line, whatever was typed
    # the same thread still takes an order
    card = interrupt_value(run.say(f"order 000001.SZ buy 100 account={account}"))
    assert "All checks pass." in card["description"]
    assert paper_orders(engine, account) == []


@pytest.mark.parametrize(("most", "refusal"), [
    ("order 688981.SH buy {n} limit=50", "one STAR Market limit order is for at most 100,000 shares"),
    ("order 688981.SH buy {n}", "one STAR Market market order is for at most 50,000 shares"),
    ("order 300750.SZ buy {n} limit=200", "one ChiNext limit order is for at most 300,000 shares"),
    ("order 300750.SZ sell {n}", "one ChiNext market order is for at most 150,000 shares"),
    ("order 600519.SH buy {n}", "one main board market order is for at most 1,000,000 shares"),
    ("order 430047.BJ buy {n} limit=9", "one Beijing Stock Exchange limit order is for at most 1,000,000 shares"),
])
def test_each_board_caps_one_order(most: str, refusal: str) -> None:
    cap = int(refusal.rsplit(" ", 2)[1].replace(",", ""))
    assert parse_order(most.format(n=cap)).quantity == cap
    with pytest.raises(OrderGrammarError) as refused:
        parse_order(most.format(n=cap + 100))
    assert str(refused.value) == f"{refusal}, not {cap + 100:,}"


def test_an_edited_quantity_or_price_goes_through_the_same_bounds(db_url: str, engine: Engine, sandbox: Sandbox,
                                                                 provider: SampleProvider, account: str) -> None:
    run = GraphThread(db_url, context(engine, sandbox, provider), requester=ADMIN)
    out = run.say(f"order 000001.SZ buy 100 limit=14.50 account={account}")
    assert interrupt_value(out)["args_schema"]["quantity"]["maximum"] == 1_000_000
    for edits, refusal in (({"quantity": "99999999999999999999999"}, "Quantity (shares) must be at most 1000000"),
                           ({"quantity": "1" + "0" * 5000}, "Quantity (shares) must be a whole number"),
                           ({"quantity": 1_000_100}, "Quantity (shares) must be at most 1000000"),
                           ({"quantity": 100, "limit_price": "1e30"}, "Limit price (CNY) must be at most"),
                           ({"quantity": 100, "limit_price": "inf"}, "Limit price (CNY) must be at most")):
        out = run.decide(out, {"type": "edit", "edited_action": {"name": "place_order", "args": edits}}, user=TRADER)
        description = interrupt_value(out)["description"]
        assert f"the edit was not applied: {refusal}" in description, description
    assert paper_orders(engine, account) == []
    done = run.decide(out, {"type": "approve"}, user=TRADER)  # the card still stands, as first checked
    assert done["result"]["status"] == "filled"


@pytest.mark.parametrize(("setting", "refusal"), [
    ("max_exposure=1e30", "max_exposure must be an amount in CNY from 0 to 1,000,000,000,000.00, not '1e30'"),
    ("max_turnover=nan", "max_turnover must be an amount in CNY from 0 to 1,000,000,000,000.00, not 'nan'"),
    ("max_exposure=-5", "max_exposure must be an amount in CNY from 0 to 1,000,000,000,000.00, not '-5'"),
    ("max_orders=99999999999999999999", "max_orders must be at most 1,000,000, not 99999999999999999999"),
])
def test_a_mandate_amount_out_of_bounds_is_refused_in_one_line(engine: Engine, sandbox: Sandbox,
                                                               provider: SampleProvider, account: str, setting: str,
                                                               refusal: str) -> None:
    ctx = context(engine, sandbox, provider)
    with pytest.raises(CommandError) as refused:
        mandate(ctx, ADMIN, account, "set", setting)
    assert str(refused.value) == refusal
    assert mandate(ctx, ADMIN, account, "set", "max_exposure=500,000", "max_orders=5").lines == [
        "at most 5 orders a day", "gross exposure at most 500,000.00 CNY"]  # the command still works


# --- (5/6) the sandbox's pre-check contains any failure --------------------------------------------------------


@pytest.mark.parametrize("depth", NESTED)
def test_deeply_nested_code_is_refused_with_a_reason_wherever_it_is_checked(depth: int, sandbox: Sandbox) -> None:
    code = NESTED[depth]
    (violation,) = check_code(code)
    assert violation.message == TOO_DEEP
    assert edit_problems(code) == [f"line 1: {TOO_DEEP}"]  # what the Slack Edit modal's handler shows in the form
    result = sandbox.run(code, {"close": pd.DataFrame({"a": [1.0, 2.0]})})
    assert not result.ok and result.error is not None and result.error.message == TOO_DEEP
    assert sandbox.run("factor = -close", {"close": pd.DataFrame({"a": [1.0, 2.0]})}).ok  # the process goes on


@pytest.mark.parametrize("depth", [3_000, 100_000])
def test_a_factor_combination_nested_too_deeply_is_refused(depth: int) -> None:
    with pytest.raises(CombinationError, match="nested too deeply|cannot read the combination"):
        combination_parts("-" * depth + "momentum(20) + volatility(20)")
    assert len(combination_parts("-" * 500 + "momentum(20) + volatility(20)")) == 2  # deep, but within reach


def test_a_program_edit_too_deep_to_parse_is_refused() -> None:
    program = "def compute_factor(close):\n    factor = " + "(" * 300 + "close" + ")" * 300 + "\n"
    assert len(edit_problems(program)) == 1  # a one-line refusal, not an exception


# --- (4) controls fail closed --------------------------------------------------------------------------------


def test_block_st_refuses_a_code_whose_st_status_is_unknown(db_url: str, engine: Engine, sandbox: Sandbox,
                                                           provider: SampleProvider, account: str) -> None:
    assert provider.securities(["600519.SH"])["600519.SH"].is_st("20200824") is None  # the sample has no ST data
    ctx = context(engine, sandbox, provider)
    mandate(ctx, ADMIN, account, "set", "block=ST")
    out = GraphThread(db_url, ctx, requester=ADMIN).say(f"order 600519.SH buy 100 account={account}")
    assert "__interrupt__" not in out
    assert out["result"]["message"] == (
        f"The order is outside account {account}'s mandate and is not proposed: 600519.SH's ST status is unknown, so "
        "the mandate's block ST cannot be checked: refused until the data says whether it is ST.")
    assert paper_orders(engine, account) == []


ST_CODE = "600000.SH"
BAR = {"ts_code": ST_CODE, "open": 10.0, "high": 10.0, "low": 10.0, "close": 10.0, "pre_close": 10.0, "vol": 1e5,
       "amount": 1e6}
NEXT_MORNING = datetime(2024, 10, 8, 8, 0, tzinfo=SHANGHAI)  # data ends 2024-09-30; the next session is 10-08


def _data(folder: Path, days: dict[str, int]) -> LocalProvider:
    folder.mkdir(exist_ok=True)
    pd.DataFrame([{**BAR, "trade_date": d, "is_st": st} for d, st in days.items()]).to_csv(folder / "daily.csv",
                                                                                           index=False)
    return LocalProvider(folder)


def _buy() -> OrderRequest:
    return OrderRequest(f"fc-{uuid.uuid4().hex[:8]}", ST_CODE, "buy", 100, approved_by=TRADER)


@pytest.mark.parametrize(("last", "up", "down", "reserve", "said"), [
    (1, Decimal("10.50"), Decimal("9.50"), Decimal("1055.01"), "was ST on 20240930"),
    (0, Decimal("11.00"), Decimal("9.00"), Decimal("1105.01"), "was not ST on 20240930"),
])
def test_the_next_sessions_st_status_is_the_last_known_one_said_as_carried_forward(
        engine: Engine, tmp_path: Path, account: str, last: int, up: Decimal, down: Decimal, reserve: Decimal,
        said: str) -> None:
    provider = _data(tmp_path / "d", {"20240926": 1, "20240927": 1, "20240930": last})
    broker = PaperBroker(engine, provider, account, CONFIG, now=lambda: NEXT_MORNING)
    preview = broker.preview(_buy())
    assert preview.session_date == "20241008"
    # main board, 2024 (before 2026-07-06): ST ±5 % of 10.00, else ±10 %
    assert (preview.limit_up, preview.limit_down) == (up, down)
    assert f"ST status carried forward: {ST_CODE} {said}, the last day of its ST data" in preview.notes
    order = broker.submit(_buy())
    assert order.status == "open" and order.reserved == reserve  # 100 × limit-up, 5.00 commission, 0.01 transfer fee


def test_a_real_st_code_ordered_for_the_session_after_the_data_keeps_its_st_limits(
        engine: Engine, shared_data: Path, account: str) -> None:
    """000408.SZ was ST on 2020-08-24, the baostock data's last day (close 8.15); an order for 2020-08-25 is judged
    on main-board ST limits, ±5 %: 8.15 × 1.05 = 8.5575 → 8.56 and 8.15 × 0.95 = 7.7425 → 7.74 (not 8.97 / 7.34)."""
    provider = LocalProvider(shared_data / "cn_csi300_baostock_qfq")
    morning = datetime(2020, 8, 25, 8, 0, tzinfo=SHANGHAI)
    broker = PaperBroker(engine, provider, account, CONFIG, now=lambda: morning)
    request = OrderRequest(f"fc-{uuid.uuid4().hex[:8]}", "000408.SZ", "buy", 100, approved_by=TRADER)
    preview = broker.preview(request)
    assert (preview.session_date, preview.limit_up, preview.limit_down) == ("20200825", Decimal("8.56"),
                                                                            Decimal("7.74"))
    assert ("ST status carried forward: 000408.SZ was ST on 20200824, the last day of its ST data"
            in preview.notes)
    assert broker.submit(request).reserved == Decimal("861.02")  # 856.00, 5.00 commission, 0.002 % transfer fee


def test_settle_checks_the_mandate_again_before_it_fills(engine: Engine, tmp_path: Path, account: str) -> None:
    folder = tmp_path / "d"
    broker = PaperBroker(engine, _data(folder, {"20240927": 0, "20240930": 0}), account, CONFIG,
                         now=lambda: NEXT_MORNING)
    placed = broker.submit(_buy())
    assert placed.status == "open"
    set_mandate(engine, account, {"block": ("ST",)}, ADMIN)  # after the order was placed; it turns ST that session
    later = datetime(2024, 10, 8, 16, 0, tzinfo=SHANGHAI)
    settled = PaperBroker(engine, _data(folder, {"20240927": 0, "20240930": 0, "20241008": 1}), account, CONFIG,
                          now=lambda: later).settle()
    (order,) = settled
    assert (order.status, order.fills) == ("expired", ())
    assert order.note == ("not filled: the account's mandate refuses it at the fill: 600000.SH is blocked (mandate: "
                          "block ST)")
    with using("zh-CN"):
        assert note_text(order.note) != order.note and "600000.SH" in note_text(order.note)
    with Session(engine) as session:
        assert session.scalar(select(PaperAccount.reserved_fen).where(PaperAccount.name == account)) == 0


def test_settle_fills_what_the_mandate_still_allows(engine: Engine, tmp_path: Path, account: str) -> None:
    folder = tmp_path / "d"
    broker = PaperBroker(engine, _data(folder, {"20240927": 0, "20240930": 0}), account, CONFIG,
                         now=lambda: NEXT_MORNING)
    broker.submit(_buy())
    set_mandate(engine, account, {"block": ("ST",), "max_orders": 1}, ADMIN)  # its own order is not counted twice
    later = datetime(2024, 10, 8, 16, 0, tzinfo=SHANGHAI)
    (order,) = PaperBroker(engine, _data(folder, {"20240927": 0, "20240930": 0, "20241008": 0}), account, CONFIG,
                           now=lambda: later).settle()
    assert order.status == "filled"


# --- (7) an endpoint that echoes the key ---------------------------------------------------------------------


@pytest.fixture
def model_thread(db_url: str, sandbox: Sandbox, openai_server: OpenAIServer) -> Iterator[tuple[GraphThread, Engine]]:
    engine = make_engine(db_url)
    upgrade(engine)
    settings = settings_for(openai_server)
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                          llm=get_llm(settings), light_llm=get_light_llm(settings))
    yield GraphThread(db_url, ctx), engine
    engine.dispose()


def _stored_anywhere(engine: Engine, secret: str) -> list[str]:
    """The tables any of whose rows holds `secret` (text or bytes)."""
    meta = MetaData()
    meta.reflect(engine)
    found = []
    with engine.connect() as connection:
        for table in meta.sorted_tables:
            if any(secret.encode() in repr(tuple(row)).encode() or secret.encode() in b"".join(
                    v for v in row if isinstance(v, bytes)) for row in connection.execute(select(table))):
                found.append(table.name)
    return found


def test_an_echoed_api_key_is_not_shown_logged_or_stored(model_thread: tuple[GraphThread, Engine],
                                                         openai_server: OpenAIServer,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    thread, engine = model_thread
    openai_server.fake.script(LIGHT, echoing_error(400))
    with caplog.at_level(logging.DEBUG):
        out = thread.say(FREE_TEXT)
    reply = out["final_reply"]
    assert reply.startswith("The model endpoint returned HTTP 400 (malformed request; headers were: Authorization: "
                            f"Bearer {MASK})."), reply
    assert API_KEY not in reply and API_KEY not in caplog.text
    assert _stored_anywhere(engine, API_KEY) == []
    assert "model failure: The model endpoint returned HTTP 400" in caplog.text  # it was logged, masked


def test_log_lines_and_tracebacks_lose_every_configured_secret(caplog: pytest.LogCaptureFixture) -> None:
    settings = Settings(_env_file=None, SLACK_BOT_TOKEN="xoxb-leaky-token-1", TUSHARE_TOKEN="tushare-secret-2",
                        DATABASE_URL="postgresql://quant:db-password-3@127.0.0.1/test")
    remember_settings(settings)
    logger = logging.getLogger("tests.fail_closed")
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(logging.Formatter().format(record))  # type: ignore[method-assign]
    handler.addFilter(RedactingFilter())
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError("upstream said: token xoxb-leaky-token-1, Authorization: Bearer sk-other-9")
        except RuntimeError:
            logger.exception("call failed with %s and %s", "tushare-secret-2", "db-password-3")
    finally:
        logger.removeHandler(handler)
    (text,) = records
    for secret in ("xoxb-leaky-token-1", "tushare-secret-2", "db-password-3", "sk-other-9"):
        assert secret not in text
    assert text.startswith(f"call failed with {MASK} and {MASK}") and f"Bearer {MASK}" in text

