"""The factor workflow's results (a saved factor, the library) as views for the adapters."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from graphs.factor.decay_view import present_decay
from graphs.views import Table, View
from tools.factors.store import FactorStore
from tools.i18n import N_, _, ngettext, pgettext
from tools.research.gate import failures
from tools.research.holdout import MIN_HOLDOUT_SESSIONS
from tools.research.library import TeamLibrary
from tools.research.overfitting import PBO_MIN_TRIALS
from tools.research.records import LibraryEntry

SHOWN_METRICS = (("rank_ic_mean", "Rank IC", "{:.4f}"), ("rank_icir", "ICIR", "{:.2f}"), ("ic_mean", "IC", "{:.4f}"),
                 ("spread_mean", N_("top−bottom"), "{:.4%}"), ("turnover_top", N_("top turnover"), "{:.1%}"))


DECISIONS = {"approve": N_("approve"), "edit": N_("edit"), "reject": N_("reject")}  # the reviewer's, as shown


def _decision(decision: str) -> str:
    return _(DECISIONS.get(decision, decision))


def status_word(status: str) -> str:
    """A version's stored status (active, rejected) as the reader says it."""
    words = {"active": pgettext("factor status", "active"), "rejected": pgettext("factor status", "rejected")}
    return words.get(status, status)


def _num(value: float | None, spec: str, scale: float = 1.0, unit: str = "") -> str:
    return _("n/a") if value is None else format(value * scale, spec) + unit


def present_factor(result: dict[str, Any]) -> View:
    """A saved factor: metrics per forward-return period as a table, duplicates, conventions."""
    if result.get("kind") == "decay":
        return present_decay(result)
    holdout = result.get("holdout") or {}
    dates = result.get("dates_evaluated", {})
    rows = [[f"{period}d", str(dates.get(period, "?")), _num(m["ic_mean"], ".4f"), _num(m["rank_ic_mean"], ".4f"),
             _num(m["rank_icir"], ".2f"), _num(m["rank_ic_t"], ".1f"), _num(m["spread_mean"], ".1f", 1e4, "bp"),
             _num(m["long_short_mean"], ".1f", 1e4, "bp"), _num(m["turnover_top"], ".0%")]
            for period, m in result["metrics"].items()]
    table = Table([_("period"), _("dates"), "IC", "RankIC", "ICIR", "t", _("top-bot"), _("L/S"), _("turn")], rows)
    decision = _decision(result["decision"])
    decided = _("{decision} by {user}").format(decision=decision, user=result["reviewer"]) \
        if result.get("reviewer") else decision
    warnings = [_("near duplicate of {name} v{version} (correlation {correlation} over {n} values)").format(
        name=d["name"], version=d["version"], correlation=f"{d['correlation']:.3f}", n=f"{d['overlap']:,}")
        for d in result.get("duplicates", [])]
    why_missing = sorted({f"{period}d: {reason}" for period, reasons in result.get("missing", {}).items()
                          for reason in reasons.values()})
    first: dict[str, Any] = next(iter(result["metrics"].values()), {})
    summary = _("Factor {name} saved: Rank IC {ic} (first period), {n} near duplicate(s)").format(
        name=result["title"], ic=_num(first.get("rank_ic_mean"), ".4f"), n=len(result.get("duplicates", [])))
    return View(title=_("Factor {name} saved").format(name=result["title"]), summary=summary,
                lines=[result["description"], _("{dates} dates × {codes} codes, {first}–{last} · {decided}").format(
                    dates=result["shape"][0], codes=result["shape"][1], first=result["first_date"],
                    last=result["last_date"], decided=decided), *holdout_lines(holdout),
                       *honesty_lines(result.get("honesty"), result["name"], result.get("in_library", False))],
                table=table,
                notes=[_(result["conventions"]), *(_("n/a because {why}").format(why=w) for w in why_missing)],
                warnings=warnings + list(result.get("warnings", [])),
                users=[result["reviewer"]] if result.get("reviewer") else [])


def holdout_lines(holdout: dict[str, Any]) -> list[str]:
    """Where the period was cut and what the holdout is (or why there is none)."""
    split = holdout.get("split")
    if not split:
        return []
    if not split.get("holdout_start"):
        return [_("No holdout: {n} sessions would be held out, fewer than {minimum}; the figures are in-sample "
                  "only.").format(n=split["holdout_sessions"], minimum=MIN_HOLDOUT_SESSIONS)]
    lines = [_("In-sample {start}–{end} ({n} sessions); holdout {first}–{last} ({m} sessions), evaluated once after "
               "the approval and never tuned on.").format(
        start=split["start"], end=split["in_sample_end"], n=split["in_sample_sessions"], first=split["holdout_start"],
        last=split["end"], m=split["holdout_sessions"])]
    if holdout.get("error"):
        lines.append(_("The holdout could not be evaluated: {error}").format(error=holdout["error"]))
    for period, m in (holdout.get("metrics") or {}).items():
        shown = ", ".join(f"{_(label)} {_num(m.get(key), fmt[2:-1])}" for key, label, fmt in SHOWN_METRICS)
        lines.append(_("{period}d holdout: {figures}").format(period=period, figures=shown))
    return lines


def honesty_lines(honesty: dict[str, Any] | None, name: str, in_library: bool) -> list[str]:
    """The trials behind a result, what the DSR and the PBO say of them (one line each), and the library gate."""
    if not honesty:
        return []
    lines = [_("Trials behind this result: {n} in this research thread, {mine} by its requester in all.").format(
                 n=honesty["trials"], mine=honesty["person_trials"]),
             _("Deflated Sharpe ratio {p}: the probability that the long-short's in-sample Sharpe ratio ({sr} a day) "
               "beats {sr0}, the best that {n} trial(s) without any skill would reach by luck.").format(
                 p=_num(honesty["dsr"], ".3f"), sr=_num(honesty["sharpe"], ".3f"),
                 sr0=_num(honesty["benchmark"], ".3f"), n=honesty["trials"])]
    if honesty.get("pbo") is None:
        lines.append(_("Probability of backtest overfitting: not computed, it needs {minimum} trials with returns in "
                       "this thread.").format(minimum=PBO_MIN_TRIALS))
    else:
        lines.append(_("Probability of backtest overfitting {p}: how often this search's in-sample best ranks in the "
                       "bottom half out of sample (CSCV).").format(p=f"{honesty['pbo']:.2f}"))
    gate = honesty.get("gate") or {}
    if in_library:
        lines.append(_("In the team library: the holdout agrees in sign and the deflated Sharpe ratio passes "
                       "{threshold}.").format(threshold=f"{gate['dsr']['threshold']:.2f}"))
    elif gate:
        lines.append(_("Not in the team library: {failed}. To save it there anyway, say why: `factor save {name} "
                       "REASON`.").format(failed="; ".join(failures(gate)), name=name))
    return lines


def library_line(entry: LibraryEntry | None, gate: dict[str, Any]) -> str:
    """Whether a version is in the team library and how it got there (a reason given to save it anyway, forever)."""
    if entry is None:
        failed = "; ".join(failures(gate)) if gate else _("it was saved before the gate existed")
        return _("not in the team library: {failed}").format(failed=failed)
    if entry.how == "anyway":
        return _("in the team library, saved anyway by {user}: {reason}").format(user=entry.added_by or "?",
                                                                                  reason=entry.reason)
    return _("in the team library (passed the gate)")


def factor_list(engine: Engine, _args: list[str]) -> View:
    factors = FactorStore(engine).list()
    if not factors:
        return View(_("Factor library"), _("No factors saved yet. Start one with `factor KIND START END` "
                                           "(e.g. `factor momentum 20190301 20200601`)."))
    lines = [_("{name} v{version} [{status}] {description} — by {author}, {decision} by {reviewer}, {at}").format(
                 name=f.name, version=f.version, status=status_word(f.status), description=f.description,
                 author=f.author or "?", decision=_decision(f.decision), reviewer=f.reviewer or "?",
                 at=f"{f.created_at:%Y-%m-%d %H:%M}")
             for f in factors]
    return View(_("Factor library"), ngettext("{n} factor, newest version of each:",
                                              "{n} factors, newest version of each:", len(factors)).format(
                    n=len(factors)), lines=lines)


def factor_show(engine: Engine, args: list[str]) -> View:
    name = " ".join(args).strip().lower()
    if not name:
        return View(_("Factor"), _("Usage: factor show NAME (see factor list)"))
    store = FactorStore(engine)
    versions = store.versions(name)
    if not versions:
        return View(_("Factor"), _("No factor named {name}. See `factor list`.").format(name=repr(name)))
    latest = versions[-1]
    lines = [_("versions: {versions}").format(versions=", ".join(
        _("v{version} {status} ({decision} by {reviewer})").format(
            version=v.version, status=status_word(v.status), decision=_decision(v.decision), reviewer=v.reviewer or "?")
        for v in versions))]
    active = store.latest(name)
    code = None
    if active is not None:
        lines.append(_("v{version}: {n} values stored").format(version=active.version,
                                                               n=store.count_values(active.id)))
        for period, row in store.metrics(active.id).iterrows():
            shown = ", ".join(f"{_(label)} {fmt.format(row[key])}" for key, label, fmt in SHOWN_METRICS if key in row)
            lines.append(f"{period}d: {shown}")
        honesty = active.spec.get("honesty") or {}
        lines.append(library_line(TeamLibrary(engine).entry(active.id), honesty.get("gate") or {}))
        lines += holdout_lines(active.spec.get("holdout") or {})
        code = (active.spec.get("body") or active.code).rstrip()
    return View(_("Factor {name}").format(name=latest.name), f"{latest.name}: {latest.description}", lines=lines,
                code=code)
