#!/usr/bin/env bash
# Create .venv and install QuantDesk into it (editable, with test extras). Re-runs are cheap:
# pip runs again only when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
stamp=.venv/.quantdesk-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[test]"
    # VeighNa's RPC path without its GUI (README "Live orders through VeighNa"): its metadata pins PySide6 and other
    # GUI packages, which no extra can drop, so the two packages come without theirs; the `vnpy-rpc` extra above
    # (part of `test`) holds what the RPC path imports
    .venv/bin/python -m pip install --quiet --no-deps "vnpy==4.5.0" "vnpy_rpcservice==1.1.0"
    echo "$want" > "$stamp"
fi
