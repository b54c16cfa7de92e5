"""codegen (the seed's gen_code_react): fill the template's body. Library specs carry their body; otherwise a
ReAct agent in the seed's CodeGen role (first attempt) or ErrorFix role (after a failed dry run or semantic
check, with the cleaned error and the previous body) writes it, trying bodies in the sandbox as it goes."""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.runtime import Runtime

from graphs.common import AGENT_STEP_LIMIT, message_text
from graphs.context import model_required
from graphs.factor.deps import FactorDeps
from graphs.factor.holdout import split_of
from graphs.factor.models import MODELS
from graphs.factor.run import dry_run, load_dry_run_inputs
from graphs.factor.state import FactorState, failure_of
from graphs.factor.template import render
from graphs.llm import AGENT_FAILURES, describe_model_failure, language_instruction
from graphs.progress import report_progress
from tools.i18n import _
from tools.research.holdout import hide_held_out_dates
from tools.research.trials import body_key

CODEGEN_PROMPT = """You are CodeGen, a quant developer. Write the body of `compute_factor` for this factor:

## Factor
name: {name}
description: {description}
request: {request}

## Template (fixed; you write only the indented body)
{template}

Each argument is a pandas DataFrame: index = trade dates, columns = ts_codes. Return ONE DataFrame with the same
index and columns. `pd`, `np` and `math` are imported; only pandas, numpy, math, statistics and similar pure
modules may be imported; no files, no network, no private or dunder attributes. Use only data up to each date
(never shift(-n), centred windows or full-sample statistics). Vectorised pandas, no loops over dates. Mask
divisions that can hit zero (`.where(x != 0)`) so no ±inf is returned.

Call the try_factor_body tool with your body; it dry-runs it on real data and reports the checks. Fix and try
again until the checks pass, then answer with one line saying what the factor computes.
"""

ERRORFIX_PROMPT = CODEGEN_PROMPT + """
## You are now ErrorFix
The previous body failed. Fix the cause; do not change what the factor measures.

Previous body:
```python
{previous}
```
Problem:
{problem}
"""


def codegen_node(state: FactorState, config: RunnableConfig, runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    spec = state["spec"]
    report_progress(_("code"), None if spec.get("body") else
                    _("attempt {n}").format(n=len(state.get("attempts", [])) + 1))
    if spec.get("body"):  # library factor: the body comes from the library
        return {"factor_body": spec["body"], "factor_code": render(spec["name"], spec["description"], spec["fields"],
                                                                    spec["body"]), "editing": False}
    return _generate(state, runtime.context)


def _generate(state: FactorState, ctx: FactorDeps) -> dict[str, Any]:
    spec = state["spec"]
    inputs = load_dry_run_inputs(ctx.provider, spec)
    tried: list[str] = []
    outcomes: list[dict[str, Any]] = []  # each try's {ok, problem}: what the checks caught inside the agent

    @tool
    def try_factor_body(body: str) -> str:
        """Dry-run a body of compute_factor on real data; returns the checks or the error to fix."""
        tried.append(body)
        outcome = dry_run(ctx.sandbox, spec, body, inputs)
        outcomes.append({"ok": outcome["ok"], "problem": outcome["error"], "body": body_key(body)})
        return ("checks passed: " if outcome["ok"] else "FAILED: ") + outcome["summary"]

    previous, problem = state.get("factor_body"), failure_of(state)
    template = render(spec["name"], spec["description"], spec["fields"], "...")
    request = "\n".join(message_text(m) for m in state.get("messages", []) if isinstance(m, HumanMessage))[-2000:]
    split = split_of(spec)
    if split is not None:  # the model tunes on the in-sample part only: it is not told the period goes further
        request = hide_held_out_dates(request, split)
    values = {"name": spec["name"], "description": spec["description"], "request": request, "template": template}
    prompt = (ERRORFIX_PROMPT.format(**values, previous=previous, problem=problem) if previous and problem
              else CODEGEN_PROMPT.format(**values)) + language_instruction()
    agent = create_agent(model_required(ctx, MODELS["factor coder"]), tools=[try_factor_body], system_prompt=prompt)
    note = None
    try:
        agent.invoke({"messages": [HumanMessage("Write the factor body.")]}, {"recursion_limit": AGENT_STEP_LIMIT})
    except AGENT_FAILURES as exc:  # the agent stopping is an attempt that failed, not a crash
        note = _("the code agent stopped: {failure}").format(failure=describe_model_failure(exc))
    if not tried:
        body = previous or "raise NotImplementedError('the model wrote no code')\n"
        note = note or _("the model answered without trying any code")
    else:
        body = tried[-1]
    retries = state.get("retry_count", 0) + (1 if previous else 0)  # a previous body means this is a retry
    return {"factor_body": body, "factor_code": render(spec["name"], spec["description"], spec["fields"], body),
            "editing": False, "retry_count": retries,
            "attempts": [*state.get("attempts", []), {"source": "llm", "note": note, "tries": outcomes}]}
