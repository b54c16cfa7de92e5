"""An evaluation's outputs: the JSON report (everything, for `--compare`), one CSV row per run, and the tables
printed on the terminal."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path
from typing import Any

from bot.evaluation.files import read_json
from bot.evaluation.run_case import CaseRun, outcome_kind
from bot.evaluation.summary import Figure
from tools.i18n import _, display_width, pad_right

FORMAT = 1  # the report format's version
RUN_COLUMNS = ("case", "repeat", "outcome", "interrupts", "model_calls", "model_errors", "input_tokens",
               "output_tokens", "seconds", "cost", "judge_tokens")


class ReportError(ValueError):
    """A file that is not a `quantdesk eval` report."""


def report(meta: dict[str, Any], figures: dict[str, Figure], distributions: dict[str, dict[str, int]],
           runs: list[CaseRun]) -> dict[str, Any]:
    return {"format": FORMAT, **meta, "figures": {name: f.as_json() for name, f in figures.items()},
            "distributions": distributions, "runs": [_run_json(run) for run in runs]}


def _run_json(run: CaseRun) -> dict[str, Any]:
    body = asdict(run)
    body["cost"] = None if run.cost is None else str(run.cost)
    body["seconds"] = round(run.seconds, 3)
    return body


def write(report_: dict[str, Any], directory: Path, stem: str) -> tuple[Path, Path]:
    """The JSON report and the CSV of its runs, as DIRECTORY/STEM.json and .csv."""
    json_path, csv_path = directory / f"{stem}.json", directory / f"{stem}.csv"
    n = 1
    while json_path.exists() or csv_path.exists():  # two evaluations in the same second keep both reports
        n += 1
        json_path, csv_path = directory / f"{stem}-{n}.json", directory / f"{stem}-{n}.csv"
    json_path.write_text(json.dumps(report_, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    measures = list(dict.fromkeys(name for run in report_["runs"] for name in run["measures"]))
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*RUN_COLUMNS, *measures])
        for run in report_["runs"]:
            row = [" ".join(run[c]) if c == "interrupts" else run[c] for c in RUN_COLUMNS]
            writer.writerow([*("" if v is None else v for v in row),
                             *("" if run["measures"].get(m) is None else run["measures"][m] for m in measures)])
    return json_path, csv_path


def load(path: Path) -> dict[str, Any]:
    body = read_json(path, ReportError)
    if not isinstance(body, dict) or body.get("format") != FORMAT or not _well_formed(body):
        raise ReportError(_("{path}: not a `quantdesk eval` report (format {format})").format(path=path, format=FORMAT))
    return body


def _well_formed(body: dict[str, Any]) -> bool:
    figures, distributions = body.get("figures"), body.get("distributions")
    return (isinstance(body.get("workflow"), str) and isinstance(body.get("model"), str)
            and isinstance(figures, dict) and isinstance(distributions, dict)
            and all(isinstance(f, dict) and {"mean", "spread", "n"} <= set(f) for f in figures.values())
            and all(isinstance(c, dict) for c in distributions.values()))


def _number(value: Any) -> str:
    if isinstance(value, str):  # a cost, exact
        return value
    return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:,.0f}"


def _cell(figure: dict[str, Any] | None) -> str:
    if figure is None:
        return "-"
    return f"{_number(figure['mean'])} ± {_number(figure['spread'])}"


def _columns(rows: list[list[str]]) -> str:
    widths = [max(display_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(pad_right(cell, w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


def table(report_: dict[str, Any]) -> str:
    head = _("quantdesk eval {workflow}: model {model} (light {light}, judge {judge}), {cases} request(s) x {repeat} "
             "repeat(s)").format(workflow=report_["workflow"], model=report_["model"], light=report_["light_model"],
                                 judge=report_["judge_model"] or _("none"), cases=report_["cases"],
                                 repeat=report_["repeat"])
    rows = [[_("measure"), _("mean ± spread"), _("runs")]]
    rows += [[name, _cell(figure), str(figure["n"])] for name, figure in report_["figures"].items()]
    lines = [head, _columns(rows)]
    errors = report_["distributions"].get("outcome", {}).get("error", 0)
    if errors:
        lines.append(_("{n} run(s) ended in an error and are left out of the workflow's measures (see the "
                       "CSV)").format(n=errors))
    if "cost" not in report_["figures"]:
        lines.append(_("cost: unknown (a model used is not in QUANTDESK_MODEL_PRICES)"))
    for name, counts in report_["distributions"].items():
        lines.append(f"{name}: " + _counts(name, counts))
    return "\n".join(lines)


def _counts(name: str, counts: dict[str, int]) -> str:
    """A distribution's values with their counts; the outcome's kinds in the reader's language."""
    return ", ".join(f"{outcome_kind(value) if name == 'outcome' else value} {n}"
                     for value, n in sorted(counts.items())) or "-"


def compare(a: dict[str, Any], b: dict[str, Any], labels: tuple[str, str]) -> str:
    """Two reports of one workflow side by side, with B - A per measure."""
    if a["workflow"] != b["workflow"]:
        raise ReportError(_("{a} evaluates {workflow_a} and {b} {workflow_b}: nothing to compare").format(
            a=labels[0], workflow_a=a["workflow"], b=labels[1], workflow_b=b["workflow"]))
    rows = [[_("measure"), f"A: {a['model']}", f"B: {b['model']}", "B - A"]]
    for name in dict.fromkeys([*a["figures"], *b["figures"]]):
        fa, fb = a["figures"].get(name), b["figures"].get(name)
        delta = "-" if fa is None or fb is None else _number(_difference(fa["mean"], fb["mean"]))
        rows.append([name, _cell(fa), _cell(fb), delta])
    lines = [f"quantdesk eval {a['workflow']}: A = {labels[0]}, B = {labels[1]}", _columns(rows)]
    for name in dict.fromkeys([*a["distributions"], *b["distributions"]]):
        for label, side in (("A", a), ("B", b)):
            counts = side["distributions"].get(name) or {}
            lines.append(f"{name} {label}: " + _counts(name, counts))
    return "\n".join(lines)


def _difference(a: Any, b: Any) -> Any:
    return str(Decimal(b) - Decimal(a)) if isinstance(a, str) else b - a
