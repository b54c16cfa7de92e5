"""`runs`, `runs show ID`, `runs export ID`, `rerun ID [live]`, `usage [day|month] [DATE]` and `budget raise
PERSON TOKENS`: the run records and the token budgets as commands (issue 41)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from graphs.context import admins_of
from graphs.meter import ModelUsage
from graphs.prices import cost
from graphs.runs.budget import local_day
from graphs.runs.budget import short as _tokens
from graphs.runs.rerun import Rerun, rerun
from graphs.runs.stability import stability_data, stability_text
from graphs.views import Table, View
from graphs.workflow import CommandCall, CommandError
from tools.desk.log import rating_word
from tools.i18n import N_, _, ngettext
from tools.runs.hashing import bytes_digest
from tools.runs.store import PURGED, RunRow, RunStore, Stability

STATUSES = {"running": N_("running"), "waiting": N_("waiting"), "done": N_("done"), "failed": N_("failed"),
            "stopped": N_("stopped")}


def status_word(status: str) -> str:
    return _(STATUSES[status]) if status in STATUSES else status


def runs_command(call: CommandCall) -> View:
    store, args = RunStore(call.context.engine), [a.lower() for a in call.args]
    if not args or args == ["channel"]:
        mine = not args
        found = store.recent(user=call.user if mine else None, account=None if mine else call.account, limit=15)
        return _listed(found, _("yours") if mine else _("this channel's"), call.context.timezone)
    if len(args) == 2 and args[0] in ("show", "export"):
        row = _run(call, store, call.args[1])
        return _shown(row, store) if args[0] == "show" else _exported(call, store, row)
    raise CommandError(_("usage: runs [channel] | runs show ID | runs export ID"))


def _run(call: CommandCall, store: RunStore, run_id: str) -> RunRow:
    row = store.get(run_id)
    if row is None:
        raise CommandError(_("There is no run {id}; `runs` lists the recent ones.").format(id=run_id))
    if not _may_read(call, row):
        raise CommandError(_("Run {id} is another person's, in another channel: its record (the data it read, the "
                             "model's answers) is for them, that channel and its admins.").format(id=run_id))
    return row


def _may_read(call: CommandCall, row: RunRow) -> bool:
    """A run's record is its starter's, its channel's (the account a channel trades in) and its admins'."""
    return call.user is not None and (call.user == row.user_id or call.account == row.account
                                      or call.user in admins_of(call.context, row.account))


def started(row: RunRow, zone: str) -> str:
    """When a run started, in QUANTDESK_TIMEZONE (the zone its day and the budgets are read in)."""
    return row.started_at.astimezone(ZoneInfo(zone)).strftime("%m-%d %H:%M")


def _listed(rows: list[RunRow], whose: str, zone: str) -> View:
    if not rows:
        return View(_("Runs"), _("No runs recorded ({whose}).").format(whose=whose))
    table = Table([_("id"), _("started"), _("workflow"), _("status"), _("tokens"), _("request")],
                  [[r.id, started(r, zone), r.workflow or "-", status_word(r.status),
                    _tokens(r.input_tokens + r.output_tokens), r.text[:40]] for r in rows])
    return View(_("Runs"), ngettext("{n} run ({whose}), newest first", "{n} runs ({whose}), newest first",
                                    len(rows)).format(n=len(rows), whose=whose), table=table,
                notes=[_("`runs show ID` for one run's record, `runs export ID` for all of it, `rerun ID` to run it "
                         "again from the record, `rerun ID live` on today's data and model")])


def _shown(row: RunRow, store: RunStore) -> View:
    m = row.manifest
    reads = m["data"]["reads"]
    codes = sorted({c for r in reads for c in r["codes"]})
    span = f"{min(r['start'] for r in reads)}-{max(r['end'] for r in reads)}" if reads else "-"
    models = ", ".join(f"{role} {spec['name']}" + (f"@{spec['host']}" if spec.get("host") else "")
                       for role, spec in m["models"].items() if spec)
    code = m["code"]
    facts = [
        (_("request"), row.text), (_("who"), f"{row.user_id or '-'} · {m['surface']} · {row.thread_id}"),
        (_("workflow"), f"{row.workflow or '-'} · {status_word(row.status)}"),
        (_("parameters"), json.dumps(m.get("parameters") or {}, ensure_ascii=False, default=str)[:300]),
        (_("data"), _("{provider}: {reads} reads, {codes} codes ({shown}), {span}").format(
            provider=m["data"]["provider"], reads=len(reads), codes=len(codes), shown=",".join(codes[:5]),
            span=span)),
        *_memory(m.get("memory")),
        (_("model calls"), _("{calls} calls, {tokens} tokens in, {out} out").format(
            calls=m["calls"], tokens=row.input_tokens, out=row.output_tokens)),
        (_("models"), models or _("none")),
        (_("code"), f"quantdesk {code['package']} {(code['commit'] or '')[:10]} · " + ", ".join(
            f"{k} {v}" for k, v in code["libraries"].items() if v) + f" · Python {code['sandbox_python']}"),
        (_("checkpoints"), " · ".join(s.get("checkpoint") or "-" for s in m["segments"])),
        (_("manifest hash"), row.manifest_hash),
    ]
    if m.get("rating") and (stable := store.stability(row.id, m["rating"])) is not None:
        facts.append((_("stability"), stability_text(stable)))
    return View(_("Run {id}").format(id=row.id), _("{workflow} run of {day}").format(
        workflow=row.workflow or "-", day=row.day), facts=facts, users=[row.user_id] if row.user_id else [])


def _memory(memory: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The desk memory a decision started from, counted (none for a run that reads no memory)."""
    if not memory:
        return []
    count = {name: len(rows) for name, rows in memory["rows"].items()}
    return [(_("desk memory"), _("{namespace} · {codes}: reports {reports}, summaries {summaries}, decisions "
                                 "{decisions}").format(
        namespace=memory["namespace"], codes=",".join(memory["codes"]), reports=count.get("analyst_reports", 0),
        summaries=count.get("analyst_summaries", 0), decisions=count.get("desk_decisions", 0)))]


def export_document(store: RunStore, row: RunRow) -> dict[str, Any]:
    """The whole record as JSON: the manifest, its hash, every model call and each read's hash."""
    calls = [{"seq": c.seq, "model": c.model, "request_hash": c.request_hash, "answer": c.answer,
              "input_tokens": c.input_tokens, "output_tokens": c.output_tokens, "latency_ms": c.latency_ms,
              "at": c.at.isoformat(), "day": c.day} for c in store.calls(row.id)]
    return {"run": row.id, "manifest": row.manifest, "manifest_hash": row.manifest_hash, "calls": calls,
            "calls_hash": bytes_digest(json.dumps(calls, sort_keys=True, ensure_ascii=False).encode())}


def _exported(call: CommandCall, store: RunStore, row: RunRow) -> View:
    document = export_document(store, row)
    files = [("manifest", f"run-{row.id}.json", "application/json",
              json.dumps(document, ensure_ascii=False, indent=1, default=str).encode())]
    files += [(f"rows-{n}", f"run-{row.id}-rows-{n}.parquet", "application/vnd.apache.parquet", read.rows)
              for n, read in enumerate(store.reads(row.id), 1)]
    refs = [call.context.artifacts.put(f"run-{row.id}", "export", kind, filename, filename, mime, data)
            for kind, filename, mime, data in files]
    lines = [_("manifest hash {hash}; model calls hash {calls}").format(hash=row.manifest_hash,
                                                                        calls=document["calls_hash"])]
    lines += [f"{r.dataset} {r.codes[:60]} {r.start}-{r.end}: sha256 {r.rows_hash}" for r in store.reads(row.id)]
    return View(_("Run {id}: export").format(id=row.id), ngettext(
        "The record as JSON and {n} Parquet file of the rows it read.",
        "The record as JSON and {n} Parquet files of the rows it read.", len(files) - 1).format(n=len(files) - 1),
        lines=lines, artifacts=list(refs))


def rerun_command(call: CommandCall) -> View:
    args = [a.lower() for a in call.args]
    if not args or len(args) > 2 or (len(args) == 2 and args[1] != "live"):
        raise CommandError(_("usage: rerun ID [live]"))
    stored = _run(call, RunStore(call.context.engine), call.args[0])
    if stored.status == PURGED:
        raise CommandError(_("The record of run {id} was purged: it ended more than the retention ago and no order "
                             "or saved factor refers to it, so it cannot be re-run.").format(id=stored.id))
    report = rerun(call.context, call.args[0], live=len(args) == 2)
    if report is None:
        raise CommandError(_("There is no run {id}; `runs` lists the recent ones.").format(id=call.args[0]))
    store = RunStore(call.context.engine)
    store.record_rerun(stored.id, live=report.live, same=report.same, rating=report.rating, by=call.user)
    stable = store.stability(stored.id, report.recorded_rating) if report.live and report.recorded_rating else None
    if stable is not None and (checkpoint := _last_checkpoint(stored)):
        call.amend_result(stored.thread_id, checkpoint, {"stability": stability_data(stable)})
    return present_rerun(report, stable)


def _last_checkpoint(row: RunRow) -> str:
    """The checkpoint the run's last part ended at: its result's post is keyed by it ('' when it has none)."""
    segments = row.manifest.get("segments") or [{}]
    return str(segments[-1].get("checkpoint") or "")


def present_rerun(report: Rerun, stable: Stability | None = None) -> View:
    """`stable`: how the decision's live re-runs so far rated it, this one included."""
    run = report.run
    took = (run.ended_at - run.started_at).total_seconds() if run.ended_at else None
    facts = [(_("tokens"), _("{now} (the run: {then})").format(
        now=_tokens(report.tokens), then=_tokens(run.input_tokens + run.output_tokens))),
        (_("time"), _("{now:.1f} s (the run: {then})").format(
            now=report.seconds, then=f"{took:.1f} s" if took is not None else "-"))]
    lines = []
    if report.failure:
        lines.append(_("It stopped: {failure}").format(failure=report.failure))
    if report.first_difference:
        lines.append(_("The first node whose output differs: {node}").format(node=report.first_difference))
    lines += [f"{path}: {_short(before)} → {_short(after)}" for path, before, after in report.changes[:20]]
    if len(report.changes) > 20:
        lines.append(_("… and {n} more").format(n=len(report.changes) - 20))
    if report.changed_inputs:
        lines.append(_("Changed input since the run:"))
        lines += [f"• {line}" for line in report.changed_inputs]
    if report.rating is not None and report.recorded_rating is not None:
        lines.insert(0, _("Rating: {before} → {after}").format(before=rating_word(report.recorded_rating),
                                                             after=rating_word(report.rating)))
    if stable is not None:
        facts.append((_("stability"), stability_text(stable)))
    if report.live:
        title = _("Run {id} again, live").format(id=run.id)
        summary = (_("Same result as the run.") if report.same else
                   ngettext("{n} value changed.", "{n} values changed.", len(report.changes)).format(
                       n=len(report.changes)))
    else:
        title = _("Run {id} again, from its record").format(id=run.id)
        summary = (_("Reproduced exactly: every node's output, the result and its numbers are the same.")
                   if report.same else _("Not reproduced: the re-run differs from the record."))
    return View(title, summary, lines=lines, facts=facts)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "…"


def usage_command(call: CommandCall) -> View:
    """`usage [day|month] [DATE]`: tokens and cost per person, channel, workflow and model."""
    args = [a.lower() for a in call.args]
    period = args.pop(0) if args and args[0] in ("day", "month") else "day"
    ctx = call.context
    try:
        on = date.fromisoformat(_iso(args[0])) if args else None
    except ValueError:
        on = None
    if len(args) > 1 or (args and on is None):
        raise CommandError(_("usage: usage [day|month] [DATE], e.g. `usage month 2026-12-01`"))
    day = on.isoformat() if on else local_day(ctx.now(), ctx.timezone)
    first, last = (day, day) if period == "day" else (day[:8] + "01", day[:8] + "31")
    rows = RunStore(ctx.engine).usage(day_from=first, day_to=last)
    scope = day if period == "day" else day[:7]
    if not rows:
        return View(_("Usage"), _("No model calls recorded in {scope}.").format(scope=scope))
    total_in, total_out = sum(r[5] for r in rows), sum(r[6] for r in rows)
    facts = [(_("total"), _("{calls} calls · {tokens} tokens ({inp} in, {out} out){cost}").format(
        calls=sum(r[4] for r in rows), tokens=_tokens(total_in + total_out), inp=total_in, out=total_out,
        cost=_money(ctx.model_prices, rows)))]
    for label, index in ((_("per person"), 0), (_("per channel"), 1), (_("per workflow"), 2), (_("per model"), 3)):
        groups: dict[str, list[Any]] = {}
        for row in rows:
            groups.setdefault(str(row[index] or "-"), []).append(row)
        facts.append((label, " · ".join(f"{key} {_tokens(sum(r[5] + r[6] for r in group))}"
                                        f"{_money(ctx.model_prices, group)}" for key, group in sorted(groups.items()))))
    people = sorted({str(r[0]) for r in rows if r[0]})
    return View(_("Usage"), _("Model tokens in {scope} ({zone})").format(scope=scope, zone=ctx.timezone),
                facts=facts, users=people)


def _iso(text: str) -> str:
    return f"{text[:4]}-{text[4:6]}-{text[6:]}" if len(text) == 8 and text.isdigit() else text


def _money(prices: dict[str, tuple[Decimal, Decimal]], rows: list[Any]) -> str:
    usage: dict[str, ModelUsage] = {}
    for row in rows:
        used = usage.setdefault(row[3], ModelUsage())
        used.calls, used.input_tokens, used.output_tokens = (used.calls + row[4], used.input_tokens + row[5],
                                                             used.output_tokens + row[6])
    total = cost(prices, usage) if prices else None
    return f" · ¥{total:.2f}" if total is not None else ""


def budget_command(call: CommandCall) -> View:
    """`budget raise PERSON TOKENS`: an admin adds tokens to one person's budget for today (audited)."""
    args = call.args
    if len(args) != 3 or args[0].lower() != "raise" or not args[2].isdigit() or int(args[2]) <= 0:
        raise CommandError(_("usage: budget raise PERSON TOKENS, e.g. `budget raise U123 50000`"))
    if call.user is None or call.user not in admins_of(call.context, ""):
        raise CommandError(_("Only an admin raises a budget."))
    ctx = call.context
    day = local_day(ctx.now(), ctx.timezone)
    RunStore(ctx.engine).raise_budget(args[1], day, int(args[2]), call.user or "?")
    return View(_("Budget raised"), _("{person} may use {tokens} more tokens on {day}; the raise is on the audit "
                                      "chain.").format(person=args[1], tokens=f"{int(args[2]):,}", day=day),
                users=[args[1]])
