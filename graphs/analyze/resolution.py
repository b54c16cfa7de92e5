"""The desk's scheduled resolution pass: decisions whose horizon (5 sessions, and 20) has passed are resolved (realised
return, excess over the equal-weight universe) even when no new decision comes, so their reflections reach the
analysts' memory and `decisions` shows the outcome. A decision is otherwise resolved only at the next decision or a
replay's end. Everything the data knows is used: a decision is due once its exit day is on or before the data's last
day (that day's close is in). Reads stay point in time, since reflections are shown only to decisions after the exit
day. Safe with several processes: an outcome row is stored once (the first resolver wins, the others store nothing
and get nothing back), so each resolution is announced once, in the decision's thread."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.memory import HORIZON_DAYS
from graphs.background import Notice
from tools.broker.clock import day, ymd
from tools.desk.log import Resolution, reflection_text, resolve_due
from tools.i18n import _

SCORED_HORIZONS = (HORIZON_DAYS, 20)  # sessions: the memory's horizon, and the month a rating is scored over too


def resolve_pass(ctx: AnalyzeDeps) -> list[Notice]:
    """Resolve the due decisions of the desk's namespace; one notice per decision this call resolved."""
    last = ctx.provider.last_date()
    if last is None:
        return []
    known = ymd(day(last) + timedelta(days=1))  # due: the exit day is before the day after the data's last
    resolved = [r for horizon in SCORED_HORIZONS
                for r in resolve_due(ctx.engine, ctx.provider, namespace=ctx.desk_namespace, as_of_date=known,
                                     horizon=horizon)]
    return [Notice(r.thread_id, f"resolution:{r.decision_id}:{r.horizon}", partial(_resolved, r)) for r in resolved]


def _resolved(resolution: Resolution) -> str:
    return _("Resolved: {reflection}.").format(reflection=reflection_text(resolution))
