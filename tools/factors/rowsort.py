"""Each row of a block of values in ascending order, sorted on 32-bit keys in buffers reused block after block.

A key is the value mapped linearly from its row's range onto the bits above a tag (`tag_bits` wide): the cell's
column, or any per-cell number below 2**tag_bits that the caller wants read back in sorted order (the factor's place
in its own sorted row, so that sorting the returns yields the factor's ranks in the returns' order). The map is
monotone, so only cells whose keys share the bits above the tag can be out of order: each run of sorted positions
sharing them is put in order by the values (a row whose range is not finite is one such run). Missing cells
(`invalid`) sort last, in the order of their tags.
"""

from __future__ import annotations

import numpy as np


class RowSorter:
    """Sort buffers for blocks of at most `rows` x `width` values; not thread-safe (one per thread)."""

    def __init__(self, rows: int, width: int) -> None:
        self.width = width
        self.tag_bits = max(1, (width - 1).bit_length())
        self.nan_key = (1 << (32 - self.tag_bits)) - 1  # above every value's key: missing cells sort last
        self.keys = np.empty((rows, width), dtype=np.uint32)
        self.scaled = np.empty((rows, width))  # the keys as floats; free for the caller between sorts
        self.xor = np.empty((rows, max(width - 1, 0)), dtype=np.uint32)
        self.shared = np.empty((rows, max(width - 1, 0)), dtype=bool)

    def sort(self, values: np.ndarray, invalid: np.ndarray, n: np.ndarray, tags: np.ndarray,
             cells: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The tags of each row's cells in ascending order of value, missing cells last (a view of a buffer the next
        call overwrites), and the rows holding equal values (their ranks need averaging over ties).

        `invalid` marks the missing cells, `n` counts the others per row; `tags` (broadcast to the block, uint32 below
        2**tag_bits, distinct within a row) are what the sort returns; `cells[r, t]` is the flat position in the block
        of row r's cell tagged t (None: the tag is the column).
        """
        rows, width = values.shape
        keys, scaled = self.keys[:rows], self.scaled[:rows]
        with np.errstate(invalid="ignore"):
            low = np.fmin.reduce(values, axis=1)
            span = np.fmax.reduce(values, axis=1) - low
        ranged = np.isfinite(span)
        spread = ranged & (span > 0)
        np.subtract(values, np.where(ranged, low, 0.0)[:, None], out=scaled)
        scaled *= np.where(spread, (self.nan_key - 1) / np.where(spread, span, 1.0), 0.0)[:, None]
        if not ranged.all():
            scaled[~ranged] = 0.0
        if n.min(initial=width) < width:
            np.copyto(scaled, self.nan_key, where=invalid)
        np.copyto(keys.view(np.int32), scaled, casting="unsafe")  # below 2**31: a signed conversion, which is faster
        keys <<= np.uint32(self.tag_bits)
        keys |= tags
        keys.sort(axis=1)
        shared = self.shared[:rows]  # positions k and k + 1 share the bits above the tag
        np.less(np.bitwise_xor(keys[:, 1:], keys[:, :-1], out=self.xor[:rows]), np.uint32(1 << self.tag_bits),
                out=shared)
        keys &= np.uint32((1 << self.tag_bits) - 1)
        r, k = np.divmod(np.flatnonzero(shared), max(width - 1, 1))
        inside = k + 1 < n[r]
        return keys, _order_runs(values, keys, r[inside], k[inside], cells)


def _order_runs(values: np.ndarray, tags: np.ndarray, r: np.ndarray, k: np.ndarray,
                cells: np.ndarray | None) -> np.ndarray:
    """Put in order of value the runs of sorted positions whose keys share the bits above the tag (the pairs (r, k),
    (r, k + 1), in row-major order), in place in `tags`; return the rows where two values of a run are equal."""
    if not len(r):
        return np.zeros(0, dtype=np.intp)
    starts = np.ones(len(r), dtype=bool)
    starts[1:] = (r[1:] != r[:-1]) | (k[1:] != k[:-1] + 1)
    ends = np.append(starts[1:], True)
    run = np.cumsum(starts) - 1
    # a run's positions: the first of each of its pairs, and the second of its last pair
    rows, places, runs = (np.concatenate([x, x[ends] + shift]) for x, shift in ((r, 0), (k, 1), (run, 0)))
    by_place = np.lexsort((places, runs))
    rows, places, runs = rows[by_place], places[by_place], runs[by_place]
    found = tags[rows, places]
    flat = rows * values.shape[1] + found if cells is None else cells[rows, found]
    by_value = np.lexsort((values.reshape(-1)[flat], runs))
    tags[rows, places] = found[by_value]
    ordered = values.reshape(-1)[flat[by_value]]
    equal = (ordered[1:] == ordered[:-1]) & (runs[1:] == runs[:-1])
    return np.unique(rows[1:][equal])
