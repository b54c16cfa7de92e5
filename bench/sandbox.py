"""Sandbox overhead: median wall time of a trivial run and of a 300 x 1,250 rolling mean, beside in-process."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bench.timing import median_ms, samples
from tools.sandbox import Sandbox

RUNS = 30
CASES = {
    "trivial": ("result = 1 + 1", {}),
    "rolling mean 300x1250": (
        "factor = close.rolling(20).mean()",
        {"close": pd.DataFrame(np.random.default_rng(0).lognormal(size=(1250, 300)),
                               index=pd.bdate_range("2018-01-01", periods=1250, name="trade_date"),
                               columns=[f"{600000 + i:06d}.SH" for i in range(300)])},
    ),
}


def main() -> None:
    box = Sandbox(workers=1)
    box.warm()
    print(f"isolation level: {box.level.value}; {RUNS} runs each, median")
    try:
        for label, (code, inputs) in CASES.items():
            box.run(code, inputs)  # first run in a fresh worker
            sandboxed = samples(lambda code=code, inputs=inputs: box.run(code, inputs), RUNS)

            def in_process(code: str = code, inputs: dict = inputs) -> None:
                exec(code, {"pd": pd, "np": np, **inputs})  # noqa: S102 - trusted benchmark code

            local = samples(in_process, RUNS)
            overhead = median_ms(sandboxed) - median_ms(local)
            ratio = median_ms(sandboxed) / median_ms(local)
            print(f"  {label:24s} sandbox {median_ms(sandboxed):7.1f} ms  in-process {median_ms(local):7.1f} ms"
                  f"  overhead {overhead:6.1f} ms (target < 100 ms)  ratio {ratio:6.1f}x")
    finally:
        box.close()
