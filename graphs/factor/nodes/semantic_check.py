"""semantic_check: compare the code with the spec after a passing dry run (rule-based for library bodies and
without an LLM, an LLM judge otherwise). The verdict is recorded; the routes decide what happens next. A judge
that gives no usable verdict records ok=None: the code is not retried for it (a judge that never answers in the schema
would otherwise block every model-written factor), and the reviewer is told to judge it."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from graphs.context import model_for
from graphs.factor.deps import FactorDeps
from graphs.factor.models import MODELS
from graphs.factor.state import FactorState
from graphs.llm import MODEL_FAILURES, describe_model_failure, invoke_structured, language_instruction
from graphs.progress import report_progress
from tools.i18n import N_, _
from tools.sandbox.policy import parse_untrusted

JUDGE_PROMPT = """You review a stock-selection factor's code against its specification.

Specification: {description}
Fields: {fields}; look-back: {lookback} trading days; frequency: daily.

Body of compute_factor (each argument a DataFrame dates x codes):
```python
{body}
```
Does the code compute what the specification says (right fields, windows, sign and formula)? Ignore style.
Answer with CodeVerdict.
"""


class CodeVerdict(BaseModel):
    """Whether the code computes what the specification says."""

    ok: bool = Field(description="true when the code computes what the specification says")
    diffs: list[str] = Field(default_factory=list, description="what differs from the specification")
    reason: str = Field(default="", description="one sentence")


def semantic_check_node(state: FactorState, config: RunnableConfig,
                        runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    if not (state.get("dry_run") or {}).get("ok"):
        return {"semantic_check": None}
    spec, body = state["spec"], state.get("factor_body") or ""
    report_progress(_("semantic check"))
    if spec.get("body") and body.strip() == spec["body"].strip():
        return {"semantic_check": {"ok": True, "diffs": [], "reason": _("library implementation of the spec"),
                                   "by": "rules"}}
    diffs = rule_diffs(spec, body)
    judge = model_for(runtime.context, MODELS["semantic judge"])
    if diffs or judge is None:
        return {"semantic_check": {"ok": not diffs, "diffs": diffs, "reason": _("rule-based check"), "by": "rules"}}
    prompt = JUDGE_PROMPT.format(description=spec["description"], fields=", ".join(spec["fields"]),
                                 lookback=spec.get("lookback", 0), body=body)
    try:
        verdict = invoke_structured(judge, [SystemMessage(prompt + language_instruction()),
                                            HumanMessage("Judge the code.")], CodeVerdict, N_("verdict"))
    except MODEL_FAILURES as exc:  # no verdict is not a verdict against the code: the reviewer judges it
        return {"semantic_check": {"ok": None, "diffs": [], "by": "llm",
                                   "reason": _("the semantic judge gave no verdict ({failure})").format(
                                       failure=describe_model_failure(exc))}}
    return {"semantic_check": {"ok": verdict.ok, "diffs": verdict.diffs, "reason": verdict.reason, "by": "llm"}}


def rule_diffs(spec: dict[str, Any], body: str) -> list[str]:
    """What a reader can tell without a model: the spec's fields are used, no negative shifts."""
    try:
        tree = parse_untrusted("def _f():\n" + textwrap.indent(textwrap.dedent(body), "    "))
    except SyntaxError:
        return []  # the dry run reports syntax errors
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    diffs = [_("the spec's field `{field}` is not used").format(field=f) for f in spec["fields"] if f not in names]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "shift"
                and node.args and isinstance(node.args[0], ast.UnaryOp) and isinstance(node.args[0].op, ast.USub)):
            diffs.append(_("shift with a negative period reads future data"))
    return diffs


def checker_word(by: str) -> str:
    """Who checked the code (rules, llm) as the reader says it."""
    return {"rules": _("rules"), "llm": _("llm")}.get(by, by)
