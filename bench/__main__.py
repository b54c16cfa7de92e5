"""Run the named benchmarks (default: all); `--quick`: each in its quick mode (a small input, one round)."""

from __future__ import annotations

import importlib
import sys

BENCHES = ("data_workspace", "sandbox", "signal_workflow", "slack_ack", "slack_scale", "factor_eval", "queue",
           "broker", "indicators", "decision", "console_start", "home")


def main(args: list[str]) -> int:
    quick = "--quick" in args
    names = [arg for arg in args if arg != "--quick"]
    for name in names or BENCHES:
        if name not in BENCHES:
            print(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}", file=sys.stderr)
            return 2
        print(f"== {name}", flush=True)
        importlib.import_module(f"bench.{name}").main(quick=quick)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
