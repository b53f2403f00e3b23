"""The vector arm's cosines over a scope: the exact float32 product, and the int8 first pass
over a big scope that chooses which rows it is needed for.

``LearningIndex`` keeps the matrices (one per vector width, and each one's int8 copy) and passes
them in; the arithmetic over them lives here so that it reads, and is tested, on its own.

Why the first pass: the exact arm reads a scope's float32 vectors once per search, and over
one scope of 100k rows that read is most of the search: memory bandwidth, not arithmetic, sets
its cost (``bench/results/search.md``). The same vectors as int8 codes with one scale per row
are a quarter of the bytes. numpy has no fast int8 product (it is slower than its float32 BLAS
call), so the product is NumKong's SIMD kernel.

The int8 scores only choose candidates, several times more than a search keeps; those are then
scored exactly in float32, and so is every other row the search returns (``Cosines.refine``),
so ranking and reported scores are the exact cosines. A row the first pass leaves out would
have to beat the candidates by more than the rounding error of two int8 vectors, which is
orders of magnitude below the score gaps between a search's top rows and its hundredth.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import numkong
import numpy as np
import numpy.typing as npt

from reflexio.records import Vector
from reflexio.storage.postings import Selection, top

__all__ = [
    "Cosines",
    "Quantized",
    "candidates_for",
    "first_pass_cosines",
    "quantize",
    "scope_dot",
    "with_rows",
    "worth_it",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.floating[Any]]
Codes8 = npt.NDArray[np.int8]
Scales = npt.NDArray[np.float32]
_Rows = TypeVar("_Rows", bound=np.generic)

#: A contiguous block of fewer rows is scored exactly: there the float32 product is already
#: cheap and the first pass would save less than its own overhead.
MIN_ROWS = 8192
#: Quantization is done in chunks of this many rows so its float temporaries stay small.
_CHUNK = 8192


def quantize(rows: npt.NDArray[np.float32]) -> tuple[Codes8, Scales]:
    """int8 codes and per-row scales with ``rows ~= codes * scales[:, None]``."""
    codes = np.empty(rows.shape, dtype=np.int8)
    scales = np.empty(len(rows), dtype=np.float32)
    for lo in range(0, len(rows), _CHUNK):
        part = rows[lo : lo + _CHUNK]
        peak = np.abs(part).max(axis=1) if part.shape[1] else np.zeros(len(part), np.float32)
        scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
        scaled = part * (1.0 / scale)[:, None]
        np.rint(scaled, out=scaled)
        codes[lo : lo + len(part)] = scaled
        scales[lo : lo + len(part)] = scale
    return codes, scales


def candidates_for(limit: int) -> int:
    """How many first-pass candidates are scored exactly for a search that keeps ``limit``."""
    return 4 * max(limit, 1) + 64


def worth_it(rows: int, limit: int) -> bool:
    """Whether a contiguous block of ``rows`` is better served by the first pass."""
    return rows >= max(MIN_ROWS, 16 * candidates_for(limit))


class Quantized:
    """The int8 copy of one vector width's matrix, kept position for position beside it."""

    __slots__ = ("codes", "scales")

    def __init__(self, codes: Codes8, scales: Scales) -> None:
        self.codes = codes
        self.scales = scales

    @classmethod
    def empty(cls, capacity: int, dim: int) -> Quantized:
        return cls(np.zeros((capacity, dim), dtype=np.int8), np.ones(capacity, dtype=np.float32))

    @classmethod
    def of(cls, matrix: npt.NDArray[np.float32], capacity: int | None = None) -> Quantized:
        """The copy of ``matrix`` (with room for ``capacity`` rows)."""
        codes, scales = quantize(matrix)
        out = cls.empty(max(capacity or 0, len(matrix)), matrix.shape[1])
        out.codes[: len(matrix)], out.scales[: len(matrix)] = codes, scales
        return out

    def grown(self, capacity: int, n: int) -> Quantized:
        out = Quantized.empty(capacity, self.codes.shape[1])
        out.codes[:n], out.scales[:n] = self.codes[:n], self.scales[:n]
        return out

    def set(self, at: int | IntArray, rows: npt.NDArray[np.float32]) -> None:
        codes, scales = quantize(np.atleast_2d(rows))
        if isinstance(at, int):
            self.codes[at], self.scales[at] = codes[0], scales[0]
        else:
            self.codes[at], self.scales[at] = codes, scales

    def scores(self, lo: int, hi: int, vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
        """Approximate ``matrix[lo:hi] @ vector``."""
        q_codes, q_scale = quantize(vector.reshape(1, -1).astype(np.float32, copy=False))
        dots = np.asarray(numkong.cdist(q_codes, self.codes[lo:hi], metric="dot"))[0]
        approx: npt.NDArray[np.float64] = dots * (self.scales[lo:hi] * float(q_scale[0]))
        return approx


@dataclass(slots=True)
class Cosines:
    """A scope's cosines with the query, exact where it matters (see the module docstring).

    Without a first pass only ``values`` is set, all exact. After one, ``values`` holds the
    exact cosine of every row whose ``exact`` flag is set and the first pass's estimate
    elsewhere, and ``candidates`` the rows the vector arm ranks; ``refine`` makes the rows a
    search is about to return exact.
    """

    values: FloatArray
    matrix: npt.NDArray[np.float32] | None = None
    positions: IntArray | None = None
    vector: npt.NDArray[np.float32] | None = None
    exact: BoolArray | None = None
    candidates: IntArray | None = field(default=None)

    def nearest(self, valid: BoolArray | None, limit: int) -> IntArray:
        """The ``limit`` rows of highest cosine among the ``valid`` ones (None: all), best first."""
        rows = self.candidates
        values = self.values if rows is None else self.values[rows]
        if valid is None:
            best = top(values, limit)
        else:
            ok = valid if rows is None else valid[rows]
            best = top(np.where(ok, values, -np.inf), limit)
            best = best[ok[best]]  # fewer valid rows than the limit
        return best if rows is None else rows[best]

    def refine(self, rows: IntArray) -> None:
        if self.exact is None or self.matrix is None or self.positions is None or self.vector is None:
            return
        need = rows[~self.exact[rows]]
        if len(need):
            self.values[need] = self.matrix[self.positions[need]] @ self.vector
            self.exact[need] = True


def scope_dot(matrix: npt.NDArray[np.float32], scope: Selection, vector: Vector) -> FloatArray:
    """``matrix[scope] @ vector``, reading a clustered scope in place rather than gathering it.

    The product is BLAS's (0.23 ms for 10k x 256 on one thread here, ``einsum`` 0.55).
    OpenBLAS may spread a big one over all cores; ``OPENBLAS_NUM_THREADS=1`` pins it to
    the calling thread for servers that prefer parallel requests (bench/search has both).
    """
    lo, run, positions = scope.lo, scope.run, scope.positions
    if run == len(positions):
        return _matvec(matrix[lo : lo + run], vector)
    if run:
        rest = _dot_rows(matrix, positions[run:], vector)
        return np.concatenate((_matvec(matrix[lo : lo + run], vector), rest))
    return _dot_rows(matrix, positions, vector)


def first_pass_cosines(
    matrix: npt.NDArray[np.float32],
    quantized: Quantized,
    scope: Selection,
    vector: Vector,
    valid: BoolArray | None,
    limit: int,
) -> Cosines:
    """The scope's cosines from the int8 first pass over its contiguous block, then exact
    float32 cosines for the pass's best candidates and for every row outside the block.

    Args:
        matrix: the float32 vectors of the query's width, by index position.
        quantized: ``matrix``'s int8 copy, position for position.
        scope: the rows searched; its contiguous run is what the first pass reads.
        vector: the query vector.
        valid: which of ``scope`` may be returned (None: all).
        limit: how many rows the search keeps (sets how many candidates are scored exactly).
    """
    lo, run, positions = scope.lo, scope.run, scope.positions
    values = np.empty(len(positions), dtype=np.float64)
    values[:run] = quantized.scores(lo, lo + run, vector)
    exact = np.zeros(len(positions), dtype=np.bool_)
    if run < len(positions):
        values[run:] = _dot_rows(matrix, positions[run:], vector)
        exact[run:] = True
    first = values[:run] if valid is None else np.where(valid[:run], values[:run], -np.inf)
    chosen = top(first, candidates_for(limit))
    candidates = np.concatenate((chosen, np.arange(run, len(positions), dtype=np.int64)))
    cosines = Cosines(values, matrix, positions, vector, exact, candidates)
    cosines.refine(candidates)
    return cosines


def with_rows(matrix: npt.NDArray[_Rows], order: IntArray, capacity: int) -> npt.NDArray[_Rows]:
    """A new array of ``capacity`` rows starting with ``matrix[order]``.

    Compaction re-clusters the float32 matrices and their int8 copies (codes and scales) alike
    with it, into new arrays rather than in place, since a frozen index state may refer to the old.
    """
    out: npt.NDArray[_Rows] = np.zeros((capacity, *matrix.shape[1:]), dtype=matrix.dtype)
    out[: len(order)] = matrix[order]
    return out


def _dot_rows(matrix: npt.NDArray[np.float32], positions: IntArray, vector: Vector) -> FloatArray:
    """``matrix[positions] @ vector``; a dense enough spread of positions is read as one block."""
    if len(positions) == 0:
        return np.empty(0, dtype=np.result_type(matrix, vector))
    lo, hi = int(positions[0]), int(positions[-1]) + 1
    if hi - lo <= 2 * len(positions) + 64:
        return _matvec(matrix[lo:hi], vector)[positions - lo]
    return _matvec(matrix[positions], vector)


def _matvec(matrix: npt.NDArray[np.float32], vector: Vector) -> FloatArray:
    product: FloatArray = matrix @ vector
    return product
