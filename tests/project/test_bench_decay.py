"""The decay monitor bench's quick mode runs end to end: every factor updated to the panel's last session."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_decay_monitor_quick(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import decay_monitor

    row = decay_monitor.run(quick=True)
    assert row.factors == decay_monitor.QUICK_FACTORS and row.codes == 260 and row.session == "20200824"
    assert row.seconds > 0
    assert "goal 30 s: not judged (quick)" in capsys.readouterr().out
