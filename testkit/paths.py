"""Where the repository and the shared data set lie, for tests and benches wherever their files sit."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
