"""The runs panel of a person's home: their latest runs (what `runs` lists), each with its record one click away,
and the tokens they used today against their budget."""

from __future__ import annotations

from graphs.context import WorkflowContext
from graphs.home import HomeAction, HomePanel, HomeRow
from graphs.runs.budget import day_line, short
from graphs.runs.commands import started, status_word
from tools.i18n import _
from tools.runs.store import RunRow, RunStore

RUN_ROWS = 5


def runs_panels(ctx: WorkflowContext, user: str) -> list[HomePanel]:
    """None for a person who has started no run."""
    store = RunStore(ctx.engine)
    runs = store.recent(user=user, limit=RUN_ROWS)
    if not runs:
        return []
    summary = _("Your latest {count} run(s), newest first; {today}.").format(count=len(runs),
                                                                           today=day_line(store, ctx, user))
    rows = tuple(HomeRow(run_text(run, ctx.timezone), (HomeAction(_("Record"), ("runs", "show", run.id)),),
                         run.thread_id) for run in runs)
    note = _("`rerun ID` runs one again from its record; `usage` shows the day's tokens and cost.")
    return [HomePanel("runs", _("Runs"), summary, rows, notes=(note,))]


def run_text(run: RunRow, zone: str) -> str:
    """`r-1a2b · 12-07 10:02 · analyze · done · 11.7k tokens · analyze 600519.SH`."""
    return " · ".join([run.id, started(run, zone), run.workflow or "-", status_word(run.status),
                       _("{tokens} tokens").format(tokens=short(run.input_tokens + run.output_tokens)),
                       run.text[:40]])
