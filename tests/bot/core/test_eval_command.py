"""`quantdesk eval` end to end: the real `ChatOpenAI` client against the loopback fake OpenAI-compatible server
(`OPENAI_BASE_URL`), the real workflow graphs on the bundled sample, the real sandbox; the CLI's table, the JSON and
CSV files, `--compare`, and bad input. Expected figures are worked out by hand from each script."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import SecretStr

from bot import cli
from bot.evaluation.command import ENDPOINT_CHECK
from bot.evaluation.run_case import outcome_text
from testkit.console import english_left
from testkit.desk import MARKET_REPORT, ROLES, desk_scripts
from testkit.fakes.chat import answer, tool_call
from testkit.fakes.openai_server import API_KEY, OpenAIServer, http_error
from tools.i18n import using
from tools.settings import get_settings

MAIN, LIGHT = "eval-main", "eval-light"
SPEC, CODEGEN = "You turn a quant's description", "You are CodeGen"
SEMANTIC, RUBRIC = "You review a stock-selection factor's code", "You grade a stock-selection factor"
PLAN = "You are a quantitative trading execution agent"
GOOD_BODY = "return -(close / close.shift(10) - 1)"
PEEKING_BODY = "return close.shift(-1) / close - 1"  # tomorrow's return: the truncation test must catch it
PRICES = f"{MAIN}=1000000/2000000,{LIGHT}=1000000/1000000"  # per million tokens: the cost is in tokens


@pytest.fixture
def env(openai_server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings of a fresh machine pointed at the fake endpoint; returns the output directory."""
    monkeypatch.chdir(tmp_path)
    for name in ("DATABASE_URL", "TUSHARE_TOKEN", "QUANTDESK_LOCAL_DATA", "LANGSMITH_TRACING", "LANGSMITH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"OPENAI_BASE_URL": openai_server.url, "OPENAI_API_KEY": API_KEY, "QUANTDESK_MODEL": MAIN,
                        "QUANTDESK_LIGHT_MODEL": LIGHT, "QUANTDESK_DATA_PROVIDER": "sample",
                        "QUANTDESK_DATA_DIR": str(tmp_path / "data"), "QUANTDESK_MODEL_PRICES": PRICES,
                        "QUANTDESK_SANDBOX_WORKERS": "1"}.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    yield tmp_path / "out"
    get_settings.cache_clear()


def endpoint_answers(openai_server: OpenAIServer) -> None:
    """The command's endpoint check: one call to the main model and one to the light model, before any case."""
    openai_server.fake.script(ENDPOINT_CHECK, answer("OK"), answer("OK"))


def dataset(tmp_path: Path, workflow: str, *cases: dict[str, Any]) -> Path:
    path = tmp_path / f"{workflow}-cases.json"
    path.write_text(json.dumps({"workflow": workflow, "cases": list(cases)}))
    return path


def evaluate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["eval", *args])
    out, err = capsys.readouterr()
    return code, out, err


def report_of(out_dir: Path) -> tuple[dict[str, Any], list[dict[str, str]]]:
    (json_path,) = out_dir.glob("*.json")
    (csv_path,) = out_dir.glob("*.csv")
    with csv_path.open(newline="") as handle:
        return json.loads(json_path.read_text()), list(csv.DictReader(handle))


def spec(name: str) -> AIMessage:
    return tool_call("FactorSpecAnswer", name=name, description="minus the 10-day return (reversal)",
                     fields=["close"], lookback=10, frequency="daily", codes=[], start="20190301", end="20200601",
                     question=None)


def grade(score: int) -> AIMessage:
    return tool_call("Grade", reasoning="scripted", score=score)


SEMANTIC_OK = tool_call("CodeVerdict", ok=True, diffs=[], reason="minus the 10-day return")


def test_factor_eval_measures_runnable_code_retries_look_ahead_and_the_judges_score(
        openai_server: OpenAIServer, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two requests, two repeats. Reversal: first try good (judge 5), then a peeking body caught by the truncation
    test and a good retry (judge 3). Prose: the model answers the spec in prose, so nothing reaches review."""
    fake = openai_server.fake
    endpoint_answers(openai_server)
    fake.script(SPEC, spec("rev_a"), answer("Sure! A reversal factor is a great idea."),
                spec("rev_b"), answer("Sure! A reversal factor is a great idea."))
    fake.script(CODEGEN, tool_call("try_factor_body", body=GOOD_BODY), answer("done"),
                tool_call("try_factor_body", body=PEEKING_BODY), answer("tomorrow's return"),
                tool_call("try_factor_body", body=GOOD_BODY), answer("fixed"))
    fake.script(SEMANTIC, SEMANTIC_OK, SEMANTIC_OK)
    fake.script(RUBRIC, grade(5), grade(3))
    path = dataset(tmp_path, "factor", {"id": "reversal", "request": "minus the 10-day return, 20190301-20200601"},
                   {"id": "prose", "request": "a reversal factor"})

    code, out, err = evaluate(capsys, "factor", "--dataset", str(path), "--repeat", "2", "--out", str(env))

    assert code == 0, err
    body, rows = report_of(env)
    assert [(r["case"], r["repeat"], r["outcome"], r["interrupts"]) for r in rows] == [
        ("reversal", "1", "finished", "code_review"), ("prose", "1", "finished", ""),
        ("reversal", "2", "finished", "code_review"), ("prose", "2", "finished", "")]
    figures = body["figures"]
    assert figures["runnable"] == {"mean": 0.5, "spread": 0.0, "n": 4}
    assert figures["retries"]["mean"] == 0.25 and figures["retries"]["spread"] == pytest.approx(0.5 / 2 ** 0.5)
    assert figures["look_ahead_caught"]["mean"] == 0.25
    assert figures["alignment_score"] == {"mean": 4.0, "spread": pytest.approx(2 ** 0.5), "n": 2}
    assert figures["aligned"]["mean"] == 0.5 and figures["reached_review"]["mean"] == 0.5
    assert figures["model_calls"]["mean"] == (4 + 1 + 6 + 1) / 4 and figures["errors"]["mean"] == 0
    assert body["distributions"]["outcome"] == {"finished": 4}
    # tokens and cost from what the endpoint itself reported, judge calls apart
    judged = fake.of(RUBRIC)
    usage = [e.answer["usage"] for e in fake.exchanges if e.answer and e not in judged and e.key != ENDPOINT_CHECK]
    tokens = sum(u["total_tokens"] for u in usage)
    assert sum(int(r["input_tokens"]) + int(r["output_tokens"]) for r in rows) == tokens
    cost = sum(u["prompt_tokens"] + 2 * u["completion_tokens"] for u in usage)  # the price table's main-model price
    assert sum(Decimal(r["cost"]) for r in rows) == cost and Decimal(figures["cost"]["mean"]) == Decimal(cost) / 4
    assert sum(int(r["judge_tokens"]) for r in rows) == sum(e.answer["usage"]["total_tokens"] for e in judged)
    assert "runnable" in out and "0.5 ± 0" in out and f"model {MAIN}" in out and "report:" in out



def step(kind: str, number: int, action: dict[str, Any]) -> AIMessage:
    """One execution-agent answer in the seed's action format."""
    return answer(json.dumps({"type": kind, "step": number, "reasoning": "scripted", "action": action,
                              "next_step": "next"}))


def test_rule_eval_measures_well_formed_actions_and_decisions_within_the_step_limit(
        openai_server: OpenAIServer, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Trend: one prose answer, then a fetch, a calculation and a buy (3 of 4 answers well-formed; the order is
    approved). Vague: prose twice, so the run is held without a decision of the model's (0 of 2)."""
    endpoint_answers(openai_server)
    openai_server.fake.script(PLAN, answer("I would buy."),
                       step("tool_call", 1, {"tool_name": "get_kline_data",
                                             "params": {"symbol": "600519.SH", "timeframe": "1d", "limit": 60}}),
                       step("calculation", 2, {"calculation_type": "MA", "params": {"period": 30}}),
                       step("decision", 3, {"action": "buy", "reason": "above MA30", "confidence": 0.9}),
                       answer("no idea"), answer("still no idea"))
    path = dataset(tmp_path, "rule",
                   {"id": "trend", "request": "rule run 1",
                    "setup": ['rule add 600519.SH "buy when the price is above its 30-day average" kind=words '
                              "size=100"]},
                   {"id": "vague", "request": "rule run 1",
                    "setup": ['rule add 000001.SZ "buy when it feels right" kind=words size=100']})

    code, out, err = evaluate(capsys, "rule", "--dataset", str(path), "--out", str(env))

    assert code == 0, err
    body, rows = report_of(env)
    assert [(r["case"], r["outcome"], r["interrupts"], r["well_formed_actions"], r["decided_within_limit"],
             r["steps"]) for r in rows] == [("trend", "finished", "approval", "0.75", "1.0", "3.0"),
                                            ("vague", "finished", "", "0.0", "0.0", "1.0")]
    assert body["figures"]["well_formed_actions"]["mean"] == 0.375
    assert body["figures"]["decided_within_limit"] == {"mean": 0.5, "spread": 0.0, "n": 2}
    assert body["figures"]["judge_tokens"]["mean"] == 0 and "cost" in body["figures"]


def test_an_eval_run_in_chinese_prints_its_table_and_progress_in_chinese(
        openai_server: OpenAIServer, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """QUANTDESK_LANGUAGE=zh-CN: the table's head, columns and notes, the progress lines and the report paths are
    Chinese; the measures keep their names and the figures are the English run's."""
    monkeypatch.setenv("QUANTDESK_LANGUAGE", "zh-CN")
    get_settings.cache_clear()
    endpoint_answers(openai_server)
    openai_server.fake.script(PLAN, step("tool_call", 1, {"tool_name": "get_kline_data",
                                                          "params": {"symbol": "600519.SH", "limit": 60}}),
                              step("decision", 2, {"action": "hold", "reason": "flat", "confidence": 0.5}))
    path = dataset(tmp_path, "rule", {"id": "trend", "request": "rule run 1",
                                      "setup": ['rule add 600519.SH "buy when the price is above its 30-day average" '
                                                "kind=words size=100"]})

    code, out, err = evaluate(capsys, "rule", "--dataset", str(path), "--out", str(env))

    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "quantdesk eval rule：模型 eval-main（轻量模型 eval-light，评审模型 eval-main），1 个请求 × 1 轮"
    assert lines[1].split() == ["指标", "均值", "±", "离散度", "运行次数"]
    assert any(line.split()[:3] == ["well_formed_actions", "1", "±"] for line in lines)
    assert lines[-2].startswith("报告：") and lines[-1].startswith("运行：")
    assert "outcome: 完成 1" in lines  # the outcome is stored in English (finished) and shown translated
    assert err.splitlines()[-1].startswith("[1/1] trend（第 1 轮）：完成；") and "次模型调用" in err
    assert english_left(out, "quantdesk eval rule") == [] and english_left(err) == []  # the command, as typed


def test_a_stored_outcome_reads_in_the_language_in_effect() -> None:
    """Outcomes are stored in English (the report, the CSV) and shown in the reader's language, whole."""
    with using("zh-CN"):
        assert outcome_text("error: 2 model call(s) failed at the endpoint") == "出错：2 次模型调用在接口端失败"
        assert outcome_text("waiting: still asking after 20 answers") == "等待中：回答 20 次后仍在提问"
        assert outcome_text("error: set-up failed: no rule 3") == "出错：准备步骤失败：no rule 3"
        assert outcome_text("error: KeyError: 'x'") == "出错：KeyError：'x'"
    endpoint = "error: 2 model call(s) failed at the endpoint"
    assert outcome_text(endpoint) == endpoint


def test_analyze_eval_measures_schema_honesty_and_ratings_with_the_model_asked_for(
        openai_server: OpenAIServer, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two decisions on 600519.SH: an honest desk rating Buy (its order approved), and one whose market analyst
    writes a price no tool returned, rating Sell. `--model` is what the endpoint is asked for."""
    honest = desk_scripts()
    invented = desk_scripts(market=[tool_call("get_indicators"), answer(f"{MARKET_REPORT} Target 2345.67.")],
                            research_judge=[answer(json.dumps({
                                "rating": "Sell", "target_position": 0.0, "bull_points": [], "bear_points": ["x"],
                                "confidence": 0.6, "investment_plan": "stay out"}))],
                            risk_judge=[answer(json.dumps({"rating": "Sell", "target_position": 0.0, "risks": [],
                                                           "confidence": 0.6, "final_trade_decision": "Sell"}))])
    for marker in honest:
        openai_server.fake.script(marker, *honest[marker], *invented[marker])
    endpoint_answers(openai_server)
    openai_server.fake.script("most recent market-analyst reports", *[answer("summary of the day")] * 2)  # once per run
    openai_server.fake.script("You keep the long-term memory", *[answer("summary of the day")] * 6)  # 3 analysts, twice
    on_the_day = ["clock set 20200824"]  # the desk orders only on the account's session: the day it decides on
    path = dataset(tmp_path, "analyze", {"id": "honest", "request": "analyze 600519.SH depth=1", "setup": on_the_day},
                   {"id": "invented", "request": "analyze 600519.SH depth=1", "setup": on_the_day})

    code, out, err = evaluate(capsys, "analyze", "--dataset", str(path), "--model", "other-main", "--out", str(env))

    assert code == 0, err
    body, rows = report_of(env)
    assert {e.body["model"] for e in openai_server.fake.exchanges if e.key in ROLES.values()} == {"other-main"}
    assert body["model"] == "other-main" and body["judge_model"] == MAIN
    assert [(r["case"], r["outcome"], r["interrupts"], r["schema_valid"], r["rating"]) for r in rows] == [
        ("honest", "finished", "approval", "1.0", "Buy"), ("invented", "finished", "", "1.0", "Sell")]
    assert [r["unsupported_figures"] for r in rows] == ["0.0", "1.0"]
    assert float(rows[0]["figures_from_tools"]) == 1.0 > float(rows[1]["figures_from_tools"])
    assert body["distributions"]["rating"] == {"Buy": 1, "Sell": 1}
    assert "rating: Buy 1, Sell 1" in out
    assert "cost: unknown" in out and "cost" not in body["figures"]  # other-main has no price


def test_a_question_the_case_does_not_answer_ends_the_run_as_waiting(
        openai_server: OpenAIServer, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    endpoint_answers(openai_server)
    openai_server.fake.script("You are a strategy analyst", answer(json.dumps({
        "analysis": "no dates", "task_type": "mixed", "next_action": "clarify",
        "user_intent": {"type": "mixed", "needs_clarification": True, "params": {}},
        "clarification_question": "Which dates?", "reasoning": "scripted"})))
    path = dataset(tmp_path, "signal", {"id": "vague", "request": "find me something that makes money"})

    code, _out, err = evaluate(capsys, "signal", "--dataset", str(path), "--out", str(env))

    assert code == 0, err
    body, rows = report_of(env)
    assert [(r["outcome"], r["interrupts"], r["valid_signal"], r["asked_to_clarify"]) for r in rows] == [
        ("waiting: clarify", "clarify", "0.0", "1.0")]
    assert body["distributions"]["outcome"] == {"waiting": 1}


def figures(**named: tuple[float, float]) -> dict[str, dict[str, float]]:
    return {name: {"mean": mean, "spread": spread, "n": 4} for name, (mean, spread) in named.items()}


def written(path: Path, model: str, workflow: str = "factor", **named: tuple[float, float]) -> Path:
    path.write_text(json.dumps({"format": 1, "workflow": workflow, "model": model, "figures": figures(**named),
                                "distributions": {"outcome": {"finished": 4}}, "runs": []}))
    return path


def test_compare_puts_two_reports_side_by_side(env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = written(tmp_path / "a.json", "model-a", runnable=(0.5, 0.1), retries=(1.0, 0.0))
    b = written(tmp_path / "b.json", "model-b", runnable=(0.75, 0.0), tokens=(1200.0, 10.0))

    code, out, err = evaluate(capsys, "--compare", str(a), str(b))

    assert code == 0, err
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "measure A: model-a B: model-b B - A" in lines
    assert "runnable 0.5 ± 0.1 0.75 ± 0 0.25" in lines
    assert "retries 1 ± 0 - -" in lines and "tokens - 1,200 ± 10 -" in lines


@pytest.mark.parametrize(("args", "said"), [
    (["order"], "'order' has no evaluation; evaluable workflows: signal, factor, rule, analyze"),
    (["nosuch"], "'nosuch' has no evaluation"),
    ([], "name a workflow"),
    (["factor", "--dataset", "missing.json"], "missing.json: no such file"),
    (["--compare", "a.json", "missing.json"], "no such file"),
])
def test_bad_requests_are_refused_with_the_reason(env: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                                  said: str) -> None:
    written(Path("a.json"), "model-a")
    code, out, err = evaluate(capsys, *args)
    assert code == 2 and said in err and out == ""


@pytest.mark.parametrize(("body", "said"), [
    ("{not json", "not a readable JSON file"),
    ('{"workflow": "signal", "cases": [{"id": "a", "request": "x"}]}', "a dataset for 'signal', not 'factor'"),
    ('{"workflow": "factor", "cases": []}', 'a non-empty "cases" list'),
    ('{"workflow": "factor", "cases": [{"id": "a"}]}', 'case 1 (a) has no "request" text'),
    ('{"workflow": "factor", "cases": [{"id": "a", "request": "x"}, {"id": "a", "request": "y"}]}',
     "repeated: a"),
    ('{"workflow": "factor", "cases": [{"id": "a", "request": "x", "answers": ["maybe"]}]}',
     'an answer is "approve", "reject" or {"respond": TEXT}'),
    ('{"workflow": "factor", "cases": [{"id": "a", "request": "x", "setup": ["rule add \\"unbalanced"]}]}',
     "does not parse: No closing quotation"),
    ('{"workflow": "factor", "cases": [{"id": "a", "request": "x", "setup": ["make coffee"]}]}',
     "set-up 'make coffee' is not a command"),
])
def test_bad_datasets_are_refused_before_any_model_call(env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        body: str, said: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(body)
    code, _out, err = evaluate(capsys, "factor", "--dataset", str(path))
    assert code == 2 and said in err


def test_without_a_model_the_command_says_what_to_set(env: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    get_settings.cache_clear()
    code, _out, err = evaluate(capsys, "factor")
    assert code == 2 and "set OPENAI_API_KEY" in err


@pytest.mark.parametrize("workflow", ["signal", "factor", "rule", "analyze"])
def test_every_evaluable_workflow_ships_a_dataset_that_loads(workflow: str) -> None:
    from bot.evaluation.dataset import default_dataset, load_dataset

    cases = load_dataset(default_dataset(workflow), workflow).cases
    assert len(cases) >= 6 and len({c.id for c in cases}) == len(cases)


def test_a_request_the_endpoint_keeps_failing_is_an_error_not_a_score(
        openai_server: OpenAIServer, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The endpoint answers the check, then fails one request for good: that run is an error, not a score."""
    endpoint_answers(openai_server)
    openai_server.fake.script(SPEC, *[http_error(500) for _ in range(3)])  # the first try and the client's two retries
    path = dataset(tmp_path, "factor", {"id": "down", "request": "minus the 10-day return, 20190301-20200601"})

    code, out, err = evaluate(capsys, "factor", "--dataset", str(path), "--out", str(env))

    assert code == 0, err
    body, (row,) = report_of(env)
    assert (row["outcome"], row["model_calls"], row["model_errors"]) == (
        "error: 1 model call(s) failed at the endpoint", "0", "1")
    assert "runnable" not in row  # no measures of an errored run
    assert body["figures"]["errors"]["mean"] == 1.0 and body["figures"]["model_errors"]["mean"] == 1.0
    assert "runnable" not in body["figures"] and "1 run(s) ended in an error" in out


def test_an_endpoint_that_does_not_answer_stops_the_command_before_any_case(
        openai_server: OpenAIServer, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    openai_server.fake.script(ENDPOINT_CHECK, *[http_error(401)])
    code, out, err = evaluate(capsys, "factor", "--out", str(env))
    assert code == 2 and "does not answer for the model eval-main" in err and out == ""
    assert not env.exists() or not list(env.glob("*.json"))
    assert [e.key for e in openai_server.fake.exchanges] == [ENDPOINT_CHECK]


def test_the_shipped_rule_cases_set_up_their_rule(env: Path) -> None:
    """Each shipped rule case's `rule add` is accepted, and the rule it saves is rule 1 of the case's database."""
    from bot.evaluation.dataset import default_dataset, load_dataset
    from bot.evaluation.run_case import EVAL_USER, set_up
    from graphs.studio import context_from_settings

    for case in load_dataset(default_dataset("rule"), "rule").cases:
        settings = get_settings().model_copy(update={"database_url": SecretStr(f"sqlite:///{env / case.id}.db")})
        env.mkdir(exist_ok=True)
        ctx = context_from_settings(settings)
        set_up(case, ctx)
        (rule,) = ctx.rules.list(owner=EVAL_USER)  # type: ignore[union-attr]
        assert rule.id == 1 and rule.source == "llm" and case.request == "rule run 1"
        ctx.engine.dispose()


def test_an_out_path_that_cannot_hold_reports_is_refused_before_anything_runs(
        openai_server: OpenAIServer, env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    code, out, err = evaluate(capsys, "factor", "--out", str(blocker))
    assert code == 2 and f"cannot write the reports to {blocker}" in err and out == ""
    assert openai_server.fake.exchanges == []  # nothing was run, or paid for


def test_prices_apply_to_the_model_or_its_dated_name_only() -> None:
    from graphs.meter import ModelUsage
    from graphs.prices import cost, price_of

    table = {"gpt-4o": (Decimal("2.50"), Decimal("10.00")), "deepseek-chat": (Decimal("2"), Decimal("3"))}
    assert price_of(table, "gpt-4o-2024-08-06") == price_of(table, "gpt-4o") == table["gpt-4o"]
    assert price_of(table, "gpt-4o-mini") is None and price_of(table, "gpt-4o-mini-2024-07-18") is None
    assert price_of(table, "deepseek-reasoner") is None
    used = {"gpt-4o-2024-08-06": ModelUsage(3, 1_000, 200)}
    assert cost(table, used) == Decimal("0.0045")  # 1,000 x 2.50 / 1M + 200 x 10.00 / 1M
    assert cost(table, {**used, "gpt-4o-mini": ModelUsage(1, 10, 10)}) is None  # a partial sum would mislead


def test_the_report_names_the_endpoint_without_credentials() -> None:
    from bot.evaluation.command import _redacted

    assert _redacted("https://user:secret@llm.example.com:8443/v1?api-key=sk-1") == "https://llm.example.com:8443/v1"
    assert _redacted("http://127.0.0.1:9/v1") == "http://127.0.0.1:9/v1"


def test_two_reports_in_the_same_second_are_both_kept(tmp_path: Path) -> None:
    from bot.evaluation import output

    body = {"format": 1, "workflow": "factor", "model": "m", "figures": {}, "distributions": {}, "runs": []}
    first, second = output.write(body, tmp_path, "factor-m-20261124T010203"), \
        output.write(body, tmp_path, "factor-m-20261124T010203")
    assert first != second and all(p.exists() for p in (*first, *second))


@pytest.mark.parametrize("body", ['{"format": 1, "figures": {}}',
                                  '{"format": 1, "workflow": "factor", "model": "m", "figures": {"x": 1}, '
                                  '"distributions": {}}'])
def test_compare_refuses_an_incomplete_report(env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              body: str) -> None:
    good = written(tmp_path / "good.json", "model-a")
    bad = tmp_path / "bad.json"
    bad.write_text(body)
    code, _out, err = evaluate(capsys, "--compare", str(good), str(bad))
    assert code == 2 and "not a `quantdesk eval` report" in err


def test_measures_leave_out_what_a_run_never_reached() -> None:
    """A signal that failed its other checks never met the truncation test; a desk stopped before its judges gave
    no schema to check; look-ahead is counted from what the code agent tried, code that merely fails is not."""
    from graphs.analyze.measures import measure_decision
    from graphs.factor.measures import measure_factor
    from graphs.measures import RunRecord
    from graphs.signal.measures import measure_signal

    no_trades = {"signal_code": "x", "validated": False, "error_log": ["validation failed: no buy or sell"]}
    assert measure_signal(RunRecord("r", no_trades))["truncation_pass"] is None
    peeked = {"signal_code": "x", "validated": True, "error_log": ["validation failed: look-ahead: the signal on"]}
    assert measure_signal(RunRecord("r", peeked))["truncation_pass"] == 0.0
    assert measure_signal(RunRecord("r", {"signal_code": "x", "validated": True}))["truncation_pass"] == 1.0

    stopped = {"result": {"stopped": "token budget", "analysts": {}, "stages": {}}}
    assert measure_decision(RunRecord("r", stopped))["schema_valid"] is None
    judge_failed = {"result": {"stopped": "research manager", "stages": {"research": {}}}}
    assert measure_decision(RunRecord("r", judge_failed))["schema_valid"] == 0.0

    tries = [{"ok": False, "problem": "look-ahead: the factor on 20200102 changes"},
             {"ok": False, "problem": "the factor fails on the data cut at 20200101: KeyError"}, {"ok": True}]
    factor = {"attempts": [{"source": "llm", "note": None, "tries": tries}, {"source": "llm", "ok": True}],
              "dry_run": {"ok": True}}
    assert measure_factor(RunRecord("r", factor))["look_ahead_caught"] == 1.0
