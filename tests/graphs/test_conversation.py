"""Issue 37: the one reader behind every surface (graphs/conversation.py). Phrasings typed as Chinese and English
quants type them, many without spaces, each with what it is read as: a command and its arguments, a new request and
what its workflow's grammar makes of it, an answer to the question the thread waits on, or free text. Unknown
words in a Chinese sentence are named back, never dropped. The four surfaces' answers to the same phrasings are in
tests/bot/core/test_conversation_surfaces.py."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphs import conversation, names
from graphs.analyze.grammar import DecisionGrammarError, parse_request
from graphs.clarify import chosen
from graphs.factor import spec as factor
from graphs.grammar import FILLER_WORDS, NO_WORDS, YES_WORDS, normalize, suggestions, vocabulary
from graphs.order.grammar import OrderGrammarError, parse_order
from graphs.registry import WORDS
from graphs.signal import grammar as signal
from testkit.phrasings import MAOTAI, PHRASINGS, PINGAN, PINGAN_INSURANCE
from tools.data.factory import provider_from_settings
from tools.settings import Settings


@pytest.fixture(autouse=True, scope="module")
def _sample_names() -> Iterator[None]:
    names.use(provider_from_settings(Settings(QUANTDESK_DATA_PROVIDER="sample")))
    yield


def reading(text: str, waiting: str | None = None) -> tuple[object, ...]:
    """What `text` is read as, in a form a table can hold: a command's usage (its first two words) and arguments,
    a request's workflow and its grammar's reading (an error's message counts), or the intent and its text."""
    intent = conversation.read(text, waiting, {"codes", "bars"})
    if isinstance(intent, conversation.Command):
        return "command", " ".join(intent.command.usage.split()[:2]), list(intent.args)
    if isinstance(intent, conversation.Request):
        return ("request", intent.workflow, *_request(intent.workflow, text))
    if isinstance(intent, conversation.Answer):
        return "answer", intent.text
    if isinstance(intent, conversation.Usage):
        return "usage", intent.usage.split()[0]
    if isinstance(intent, conversation.Language):
        return "lang", intent.word
    if isinstance(intent, conversation.Pending | conversation.LocalCommand):
        return type(intent).__name__.lower(), *intent.args
    return (type(intent).__name__.lower(),)


def _request(workflow: str, text: str) -> tuple[object, ...]:
    try:
        if workflow == "signal":
            s = signal.parse(text)
            return s.strategy, s.codes, s.start, s.end, s.params, s.unknown_words
        if workflow == "factor":
            f = factor.parse(text)
            return f.kind, f.codes, f.start, f.end, f.params, f.unknown_words
        if workflow == "order":
            o = parse_order(text)
            return o.ts_code, o.side, o.quantity, o.limit_price
        if workflow == "analyze":
            d = parse_request(text)
            return d.ts_code, d.trade_date, d.depth
    except (OrderGrammarError, DecisionGrammarError) as exc:
        return (str(exc),)
    return ()




@pytest.mark.parametrize(("text", "waiting", "expected"), PHRASINGS)
def test_a_phrasing_reads_as_expected(text: str, waiting: str | None, expected: tuple[object, ...]) -> None:
    assert reading(text, waiting) == expected


def test_the_table_has_sixty_phrasings_thirty_of_them_chinese_many_unspaced() -> None:
    chinese = [text for text, _waiting, _expected in PHRASINGS if any("\u4e00" <= c <= "\u9fff" for c in text)]
    assert len(PHRASINGS) >= 60 and len(chinese) >= 30
    assert sum(" " not in text for text in chinese) >= 10


def test_every_workflow_and_command_is_in_the_table() -> None:
    read = {expected[1] for _text, _waiting, expected in PHRASINGS if expected[0] == "request"}
    assert read == {"signal", "factor", "order", "analyze", "rule"}
    commands = {expected[1].split()[0] for _text, _waiting, expected in PHRASINGS if expected[0] == "command"}
    assert {"account", "orders", "trading", "clock", "mandate", "decisions", "cancel", "factor", "rule"} <= commands


def test_a_word_has_one_role() -> None:
    """No word is both a keyword (a command, a parameter name, a strategy or factor) and a filler or a yes/no; and
    no Chinese keyword stands for two different English ones."""
    keywords: dict[str, str] = {}
    for group in WORDS:
        for table in (group.commands, group.names):
            for word, english in table.items():
                assert keywords.setdefault(word, english) == english, word
    params = {word for group in WORDS for word in group.params}
    for roles in (FILLER_WORDS, YES_WORDS, NO_WORDS):
        assert not roles & (set(keywords) | params), roles & (set(keywords) | params)
    assert not (FILLER_WORDS & YES_WORDS) and not (YES_WORDS & NO_WORDS) and not (FILLER_WORDS & NO_WORDS)
    assert vocabulary().words["回测"] == "backtest"  # a command word, no longer left out as filler
    assert "对" in YES_WORDS


@pytest.mark.parametrize(("typed", "read"), [
    ("20180102-20181228", "20180102 20181228"), ("从2018年3月1日到2019年6月1日", " 20180301 20190601"),
    ("200股", "200"), ("2手", "200"), ("限价 12.5", " limit=12.5 "), ("限价12.5元", " limit=12.5 "),
    ("窗口＝10", "window=10"), ("快线：5", "fast=5"), ("原因：财报", "原因:财报"),  # an unknown name stays as it was
    ("股票 600519.SH", "股票 600519.SH"),
])
def test_chinese_ranges_units_and_parameter_names(typed: str, read: str) -> None:
    assert normalize(typed) == read


@pytest.mark.parametrize(("answer", "choices", "picked"), [
    ("是", ["600519.SH"], "600519.SH"), ("对", ["600519.SH"], "600519.SH"), ("y", ["600519.SH"], "600519.SH"),
    ("2", ["000001.SZ", "601318.SH"], "601318.SH"), ("２", ["000001.SZ", "601318.SH"], "601318.SH"),
    ("是", ["000001.SZ", "601318.SH"], "是"),  # yes does not pick one of two
    ("3", ["000001.SZ", "601318.SH"], "3"), ("不", ["600519.SH"], "不"), ("600000.SH", ["600519.SH"], "600000.SH"),
])
def test_an_answer_picks_a_choice_by_its_number_or_yes(answer: str, choices: list[str], picked: str) -> None:
    assert chosen(answer, choices) == picked


def test_a_question_about_one_doubtful_word_offers_what_it_may_mean() -> None:
    assert suggestions(("600519",)) == [MAOTAI]
    assert suggestions((), ["平安"]) == [PINGAN, PINGAN_INSURANCE]
    assert suggestions(("600519", "000001")) == [] and suggestions((), ["平安", "香蕉"]) == []


def test_an_approval_is_edited_with_the_words_its_card_shows() -> None:
    """The card says 数量 and 限价; `编辑 数量=300 限价=14.6` is read as quantity and limit_price (it was refused as
    `数量 cannot be edited`), and the console's hint names them so."""
    from bot.cards import Edit, card_of
    from bot.core.kinds import Approval
    from tools.i18n import using

    payload = {"type": "approval", "title": "BUY", "action": "order", "allowed": ["approve", "edit", "reject"],
               "args": {"quantity": 200, "limit_price": "14.50"},
               "args_schema": {"quantity": {"type": "integer", "minimum": 1},
                               "limit_price": {"type": "number", "minimum": 0.01, "decimals": 2}}}
    line = conversation.decision_line("编辑 数量=300 限价=14.6")
    assert line == "edit quantity=300 limit=14.6"
    card = card_of(payload)
    step = Approval.console_step(line, card)
    assert step.decision == Edit("order", {"quantity": 300, "limit_price": 14.6})
    with using("zh-CN"):
        assert "编辑 数量=… 限价=…" in Approval.console_text(card)
    assert "edit quantity=… limit_price=…" in Approval.console_text(card)


@pytest.mark.parametrize("text", ["buy Moutai when it dips", "sell when the 5-day average crosses below",
                                  "买入条件是什么", "卖出后资金什么时候到账"])
def test_prose_that_starts_with_a_side_is_no_order(text: str) -> None:
    assert not isinstance(conversation.read(text), conversation.Request)


@pytest.mark.parametrize("request_text", ["factor reversal 20190301 20200601", 'rule add 600519.SH "buy when close > '
                                          'ma(30)" size=100\nrule run 1'])
def test_cancel_where_nothing_waits_ends_in_every_workflow(tmp_path: Path, request_text: str) -> None:
    """`cancel` typed into a finished factor or rule thread is cancelled there, as in the signal, order and analyze
    workflows (it was read as a free-text factor request that needs an LLM)."""
    from testkit.console import quantdesk

    out = quantdesk(["chat"], tmp_path, f"{request_text}\napprove\ncancel\n")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "Cancelled; nothing was run."


def test_a_command_delivered_twice_runs_once(tmp_path: Path) -> None:
    """Slack delivers an event again when its ack was late: the same message key. A command typed in a thread is
    recorded before it runs, so the second delivery neither runs it again nor answers again."""
    from bot.console.surface import ConsoleSurface
    from bot.core import Place, Typed
    from bot.core.wiring import build_core
    from bot.jobs.local import LocalJobQueue
    from bot.startup import build_context
    from graphs.checkpointer import open_checkpointer
    from tools.rules.store import RuleStore

    url = f"sqlite:///{tmp_path / 'q.db'}"
    settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "d"))
    ctx = build_context(settings)
    with open_checkpointer(url) as saver:
        core = build_core(ctx, saver, ConsoleSurface(io.StringIO(), tmp_path / "exports"), "slack-",
                          LocalJobQueue(ctx.engine, settings, "slack-"))
        typed = Typed(Place("T1", "C1", "1.1", "U1"), '规则 添加 600519.SH “buy when close > ma(30)” size=100',
                      "msg:C1:1.1")
        first, again = core.intake.take(typed, "C1"), core.intake.take(typed, "C1")
    assert first.view is not None and first.view.title.startswith("Rule 1")
    assert (again.answered, again.view, again.text) == (True, None, "")
    assert [rule.id for rule in RuleStore(ctx.engine, frozenset()).list()] == [1]
