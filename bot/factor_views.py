"""The factor library as text, for `/quant factor list|show` and the console's `factor list|show`."""

from __future__ import annotations

from sqlalchemy import Engine

from tools.factor_store import FactorStore

SHOWN_METRICS = (("rank_ic_mean", "Rank IC", "{:.4f}"), ("rank_icir", "ICIR", "{:.2f}"), ("ic_mean", "IC", "{:.4f}"),
                 ("spread_mean", "top−bottom", "{:.4%}"), ("turnover_top", "top turnover", "{:.1%}"))


def factor_list_text(engine: Engine) -> str:
    factors = FactorStore(engine).list()
    if not factors:
        return ("No factors saved yet. Start one with `factor KIND START END` "
                "(e.g. `factor momentum 20190301 20200601`).")
    lines = [f"{len(factors)} factor(s), newest version of each:"]
    for f in factors:
        lines.append(f"• {f.name} v{f.version} [{f.status}] {f.description} — by {f.author or '?'}, "
                     f"{f.decision} by {f.reviewer or '?'}, {f.created_at:%Y-%m-%d %H:%M}")
    return "\n".join(lines)


def factor_show_text(engine: Engine, name: str) -> str:
    name = name.strip().lower()
    if not name:
        return "Usage: factor show NAME (see factor list)"
    store = FactorStore(engine)
    versions = store.versions(name)
    if not versions:
        return f"No factor named {name!r}. See `factor list`."
    latest = versions[-1]
    lines = [f"{latest.name}: {latest.description}",
             "versions: " + ", ".join(f"v{v.version} {v.status} ({v.decision} by {v.reviewer or '?'})"
                                      for v in versions)]
    active = store.latest(name)
    if active is not None:
        metrics = store.metrics(active.id)
        lines.append(f"v{active.version}: {store.count_values(active.id)} values stored")
        for period, row in metrics.iterrows():
            shown = ", ".join(f"{label} {fmt.format(row[key])}" for key, label, fmt in SHOWN_METRICS if key in row)
            lines.append(f"  {period}d: {shown}")
        body = active.spec.get("body") or active.code
        lines.append(f"code (body of compute_factor):\n```\n{body.rstrip()}\n```")
    return "\n".join(lines)
