"""Evaluation datasets: JSON files of requests for one workflow. The shipped ones live in `datasets/`.

    {"workflow": "factor",
     "cases": [{"id": "reversal_10d", "request": "Build me a 10-day reversal factor ...",
                "setup": ["rule add 600519.SH \\"buy when ...\\" kind=words"],
                "answers": ["approve", "reject", {"respond": "use 20190301 to 20200601"}]}]}

`setup` holds commands run first, in a database of the case's own (so `rule run 1` is the rule the setup added);
`answers` answer the run's interrupts in order; past them a code review or an order is approved when it can be
and rejected otherwise, and a question ends the run."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.evaluation.files import read_json
from graphs.registry import command_for
from tools.i18n import _

DATASETS = Path(__file__).with_name("datasets")
KEYWORDS = ("approve", "reject")


class DatasetError(ValueError):
    """A dataset file that cannot be used; the message names the file and the case."""


@dataclass(frozen=True)
class Case:
    id: str
    request: str
    setup: tuple[str, ...] = ()
    answers: tuple[dict[str, Any], ...] = ()  # HITL decisions, in interrupt order


@dataclass(frozen=True)
class Dataset:
    workflow: str
    path: Path
    cases: tuple[Case, ...]


def default_dataset(workflow: str) -> Path:
    return DATASETS / f"{workflow}.json"


def load_dataset(path: Path, workflow: str) -> Dataset:
    """The dataset at `path`, checked: it is for `workflow`, every case has a unique id and a request."""
    body = read_json(path, DatasetError)
    if not isinstance(body, dict) or not isinstance(body.get("cases"), list) or not body["cases"]:
        raise DatasetError(_("{path}: expected an object with a non-empty \"cases\" list").format(path=path))
    if body.get("workflow") != workflow:
        raise DatasetError(_("{path}: a dataset for {found!r}, not {workflow!r}").format(
            path=path, found=body.get("workflow"), workflow=workflow))
    cases = tuple(_case(path, i, raw) for i, raw in enumerate(body["cases"]))
    ids = [case.id for case in cases]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise DatasetError(_("{path}: case ids must be unique; repeated: {ids}").format(path=path,
                                                                                        ids=", ".join(repeated)))
    return Dataset(workflow, path, cases)


def _case(path: Path, index: int, raw: Any) -> Case:
    where = _("{path}: case {n}").format(path=path, n=index + 1)
    if not isinstance(raw, dict):
        raise DatasetError(_("{where} is not an object").format(where=where))
    case_id, request = raw.get("id"), raw.get("request")
    if not isinstance(case_id, str) or not case_id.strip():
        raise DatasetError(_("{where} has no \"id\"").format(where=where))
    if not isinstance(request, str) or not request.strip():
        raise DatasetError(_("{where} ({case}) has no \"request\" text").format(where=where, case=case_id))
    setup = raw.get("setup", [])
    if not isinstance(setup, list) or not all(isinstance(c, str) and c.strip() for c in setup):
        raise DatasetError(_("{where} ({case}): \"setup\" must be a list of commands").format(where=where,
                                                                                              case=case_id))
    for command in setup:
        try:
            known = bool(shlex.split(command)) and command_for(command) is not None
        except ValueError as exc:  # an unbalanced quote
            raise DatasetError(_("{where} ({case}): set-up command {command!r} does not parse: {error}").format(
                where=where, case=case_id, command=command, error=exc)) from None
        if not known:
            raise DatasetError(_("{where} ({case}): set-up {command!r} is not a command (e.g. rule add ...)").format(
                where=where, case=case_id, command=command))
    answers = raw.get("answers", [])
    if not isinstance(answers, list):
        raise DatasetError(_("{where} ({case}): \"answers\" must be a list").format(where=where, case=case_id))
    return Case(case_id, request, tuple(setup), tuple(_answer(f"{where} ({case_id})", a) for a in answers))


def _answer(where: str, raw: Any) -> dict[str, Any]:
    """"approve", "reject" or {"respond": TEXT} as the HITL decision the graph reads."""
    if raw in KEYWORDS:
        return {"type": raw}
    if isinstance(raw, dict) and set(raw) == {"respond"} and isinstance(raw["respond"], str):
        return {"type": "respond", "message": raw["respond"]}
    raise DatasetError(_("{where}: an answer is \"approve\", \"reject\" or {{\"respond\": TEXT}}, not {raw!r}").format(
        where=where, raw=raw))
