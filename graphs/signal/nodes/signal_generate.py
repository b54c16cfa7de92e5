"""Signal generation: code runs only in the sandbox, against the workspace frames, and must leave `signal`
(dates x codes of 1 / 0 / -1 / NaN), which is stored under signal/. Structured requests take the code from
the library; free-form ones let the main model write it, with sandbox errors fed back as observations."""

from __future__ import annotations

from typing import Any

import pandas as pd
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.runtime import Runtime

from graphs.common import AGENT_STEP_LIMIT, frame_inputs
from graphs.context import model_required, workspace
from graphs.llm import AGENT_FAILURES, describe_model_failure
from graphs.progress import report_progress
from graphs.signal.deps import SignalDeps
from graphs.signal.library import STRATEGIES
from graphs.signal.models import MODELS
from graphs.signal.state import SignalState
from tools.i18n import _
from tools.sandbox import Sandbox
from tools.storage.workspace import Workspace

CUSTOM_SIGNAL = "signal/custom"

SIGNAL_PROMPT = """You are a quantitative strategist. Write pandas code that turns the user's strategy into a
trading signal, and run it with the run_signal_code tool.

## Data
The code sees each workspace frame as a variable named after its field: a DataFrame with a DatetimeIndex
(trade dates) and one column per ts_code. Available now: {available}. `pd` and `np` are imported.
Only pandas, numpy, math, statistics, datetime, itertools, functools, collections and operator may be
imported; no files, no network, no private or dunder attributes.

## Strategy
{strategy}

## Signal
Assign the result to a variable named `signal`: same index and columns as `close`, values
1 (buy), 0 (hold), -1 (sell) or NaN (no data). Use only data up to each date (no look-ahead: never
shift(-n), never use future rows). Vectorised pandas, no loops over dates.

## Example (moving-average cross)
fast = close.rolling(5).mean(); slow = close.rolling(20).mean()
signal = ((fast > slow).astype(float) - (fast < slow).astype(float)).where(slow.notna())

If the tool reports an error, read it, fix the code and run it again. Finish with a one-line summary.
"""


def check_signal(value: Any) -> str | None:
    """Why `value` cannot be a signal frame, or None."""
    if not isinstance(value, pd.DataFrame):
        return _("`signal` must be a DataFrame (dates x codes), got {type}").format(type=type(value).__name__)
    return None


def run_signal(sandbox: Sandbox, ws: Workspace, code: str, name: str) -> tuple[dict[str, Any] | None, str]:
    """Run `code` in the sandbox on the workspace frames; store `signal` under `name` when it is a frame."""
    result = sandbox.run(code, frame_inputs(ws), outputs=["signal"])
    if not result.ok:
        return None, str(result.error)
    problem = check_signal(result.outputs["signal"])
    if problem:
        return None, problem
    info = ws.put(name, result.outputs["signal"].astype("float64"))
    return info.__dict__, f"stored {info.describe()}"


def signal_generate_node(state: SignalState, config: RunnableConfig,
                         runtime: Runtime[SignalDeps]) -> dict[str, Any]:
    report_progress(_("signal"))
    ws = workspace(runtime.context, config)
    params = (state.get("user_intent") or {}).get("params") or {}
    if state.get("mode") == "structured":
        strategy = STRATEGIES[params["strategy"]]
        code = strategy.code(params["strategy_params"])
        info, message = run_signal(runtime.context.sandbox, ws, code, f"signal/{strategy.name}")
        return _outcome(state, info, message, code)
    return _generate_llm(state, runtime.context, ws, params)


def _outcome(state: SignalState, info: dict[str, Any] | None, message: str, code: str | None) -> dict[str, Any]:
    if info is None:
        error = _("signal generation failed: {error}").format(error=message)
        return {"signal_ready": False, "error_messages": [error], "error_log": [*state.get("error_log", []), error],
                "execution_history": [*state.get("execution_history", []), error]}
    return {"signal_ready": True, "validated": False, "signal_name": info["name"], "signal_code": code,
            "error_messages": [],
            "execution_history": [*state.get("execution_history", []), f"signal generation: {message}"]}


def _generate_llm(state: SignalState, ctx: SignalDeps, ws: Workspace, params: dict) -> dict[str, Any]:
    attempts: list[tuple[str, dict[str, Any] | None, str]] = []

    @tool
    def run_signal_code(code: str) -> str:
        """Run pandas code in the sandbox; it must assign the DataFrame `signal`. Returns the result or the error."""
        info, message = run_signal(ctx.sandbox, ws, code, CUSTOM_SIGNAL)
        attempts.append((code, info, message))
        return message if info else f"error: {message}"

    available = ", ".join(n.split("/", 1)[1] for n in ws.names() if n.startswith(("ohlcv/", "indicators/")))
    feedback = "\n".join(state.get("error_messages", []))
    strategy = params.get("strategy_desc") or "(none given)"
    if feedback:
        strategy += f"\n\nThe previous attempt failed; avoid this problem:\n{feedback}"
    agent = create_agent(model_required(ctx, MODELS["signal coder"]), tools=[run_signal_code],
                         system_prompt=SIGNAL_PROMPT.format(available=available or "none", strategy=strategy))
    try:
        agent.invoke({"messages": [HumanMessage("Generate the signal.")]}, {"recursion_limit": AGENT_STEP_LIMIT})
    except AGENT_FAILURES as exc:  # the agent's failure becomes an error for reflection
        attempts.append(("", None, _("the signal agent stopped: {failure}").format(
            failure=describe_model_failure(exc))))
    good = [a for a in attempts if a[1] is not None]
    if good:
        code, info, message = good[-1]
        return _outcome(state, info, message, code)
    return _outcome(state, None, attempts[-1][2] if attempts else _("the model ran no code"), None)
