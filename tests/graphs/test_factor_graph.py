"""The factor workflow through the main graph: real sample data, real sandbox, real checkpointers (SQLite and
PostgreSQL), scripted chat models emitting real tool calls; results read back from the factor library."""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.factor.present import present_factor
from graphs.factor.state import MAX_RETRIES
from testkit.fakes.chat import ScriptedChatModel, answer, tool_call
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.factors.store import FactorStore
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

GOOD_BODY = "return -(close / close.shift(10) - 1)"
BAD_BODY = "return close.rolling(10).mean().stack()"  # a Series: the output-type check fails
# a body no other test saves: on PostgreSQL's shared library a copy of GOOD_BODY would ask before saving
OWN_BODY = "return (close.rolling(3).max() - close.rolling(3).min()) / close.rolling(10).mean()"


def review(out: dict[str, Any]) -> dict[str, Any]:
    assert "__interrupt__" in out, out.get("final_reply")
    (pending,) = out["__interrupt__"]
    assert pending.value["type"] == "code_review"
    return pending.value


def edit(code: str) -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": "code_review", "args": {"code": code}}}


@pytest.fixture
def make_thread(db_url: str, engine: Engine, sandbox: Sandbox, tmp_path: Path):  # noqa: ANN201
    def make(llm: ScriptedChatModel | None = None, light: ScriptedChatModel | None = None) -> GraphThread:
        ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox,
                              artifacts=ArtifactStore(engine), llm=llm, light_llm=light)
        return GraphThread(db_url, ctx)
    return make


def spec_answer(name: str) -> Any:
    return tool_call("FactorSpecAnswer", name=name, description="minus the 10-day return (reversal)",
                     fields=["close"], lookback=10, frequency="daily", codes=[], start="20190301", end="20200601",
                     question=None)


def test_llm_dry_run_failure_retry_success_approve_backfill_evaluate_save(make_thread, engine: Engine) -> None:
    name = f"rev10_{uuid.uuid4().hex[:6]}"
    light = ScriptedChatModel(script=[tool_call("RouteAnswer", workflow="factor")])
    llm = ScriptedChatModel(script=[
        spec_answer(name),
        tool_call("try_factor_body", body=BAD_BODY), answer("tried a rolling mean"),  # attempt 1 fails
        tool_call("try_factor_body", body=GOOD_BODY), answer("minus the 10-day return"),  # ErrorFix succeeds
        tool_call("CodeVerdict", ok=True, diffs=[], reason="computes minus the 10-day return"),  # semantic judge
    ])
    thread = make_thread(llm, light)
    out = thread.say("Build me a short-term reversal factor on the last 10 days, 20190301 to 20200601")
    shown = review(out)
    assert shown["failure"] is None and shown["code"].strip() == GOOD_BODY
    assert shown["allowed"] == ["approve", "edit", "reject"]
    assert "Semantic check (llm): computes minus the 10-day return" in shown["summary"]
    errorfix_prompt = llm.prompts[3][0].content  # the retry ran in the ErrorFix role with the cleaned error
    assert "You are now ErrorFix" in errorfix_prompt and "must return a DataFrame, got Series" in errorfix_prompt
    done = thread.decide(out, {"type": "approve"})
    assert done["result"]["workflow"] == "factor" and done["result"]["decision"] == "approve"
    store = FactorStore(engine)
    saved = store.latest(name)
    assert saved is not None and saved.version == 1 and saved.reviewer == "UBOB" and saved.author == "UALICE"
    assert GOOD_BODY in saved.code and "def compute_factor(close):" in saved.code
    assert store.count_values(saved.id) == done["result"]["shape"][0] * done["result"]["shape"][1] - \
        int(store.values(saved.id).isna().sum().sum())
    metrics = store.metrics(saved.id)
    assert list(metrics.index) == [1, 5, 20] and metrics["dates"].min() > 200
    chart = next(a for a in done["result"]["artifacts"] if a["kind"] == "chart")
    assert "path" not in chart and thread.ctx.artifacts.get(chart["id"]).data[:4] == b"\x89PNG"


def test_five_failed_retries_reach_review_with_the_failure_shown(make_thread, engine: Engine) -> None:
    name = f"broken_{uuid.uuid4().hex[:6]}"
    script = [spec_answer(name)]
    for _ in range(MAX_RETRIES + 1):
        script += [tool_call("try_factor_body", body=BAD_BODY), answer("done")]
    llm = ScriptedChatModel(script=script)
    thread = make_thread(llm, ScriptedChatModel(script=[tool_call("RouteAnswer", workflow="factor")]))
    out = thread.say("a reversal factor please, 20190301 20200601")
    shown = review(out)
    assert "must return a DataFrame" in shown["failure"]
    assert shown["allowed"] == ["edit", "reject"]  # failing code cannot be approved
    assert f"failed {MAX_RETRIES + 1} times" in shown["summary"]
    assert not llm.script  # exactly six attempts, no seventh
    done = thread.decide(out, {"type": "reject", "message": "the model could not do it"})
    assert done["final_reply"].startswith("Rejected") and "the model could not do it" in done["final_reply"]
    assert FactorStore(engine).latest(name, status=None).status == "rejected"


def edit_name(name: str, body: str) -> str:
    """The name an edit is saved under: the first name, `_edit_` and 6 hex digits of the body's SHA-256."""
    return f"{name}_edit_{hashlib.sha256(body.encode()).hexdigest()[:6]}"


def test_broken_edit_is_asked_again_then_a_good_edit_is_used(make_thread, engine: Engine) -> None:
    name = f"mom_{uuid.uuid4().hex[:6]}"
    thread = make_thread()
    out = thread.say(f"factor momentum 20190301 20200601 window=20 name={name}")
    assert review(out)["code"].strip() == "return close / close.shift(20) - 1"
    again = thread.decide(out, edit("return close.stack()"))
    shown = review(again)
    assert "Your edit was not accepted" in shown["summary"] and "got Series" in shown["failure"]
    assert "got Series" not in shown["summary"]  # the failure is shown once, with the checks
    assert shown["action_requests"][0]["description"].count("got Series") == 1
    assert shown["name"] == edit_name(name, "return close.stack()")  # the code under review is the edit
    lookahead = thread.decide(again, edit("return close.shift(-5) / close - 1"))
    assert "negative period" in review(lookahead)["failure"] or "look-ahead" in review(lookahead)["failure"]
    passed = thread.decide(lookahead, edit("def compute_factor(close):\n    return close / close.shift(10) - 1\n"))
    new_name = edit_name(name, "return close / close.shift(10) - 1")
    shown = review(passed)  # a passing edit is reviewed again, not saved at once
    assert shown["name"] == new_name and shown["failure"] is None
    assert shown["diff"] == "-return close / close.shift(20) - 1\n+return close / close.shift(10) - 1"
    done = thread.decide(passed, {"type": "approve"})
    assert done["result"]["decision"] == "edit"
    assert done["result"]["name"] == new_name
    store = FactorStore(engine)
    saved = store.latest(new_name)
    assert "close.shift(10)" in saved.code and saved.decision == "edit" and f"# Factor: {new_name}" in saved.code
    assert saved.description == (f"Edited by UBOB from {name}: was `return close / close.shift(20) - 1`, now "
                                 "`return close / close.shift(10) - 1`. Before the edit: return over the last 20 "
                                 "trading days")
    assert saved.spec["edited_from"]["name"] == name
    assert store.latest(name, status=None) is None  # the library name keeps meaning the library factor


def test_an_edit_is_saved_under_a_new_name_and_checked_against_the_original(make_thread, engine: Engine) -> None:
    tag = uuid.uuid4().hex[:6]
    request = f"factor reversal 20190301 20200601 window=7 name=r_{tag}"  # a window no other test saves
    first = make_thread()
    first.decide(first.say(request), {"type": "approve"})
    # the same request, edited to twice the values: another name, so it is a near duplicate of r_{tag}
    second = make_thread()
    body = "return -(close / close.shift(7) - 1) * 2"
    out = second.decide(second.decide(second.say(request), edit(body)), {"type": "approve"})
    (pending,) = out["__interrupt__"]
    assert pending.value["type"] == "approval" and pending.value["args"]["name"] == edit_name(f"r_{tag}", body)
    assert pending.value["args"]["near_duplicates"] == [f"r_{tag} v1 (1.000)"]
    done = second.decide(out, {"type": "approve"})
    assert done["result"]["title"] == f"{edit_name(f'r_{tag}', body)} v1"
    assert [v.version for v in FactorStore(engine).versions(f"r_{tag}")] == [1]

    third = make_thread()  # a name carried in the edit is used when valid
    out = third.say(request)
    twelve = "return -(close / close.shift(12) - 1)"
    named = {"type": "edit", "edited_action": {"name": "code_review", "args": {"code": twelve, "name": "Twelve"}}}
    out = third.decide(out, named)
    shown = review(out)
    assert shown["summary"].startswith("Edit not used: factor name 'Twelve'") and shown["name"] == f"r_{tag}"
    named["edited_action"]["args"]["name"] = f"r12_{tag}"
    again = third.decide(out, named, user="UCAROL")
    shown = review(again)
    assert shown["name"] == f"r12_{tag}" and f"approve saves it as r12_{tag}: Edited by UCAROL" in shown["summary"]
    done = third.decide(again, {"type": "approve"}, user="UDAVE")  # another reviewer approves the edit
    assert done.get("result"), done.get("final_reply") or done.get("__interrupt__")
    saved = FactorStore(engine).latest(f"r12_{tag}")
    assert done["result"]["name"] == f"r12_{tag}" and saved.reviewer == "UDAVE" and saved.decision == "edit"
    assert saved.description == (f"Edited by UCAROL from r_{tag}: was `return -(close / close.shift(7) - 1)`, now `"
                                 + twelve + "`. Before the edit: minus the return over the last 7 trading days "
                                 "(short-term reversal)")


def test_an_edit_is_reviewed_again_with_its_diff_and_approve_saves_it(make_thread, engine: Engine) -> None:
    """Issue 39: a 5-day reversal edited to 9 days (a window no other test saves: on PostgreSQL's shared library a
    copy would ask before saving) is shown again, with the diff and the name approve saves it under; its
    description says the change first and calls the 5 days what the code was before the edit."""
    name = f"rev5_{uuid.uuid4().hex[:6]}"
    thread = make_thread()
    out = thread.say(f"factor reversal 20190301 20200601 name={name}")
    assert review(out)["code"].strip() == "return -(close / close.shift(5) - 1)" and review(out)["diff"] is None
    nine = "return -(close / close.shift(9) - 1)"
    shown = review(out := thread.decide(out, edit(nine)))
    new_name = edit_name(name, nine)
    assert shown["name"] == new_name and shown["allowed"] == ["approve", "edit", "reject"]
    assert shown["diff"] == "-return -(close / close.shift(5) - 1)\n+" + nine
    description = (f"Edited by UBOB from {name}: was `return -(close / close.shift(5) - 1)`, now `{nine}`. "
                   "Before the edit: minus the return over the last 5 trading days (short-term reversal)")
    assert f"Your edit passed its checks; approve saves it as {new_name}: {description}" in shown["summary"]
    assert "Changes:\n-return -(close / close.shift(5) - 1)" in shown["action_requests"][0]["description"]
    assert FactorStore(engine).latest(new_name) is None  # nothing is saved before the approve
    thirteen = "return -(close / close.shift(13) - 1)"  # edit again: still against the code first reviewed
    shown = review(out := thread.decide(out, edit(thirteen)))
    assert shown["name"] == edit_name(name, thirteen) and shown["diff"].splitlines() == [
        "-return -(close / close.shift(5) - 1)", "+" + thirteen]
    shown = review(out := thread.decide(out, edit(nine)))
    assert shown["name"] == new_name
    done = thread.decide(out, {"type": "approve"}, user="UCAROL")
    saved = FactorStore(engine).latest(new_name)
    assert done["result"]["name"] == new_name and done["result"]["decision"] == "edit"
    assert f"\n    {nine}\n" in saved.code and saved.decision == "edit" and saved.reviewer == "UCAROL"
    assert saved.description == description and done["result"]["description"] == description
    assert FactorStore(engine).latest(name, status=None) is None


def test_dates_in_errors_are_the_ones_typed(make_thread) -> None:
    future = make_thread().say("factor reversal 20991120 20991201")
    assert future["final_reply"].startswith("I cannot build that factor: start date 20991120 is in the future")
    late = make_thread().say("factor reversal 20210101 20210601")  # the sample ends on 20200824
    assert "between 20210101 and 20210601" in late["final_reply"]
    # the dates typed and the sample's coverage; not the start of the warm-up fetched before 20210101
    assert set(re.findall(r"\b\d{8}\b", late["final_reply"])) == {"20210101", "20210601", "20190102", "20200824"}


def test_reject_ends_the_run_and_is_recorded(make_thread, engine: Engine) -> None:
    name = f"vol_{uuid.uuid4().hex[:6]}"
    thread = make_thread()
    out = thread.say(f"factor volatility 20190301 20200601 name={name}")
    done = thread.decide(out, {"type": "reject", "message": "not now"})
    assert "__interrupt__" not in done and done.get("result") is None
    info = FactorStore(engine).latest(name, status=None)
    assert info.status == "rejected" and info.decision == "reject" and info.spec["reject_reason"] == "not now"
    assert FactorStore(engine).count_values(info.id) == 0


def test_missing_dates_clarify_then_follow_up_reruns_with_a_new_window(make_thread, engine: Engine) -> None:
    name = f"turn_{uuid.uuid4().hex[:6]}"
    thread = make_thread()
    out = thread.say(f"factor turnover name={name}")
    (pending,) = out["__interrupt__"]
    assert pending.value["type"] == "clarify" and "Which dates?" in pending.value["question"]
    out = thread.answer(out, "20190301 20200601")
    first = thread.decide(out, {"type": "approve"})
    assert first["result"]["version"] == 1
    follow = thread.say("window=5")  # same thread: continues the factor work with the new window
    assert review(follow)["code"].strip() == "return turnover_rate.rolling(5).mean()"
    second = thread.decide(follow, {"type": "approve"})
    assert second["result"]["version"] == 2  # same name: a new version, never an overwrite
    assert [v.version for v in FactorStore(engine).versions(name)] == [1, 2]


def test_near_duplicate_of_another_factor_is_saved_only_when_approved(make_thread, engine: Engine) -> None:
    first, second = make_thread(), make_thread()
    tag = uuid.uuid4().hex[:6]
    first.decide(first.say(f"factor reversal 20190301 20200601 name=a_{tag}"), {"type": "approve"})
    done = second.decide(second.say(f"factor momentum 20190301 20200601 window=5 name=b_{tag}"), {"type": "approve"})
    duplicates = {d["name"]: d for d in done["result"]["duplicates"]}
    assert f"a_{tag}" not in duplicates  # momentum = minus reversal: correlation -1 is not a duplicate

    rejected = make_thread()
    out = rejected.decide(rejected.say(f"factor reversal window=5 20190301 20200601 name=c_{tag}"),
                          {"type": "approve"})
    (pending,) = out["__interrupt__"]
    approval = pending.value
    assert approval["type"] == "approval" and approval["action"] == "save_factor"
    assert approval["review_configs"] == [{"action_name": "save_factor", "allowed_decisions": ["approve", "reject"]}]
    assert f"a_{tag} v1" in approval["description"] and f"b_{tag}" not in approval["description"]
    assert approval["args"]["near_duplicates"][0].startswith(f"a_{tag} v1 (")
    done = rejected.decide(out, {"type": "reject", "message": "we have it already"})
    assert done["result"] is None and "Not saved" in done["final_reply"] and "we have it already" in done["final_reply"]
    assert FactorStore(engine).latest(f"c_{tag}", status=None) is None  # nothing written

    approved = make_thread()
    out = approved.decide(approved.say(f"factor reversal window=5 20190301 20200601 name=d_{tag}"),
                          {"type": "approve"})
    assert out["__interrupt__"][0].value["type"] == "approval"
    done = approved.decide(out, {"type": "approve"})
    duplicates = {d["name"]: d for d in done["result"]["duplicates"]}
    assert duplicates[f"a_{tag}"]["correlation"] > 0.999 and f"b_{tag}" not in duplicates
    assert any(w.startswith(f"near duplicate of a_{tag} v1") for w in present_factor(done["result"]).warnings)
    saved = FactorStore(engine).latest(f"d_{tag}")
    assert saved is not None and saved.spec["duplicate_approved_by"] == "UBOB"


def test_rerunning_a_name_makes_a_version_without_asking(make_thread) -> None:
    name = f"rev_{uuid.uuid4().hex[:6]}"
    thread = make_thread()
    request = f"factor combo 0.7*reversal(3) + volatility(9) 20190301 20200601 name={name}"  # like no other test's
    thread.decide(thread.say(request), {"type": "approve"})
    again = make_thread()
    done = again.decide(again.say(request), {"type": "approve"})
    assert done["result"]["version"] == 2  # its own earlier version is reported, not asked about
    assert [d["name"] for d in done["result"]["duplicates"]] == [name]


def test_combination_and_unknown_factor_messages(make_thread) -> None:
    thread = make_thread()
    out = thread.say("factor combo 0.5*momentum(20) - volatility(20) 20190301 20200601")
    body = review(out)["code"]
    assert "zscore(close / close.shift(20) - 1)" in body and "- 1 * part1" in body
    bad = make_thread().say("factor combo momentum(20) - frobnicate(3) 20190301 20200601")
    assert "is not a library factor" in bad["final_reply"]


def test_value_needs_daily_indicators_the_sample_lacks(make_thread) -> None:
    out = make_thread().say("factor value 20190301 20200601")
    assert "cannot run this factor" in out["final_reply"] and "pe_ttm" in out["final_reply"]


def test_signal_follow_up_in_the_same_thread_continues_the_signal(make_thread) -> None:
    thread = make_thread()
    first = thread.say("signal ma_cross 600519.SH,000001.SZ 20190101 20200601 fast=5 slow=20")
    assert first["result"]["params"] == {"fast": 5, "slow": 20}
    second = thread.say("fast=10 slow=30")
    assert second["result"]["params"] == {"fast": 10, "slow": 30} and second["result"]["codes"] == ["600519.SH",
                                                                                                    "000001.SZ"]


def test_a_judge_without_a_verdict_spends_no_retry_and_leaves_the_code_to_the_reviewer(make_thread,
                                                                                       engine: Engine) -> None:
    name = f"noverdict_{uuid.uuid4().hex[:6]}"
    llm = ScriptedChatModel(script=[
        spec_answer(name),
        tool_call("try_factor_body", body=OWN_BODY), answer("the 3-day range of closes over their 10-day mean"),
        answer("Looks reasonable to me, I suppose."),  # the semantic judge in prose: no verdict
    ])
    thread = make_thread(llm, ScriptedChatModel(script=[tool_call("RouteAnswer", workflow="factor")]))
    out = thread.say("Build me a short-term reversal factor on the last 10 days, 20190301 to 20200601")
    shown = review(out)
    assert shown["failure"] is None and shown["allowed"] == ["approve", "edit", "reject"]
    assert "Semantic check: the semantic judge gave no verdict" in shown["summary"]
    assert "check yourself that the code does what was asked" in shown["summary"]
    done = thread.decide(out, {"type": "approve"})
    assert done["result"]["decision"] == "approve" and FactorStore(engine).latest(name) is not None


def test_a_factor_on_fewer_codes_than_quantiles_need_is_warned_and_saved_only_when_approved(make_thread,
                                                                                             engine: Engine) -> None:
    """Issue 28, item 4: three codes in five quantiles; the reviewer is warned before the review and the save asks."""
    name = f"thin_{uuid.uuid4().hex[:6]}"
    thread = make_thread()
    out = thread.say(f"factor reversal 000001.SZ,600519.SH,000002.SZ 20190301 20200601 name={name}")
    shown = review(out)
    assert shown["summary"].startswith("Warning: 3 codes, 5 quantiles: quantile spreads mean little (saving asks "
                                       "for an approval below 20 codes).")
    out = thread.decide(out, {"type": "approve"})
    (pending,) = out["__interrupt__"]
    assert pending.value["type"] == "approval" and pending.value["action"] == "save_factor"
    assert "its figures rest on too few codes: 3 codes, 5 quantiles" in pending.value["description"]
    assert FactorStore(engine).latest(name, status=None) is None  # nothing written before the approval
    done = thread.decide(out, {"type": "approve"})
    assert FactorStore(engine).latest(name) is not None
    assert any(w.startswith("3 codes, 5 quantiles") for w in present_factor(done["result"]).warnings)
