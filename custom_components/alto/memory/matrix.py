"""The resident code matrix: int8 codes in column blocks, one int64 id and one int32 tag per row.

Selection multiplies query codes ``[q, d]`` by the stored codes transposed, ``[d, n]``: that is
the right-hand operand onnxruntime's ``MatMulInteger`` reads, and numpy's matmul reads it
contiguously too. So the codes are kept transposed, in blocks of ``BLOCK_ROWS`` columns, each one
contiguous array a scorer hands to the library without a copy. This matrix is the only copy of
the codes in the process; nothing float is kept.

Appends write in place, past every row a snapshot shows, so a ``Snapshot`` is immutable without
copying anything: nothing it shows is ever written again. The last block grows geometrically (a
reallocation copies it; older snapshots keep the old array), so an append costs its own rows,
amortized, at any matrix size, and full blocks never move. A snapshot's last block may be wider
than the rows it holds: a scorer scores the whole block and the caller keeps the first ``width``
columns (rows appended meanwhile are not the snapshot's). ``origin`` names the matrix a snapshot
came from: two snapshots of one origin agree on every row the shorter one has, which lets a
device copy upload only the rows it lacks.

Tags are opaque integers the owner filters on (``records.MemoryState`` keeps scope and status in
them), so a scoped selection is a vectorized mask instead of a walk over row objects. Each block
also carries each row's code sum (int32), which a scorer that offsets the query needs:
``(q + 128) . c - 128 * sum(c) = q . c``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .selection import CODE_MAX, validate_rows

# 16,384 rows of 768 codes are 12 MiB: few library calls per query (one per block).
BLOCK_ROWS = 16_384
_MIN_CAPACITY = 64  # columns of a new last block

_origins = itertools.count(1)


def _frozen[A: np.ndarray](array: A) -> A:
    """A read-only view.

    The owner keeps writing (past what the view's holder uses) through its own reference.
    """
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, slots=True)
class Block:
    """Rows ``first .. first + width - 1`` as columns of an int8 ``[dim, capacity]`` array."""

    codes: np.ndarray
    sums: np.ndarray  # int32 [capacity]: each column's codes summed
    first: int
    width: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Rows ``0 .. n - 1`` of a matrix: codes by block, ids and tags, all read-only."""

    dim: int
    blocks: tuple[Block, ...]
    ids: np.ndarray
    tags: np.ndarray
    origin: int
    block_rows: int = BLOCK_ROWS

    def __len__(self) -> int:
        """The number of rows in the snapshot."""
        return len(self.ids)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """Row-major int8 ``[len(positions), dim]`` codes of the rows at ``positions``."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty((len(positions), self.dim), dtype=np.int8)
        which = positions // self.block_rows
        for index in np.unique(which).tolist():
            chosen = which == index
            columns = positions[chosen] % self.block_rows
            out[chosen] = self.blocks[index].codes[:, columns].T
        return out

    def exact_blocks(self) -> list[np.ndarray]:
        """Every block cut to its rows (only a wider last block is copied): for checkpoints."""
        return [
            block.codes
            if block.width == block.codes.shape[1]
            else np.ascontiguousarray(block.codes[:, : block.width])
            for block in self.blocks
        ]


class CodeMatrix:
    """A growable code matrix (see the module docstring); one writer, any number of snapshots."""

    def __init__(self, dim: int, block_rows: int = BLOCK_ROWS) -> None:
        """An empty matrix of ``dim``-long codes, grown ``block_rows`` rows at a time."""
        if dim <= 0 or block_rows <= 0:
            raise ValueError("dim and block_rows must be positive")
        self._dim = dim
        self._block_rows = block_rows
        self._codes: list[np.ndarray] = []  # [dim, capacity] per block, written in place
        self._sums: list[np.ndarray] = []
        # ids and tags grow by doubling; a snapshot holds a prefix, and appends write past it.
        self._ids = np.zeros(0, dtype=np.int64)
        self._tags = np.zeros(0, dtype=np.int32)
        self._n = 0
        self.origin = next(_origins)

    @property
    def dim(self) -> int:
        """The length of every code vector."""
        return self._dim

    def __len__(self) -> int:
        """The number of rows written."""
        return self._n

    def append(self, codes: np.ndarray, ids: np.ndarray, tags: np.ndarray) -> None:
        """Append rows checked by ``selection.validate_rows``; nothing changes when refused."""
        codes, ids = validate_rows(codes, ids)
        tags = np.asarray(tags, dtype=np.int32)
        if codes.shape[1] != self._dim:
            raise ValueError(f"code dimension {codes.shape[1]} != matrix dimension {self._dim}")
        if tags.shape != ids.shape:
            raise ValueError("tags must be one-dimensional with one tag per row")
        end = self._n + len(codes)
        if end > len(self._ids):
            self._ids = _grown(self._ids, self._n, end)
            self._tags = _grown(self._tags, self._n, end)
        self._ids[self._n : end] = ids
        self._tags[self._n : end] = tags
        done = 0
        while done < len(codes):
            done += self._fill(codes[done:], self._n + done)
        self._n = end

    def _fill(self, codes: np.ndarray, filled: int) -> int:
        """Write as many of ``codes`` as the block holding row ``filled`` takes; how many."""
        start = filled % self._block_rows
        count = min(len(codes), self._block_rows - start)
        if start == 0:
            self._codes.append(np.zeros((self._dim, 0), dtype=np.int8))
            self._sums.append(np.zeros(0, dtype=np.int32))
        if start + count > self._codes[-1].shape[1]:
            self._reallocate(start, start + count)
        part = codes[:count]
        self._codes[-1][:, start : start + count] = part.T
        self._sums[-1][start : start + count] = part.sum(axis=1, dtype=np.int32)
        return count

    def _reallocate(self, kept: int, needed: int) -> None:
        """A wider last block: a new array (snapshots keep the old one) with ``kept`` columns."""
        capacity = min(self._block_rows, max(needed, 2 * self._codes[-1].shape[1], _MIN_CAPACITY))
        codes = np.zeros((self._dim, capacity), dtype=np.int8)
        sums = np.zeros(capacity, dtype=np.int32)
        codes[:, :kept] = self._codes[-1][:, :kept]
        sums[:kept] = self._sums[-1][:kept]
        self._codes[-1], self._sums[-1] = codes, sums

    def retag(self, positions: np.ndarray, tags: np.ndarray) -> None:
        """Set the tags of rows at ``positions``, in a new array (snapshots keep the old tags)."""
        fresh = self._tags.copy()
        fresh[np.asarray(positions, dtype=np.int64)] = tags
        self._tags = fresh

    def snapshot(self) -> Snapshot:
        """The matrix as it is now; later appends and retags do not change it."""
        blocks = tuple(
            Block(
                codes=_frozen(codes),
                sums=_frozen(sums),
                first=index * self._block_rows,
                width=min(self._block_rows, self._n - index * self._block_rows),
            )
            for index, (codes, sums) in enumerate(zip(self._codes, self._sums, strict=True))
        )
        return Snapshot(
            dim=self._dim,
            blocks=blocks,
            ids=_frozen(self._ids[: self._n]),
            tags=_frozen(self._tags[: self._n]),
            origin=self.origin,
            block_rows=self._block_rows,
        )

    @classmethod
    def from_blocks(
        cls,
        blocks: Sequence[np.ndarray],
        ids: np.ndarray,
        tags: np.ndarray,
        block_rows: int = BLOCK_ROWS,
    ) -> CodeMatrix:
        """A matrix that adopts ``blocks`` without copying them.

        ``blocks`` are ``Snapshot.exact_blocks`` of some matrix, e.g. read back from a
        checkpoint; they must not be written afterwards.
        """
        if not blocks:
            raise ValueError("a matrix from blocks needs at least one block")
        dim = blocks[0].shape[0]
        widths = [block.shape[1] for block in blocks]
        for block in blocks:
            if block.dtype != np.int8 or block.ndim != 2 or block.shape[0] != dim:
                raise ValueError("blocks must be int8 [dim, rows] arrays of one dimension")
            if block.size and block.min() < -CODE_MAX:
                raise ValueError("codes must lie in [-127, 127]")
        if any(w != block_rows for w in widths[:-1]) or not 0 < widths[-1] <= block_rows:
            raise ValueError("every block but the last must be full, and none empty")
        if sum(widths) != len(ids) or np.shape(tags) != np.shape(ids):
            raise ValueError("one id and one tag per row")
        matrix = cls(dim, block_rows)
        # Full to capacity: the next append reallocates the last block instead of writing it.
        matrix._codes = [np.ascontiguousarray(block) for block in blocks]
        matrix._sums = [block.sum(axis=0, dtype=np.int32) for block in matrix._codes]
        matrix._ids = np.array(ids, dtype=np.int64)
        matrix._tags = np.array(tags, dtype=np.int32)
        matrix._n = len(ids)
        return matrix


def _grown[A: np.ndarray](array: A, filled: int, needed: int) -> A:
    grown = np.zeros(max(needed, 2 * len(array), 16), dtype=array.dtype)
    grown[:filled] = array[:filled]
    return grown  # type: ignore[return-value]
