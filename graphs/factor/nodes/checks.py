"""dry_run and semantic_check: the code runs in the sandbox on a small real slice and its values are checked;
then the semantic check compares code and spec (rule-based for library bodies and without an LLM, an LLM
judge otherwise). Both record their verdict; the retry router decides what happens next."""

from __future__ import annotations

import ast
import textwrap
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.common import message_text, parse_json_object
from graphs.context import WorkflowContext
from graphs.factor.run import dry_run, load_dry_run_inputs
from graphs.factor.state import FactorState
from tools.data.schema import DataError

JUDGE_PROMPT = """You review a stock-selection factor's code against its specification.

Specification: {description}
Fields: {fields}; look-back: {lookback} trading days; frequency: daily.

Body of compute_factor (each argument a DataFrame dates x codes):
```python
{body}
```
Does the code compute what the specification says (right fields, windows, sign and formula)? Ignore style.
Answer with one JSON object: {{"ok": true|false, "diffs": ["what differs", ...], "reason": "one sentence"}}
"""


def dry_run_node(state: FactorState, config: RunnableConfig, runtime: Runtime[WorkflowContext]) -> dict[str, Any]:
    ctx, spec = runtime.context, state["spec"]
    try:
        inputs = load_dry_run_inputs(ctx.provider, spec)
    except (DataError, ValueError) as exc:
        return {"dry_run": {"ok": False, "error": f"data: {exc}", "checks": None, "summary": f"data: {exc}",
                            "fatal": True}}
    outcome = dry_run(ctx.sandbox, spec, state["factor_body"] or "", inputs)
    attempt = {"source": "edit" if state.get("editing") else (spec.get("library") or "llm"),
               "ok": outcome["ok"], "problem": outcome["error"]}
    return {"dry_run": outcome, "attempts": [*state.get("attempts", []), attempt]}


def semantic_check_node(state: FactorState, config: RunnableConfig,
                        runtime: Runtime[WorkflowContext]) -> dict[str, Any]:
    if not (state.get("dry_run") or {}).get("ok"):
        return {"semantic_check": None}
    spec, body = state["spec"], state.get("factor_body") or ""
    if spec.get("body") and body.strip() == spec["body"].strip():
        return {"semantic_check": {"ok": True, "diffs": [], "reason": "library implementation of the spec",
                                   "by": "rules"}}
    diffs = rule_diffs(spec, body)
    if diffs or runtime.context.light_llm is None and runtime.context.llm is None:
        return {"semantic_check": {"ok": not diffs, "diffs": diffs, "reason": "rule-based check", "by": "rules"}}
    judge = runtime.context.llm or runtime.context.light_llm
    prompt = JUDGE_PROMPT.format(description=spec["description"], fields=", ".join(spec["fields"]),
                                 lookback=spec.get("lookback", 0), body=body)
    try:
        verdict = parse_json_object(message_text(judge.invoke(  # type: ignore[union-attr]
            [SystemMessage(prompt), HumanMessage("Judge the code.")])))
    except Exception as exc:  # noqa: BLE001 - an unreadable verdict must not pass silently
        return {"semantic_check": {"ok": False, "diffs": [f"the semantic judge gave no verdict ({exc})"],
                                   "reason": "no verdict", "by": "llm"}}
    return {"semantic_check": {"ok": bool(verdict.get("ok")), "diffs": [str(d) for d in verdict.get("diffs") or []],
                               "reason": str(verdict.get("reason") or ""), "by": "llm"}}


def rule_diffs(spec: dict[str, Any], body: str) -> list[str]:
    """What a reader can tell without a model: the spec's fields are used, no negative shifts."""
    try:
        tree = ast.parse("def _f():\n" + textwrap.indent(textwrap.dedent(body), "    "))
    except SyntaxError:
        return []  # the dry run reports syntax errors
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    diffs = [f"the spec's field `{f}` is not used" for f in spec["fields"] if f not in names]
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "shift"
                and node.args and isinstance(node.args[0], ast.UnaryOp) and isinstance(node.args[0].op, ast.USub)):
            diffs.append("shift with a negative period reads future data")
    return diffs
