"""confirm_save: a factor whose values nearly repeat another stored factor (correlation ≥ 0.99) is saved only
after an `approval` interrupt; a rejection ends the run with nothing written. Earlier versions of the same
name are not asked about: a new version is what re-running a name means.

Nothing here has a side effect before `interrupt()`: the node re-runs from its start on resume."""

from __future__ import annotations

from typing import Any

from langgraph.types import Command, interrupt

from graphs.factor.nodes.finish import fmt
from graphs.factor.state import FactorState
from graphs.interrupts import approval_request, decision_of

SAVE_FACTOR = "save_factor"


def duplicates_of_others(name: str, duplicates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The near duplicates that belong to other factor names."""
    return [d for d in duplicates if d["name"] != name]


def confirm_save_node(state: FactorState) -> Command:
    name = state["spec"]["name"]
    evaluation = state.get("evaluation") or {}
    duplicates = duplicates_of_others(name, evaluation.get("duplicates", []))
    metrics = evaluation.get("metrics", {})
    ic = ", ".join(f"{period}d {fmt(m['rank_ic_mean'])}" for period, m in metrics.items())
    lines = [f"• {d['name']} v{d['version']}: correlation {d['correlation']:.3f} over {d['overlap']:,} values"
             for d in duplicates]
    payload = approval_request(
        SAVE_FACTOR, f"save {name}",
        {"name": name, "near_duplicates": [f"{d['name']} v{d['version']} ({d['correlation']:.3f})" for d in duplicates],
         "rank_ic": ic},
        f"Factor {name} passed review, but its values nearly repeat what the library holds:\n" + "\n".join(lines)
        + f"\nRank IC {ic}. Save it as a new factor anyway?",
        on_reject="Nothing is saved.")
    decision = decision_of(interrupt(payload))
    kind, user = decision.get("type"), decision.get("user")
    if kind == "approve":
        return Command(goto="write_db", update={"save_approval": {"approver": user}})
    if kind == "reject":
        reason = str(decision.get("message") or "").strip()
        reply = (f"Not saved: factor {name} nearly repeats {', '.join(d['name'] for d in duplicates)}; nothing was "
                 "written." + (f" Reason: {reason}" if reason else ""))
        return Command(goto="finish", update={"final_reply": reply})
    return Command(goto="confirm_save")  # a respond or edit does not decide a save: ask again
