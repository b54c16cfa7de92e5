"""The core's one reader of what people type (graphs/conversation.py `read`, what `Intake` calls before it answers or
queues a line): its time per message over the phrasings of testkit/phrasings.py (Chinese and English, many
without spaces, with the bundled sample's stock names), median and p99 of ROUNDS rounds, beside `shlex.split` of
the same texts in the same run (the reference: what each surface did before it read a word); goal: p99 <= GOAL_MS,
so reading text never shows in the ack path. Also the first read of a process, which builds the vocabulary.

`python -m bench conversation`; `run(quick=True)`: one round, nothing judged (tests call it)."""

from __future__ import annotations

import shlex
import statistics
import time
from dataclasses import dataclass

from bench import goals
from graphs import conversation, names
from graphs.grammar import forget, unquote_marks
from testkit.phrasings import PHRASINGS
from tools.data.factory import provider_from_settings
from tools.settings import Settings

ROUNDS = 200
GOAL_MS = 5.0


@dataclass(frozen=True)
class Result:
    first_ms: float
    median_ms: float
    p99_ms: float
    reference_median_ms: float
    reference_p99_ms: float
    messages: int


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _shlex(text: str) -> list[str]:
    try:
        return shlex.split(unquote_marks(text))
    except ValueError:
        return text.split()


def run(quick: bool = False) -> Result:
    """Measure and print."""
    names.use(provider_from_settings(Settings(_env_file=None, QUANTDESK_DATA_PROVIDER="sample")))
    started = time.perf_counter()
    conversation.read("帮助")  # the first read builds the vocabulary (the stock names, every workflow's words)
    first_ms = (time.perf_counter() - started) * 1000
    reads: list[float] = []
    references: list[float] = []
    for _round in range(1 if quick else ROUNDS):
        for text, waiting, _expected in PHRASINGS:
            forget()  # every message is new: none is read from the cache of an earlier round
            started = time.perf_counter()
            conversation.read(text, waiting)
            reads.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            _shlex(text)
            references.append((time.perf_counter() - started) * 1000)
    result = Result(first_ms, statistics.median(reads), _p99(reads), statistics.median(references),
                    _p99(references), len(PHRASINGS))
    verdict = goals.judge(f"conversation.read p99 <= {GOAL_MS:.0f} ms", result.p99_ms <= GOAL_MS, quick)
    print(f"reading a typed line, {result.messages} phrasings x {1 if quick else ROUNDS} round(s); reference: "
          f"shlex.split of the same line in this run; goal: p99 <= {GOAL_MS:.0f} ms")
    print(f"  {'':32} {'median ms':>10} {'p99 ms':>8}  goal")
    print(f"  {'conversation.read':32} {result.median_ms:10.3f} {result.p99_ms:8.3f}  <= {GOAL_MS:.0f} ms: {verdict}")
    print(f"  {'shlex.split (reference)':32} {result.reference_median_ms:10.3f} {result.reference_p99_ms:8.3f}  -")
    print(f"  {'first read (builds the words)':32} {result.first_ms:10.3f} {'':>8}  -")
    return result


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
