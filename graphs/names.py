"""Stock names as people type them (贵州茅台, or a part such as 茅台) read as ts_codes, from the data provider's
reference data. One table per process, loaded on first use from the provider `use` names (the workflow context
does, graphs/dependencies.py): the local files' stock_basic, or tushare's (three calls, whatever the number of
stocks)."""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from collections.abc import Callable

from tools.data.provider import MarketDataProvider

log = logging.getLogger(__name__)

MIN_PART = 2  # the fewest characters a part of a name must have to stand for it


def canonical(name: str) -> str:
    """A name as compared: NFKC, without spaces (the exchanges pad short names: 五 粮 液, 万  科Ａ)."""
    return "".join(unicodedata.normalize("NFKC", name).split())


class StockNames:
    def __init__(self, names: dict[str, str]) -> None:
        """`names`: ts_code -> name."""
        self.names = {code: canonical(name) for code, name in names.items() if name}
        self._codes: dict[str, list[str]] = {}
        for code, name in sorted(self.names.items()):
            self._codes.setdefault(name, []).append(code)

    def codes_for(self, word: str) -> tuple[str, ...]:
        """The codes `word` names: its whole name, else every name it is a part of (two or more: ambiguous)."""
        word = canonical(word)
        if word in self._codes:
            return tuple(self._codes[word])
        if len(word) < MIN_PART or not any(ord(c) > 0x2E7F for c in word):
            return ()
        return tuple(code for code, name in sorted(self.names.items()) if word in name)

    def full_names(self) -> frozenset[str]:
        return frozenset(self._codes)


RETRY_SECONDS = 300.0  # after a failed load, names stay unresolved this long before the source is asked again

_lock = threading.Lock()
_loader: Callable[[], dict[str, str]] | None = None
_table: StockNames | None = None
_failed_at: float | None = None


def use(provider: MarketDataProvider) -> None:
    """Resolve names with `provider`'s reference data (read when first needed)."""
    global _loader, _table, _failed_at
    with _lock:
        _loader, _table, _failed_at = provider.stock_names, None, None


def table(clock: Callable[[], float] = time.monotonic) -> StockNames:
    """The process's name table (empty until `use` named a provider). A source that fails (tushare unreachable,
    rate-limited) leaves it empty for RETRY_SECONDS, then is asked again: one outage is not a process's loss."""
    global _table, _failed_at
    with _lock:
        if _table is not None:
            return _table
        if _loader is None or (_failed_at is not None and clock() - _failed_at < RETRY_SECONDS):
            return StockNames({})
        try:
            _table, _failed_at = StockNames(_loader()), None
        except Exception as exc:  # noqa: BLE001 (any provider failure: names stay unresolved for a while)
            log.warning("stock names are not available: %s", exc)
            _failed_at = clock()
            return StockNames({})
        return _table
