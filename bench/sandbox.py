"""Sandbox overhead: median wall time of a trivial run and of a 300 x 1,250 rolling mean, beside in-process (the
reference, same run); goal: overhead < 100 ms.

`python -m bench sandbox`; `main(quick=True)`: 3 runs each, nothing judged (tests call it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench import goals
from bench.timing import median_ms, samples
from tools.sandbox import Sandbox

RUNS, QUICK_RUNS = 30, 3
GOAL_OVERHEAD_MS = 100.0
CASES = {
    "trivial": ("result = 1 + 1", {}),
    "rolling mean 300x1250": (
        "factor = close.rolling(20).mean()",
        {"close": pd.DataFrame(np.random.default_rng(0).lognormal(size=(1250, 300)),
                               index=pd.bdate_range("2018-01-01", periods=1250, name="trade_date"),
                               columns=[f"{600000 + i:06d}.SH" for i in range(300)])},
    ),
}


def main(quick: bool = False) -> None:
    runs = QUICK_RUNS if quick else RUNS
    box = Sandbox(workers=1)
    box.warm()
    print(f"isolation level: {box.level.value}; {runs} runs each, median; reference: in-process in this run; "
          f"goal: overhead < {GOAL_OVERHEAD_MS:.0f} ms")
    try:
        for label, (code, inputs) in CASES.items():
            box.run(code, inputs)  # first run in a fresh worker
            sandboxed = samples(lambda code=code, inputs=inputs: box.run(code, inputs), runs)

            def in_process(code: str = code, inputs: dict = inputs) -> None:
                exec(code, {"pd": pd, "np": np, **inputs})  # noqa: S102 - trusted benchmark code

            local = samples(in_process, runs)
            overhead = median_ms(sandboxed) - median_ms(local)
            ratio = median_ms(sandboxed) / median_ms(local)
            verdict = goals.judge(f"{label}: sandbox overhead < {GOAL_OVERHEAD_MS:.0f} ms", overhead < GOAL_OVERHEAD_MS,
                                  quick)
            print(f"  {label:24s} sandbox {median_ms(sandboxed):7.1f} ms  in-process {median_ms(local):7.1f} ms"
                  f"  ratio {ratio:6.1f}x  overhead {overhead:6.1f} ms  goal < {GOAL_OVERHEAD_MS:.0f} ms: {verdict}")
    finally:
        box.close()
