"""A retried job whose run lost its last checkpoints (issue 39, item 3): runs checkpoint asynchronously, so a database
restart can keep the main graph's first checkpoints and lose the rest, while the workflow's own subgraph history
(`checkpointer=True`) was written to its end. The retry of the same message must give the run's answer, not the
empty "Done." of a run that looked finished at its input checkpoint."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bot.cards import ApprovalCard
from bot.runner import Outcome, Runner
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from tools.settings import Settings

THREAD = "lost-checkpoints"
SIGNAL = "signal ma_cross 600519.SH 20190101 20200601"
ORDER = "order 600519.SH buy 100"


def _run(tmp_path: Path, text: str) -> Outcome:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    app = build_context(Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data")))
    with open_checkpointer(url) as saver:
        return Runner(app, saver).start(THREAD, text, message_id="m1")


def _keep_main_checkpoints(tmp_path: Path, kept: int) -> int:
    """Lose the main graph's checkpoints (and their writes) after its first `kept`, as a restart in the middle of
    asynchronous checkpointing does; the subgraphs' checkpoints stay. Returns how many were lost."""
    with sqlite3.connect(tmp_path / "q.db") as db:
        ids = [row[0] for row in db.execute("SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND "
                                            "checkpoint_ns = '' ORDER BY checkpoint_id", (THREAD,))]
        for table in ("checkpoints", "writes"):
            db.executemany(f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
                           [(THREAD, lost) for lost in ids[kept:]])
    return len(ids) - kept


@pytest.mark.parametrize("kept", [1, 2, 3], ids=["input-only", "after-start", "after-route"])
def test_a_retried_signal_gives_its_result_after_the_main_graph_lost_its_last_checkpoints(
        tmp_path: Path, kept: int) -> None:
    first = _run(tmp_path, SIGNAL)
    assert first.status == "done" and first.result is not None and first.result["workflow"] == "signal"
    assert _keep_main_checkpoints(tmp_path, kept) > 0

    again = _run(tmp_path, SIGNAL)

    assert again.status == "done" and again.text != "Done."
    assert again.result == first.result


def test_a_retried_order_asks_for_its_approval_again_after_the_main_graph_kept_only_its_input(
        tmp_path: Path) -> None:
    first = _run(tmp_path, ORDER)
    assert first.status == "waiting" and [p.card.kind for p in first.interrupts] == ["approval"]
    proposed = first.interrupts[0].card
    assert _keep_main_checkpoints(tmp_path, 1) > 0

    again = _run(tmp_path, ORDER)

    assert again.status == "waiting" and len(again.interrupts) == 1
    card = again.interrupts[0].card
    assert isinstance(card, ApprovalCard) and isinstance(proposed, ApprovalCard)
    again_args, first_args = dict(card.args), dict(proposed.args)
    assert again_args.pop("expires") and first_args.pop("expires")  # proposed anew: its expiry runs from now
    assert (card.action, again_args) == (proposed.action, first_args)
    assert card.args["quantity"] == 100 and str(card.args["order"]).startswith("BUY 100 600519.SH")
