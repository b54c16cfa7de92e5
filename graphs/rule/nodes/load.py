"""Load: the rule a run executes (`rule run ID`, or a scheduled run's structured request, which carries its tick in
its execution id), its execution id and its start time. A scheduled run does nothing when, since it was queued,
its rule was paused (and maybe resumed: resuming moves the rule's `scheduled_since` past every tick queued before)
or its schedule was changed or taken off; a manual `rule run ID` runs a paused rule all the same.

Every run decides as of a session: the paper account's clock (tools/broker/sim_clock.py `paper_clock`, as the
paper broker reads it): on static data the simulated session (no later bar is read), on live data the data's last
bar. A scheduled run of a simulated session does nothing once the clock has moved on from it."""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from langgraph.runtime import Runtime

from graphs.clarify import CANCELLED, is_cancel
from graphs.common import new_human_text
from graphs.grammar import split
from graphs.progress import report_progress
from graphs.rule.deps import RuleDeps
from graphs.rule.grammar import RUN_USAGE
from graphs.rule.state import RuleRunState
from tools.broker.sim_clock import paper_clock
from tools.data.schema import DataError
from tools.i18n import _
from tools.rules.schedule import scheduled_tick, stale_tick
from tools.rules.store import Rule

RUN = re.compile(r"^\s*/?rule\s+run\s+(\d+)\s*$", re.IGNORECASE)


def load_node(state: RuleRunState, runtime: Runtime[RuleDeps]) -> dict[str, Any]:
    messages = state.get("messages", [])
    text = new_human_text(messages, state.get("consumed", 0))
    fresh: dict[str, Any] = {"consumed": len(messages), "result": None, "final_reply": None, "history": [],
                             "action": None, "malformed": 0, "feedback": None, "decision": None,
                             "order_intent": {}, "order_outcome": {}}
    request = state.get("background_request") or {}
    match = RUN.match(" ".join(split(text)))  # normalised: `规则 run １` is `rule run 1`
    if not request and is_cancel(text):  # typed where nothing waits: ends here, as in every workflow
        return {**fresh, "final_reply": CANCELLED}
    if request:
        rule_id = int(request["rule_id"])
    elif match:
        rule_id = int(match.group(1))
    else:
        return {**fresh, "final_reply": _("Usage: `{usage}` (the IDs: `rule list`); `rule help` lists every rule "
                                          "command.").format(usage=RUN_USAGE)}
    store = runtime.context.rules
    rule = store.get(rule_id) if store is not None else None
    if rule is None:
        return {**fresh,
                "final_reply": _("There is no rule {id}; `rule list` shows the saved rules.").format(id=rule_id)}
    given = str(request.get("execution") or "") or None
    if given and not given.lower().startswith(f"rule{rule.id}-"):
        return {**fresh, "final_reply": _("execution={execution} does not belong to rule {id}.").format(
            execution=given, id=rule.id)}
    tick = scheduled_tick(given) if given else None
    if tick is not None and not (rule.enabled and rule.schedule):
        why = (_("Rule {id} was paused after this run was queued; nothing was run.") if not rule.enabled else
               _("Rule {id} was taken off its schedule after this run was queued; nothing was run."))
        return {**fresh, "final_reply": why.format(id=rule.id)}
    as_of = run_as_of(runtime.context)
    over = _session_over(rule, request, as_of) if request.get("session") else None
    if over is not None:
        return {**fresh, "final_reply": over}
    if not request.get("session") and tick is not None and stale_tick(rule, tick):
        return {**fresh, "final_reply": _("Rule {id} was paused and resumed, or its schedule was changed, after this "
                                          "run ({time} UTC) was queued; nothing was run.").format(
            id=rule.id, time=f"{tick:%Y-%m-%d %H:%M}")}
    execution_id = given or f"rule{rule.id}-m{uuid.uuid4().hex[:12]}"
    report_progress(_("rule"), f"{rule.id} {rule.symbol}")
    data = asdict(rule)
    data["value_cny"] = str(rule.value_cny) if rule.value_cny is not None else None
    data = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in data.items()}
    return {**fresh, "rule": data, "execution_id": execution_id, "started_at": datetime.now(UTC).isoformat(),
            "as_of": as_of}


def run_as_of(ctx: RuleDeps) -> dict[str, Any] | None:
    """The session a run decides as of ({"date", "simulated"}); None without a paper account or daily bars (then
    the data's last bar, as before any clock)."""
    if ctx.paper is None:
        return None
    try:
        clock = paper_clock(ctx.engine, ctx.provider, ctx.paper.live_data_days, ctx.now())
    except DataError:
        return None
    return {"date": clock.data_end, "simulated": clock.simulated}


def _session_over(rule: Rule, request: dict[str, Any], as_of: dict[str, Any] | None) -> str | None:
    """Why a scheduled run of a simulated session must not run any more: the clock moved on, or the rule was
    resumed or rescheduled after the move it was queued for; None when it runs."""
    session = str(request["session"])
    if as_of is None or not as_of["simulated"] or as_of["date"] != session:
        moved = (_("Rule {id}'s run for the simulated session {session} was queued, and the clock has moved to "
                   "{day} since; nothing was run.") if as_of and as_of["simulated"] else
                 _("Rule {id}'s run for the simulated session {session} was queued, and the clock has moved away "
                   "(the data is live now) since; nothing was run."))
        return moved.format(id=rule.id, session=session, day=as_of["date"] if as_of else "")
    if rule.scheduled_since is not None and rule.scheduled_since > datetime.fromisoformat(request["moved_at"]):
        return _("Rule {id} was paused and resumed, or its schedule was changed, after this run for the simulated "
                 "session {session} was queued; nothing was run.").format(id=rule.id, session=session)
    return None
