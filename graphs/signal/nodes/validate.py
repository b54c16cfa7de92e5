"""Validation of data and signal, with the seed's severities: errors send the run back, warnings pass on.

Errors: no price data, no signal, a signal that is not a dates x codes frame aligned with the data, values
outside {1, 0, -1, NaN}, no buy or sell at all, look-ahead (the signal changes when later data is removed).
Warnings: codes or signal mostly missing, extreme daily returns (> 50%), non-positive prices, a signal
covering fewer dates than the data. A requested range that runs past the end of the provider's data explains a
signal without trades; a run's report says which dates ran."""

from __future__ import annotations

from typing import Any

import pandas as pd
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.common import frame_inputs
from graphs.context import workspace
from graphs.progress import report_progress
from graphs.signal.deps import SignalDeps
from graphs.signal.nodes.data_fetch import data_end
from graphs.signal.state import SignalState
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError, codes_text, normalize_date
from tools.i18n import N_, _
from tools.research.lookahead import CutRunError, lookahead_problem
from tools.sandbox import Sandbox
from tools.storage.workspace import Workspace, WorkspaceError

MISSING_WARN = 0.5
EXTREME_RETURN = 0.5
NO_TRADES = N_("the signal has no buy or sell at all (all 0 or NaN)")


def check_data(close: pd.DataFrame) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    warnings: list[str] = []
    if close.empty or close.notna().sum().sum() == 0:
        return [_("no price data (ohlcv/close is empty)")], warnings
    missing = close.isna().mean()
    sparse = missing[missing > MISSING_WARN]
    if len(sparse):
        warnings.append(_("{n} code(s) miss more than {share:.0%} of dates: {codes}").format(
            n=len(sparse), share=MISSING_WARN, codes=codes_text(sparse.index)))
    extreme = int((close.pct_change(fill_method=None).abs() > EXTREME_RETURN).sum().sum())
    if extreme:
        warnings.append(_("{n} daily return(s) beyond ±{limit:.0%} (unadjusted prices or bad data?)").format(
            n=extreme, limit=EXTREME_RETURN))
    if (close <= 0).any().any():
        warnings.append(_("non-positive prices in the data"))
    return errors, warnings


def check_signal_frame(signal: pd.DataFrame, close: pd.DataFrame) -> tuple[list[str], list[str]]:
    errors: list[str] = []
    warnings: list[str] = []
    extra_codes = [c for c in signal.columns if c not in close.columns]
    if extra_codes:
        errors.append(_("signal has codes not in the data: {codes}").format(codes=codes_text(extra_codes)))
    if not isinstance(signal.index, pd.DatetimeIndex) or not signal.index.isin(close.index).all():
        errors.append(_("signal dates are not trade dates of the data (index must be the data's DatetimeIndex)"))
    elif len(signal.index) < len(close.index):
        warnings.append(_("signal covers {n} of {total} dates").format(n=len(signal.index), total=len(close.index)))
    values = pd.unique(signal.to_numpy().ravel())
    bad = sorted({float(v) for v in values if not (pd.isna(v) or v in (1, 0, -1))})
    if bad:
        errors.append(_("signal values must be 1, 0, -1 or NaN; found {values}").format(
            values=", ".join(f"{v:g}" for v in bad[:5])))
    if not ((signal == 1) | (signal == -1)).any().any():
        errors.append(_(NO_TRADES))
    nan_share = float(signal.isna().to_numpy().mean()) if signal.size else 1.0
    if nan_share > MISSING_WARN:
        warnings.append(_("{share:.0%} of the signal is NaN (warm-up windows or missing data)").format(share=nan_share))
    return errors, warnings


def lookahead_error(sandbox: Sandbox, code: str, inputs: dict[str, pd.DataFrame], signal: pd.DataFrame) -> str | None:
    """The truncation test: the signal recomputed on data cut at an earlier date must not change."""
    def run_cut(cut: pd.Timestamp) -> Any:
        rerun = sandbox.run(code, {name: frame.loc[:cut] for name, frame in inputs.items()}, outputs=["signal"])
        if not rerun.ok:
            raise CutRunError(str(rerun.error))
        return rerun.outputs["signal"]
    return lookahead_problem(run_cut, signal, N_("the signal"))


def short_range(provider: MarketDataProvider, params: dict[str, Any], bars: int) -> str | None:
    """When the requested range runs past the end of the provider's data: where the data ends and how many bars
    the range has; else None."""
    last = data_end(provider)
    try:
        start, end = normalize_date(params["start_date"]), normalize_date(params["end_date"])
    except (KeyError, DataError):
        return None
    if last is None or end <= last:
        return None
    return _("the data ends on {last}, so your range {start}–{end} has only {bars} bar(s)").format(
        last=last, start=start, end=end, bars=bars)


def validate_node(state: SignalState, config: RunnableConfig, runtime: Runtime[SignalDeps]) -> dict[str, Any]:
    report_progress(_("checks"))
    ws = workspace(runtime.context, config)
    errors, warnings = _validate(ws, runtime.context.sandbox, state.get("signal_name"), state.get("signal_code"))
    params = (state.get("user_intent") or {}).get("params") or {}
    short = short_range(runtime.context.provider, params, ws.info("ohlcv/close").rows) if "ohlcv/close" in ws \
        else None
    if short and _(NO_TRADES) in errors:  # the usual cause: too few bars for the strategy's windows (a run that
        errors[errors.index(_(NO_TRADES))] = f"{_(NO_TRADES)}: {short}"  # trades says which dates ran in its report)
    history = [*state.get("execution_history", []),
               f"validation: {len(errors)} error(s), {len(warnings)} warning(s)"]
    if errors:
        message = _("validation failed: {errors}").format(errors=_("; ").join(errors))
        return {"validated": False, "signal_ready": False, "error_messages": [message],
                "error_log": [*state.get("error_log", []), message], "warnings": warnings,
                "execution_history": history}
    return {"validated": True, "error_messages": [], "warnings": warnings, "execution_history": history}


def _validate(ws: Workspace, sandbox: Sandbox, signal_name: str | None,
              code: str | None) -> tuple[list[str], list[str]]:
    inputs = frame_inputs(ws)  # read once: checks and the look-ahead rerun use the same frames
    close = inputs.get("close")
    if close is None:
        return [_("no price data in the workspace (ohlcv/close)")], []
    errors, warnings = check_data(close)
    if errors:
        return errors, warnings
    if not signal_name:
        return [_("no signal was generated")], warnings
    try:
        signal = ws.get(signal_name)
    except WorkspaceError:
        return [_("signal {name} is missing from the workspace").format(name=signal_name)], warnings
    signal_errors, signal_warnings = check_signal_frame(signal, close)
    errors += signal_errors
    warnings += signal_warnings
    if not errors and code:
        problem = lookahead_error(sandbox, code, inputs, signal)
        if problem:
            errors.append(problem)
    return errors, warnings
