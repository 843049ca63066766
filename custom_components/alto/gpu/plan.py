"""Host-side layout and launch plan for kernels.cu, kept free of PyCUDA so it is testable anywhere.

The tests emulate the kernels in numpy over these plans (the mma tiling and fragments, the
threshold and candidate lists, the multi-pass top-k bookkeeping, the upload pieces), so an
index error shows up on machines without a GPU.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..memory.selection import CODE_MAX

# Must match the #defines in kernels.cu (a test reads them from the source).
SLICE = 32
GROUP_ROWS = 32
ROWS_THREADS = 256
MMA_THREADS = 256
MMA_ROWS = 256
MMA_QUERIES = 64
MMA_STAGES = 3
MMA_STRIDE = 48
THRESHOLD_THREADS = 1024
GATHER_THREADS = 256
PACK_THREADS = 256
PACK_ROWS = 64
TOPK_TILE = 4096
TOPK_THREADS = 512
# Largest k: each pass keeps m <= MAX_K of every TOPK_TILE candidates, so it shrinks the count
# at least fourfold and the pass count stays logarithmic.
MAX_K = 1024
# Queries per launch; larger batches are split by the device.
MAX_BATCH = 64
# Candidate slots per query after the threshold: enough for m = MAX_K with the rows tied at the
# threshold of typical data; a query that overflows is selected over all its scores instead.
CANDIDATES = 4 * TOPK_TILE
# int32 scores hold |score| <= d * 127 * 127 below 2**31 (zero padding adds nothing).
MAX_DIM = (2**31 - 1) // (CODE_MAX * CODE_MAX)
# Bytes of each pinned host buffer (there are two) and of the device staging buffer.
STAGE_BYTES = 16 << 20


class TopkPass(NamedTuple):
    """One topk_pass launch per query: ``count`` input candidates in ``blocks`` tiles."""

    count: int  # type: ignore[assignment]  # a field name, shadowing tuple.count on purpose
    blocks: int


class Piece(NamedTuple):
    """Rows ``row .. row + rows - 1``: columns ``column ..`` of snapshot block ``block``."""

    block: int
    column: int
    rows: int
    row: int


def row_bytes_for(dim: int) -> int:
    """Bytes per device row: d int8 codes padded with zeros to a multiple of SLICE."""
    return -(-dim // SLICE) * SLICE


def groups_for(n: int) -> int:
    """Groups of GROUP_ROWS consecutive rows (the last may be short) in n rows."""
    return -(-n // GROUP_ROWS)


def pack_rows(codes: np.ndarray, row_bytes: int) -> np.ndarray:
    """int8 [m, d] -> int8 [m, row_bytes]: each row's codes in order, then zeros."""
    packed = np.zeros((len(codes), row_bytes), dtype=np.int8)
    packed[:, : codes.shape[1]] = codes
    return packed


def filtered(n: int, m: int, capacity: int = CANDIDATES) -> bool:
    """Whether selecting m of n rows goes through the group threshold and candidate lists.

    It needs at least m groups (their maxima are m distinct rows) and pays off only when the
    rows outnumber a list's ``capacity``; otherwise the top-k passes read all the scores.
    """
    return n > capacity and groups_for(n) >= m


def topk_passes(count: int, m: int, tile: int = TOPK_TILE) -> list[TopkPass]:
    """Passes that reduce ``count`` scores to the best ``m`` per query (``1 <= m <= tile // 4``).

    Every pass but the last writes ``blocks * m`` candidates, the next pass's input; the last
    pass has one block, whose ``m`` outputs are the ordered answer.
    """
    if not 1 <= m <= tile // 4 or count < m:
        raise ValueError(f"need 1 <= m <= {tile // 4} and count >= m, got m={m}, count={count}")
    passes = []
    while True:
        blocks = -(-count // tile)
        passes.append(TopkPass(count, blocks))
        if blocks == 1:
            return passes
        count = blocks * m


def upload_pieces(block_rows: int, start: int, end: int, most: int) -> list[Piece]:
    """Rows ``start .. end - 1`` of a snapshot as pieces of one block and at most ``most`` rows.

    A piece is one copy into a pinned buffer and one transfer; pieces cover the rows once, in
    order.
    """
    if most < 1:
        raise ValueError("a piece holds at least one row")
    pieces = []
    row = start
    while row < end:
        block, column = divmod(row, block_rows)
        rows = min(end - row, block_rows - column, most)
        pieces.append(Piece(block, column, rows, row))
        row += rows
    return pieces
