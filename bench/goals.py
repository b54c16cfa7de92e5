"""Each bench's goals, judged where its figures are printed: `judge` returns the word shown beside them and keeps
every miss, so `python -m bench --check` exits non-zero when a figure misses its goal. Quick runs are not judged."""

from __future__ import annotations

NOT_JUDGED = "not judged (quick)"

missed: list[str] = []  # the goals this process's benches missed, in the order judged


def judge(goal: str, ok: bool, quick: bool, met: str = "met", miss: str = "MISSED") -> str:
    """`met` or `miss` (then `goal` is kept as missed); NOT_JUDGED in quick mode, whatever the figures."""
    if quick:
        return NOT_JUDGED
    if not ok:
        missed.append(goal)
    return met if ok else miss
