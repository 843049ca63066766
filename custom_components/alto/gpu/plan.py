"""Host-side layout and launch plan for kernels.cu, kept free of PyCUDA so it is testable anywhere.

The tests emulate the kernels' contracts over these plans in numpy, so the multi-pass top-k
bookkeeping (counts, strides, sentinels) is checked on machines without a GPU.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Must match the #defines in kernels.cu (a test reads them from the source).
TOPK_TILE = 4096
TOPK_THREADS = 512
SCORE_ONE_THREADS = 256
BATCH_THREADS = 256
BATCH_ROWS = 64
BATCH_QUERIES = 64
# Largest k: each pass keeps m <= MAX_K of every TOPK_TILE candidates, so it shrinks the count
# at least fourfold and the pass count stays logarithmic.
MAX_K = 1024
# Queries per launch; larger batches are split by the backend.
MAX_BATCH = 64
# int32 accumulation holds |score| <= words * 4 * 127 * 127 below 2**31.
MAX_WORDS = (2**31 - 1) // (4 * 127 * 127)


class TopkPass(NamedTuple):
    """One topk_pass launch per query: ``count`` input candidates in ``blocks`` tiles."""

    count: int  # type: ignore[assignment]  # a field name, shadowing tuple.count on purpose
    blocks: int


def words_for(dim: int) -> int:
    """int32 words per packed row: d int8 codes padded with zeros to a multiple of 4."""
    return -(-dim // 4)


def pack_words(codes: np.ndarray, words: int) -> np.ndarray:
    """int8 [m, d] -> int32 [m, words], four codes per word in memory order, zero padding.

    The kernels read the same bytes as the host wrote them, so the codes of a row and of a query
    always share byte lanes in __dp4a whatever the word's numeric value is.
    """
    padded = np.zeros((len(codes), words * 4), dtype=np.int8)
    padded[:, : codes.shape[1]] = codes
    return padded.view(np.int32)


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
