"""numpy mirrors of kernels.cu: the same index arithmetic, lane by lane, on the CPU.

Each function repeats one kernel's addressing (shared-memory offsets, fragment registers, lane
roles, shuffles, the radix digits, the warp ballots), so an indexing error in the tiling plan
shows up as a wrong score here. What the hardware defines is modelled from its specification,
independently of the kernels: ``mma_m16n8k32`` places fragments as the PTX ISA lays out
mma.m16n8k32 with .s8 operands. Lanes are vectorized as numpy axes: lane = 4g + t for mma,
lane = 8 sub + part for score_rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from custom_components.alto.gpu import plan

INT32_MIN = np.iinfo(np.int32).min
INT64_MAX = np.iinfo(np.int64).max
LANES = np.arange(32)
G, T = LANES >> 2, LANES & 3  # an mma lane's group and thread-in-group
GARBAGE = 0x5A  # shared memory before a copy lands


def mma_m16n8k32(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """One warp's mma.sync.m16n8k32.row.col.s32.s8.s8.s32, in place: acc += A B.

    a: [32 lanes, 4 registers, 4 bytes]; b: [32, 2, 4]; acc: [32, 4] int64. Layout (PTX ISA):
    register r of A holds row g + 8 (r & 1), codes 4t + 16 (r >> 1) .. +3; register r of B
    holds query g, codes 4t + 16 r .. +3; accumulator e is row g + 8 (e >> 1), query 2t + (e & 1).
    """
    a_matrix = np.zeros((16, 32), np.int64)
    b_matrix = np.zeros((32, 8), np.int64)
    byte = np.arange(4)
    for r in range(4):
        rows, cols = G + 8 * (r & 1), 4 * T + 16 * (r >> 1)
        a_matrix[rows[:, None], cols[:, None] + byte] = a[:, r]
    for r in range(2):
        b_matrix[4 * T[:, None] + 16 * r + byte, G[:, None]] = b[:, r]
    d = a_matrix @ b_matrix
    for e in range(4):
        acc[:, e] += d[G + 8 * (e >> 1), 2 * T + (e & 1)]


def words(shared: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The 4-byte words at byte ``offsets`` of a shared array: offsets' shape + [4]."""
    return shared[offsets[..., None] + np.arange(4)].astype(np.int64)


def stage_slice(
    rows_s: np.ndarray,
    queries_s: np.ndarray,
    codes: np.ndarray,
    queries: np.ndarray,
    *,
    row0: int,
    query0: int,
    slice_: int,
) -> None:
    """kernels.cu stage_slice: 16-byte copies, zero-filled past n rows and q queries."""
    n, q = len(codes), len(queries)
    for e in range(plan.MMA_ROWS * 2):
        r, half = e >> 1, e & 1
        row = row0 + r
        start = slice_ * plan.SLICE + 16 * half
        dst = r * plan.MMA_STRIDE + 16 * half
        rows_s[dst : dst + 16] = codes[row, start : start + 16] if row < n else 0
    for e in range(plan.MMA_QUERIES * 2):
        j, half = e >> 1, e & 1
        query = query0 + j
        start = slice_ * plan.SLICE + 16 * half
        dst = j * plan.MMA_STRIDE + 16 * half
        queries_s[dst : dst + 16] = queries[query, start : start + 16] if query < q else 0


def score_mma(codes: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """kernels.cu score_mma over device rows ``codes [n, row_bytes]`` and packed queries.

    Returns (scores [q, n], group_max [q, groups]); entries no thread writes stay INT32_MIN + 1,
    a value no kernel writes, so a hole shows.
    """
    n, row_bytes = codes.shape
    q = len(queries)
    groups = plan.groups_for(n)
    scores = np.full((q, n), INT32_MIN + 1, np.int64)
    group_max = np.full((q, groups), INT32_MIN + 1, np.int64)
    slices = row_bytes // plan.SLICE
    warps = plan.MMA_THREADS // 32
    stages = plan.MMA_STAGES
    for bx in range(-(-n // plan.MMA_ROWS)):
        for by in range(-(-q // plan.MMA_QUERIES)):
            row0, query0 = bx * plan.MMA_ROWS, by * plan.MMA_QUERIES
            ntiles = min(plan.MMA_QUERIES // 8, (q - query0 + 7) // 8)
            rows_s = np.full((stages, plan.MMA_ROWS * plan.MMA_STRIDE), GARBAGE, np.int8)
            queries_s = np.full((stages, plan.MMA_QUERIES * plan.MMA_STRIDE), GARBAGE, np.int8)
            acc = np.zeros((warps, 2, plan.MMA_QUERIES // 8, 32, 4), np.int64)
            for s in range(stages - 1):
                if s < slices:
                    stage_slice(
                        rows_s[s], queries_s[s], codes, queries, row0=row0, query0=query0, slice_=s
                    )
            for c in range(slices):
                nxt = c + stages - 1
                if nxt < slices:
                    stage_slice(
                        rows_s[nxt % stages],
                        queries_s[nxt % stages],
                        codes,
                        queries,
                        row0=row0,
                        query0=query0,
                        slice_=nxt,
                    )
                a_s = (32 * np.arange(warps)[:, None] + G) * plan.MMA_STRIDE + 4 * T  # [w, lane]
                b_s = G * plan.MMA_STRIDE + 4 * T
                stride = plan.MMA_STRIDE
                for i in range(2):
                    p = a_s + 16 * i * stride
                    a = np.stack(
                        [
                            words(rows_s[c % stages], p),
                            words(rows_s[c % stages], p + 8 * stride),
                            words(rows_s[c % stages], p + 16),
                            words(rows_s[c % stages], p + 8 * stride + 16),
                        ],
                        axis=2,
                    )  # [w, lane, register, byte]
                    for j in range(ntiles):
                        pb = b_s + 8 * j * stride
                        b = np.stack(
                            [
                                words(queries_s[c % stages], pb),
                                words(queries_s[c % stages], pb + 16),
                            ],
                            axis=1,
                        )
                        for w in range(warps):
                            mma_m16n8k32(acc[w, i, j], a[w], b)
            for w in range(warps):
                first = row0 + 32 * w
                for j in range(ntiles):
                    for b in range(2):
                        query = query0 + 8 * j + 2 * T + b  # [lane]
                        best = np.full(32, INT32_MIN, np.int64)
                        for i in range(2):
                            for h in range(2):
                                row = first + 16 * i + 8 * h + G
                                value = acc[w, i, j, :, 2 * h + b]
                                ok = row < n
                                best[ok] = np.maximum(best[ok], value[ok])
                                write = ok & (query < q)
                                scores[query[write], row[write]] = value[write]
                        for offset in (4, 8, 16):
                            best = np.maximum(best, best[LANES ^ offset])
                        write = (G == 0) & (query < q)
                        if first < n:
                            group_max[query[write], first // plan.GROUP_ROWS] = best[write]
    return scores, group_max


def score_rows(codes: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """kernels.cu score_rows, one warp per (group, query): lane = 8 sub + part."""
    n, row_bytes = codes.shape
    q, groups, vectors = len(queries), plan.groups_for(n), row_bytes // 16
    sub, part = LANES >> 3, LANES & 7
    scores = np.full((q, n), INT32_MIN + 1, np.int64)
    group_max = np.full((q, groups), INT32_MIN + 1, np.int64)
    rows_v = codes.reshape(n, vectors, 16).astype(np.int64)
    for query in range(q):
        query_v = queries[query].reshape(vectors, 16).astype(np.int64)
        for group in range(groups):
            first = group * plan.GROUP_ROWS
            acc = np.zeros((32, 8), np.int64)
            for lane in range(32):
                for v in range(part[lane], vectors, 8):
                    for i in range(8):
                        row = min(first + 4 * i + sub[lane], n - 1)
                        acc[lane, i] += rows_v[row, v] @ query_v[v]
            score = np.zeros(32, np.int64)
            for i in range(8):
                s = acc[:, i].copy()
                for offset in (1, 2, 4):
                    s = s + s[LANES ^ offset]
                score = np.where(part == i, s, score)
            row = first + 4 * part + sub
            ok = row < n
            scores[query, row[ok]] = score[ok]
            best = np.where(ok, score, INT32_MIN)
            for offset in (16, 8, 4, 2, 1):
                best = np.maximum(best, best[LANES ^ offset])
            group_max[query, group] = best[0]
    return scores, group_max


def group_threshold(values: np.ndarray, m: int) -> int:
    """kernels.cu group_threshold for one query: the m-th largest value, by radix digits."""
    keys = (values.astype(np.int64) & 0xFFFFFFFF) ^ 0x80000000
    prefix, mask, remaining = 0, 0, m
    for shift in (24, 16, 8, 0):
        matching = keys[(keys & mask) == prefix]
        hist = np.bincount((matching >> shift) & 255, minlength=256)
        own = np.array([hist[255 - 8 * lane - np.arange(8)].sum() for lane in range(32)])
        inclusive = np.cumsum(own)
        lane = int(np.flatnonzero(inclusive >= remaining)[0])
        above, digit = int(inclusive[lane] - own[lane]), 255 - 8 * lane
        while above + hist[digit] < remaining:
            above += int(hist[digit])
            digit -= 1
        prefix |= digit << shift
        remaining -= above
        mask |= 255 << shift
    key = prefix ^ 0x80000000
    return key - (1 << 32) if key >= 1 << 31 else key


def gather_candidates(
    scores: np.ndarray,
    ids: np.ndarray,
    group_max: np.ndarray,
    bar: int,
    *,
    capacity: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, int]:
    """kernels.cu gather_candidates for one query; warps reach the counter in a random order.

    Returns the list's scores and ids (``capacity`` slots, garbage where unwritten) and count.
    """
    n, groups = len(scores), len(group_max)
    c_scores = np.full(capacity, GARBAGE, np.int64)
    c_ids = np.full(capacity, GARBAGE, np.int64)
    count = 0
    warps = plan.GATHER_THREADS // 32
    for warp_id in rng.permutation(-(-groups // (32 * warps)) * warps):
        base = int(warp_id) * 32
        mine = base + LANES
        reaches = (mine < groups) & (group_max[np.minimum(mine, groups - 1)] >= bar)
        for first in np.flatnonzero(reaches):  # __ffs order: lowest set bit first
            row = (base + int(first)) * plan.GROUP_ROWS + LANES
            s = np.where(row < n, scores[np.minimum(row, n - 1)], INT32_MIN)
            keep = (row < n) & (s >= bar)
            slot = count + np.cumsum(keep) - keep  # popc of the kept lanes below
            count += int(keep.sum())
            write = keep & (slot < capacity)
            c_scores[slot[write]] = s[write]
            c_ids[slot[write]] = ids[row[write]]
    return c_scores, c_ids, count


def pack_rows(lines: np.ndarray, row_bytes: int) -> np.ndarray:
    """kernels.cu pack_rows over one staged piece ``lines [dim, cols]``: [cols, row_bytes]."""
    dim, cols = lines.shape
    out = np.full((cols, row_bytes), GARBAGE, np.int8)
    for bx in range(-(-cols // plan.PACK_ROWS)):
        for by in range(row_bytes // plan.SLICE):
            col0, k0 = bx * plan.PACK_ROWS, by * plan.SLICE
            tile = np.zeros((plan.SLICE, plan.PACK_ROWS + 4), np.uint32)
            for e in range(plan.SLICE * plan.PACK_ROWS):
                k, c = divmod(e, plan.PACK_ROWS)
                ok = k0 + k < dim and col0 + c < cols
                tile[k, c] = np.uint8(lines[k0 + k, col0 + c]) if ok else 0
            for e in range(plan.PACK_ROWS * plan.SLICE // 4):
                c, w = divmod(e, plan.SLICE // 4)
                if col0 + c < cols:
                    word = (
                        tile[4 * w, c]
                        | tile[4 * w + 1, c] << 8
                        | tile[4 * w + 2, c] << 16
                        | tile[4 * w + 3, c] << 24
                    )
                    start = k0 + 4 * w
                    out[col0 + c, start : start + 4] = np.array([word], "<u4").view(np.int8)
    return out


# -- top-k -----------------------------------------------------------------------------------


def bitonic(scores: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """kernels.cu's sort, one vectorized step per stage (a stage's pairs are disjoint)."""
    s, d = scores.copy(), ids.copy()
    size = len(s)
    t = np.arange(size // 2)
    span = 2
    while span <= size:
        stride = span // 2
        while stride:
            i = 2 * t - (t & (stride - 1))
            j = i + stride
            forward = (i & span) == 0
            si, sj, di, dj = s[i], s[j], d[i], d[j]
            swap = ((sj > si) | ((sj == si) & (dj < di))) == forward
            s[i[swap]], s[j[swap]] = sj[swap], si[swap]
            d[i[swap]], d[j[swap]] = dj[swap], di[swap]
            stride //= 2
        span *= 2
    return s, d


def topk_pass(
    scores: np.ndarray,
    ids: np.ndarray,
    step: plan.TopkPass,
    m: int,
    *,
    tile: int,
    count: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One launch for one query: every block sorts its tile and keeps its best m.

    ``count`` is the query's entry in the counts array, when the pass reads candidate lists.
    """
    inputs = step.count if count is None else min(step.count, count)
    out_s = np.empty(step.blocks * m, dtype=np.int64)
    out_i = np.empty(step.blocks * m, dtype=np.int64)
    for block in range(step.blocks):
        base = block * tile
        valid = min(tile, inputs - base)
        size = 1 << max(valid - 1, 0).bit_length()
        s = np.full(size, INT32_MIN, dtype=np.int64)
        d = np.full(size, INT64_MAX, dtype=np.int64)
        if valid > 0:
            s[:valid], d[:valid] = scores[base : base + valid], ids[base : base + valid]
        s, d = bitonic(s, d)
        keep = min(m, size)
        out_s[block * m : block * m + keep] = s[:keep]
        out_i[block * m : block * m + keep] = d[:keep]
        out_s[block * m + keep : (block + 1) * m] = INT32_MIN
        out_i[block * m + keep : (block + 1) * m] = INT64_MAX
    return out_s, out_i


def reduce(
    scores: np.ndarray,
    ids: np.ndarray,
    passes: list[plan.TopkPass],
    m: int,
    *,
    tile: int,
    count: int | None = None,
) -> list[tuple[int, int]]:
    """The pass chain for one query, as the device runs it; the last pass's m entries."""
    for index, step in enumerate(passes):
        scores, ids = topk_pass(
            scores, ids, step, m, tile=tile, count=count if index == 0 else None
        )
    assert len(scores) == m
    return list(zip(ids.tolist(), scores.tolist(), strict=True))


def select(
    scores: np.ndarray,
    group_max: np.ndarray,
    ids: np.ndarray,
    k: int,
    *,
    rng: np.random.Generator,
    tile: int = plan.TOPK_TILE,
    capacity: int = plan.CANDIDATES,
) -> Iterator[list[tuple[int, int]]]:
    """CudaDevice._select after scoring, per query: threshold, lists, passes, overflow."""
    n = scores.shape[1]
    m = min(k, n)
    for row_scores, maxima in zip(scores, group_max, strict=True):
        if plan.filtered(n, m, capacity):
            bar = group_threshold(maxima, m)
            c_scores, c_ids, count = gather_candidates(
                row_scores, ids, maxima, bar, capacity=capacity, rng=rng
            )
            if count <= capacity:
                passes = plan.topk_passes(capacity, m, tile)
                yield reduce(c_scores, c_ids, passes, m, tile=tile, count=count)
                continue
        yield reduce(row_scores, ids, plan.topk_passes(n, m, tile), m, tile=tile)
