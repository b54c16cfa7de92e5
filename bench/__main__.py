"""Run the named benchmarks (default: all); `--quick`: each in its quick mode (a small input, one round).

One benchmark runs in this process; several run one after another, each in a process of its own, so that none is
measured beside what an earlier one left behind (threads, pools, a grown heap). A benchmark that fails does not
stop the others; the exit status says whether any failed."""

from __future__ import annotations

import importlib
import subprocess
import sys

BENCHES = ("data_workspace", "sandbox", "signal_workflow", "slack_ack", "slack_scale", "factor_eval", "queue",
           "broker", "indicators", "decision", "console_start", "home", "conversation", "decision_record")


def main(args: list[str]) -> int:
    quick = "--quick" in args
    names = [arg for arg in args if arg != "--quick"] or list(BENCHES)
    unknown = [name for name in names if name not in BENCHES]
    if unknown:
        print(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    if len(names) == 1:
        print(f"== {names[0]}", flush=True)
        importlib.import_module(f"bench.{names[0]}").main(quick=quick)
        return 0
    failed = [name for name in names
              if subprocess.run([sys.executable, "-m", "bench", name, *(["--quick"] if quick else [])]).returncode]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
