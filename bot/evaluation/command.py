"""`quantdesk eval WORKFLOW [--dataset FILE] [--model M] [--repeat N]` and `quantdesk eval --compare A B`."""

from __future__ import annotations

import re
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from bot.evaluation import output
from bot.evaluation.dataset import Dataset, DatasetError, default_dataset, load_dataset
from bot.evaluation.run_case import CaseRun, outcome_text, run_case
from bot.evaluation.summary import summarize
from graphs.llm import MODEL_FAILURES, describe_model_failure, get_light_llm, get_llm
from graphs.meter import Meter
from graphs.registry import WORKFLOWS
from tools.i18n import N_, _
from tools.settings import Settings

NO_MODEL = N_("`quantdesk eval` runs the workflows against a real model: set OPENAI_API_KEY (and OPENAI_BASE_URL "
              "for another OpenAI-compatible endpoint)")


ENDPOINT_CHECK = "[quantdesk eval: endpoint check] Reply with the word OK."


class EvalError(ValueError):
    """The evaluation cannot run as asked; the message says why."""


def evaluable() -> list[str]:
    return [name for name, workflow in WORKFLOWS.items() if workflow.measure is not None]


def run_eval(settings: Settings, workflow_name: str, dataset_path: Path | None, model: str | None,
             light_model: str | None, judge_model: str | None, repeat: int, out_dir: Path | None) -> int:
    workflow = WORKFLOWS.get(workflow_name)
    if workflow is None or workflow.measure is None:
        raise EvalError(_("{workflow!r} has no evaluation; evaluable workflows: {workflows}").format(
            workflow=workflow_name, workflows=", ".join(evaluable())))
    if not settings.llm_configured:
        raise EvalError(_(NO_MODEL))
    try:
        dataset = load_dataset(dataset_path or default_dataset(workflow.name), workflow.name)
    except DatasetError as exc:
        raise EvalError(str(exc)) from None
    judge_name = judge_model or settings.model  # the configured model judges, whichever model is evaluated
    settings = settings.model_copy(update={"model": model or settings.model,
                                           "light_model": light_model or settings.light_model})
    directory = _writable(out_dir or settings.data_dir / "evals")
    endpoint = _redacted(settings.openai_base_url or "https://api.openai.com/v1")
    _check_endpoint(settings, endpoint)
    judge_meter = Meter()
    judge = get_llm(settings.model_copy(update={"model": judge_name}))
    if judge is not None:
        judge.callbacks = [judge_meter]
    started, clock = datetime.now(UTC), time.monotonic()
    runs = _run_all(workflow.name, dataset, settings, repeat, judge, judge_meter)
    figures, distributions = summarize(runs)
    meta = {"workflow": workflow.name, "model": settings.model, "light_model": settings.light_model,
            "judge_model": judge_name, "endpoint": endpoint,
            "dataset": str(dataset.path), "cases": len(dataset.cases), "repeat": repeat,
            "started_at": started.isoformat(timespec="seconds"), "seconds": round(time.monotonic() - clock, 3)}
    body = output.report(meta, figures, distributions, runs)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{workflow.name}-{settings.model}-{started:%Y%m%dT%H%M%S}")
    json_path, csv_path = output.write(body, directory, stem)
    print(output.table(body))
    print(_("report: {json}\nruns:   {csv}").format(json=json_path, csv=csv_path))
    return 0


def _writable(directory: Path) -> Path:
    """`directory`, created if needed and checked writable before anything is run (and paid for)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        raise EvalError(_("cannot write the reports to {directory}: {error}").format(
            directory=directory, error=exc.strerror or exc)) from None
    return directory


def _redacted(url: str) -> str:
    """The endpoint without credentials or query (either can hold a key)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, f"{host}:{parts.port}" if parts.port else host, parts.path, "", ""))


def _check_endpoint(settings: Settings, endpoint: str) -> None:
    """One short call to the main and the light model: an endpoint that does not answer is a setup problem to
    report now, not a model behaviour to score."""
    for role, model in ((N_("model"), get_llm(settings)), (N_("light model"), get_light_llm(settings))):
        if model is None:
            continue
        try:
            model.invoke([SystemMessage(ENDPOINT_CHECK), HumanMessage("OK?")])
        except MODEL_FAILURES as exc:
            raise EvalError(_("the endpoint {endpoint} does not answer for the {role} {model}: {error}").format(
                endpoint=endpoint, role=_(role), model=getattr(model, "model_name", "?"),
                error=describe_model_failure(exc))) from None


def _run_all(name: str, dataset: Dataset, settings: Settings, repeat: int, judge: BaseChatModel | None,
             judge_meter: Meter) -> list[CaseRun]:
    workflow, runs, total = WORKFLOWS[name], [], len(dataset.cases) * repeat
    for r in range(1, repeat + 1):
        for case in dataset.cases:
            run = run_case(workflow, case, r, settings, judge, judge_meter)
            runs.append(run)
            print(_("[{done}/{total}] {case} (repeat {repeat}): {outcome}; {calls} model call(s), {tokens} tokens, "
                    "{seconds} s").format(done=len(runs), total=total, case=case.id, repeat=r,
                                          outcome=outcome_text(run.outcome), calls=run.model_calls,
                                          tokens=f"{run.tokens:,}", seconds=f"{run.seconds:.1f}"),
                  file=sys.stderr, flush=True)
    return runs


def run_compare(a: Path, b: Path) -> int:
    try:
        print(output.compare(output.load(a), output.load(b), (str(a), str(b))))
    except output.ReportError as exc:
        raise EvalError(str(exc)) from None
    return 0
