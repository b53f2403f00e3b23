"""The growable arrays under ``LearningIndex``: interned codes, position lists and postings.

Each keeps a numpy base plus a small Python append buffer, so single-row upserts stay cheap
and a search reads one contiguous array (the buffer is folded in on first read). The helpers
below do the index's set work on sorted position arrays without numpy's per-call overhead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Codes", "Forward", "Positions", "Postings", "Selection", "intersect", "isin", "top"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray32 = npt.NDArray[np.float32]

_EMPTY: IntArray = np.empty(0, dtype=np.int64)


class Codes:
    """Interns strings of one column as small ints (-1 = NULL)."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, value: str | None) -> int:
        if value is None:
            return -1
        return self._codes.setdefault(value, len(self._codes))

    def lookup(self, value: str) -> int | None:
        return self._codes.get(value)

    def values(self) -> list[str]:
        """Every interned string, in code order."""
        return list(self._codes)

    def restore(self, values: Sequence[str]) -> None:
        """Intern ``values`` as codes 0, 1, ... (into an empty instance, from ``values()``)."""
        self._codes = {value: i for i, value in enumerate(values)}


class Positions:
    """Ascending positions: a numpy base plus a small append buffer."""

    __slots__ = ("_buf", "pos")

    def __init__(self, pos: IntArray | None = None) -> None:
        self.pos = pos if pos is not None else np.empty(0, dtype=np.int64)
        self._buf: list[int] = []

    def add(self, position: int) -> None:
        self._buf.append(position)

    def array(self) -> IntArray:
        if self._buf:
            self.pos = np.concatenate([self.pos, np.asarray(self._buf, dtype=np.int64)])
            self._buf.clear()
        return self.pos

    def __len__(self) -> int:
        return len(self.pos) + len(self._buf)


class Postings:
    """One term's positions (ascending) and term frequencies: a numpy base plus a small append buffer."""

    __slots__ = ("_buf_pos", "_buf_tf", "pos", "tf")

    def __init__(self, pos: IntArray | None = None, tf: FloatArray32 | None = None):
        self.pos = pos if pos is not None else np.empty(0, dtype=np.int64)
        self.tf = tf if tf is not None else np.empty(0, dtype=np.float32)
        self._buf_pos: list[int] = []
        self._buf_tf: list[float] = []

    def add(self, position: int, tf: float) -> None:
        self._buf_pos.append(position)
        self._buf_tf.append(tf)

    def arrays(self) -> tuple[IntArray, FloatArray32]:
        if self._buf_pos:
            self.pos = np.concatenate([self.pos, np.asarray(self._buf_pos, dtype=np.int64)])
            self.tf = np.concatenate([self.tf, np.asarray(self._buf_tf, dtype=np.float32)])
            self._buf_pos.clear()
            self._buf_tf.clear()
        return self.pos, self.tf

    def __len__(self) -> int:
        return len(self.pos) + len(self._buf_pos)


class Forward:
    """Each position's distinct terms, which removing a row takes back from the term counts.

    A packed base (term numbers per position, as a snapshot stores them) plus tuples appended
    since, so that a snapshot loads without building one tuple per row.
    """

    __slots__ = ("_ends", "_flat", "_names", "_rows")

    def __init__(
        self, flat: IntArray | None = None, ends: IntArray | None = None, names: Sequence[str] = ()
    ) -> None:
        self._flat = _EMPTY if flat is None else flat
        self._ends = _EMPTY if ends is None else ends
        self._names = list(names)
        self._rows: list[tuple[str, ...]] = []

    def __len__(self) -> int:
        return len(self._ends) + len(self._rows)

    def __getitem__(self, p: int) -> tuple[str, ...]:
        base = len(self._ends)
        if p >= base:
            return self._rows[p - base]
        start = int(self._ends[p - 1]) if p else 0
        return tuple(self._names[i] for i in self._flat[start : int(self._ends[p])].tolist())

    def append(self, terms: tuple[str, ...]) -> None:
        self._rows.append(terms)

    def reordered(self, order: Sequence[int]) -> Forward:
        """The positions ``order`` lists, in that order (for compaction)."""
        out = Forward()
        out._rows = [self[i] for i in order]
        return out

    def packed(self, number: dict[str, int], count: int) -> tuple[IntArray, IntArray]:
        """(term numbers, end offsets) of the first ``count`` positions, terms numbered by ``number``."""
        rows = [self[p] for p in range(count)]
        ends = np.cumsum([len(terms) for terms in rows], dtype=np.int64)
        return np.asarray([number[t] for terms in rows for t in terms], dtype=np.int64), ends


class Selection:
    """Ascending positions a search reads, whose leading run of consecutive positions is known.

    A scope of a clustered index is one block of consecutive positions (plus, until the next
    compaction, a few appended ones): its columns are read as slices of that block, which
    costs nothing, instead of being gathered position by position, which at 100k rows costs
    about as much as the rest of the search's bookkeeping together.
    """

    __slots__ = ("lo", "positions", "run")

    def __init__(self, positions: IntArray, clustered: int) -> None:
        """``positions`` ascending and unique; those below ``clustered`` may form one run."""
        self.positions = positions
        self.lo = int(positions[0]) if len(positions) else 0
        n = len(positions)
        if n and int(positions[-1]) - self.lo + 1 == n:
            self.run = n
        else:
            split = int(np.searchsorted(positions, clustered))
            contiguous = split > 0 and int(positions[split - 1]) - self.lo + 1 == split
            self.run = split if contiguous else 0

    def __len__(self) -> int:
        return len(self.positions)

    def take(self, column: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """``column[positions]``: a view of the run, the rest gathered."""
        lo, run = self.lo, self.run
        if run == len(self.positions):
            return column[lo : lo + run]
        if run == 0:
            return column[self.positions]
        return np.concatenate((column[lo : lo + run], column[self.positions[run:]]))

    def subset(self, keep: BoolArray, clustered: int) -> Selection:
        """The positions where ``keep`` is set."""
        return Selection(self.positions[keep], clustered)

    def meet(self, pos: IntArray, tf: FloatArray32) -> tuple[IntArray, FloatArray32]:
        """Where a term's postings (ascending) meet the selection: indices into it, and tf there."""
        lo, run = self.lo, self.run
        if run == 0:
            return intersect(self.positions, pos, tf)
        a, b = int(pos.searchsorted(lo)), int(pos.searchsorted(lo + run))
        head, head_tf = pos[a:b] - lo, tf[a:b]
        if run == len(self.positions):
            return head, head_tf
        at, t = intersect(self.positions[run:], pos[b:], tf[b:])
        return np.concatenate((head, at + run)), np.concatenate((head_tf, t))


def isin(values: npt.NDArray[Any], codes: Sequence[int]) -> BoolArray:
    """``np.isin`` for a handful of small codes, without its per-call overhead."""
    out = np.zeros(len(values), dtype=np.bool_)
    for code in codes:
        out |= values == code
    return out


def intersect(rows: IntArray, pos: IntArray, tf: FloatArray32) -> tuple[IntArray, FloatArray32]:
    """Where a term's postings meet ``rows`` (both ascending): indices into rows, and tf there.

    Binary-searches the shorter array in the longer one, so a rare term in a big scope and a
    common term in a small scope are both cheap.
    """
    if len(pos) == 0 or len(rows) == 0:
        return _EMPTY, np.empty(0, dtype=np.float32)
    if len(pos) > 64:  # a clustered scope is a narrow range of positions: cut the postings to it
        a, b = int(pos.searchsorted(rows[0])), int(pos.searchsorted(rows[-1], side="right"))
        pos, tf = pos[a:b], tf[a:b]
        if len(pos) == 0:
            return _EMPTY, np.empty(0, dtype=np.float32)
    if len(rows) <= len(pos):
        at = np.minimum(np.searchsorted(pos, rows), len(pos) - 1)
        local = np.flatnonzero(pos[at] == rows)
        return local, tf[at[local]]
    at = np.minimum(np.searchsorted(rows, pos), len(rows) - 1)
    hit = rows[at] == pos
    return at[hit], tf[hit]


#: Above this many scores, ``top`` first cuts them at a threshold taken from a sample.
_SAMPLED_MIN = 32_768
_SAMPLE = 4096


def top(scores: npt.NDArray[np.floating], limit: int) -> IntArray:
    """Indices of the ``limit`` highest scores, best first."""
    n = len(scores)
    if n == 0 or limit <= 0:
        return np.empty(0, dtype=np.int64)
    if n <= limit:
        idx: IntArray = np.arange(n)
    else:
        idx = _above_sampled_cut(scores, limit) if n >= _SAMPLED_MIN and 64 * limit <= n else np.arange(n)
        if len(idx) > limit:
            idx = idx[np.argpartition(scores[idx], len(idx) - limit)[len(idx) - limit :]]
    idx = idx[np.argsort(-scores[idx], kind="stable")]
    return idx.astype(np.int64)


def _above_sampled_cut(scores: npt.NDArray[np.floating], limit: int) -> IntArray:
    """The indices of the scores at or above a cut that about ``2 * limit`` of them pass.

    A selection over a long array costs several times one comparison pass over it, so the cut
    is taken from an evenly spaced sample (the quantile that should let twice the limit
    through) and the selection runs on what passes. When fewer than ``limit`` pass (an
    unlucky sample), every index is returned and the caller selects over all of them.
    """
    n = len(scores)
    sample = scores[:: max(n // _SAMPLE, 1)]
    keep = min(len(sample), max(2, -(-2 * limit * len(sample) // n)))
    cut = np.partition(sample, len(sample) - keep)[len(sample) - keep]
    passed = np.flatnonzero(scores >= cut)
    return passed if len(passed) >= limit else np.arange(n)
