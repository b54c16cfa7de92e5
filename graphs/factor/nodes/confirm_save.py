"""confirm_save: a factor whose values nearly repeat another stored factor (correlation ≥ 0.99), or whose
figures rest on too few evaluable dates or too few codes (graphs.factor.breadth), is saved only after an
`approval` interrupt; a rejection ends the run with nothing written. Earlier versions of the same name are not
asked about: a new version is what re-running a name means.

Nothing here has a side effect before `interrupt()`: the node re-runs from its start on resume."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from graphs.context import decider
from graphs.factor.deps import FactorDeps
from graphs.factor.state import FactorState, duplicates_of_others
from graphs.interrupts import approval_request, decision_of
from graphs.progress import report_progress
from tools.i18n import _

SAVE_FACTOR = "save_factor"


def _rank_ic(metrics: dict[str, dict[str, float | None]]) -> str:
    return ", ".join(f"{period}d " + (_("n/a") if m.get("rank_ic_mean") is None else f"{m['rank_ic_mean']:.4f}")
                     for period, m in metrics.items())


def confirm_save_node(state: FactorState, config: RunnableConfig, runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    name = state["spec"]["name"]
    report_progress(_("save approval"))
    evaluation = state.get("evaluation") or {}
    duplicates = duplicates_of_others(name, evaluation.get("duplicates", []))
    ic = _rank_ic(evaluation.get("metrics", {}))
    doubts = []
    if duplicates:
        doubts.append(_("its values nearly repeat what the library holds:") + "\n" + "\n".join(
            "• " + _("{name} v{version}: correlation {correlation} over {overlap} values").format(
                name=d["name"], version=d["version"], correlation=f"{d['correlation']:.3f}",
                overlap=f"{d['overlap']:,}") for d in duplicates))
    if evaluation.get("shortfall"):
        doubts.append(_("its figures rest on too few dates: {why}").format(why=evaluation["shortfall"]))
    if evaluation.get("too_few_codes"):
        doubts.append(_("its figures rest on too few codes: {why}").format(why=evaluation["too_few_codes"]))
    args: dict[str, Any] = {"name": name, "rank_ic": ic,
                            "dates_evaluated": ", ".join(f"{p}d {n}" for p, n in
                                                         evaluation.get("dates_evaluated", {}).items())}
    if duplicates:
        args["near_duplicates"] = [f"{d['name']} v{d['version']} ({d['correlation']:.3f})" for d in duplicates]
    payload = approval_request(
        SAVE_FACTOR, f"save {name}", args,
        _("Factor {name} passed review, but {doubts}\nRank IC {ic}. Save it anyway?").format(
            name=name, doubts=("\n" + _("And") + " ").join(doubts), ic=ic),
        on_reject=_("Nothing is saved."))
    decision = decision_of(interrupt(payload))
    kind = decision.get("type")
    if kind == "approve":
        return {"save_approval": {"approver": decider(config)}}
    if kind == "reject":
        reason = str(decision.get("message") or "").strip()
        # the tear sheet and CSVs of a factor that is not saved (deleting twice, on a re-run, is harmless)
        runtime.context.artifacts.delete([artifact["id"] for artifact in state.get("artifacts", [])])
        why = (_("factor {name} nearly repeats {others}").format(name=name, others=", ".join(
                   d["name"] for d in duplicates)) if duplicates
               else _("factor {name} has too few evaluable dates").format(name=name) if evaluation.get("shortfall")
               else _("factor {name} is evaluated on too few codes").format(name=name))
        return {"artifacts": [], "final_reply": _("Not saved: {why}; nothing was written.").format(why=why)
                                                + (_(" Reason: {reason}").format(reason=reason) if reason else "")}
    return {}  # a respond or edit does not decide a save: the route asks again
