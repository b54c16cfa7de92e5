"""Run the named benchmarks (default: all); `--quick`: each in its quick mode (a small input, one round, nothing
judged); `--check`: a figure that misses its goal fails its benchmark (bench/goals.py), as an error does.

One benchmark runs in this process; several run one after another, each in a process of its own, so that none is
measured beside what an earlier one left behind (threads, pools, a grown heap). A benchmark that fails does not
stop the others; the exit status says whether any failed."""

from __future__ import annotations

import importlib
import subprocess
import sys

from bench import goals

BENCHES = ("data_workspace", "sandbox", "signal_workflow", "slack_ack", "slack_scale", "slack_idle", "feishu_ack",
           "factor_eval", "queue", "broker", "indicators", "decision", "console_start", "home", "conversation",
           "decision_record", "audit_verify", "run_record", "decay_monitor", "vnpy_orders")
FLAGS = ("--quick", "--check")


def main(args: list[str]) -> int:
    quick, check = "--quick" in args, "--check" in args
    names = [arg for arg in args if arg not in FLAGS] or list(BENCHES)
    unknown = [name for name in names if name not in BENCHES]
    if unknown:
        print(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    if len(names) == 1:
        print(f"== {names[0]}", flush=True)
        importlib.import_module(f"bench.{names[0]}").main(quick=quick)
        return _judged(names[0], quick, check)
    flags = [flag for flag in FLAGS if flag in args]
    failed = [name for name in names if subprocess.run([sys.executable, "-m", "bench", name, *flags]).returncode]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _judged(name: str, quick: bool, check: bool) -> int:
    """Under --check: 1 when the bench missed a goal (each named), else 0; quick runs say they were not judged."""
    if not check:
        return 0
    if quick:
        print(f"--check: {name}'s goals {goals.NOT_JUDGED}")
        return 0
    for goal in goals.missed:
        print(f"--check: {name} missed its goal: {goal}", file=sys.stderr)
    return 1 if goals.missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
