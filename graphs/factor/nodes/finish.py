"""finish: the run's outcome as data for the adapters: a result (metrics, artifacts, duplicates) when the
factor was saved, otherwise the reply already composed by the node that stopped the run."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from graphs.factor.state import FactorState

CONVENTIONS = ("IC = Pearson, Rank IC = Spearman per date; quantile returns demeaned per date; spread = top minus "
               "bottom quantile; long-short = factor-weighted (demeaned, gross 1); suspended days and missing "
               "prices are masked, not forward-filled; annualised over 252 trading days")


def summary_text(result: dict[str, Any]) -> str:
    lines = [f"*Factor {result['name']}* v{result['version']} saved ({result['decision']} by "
             f"{result['reviewer'] or 'unknown'}): {result['description']}",
             f"{result['shape'][0]} dates × {result['shape'][1]} codes, {result['first_date']}–{result['last_date']}"]
    for period, m in result["metrics"].items():
        lines.append(f"{period}d: IC {fmt(m['ic_mean'])}, Rank IC {fmt(m['rank_ic_mean'])} (ICIR "
                     f"{fmt(m['rank_icir'], 2)}, t {fmt(m['rank_ic_t'], 1)}), top−bottom {bps(m['spread_mean'])}, "
                     f"long-short {bps(m['long_short_mean'])}, top turnover {pct(m['turnover_top'])}")
    for d in result["duplicates"]:
        lines.append(f"near duplicate: {d['name']} v{d['version']} (correlation {d['correlation']:.3f})")
    lines += [f"warning: {w}" for w in result["warnings"]]
    return "\n".join(lines)


def fmt(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def bps(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 1e4:.1f} bps"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def finish_node(state: FactorState) -> dict[str, Any]:
    saved = state.get("saved") or {}
    if saved.get("status") != "active":
        reply = state.get("final_reply") or "Done."
        return {"result": None, "final_reply": reply, "messages": [AIMessage(reply)]}
    spec, backfill, review = state["spec"], state["backfill"] or {}, state.get("review") or {}
    result = {
        "workflow": "factor",
        "name": saved["name"], "version": saved["version"], "factor_id": saved["id"],
        "title": f"{saved['name']} v{saved['version']}",
        "description": spec["description"], "fields": spec["fields"],
        "decision": "edit" if review.get("status") == "edited" else "approve", "reviewer": review.get("reviewer"),
        "shape": backfill.get("shape"), "first_date": backfill.get("first_date"),
        "last_date": backfill.get("last_date"),
        "metrics": state["evaluation"]["metrics"],  # type: ignore[index]
        "duplicates": state["evaluation"]["duplicates"],  # type: ignore[index]
        "warnings": list(backfill.get("warnings", [])),
        "conventions": CONVENTIONS,
        "code": state.get("factor_body"),
        "artifacts": list(state.get("artifacts", [])),
    }
    return {"result": result, "final_reply": None, "messages": [AIMessage(summary_text(result))]}
