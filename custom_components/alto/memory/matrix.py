"""The resident code matrix: int8 codes in column blocks, one int64 id and one int32 tag per row.

Selection multiplies query codes ``[q, d]`` by the stored codes transposed, ``[d, n]``: that is
the right-hand operand onnxruntime's ``MatMulInteger`` reads, and numpy's matmul reads it
contiguously too. So the codes are kept transposed, in blocks of ``BLOCK_ROWS`` columns: every
block is one contiguous array a scorer hands to the library without a copy, and an append copies
at most one block (the partial last block is replaced by a longer copy), never the whole matrix.
This matrix is the only copy of the codes in the process; nothing float is kept.

A ``Snapshot`` is an immutable view of the matrix at one moment. Full blocks never change, and
the last block, the ids and the tags are replaced rather than written where a snapshot can see
them, so a reader keeps using its snapshot while a writer appends or retags. ``origin`` names the
matrix a snapshot came from: two snapshots of the same origin agree on every row the shorter one
has, which lets a device copy upload only the rows it lacks.

Tags are opaque integers the owner filters on (``records.MemoryState`` keeps scope and status in
them), so a scoped selection is a vectorized mask instead of a walk over row objects. Each block
also carries the sum of every row's codes (int32), which a scorer that offsets the query needs:
``(q + 128) . c - 128 * sum(c) = q . c``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .selection import CODE_MAX, validate_rows

# 16,384 rows of 768 codes are 12 MiB: few library calls per query (one per block), and a small
# copy when an append replaces the partial last block.
BLOCK_ROWS = 16_384

_origins = itertools.count(1)


def _frozen[A: np.ndarray](array: A) -> A:
    array.flags.writeable = False
    return array


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Rows ``0..n-1`` of a matrix: codes by block, ids and tags, all read-only.

    Block ``i`` holds rows ``i * block_rows ...`` as an int8 ``[dim, rows]`` C-contiguous array;
    every block but the last has exactly ``block_rows`` columns. ``sums[i]`` is int32 ``[rows]``,
    each row's codes summed.
    """

    dim: int
    blocks: tuple[np.ndarray, ...]
    sums: tuple[np.ndarray, ...]
    ids: np.ndarray
    tags: np.ndarray
    origin: int
    block_rows: int = BLOCK_ROWS

    def __len__(self) -> int:
        return len(self.ids)

    def spans(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(first row, block, its row sums) of every block, in row order."""
        return [
            (i * self.block_rows, block, sums)
            for i, (block, sums) in enumerate(zip(self.blocks, self.sums, strict=True))
        ]

    def take(self, positions: np.ndarray) -> np.ndarray:
        """Row-major int8 ``[len(positions), dim]`` codes of the rows at ``positions``."""
        positions = np.asarray(positions, dtype=np.int64)
        out = np.empty((len(positions), self.dim), dtype=np.int8)
        which = positions // self.block_rows
        for index in np.unique(which).tolist():
            chosen = which == index
            out[chosen] = self.blocks[index][:, positions[chosen] % self.block_rows].T
        return out

    def rows(self, start: int = 0) -> np.ndarray:
        """Row-major codes of rows ``start..n-1`` (a copy: for uploads and rebuilds)."""
        return self.take(np.arange(start, len(self)))


class CodeMatrix:
    """A growable code matrix (see the module docstring); one writer, any number of snapshots."""

    def __init__(self, dim: int, block_rows: int = BLOCK_ROWS) -> None:
        if dim <= 0 or block_rows <= 0:
            raise ValueError("dim and block_rows must be positive")
        self._dim = dim
        self._block_rows = block_rows
        self._blocks: list[np.ndarray] = []
        self._sums: list[np.ndarray] = []
        # ids and tags grow by doubling; a snapshot holds a prefix, and appends write past it.
        self._ids = np.zeros(0, dtype=np.int64)
        self._tags = np.zeros(0, dtype=np.int32)
        self._n = 0
        self.origin = next(_origins)

    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
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
        self._append_codes(codes)
        self._n = end

    def _append_codes(self, codes: np.ndarray) -> None:
        done = 0
        while done < len(codes):
            filled = self._n + done
            start = filled % self._block_rows
            part = codes[done : done + self._block_rows - start]
            block = np.empty((self._dim, start + len(part)), dtype=np.int8)
            if start:  # extend the partial last block in a new array: snapshots keep the old one
                block[:, :start] = self._blocks.pop()
                self._sums.pop()
            block[:, start:] = part.T
            self._blocks.append(_frozen(block))
            self._sums.append(_row_sums(block))
            done += len(part)

    def retag(self, positions: np.ndarray, tags: np.ndarray) -> None:
        """Set the tags of rows at ``positions``, in a new array (snapshots keep the old tags)."""
        fresh = self._tags.copy()
        fresh[np.asarray(positions, dtype=np.int64)] = tags
        self._tags = fresh

    def snapshot(self) -> Snapshot:
        """The matrix as it is now; later appends and retags do not change it."""
        return Snapshot(
            dim=self._dim,
            blocks=tuple(self._blocks),
            sums=tuple(self._sums),
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
        """A matrix that adopts ``blocks`` (``Snapshot.blocks`` of some matrix, e.g. read back
        from a checkpoint) without copying them; they must not be written afterwards."""
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
        matrix._blocks = [_frozen(np.ascontiguousarray(block)) for block in blocks]
        matrix._sums = [_row_sums(block) for block in matrix._blocks]
        matrix._ids = np.array(ids, dtype=np.int64)
        matrix._tags = np.array(tags, dtype=np.int32)
        matrix._n = len(ids)
        return matrix


def _row_sums(block: np.ndarray) -> np.ndarray:
    return _frozen(block.sum(axis=0, dtype=np.int32))


def _grown[A: np.ndarray](array: A, filled: int, needed: int) -> A:
    grown = np.zeros(max(needed, 2 * len(array), 16), dtype=array.dtype)
    grown[:filled] = array[:filled]
    return grown  # type: ignore[return-value]
