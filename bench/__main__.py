"""Run the named benchmarks (default: all)."""

from __future__ import annotations

import importlib
import sys

BENCHES = ("data_workspace", "sandbox", "signal_workflow", "slack_ack", "slack_scale", "factor_eval", "queue",
           "broker", "indicators", "decision")


def main(names: list[str]) -> int:
    for name in names or BENCHES:
        if name not in BENCHES:
            print(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}", file=sys.stderr)
            return 2
        print(f"== {name}")
        importlib.import_module(f"bench.{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
