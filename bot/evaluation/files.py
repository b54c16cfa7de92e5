"""Reading the evaluation's JSON files (datasets, reports) with one clear error per way they can be unusable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_json(path: Path, error: type[ValueError]) -> Any:
    """The JSON value in `path`; `error` (naming the file) when it is missing or not readable JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise error(f"{path}: not a readable JSON file ({exc})") from None
