"""Tokens a decision has used so far: the request reader's, the analysts', their memory summaries' and the
finished debates' own counts."""

from __future__ import annotations

from graphs.analyze.state import AnalyzeState


def tokens_used(state: AnalyzeState) -> int:
    runs = [*(state.get("analyst_runs") or {}).values(), *(state.get("memory_runs") or {}).values(),
            *(state.get("stage_runs") or {}).values()]
    reader = int((state.get("request") or {}).get("reader_tokens") or 0)  # free text read by the light model
    return reader + sum(int(run.get("tokens") or 0) for run in runs)
