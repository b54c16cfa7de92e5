"""Trajectory evaluations (issue 16): every request of testkit/evals/*.json runs through its workflow graph with
scripted models and real sample data, offline, and its path through the graph, its interrupts and its agents'
messages must match the reference written by hand; a failure names the request and the step that changed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine

from graphs.factor.routes import route_after_checks
from testkit.evals.harness import (
    DATASETS,
    Case,
    compare,
    load_cases,
    message_differences,
    path_differences,
    run_case,
)
from testkit.fakes.chat import ScriptedModels
from tools.sandbox import Sandbox
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

CASES = load_cases()
TRACING = ("LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING", "LANGCHAIN_TRACING_V2",
           "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is traced or sent to LangSmith."""
    for name in TRACING:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def eval_engine(sqlite_url: str) -> Iterator[Engine]:
    """A fresh SQLite database per case: saved factors, rules and orders of one case never steer another."""
    engine = make_engine(sqlite_url)
    upgrade(engine)
    yield engine
    engine.dispose()


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_trajectory(case: Case, sqlite_url: str, eval_engine: Engine, sandbox: Sandbox,
                    models: ScriptedModels) -> None:
    """One request of a dataset: its path, subgraph paths, interrupts, messages and outcome as written."""
    differences = compare(case, run_case(case, sqlite_url, eval_engine, sandbox, models))
    assert not differences, "\n".join(differences)


def test_every_workflow_has_a_dataset_with_good_and_bad_requests() -> None:
    """Each workflow's dataset has 5-10 requests: some asking questions, some not, some refused or failing."""
    by_dataset = {name: [c for c in CASES if c.dataset == name] for name in DATASETS}
    assert {c.workflow for c in CASES} == {"signal", "factor", "analyze", "rule"}
    for name, cases in by_dataset.items():
        assert 5 <= len(cases) <= 10, f"{name}: {len(cases)} cases"
        assert any(not c.spec.get("interrupts") for c in cases), f"{name}: no request that ends without a question"
        assert any(c.spec.get("interrupts") for c in cases), f"{name}: no request with an interrupt"
        assert any(c.spec.get("outcome", {}).get("no_result") for c in cases), f"{name}: no request that fails"
        assert all(c.spec["path"] and c.spec["path"][0][0] == "__start__" for c in cases), name


# --- the harness can fail ----------------------------------------------------------------------------------


def test_a_changed_step_is_reported_with_its_nodes() -> None:
    """The comparison itself, on hand-made paths: the evaluator's false becomes a line naming step and nodes."""
    got = [["__start__", "collect_spec", "codegen", "dry_run", "semantic_check", "human_review", "__interrupt__"],
           ["backfill", "evaluate", "write_db", "finish"]]
    want = [got[0], ["backfill", "evaluate", "confirm_save", "write_db", "finish"]]
    lines, score = path_differences("path", got, want)
    assert score is False
    assert lines == ["path step 2 expected ['evaluate', 'confirm_save'] got ['evaluate', 'write_db'] (node 3); "
                     "whole step expected ['backfill', 'evaluate', 'confirm_save', 'write_db', 'finish'] got "
                     "['backfill', 'evaluate', 'write_db', 'finish']"]
    parallel = [["__start__", "prepare", ["market_analyst", "news_analyst"], "fusion"]]
    assert path_differences("path", [["__start__", "prepare", "news_analyst", "market_analyst", "fusion"]],
                            parallel) == ([], True)
    lines, score = path_differences("path", [["__start__", "prepare", "news_analyst", "fusion"]], parallel)
    assert score is False and lines[0].startswith("path step 1 expected ")
    assert message_differences("strict", "ignore", [{"role": "user", "content": "hi"}], ["user", "answer"]) == [
        "message 2: expected ['answer'], got no more messages"]
    assert message_differences("unordered", "ignore", [], [{"call": "get_news"}]) == [
        "expected call get_news({}) was not made"]


def test_a_rerouted_case_fails_naming_the_case_and_the_step(sqlite_url: str, eval_engine: Engine, sandbox: Sandbox,
                                                            models: ScriptedModels) -> None:
    """A real run of one case against its reference altered by one step, one interrupt and one message: each
    alteration is reported, so the evaluations cannot pass silently."""
    case = next(c for c in CASES if c.id == "factor/reviewer_rejects")
    seen = run_case(case, sqlite_url, eval_engine, sandbox, models)
    assert compare(case, seen) == []
    path = [case.spec["path"][0], ["backfill", "finish"]]
    rerouted = compare(case.with_spec(path=path), seen)
    assert rerouted == ["factor/reviewer_rejects: path step 2 expected ['backfill'] got ['record_reject'] (node 1); "
                        "whole step expected ['backfill', 'finish'] got ['record_reject', 'finish']"]
    shorter = compare(case.with_spec(path=case.spec["path"][:1]), seen)
    assert shorter[0] == "factor/reviewer_rejects: path: expected 1 step(s) (runs up to an interrupt or the end), got 2"
    assert shorter[1] == "factor/reviewer_rejects: path step 2 expected (no step) got ['record_reject', 'finish']"
    asked = [{**case.spec["interrupts"][0], "kind": "approval"}]
    assert compare(case.with_spec(interrupts=asked), seen) == [
        "factor/reviewer_rejects: interrupts: expected ['approval'], got ['code_review']"]
    replied = compare(case.with_spec(outcome={"reply": "Saved"}), seen)
    assert len(replied) == 1 and replied[0].startswith("factor/reviewer_rejects: final reply: expected it to contain "
                                                       "'Saved', got 'Rejected")
    coded = compare(case.with_spec(messages=[{"agents": ["codegen"], "mode": "superset",
                                              "expected": [{"call": "try_factor_body"}]}]), seen)
    assert coded == ["factor/reviewer_rejects: messages of codegen (superset): expected call try_factor_body({}) "
                     "was not made"]


def test_a_script_that_runs_out_or_is_left_over_fails(sqlite_url: str, eval_engine: Engine,
                                                       sandbox: Sandbox) -> None:
    """Scripted models on their own ScriptedModels (not the fixture's, whose teardown would fail this test)."""
    case = next(c for c in CASES if c.id == "factor/spec_model_garbage")
    short, spare = ScriptedModels(), ScriptedModels()
    seen = run_case(case.with_spec(models={"llm": {"spec": []}}), sqlite_url, eval_engine, sandbox, short)
    stopped = compare(case, seen)
    assert stopped[0].startswith("factor/spec_model_garbage: the run stopped with ScriptExhausted: 'the scripted "
                                 "model ran out of answers for")
    with pytest.raises(AssertionError, match="ran out of answers"):
        short.check()
    extra = {"llm": {"spec": [*case.spec["models"]["llm"]["spec"], {"text": "never asked"}]}}
    seen = run_case(case.with_spec(models=extra), sqlite_url, eval_engine, sandbox, spare)
    assert compare(case, seen) == ["factor/spec_model_garbage: scripted answers never asked for: {'llm:spec': 1}"]
    with pytest.raises(AssertionError, match="were never asked for"):
        spare.check()


def test_a_rerouted_workflow_fails_naming_the_request_and_the_step(monkeypatch: pytest.MonkeyPatch, sqlite_url: str,
                                                                   eval_engine: Engine, sandbox: Sandbox) -> None:
    """A product change that stops retrying failed code (the retry edge sent to review instead) fails
    factor/bad_code_retry at the step where the path forks."""

    def never_retry(state: dict) -> str:
        route = route_after_checks(state)  # type: ignore[arg-type]
        return "human_review" if route == "codegen" else route

    monkeypatch.setattr("graphs.factor.graph.route_after_checks", never_retry)
    case = next(c for c in CASES if c.id == "factor/bad_code_retry")
    lines = compare(case, run_case(case, sqlite_url, eval_engine, sandbox, ScriptedModels()))
    assert lines[0].startswith("factor/bad_code_retry: interrupt 1 (code_review): expected it to say 'checks passed', "
                               "it says 'Factor rev10: checks FAILED: ")
    assert lines[1] == "factor/bad_code_retry: interrupt 2: expected the run to end, got code_review"
    assert lines[2] == (
        "factor/bad_code_retry: path step 1 expected ['semantic_check', 'codegen'] got ['semantic_check', "
        "'human_review'] (node 6); whole step expected ['__start__', 'collect_spec', 'codegen', 'dry_run', "
        "'semantic_check', 'codegen', 'dry_run', 'semantic_check', 'human_review', '__interrupt__'] got ['__start__', "
        "'collect_spec', 'codegen', 'dry_run', 'semantic_check', 'human_review', '__interrupt__']")
    assert lines[3].startswith("factor/bad_code_retry: path step 2 expected ['backfill'] got ['human_review']")
    assert "factor/bad_code_retry: messages of codegen (strict): messages 5-8: expected ['user', 'call " \
           "try_factor_body({})', 'tool', 'answer'], got no more messages" in lines
    assert lines[-1] == "factor/bad_code_retry: scripted answers never asked for: {'llm:codegen': 2, 'llm:judge': 1}"
