// Exact integer selection on the GPU: int8 dot products, then the top k of every query.
//
// Layout. The code matrix lives on the device row-major: a row is `row_bytes` int8 codes, its d
// codes followed by zeros up to a multiple of SLICE (one mma k-step), so every row and every
// 16-byte vector is aligned and padding adds nothing to a dot product. The host packs queries
// the same way; pack_rows builds device rows from the host's column blocks. Scores are int32:
// |score| <= d * 127^2 < 2^31 for d <= plan.MAX_DIM, so no real score is the sentinel INT_MIN.
//
// Selection for q queries against n rows (the host's plan is gpu/plan.py):
// 1. score_rows (one query per grid row, __dp4a at the memory bound) or score_mma (tensor
//    cores, sm_80+) write scores[query * n + row] and, for every group of GROUP_ROWS
//    consecutive rows, the group's best score group_max[query * groups + group].
// 2. group_threshold: per query, the m-th largest group maximum T. The m groups at or above T
//    hold m distinct rows scoring >= T, so every row of the answer scores >= T.
// 3. gather_candidates: every row scoring >= T (ties at T included) joins the query's candidate
//    list; only groups whose maximum reaches T are read. A list's order depends on thread
//    timing, and nothing downstream depends on it.
// 4. topk_pass, repeated: bitonic sorts by (score desc, id asc) keep the best m of each tile
//    until one tile remains; its m entries are the answer.
// Where the threshold cannot prune (few rows, fewer than m groups) or a list overflows its
// capacity (many ties at T), step 4 runs over all the scores instead. Either way the result is
// memory/selection.py's: score descending, then object id (int64) ascending.
//
// Entry points are extern "C" so PyCUDA's SourceModule(no_extern_c=True) finds them by name.
// Index arithmetic is 64-bit wherever a row count times a width can exceed 2^31.

#define SLICE 32              // bytes of k per mma step; row_bytes is a multiple of it
#define GROUP_ROWS 32         // rows per group maximum
#define ROWS_THREADS 256      // score_rows: 8 warps, one group of rows each
#define MMA_THREADS 256       // score_mma: 8 warps
#define MMA_ROWS 256          // rows per score_mma tile, 32 (one group) per warp
#define MMA_QUERIES 64        // queries per score_mma tile, eight n-tiles of 8
#define MMA_STAGES 3          // depth of the cp.async ring, one k-slice per stage
#define MMA_STRIDE 48         // shared bytes per staged row: 32 codes + 16 bytes of padding
#define THRESHOLD_THREADS 1024
#define GATHER_THREADS 256    // 8 warps, 32 groups each
#define PACK_THREADS 256
#define PACK_ROWS 64          // rows per pack_rows block
#define TOPK_THREADS 512
#define TOPK_TILE 4096        // elements one topk_pass block sorts

#define FULL_MASK 0xffffffffu
// Sorts after every real candidate: real scores are far above INT_MIN.
#define SENTINEL_SCORE (-2147483647 - 1)
#define SENTINEL_ID 0x7fffffffffffffffLL

// One query per grid row (blockIdx.y) against n rows, shaped for the memory bound. A warp scores
// one group of 32 consecutive rows, four rows at a time with eight lanes per row: lane
// (sub, part) = (lane / 8, lane % 8) reads 16-byte vectors part, part + 8, ... of rows
// 4i + sub (i < 8), so each warp load is four whole 128-byte lines and a thread keeps eight
// independent loads in flight. Codes stream past L1 (__ldcs); the query stays cached.
extern "C" __global__ void __launch_bounds__(ROWS_THREADS)
score_rows(const signed char *__restrict__ codes, const signed char *__restrict__ queries,
           int *__restrict__ scores, int *__restrict__ group_max, int n, int row_bytes)
{
    const int lane = threadIdx.x & 31;
    const int groups = (n + GROUP_ROWS - 1) / GROUP_ROWS;
    const int group = blockIdx.x * (ROWS_THREADS / 32) + (threadIdx.x >> 5);
    if (group >= groups)
        return;  // the whole warp: group is uniform across it
    const int sub = lane >> 3, part = lane & 7;
    const int vectors = row_bytes / 16;
    const int query = blockIdx.y;
    const int4 *q = reinterpret_cast<const int4 *>(queries + (long long)query * row_bytes);
    const long long first = (long long)group * GROUP_ROWS;

    int acc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
        acc[i] = 0;
    for (int v = part; v < vectors; v += 8) {
        const int4 b = __ldg(q + v);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            // A row past n reads the last row instead (in bounds); it is dropped below.
            const long long row = min(first + 4 * i + sub, (long long)n - 1);
            const int4 a = __ldcs(reinterpret_cast<const int4 *>(codes + row * row_bytes) + v);
            acc[i] = __dp4a(a.x, b.x, acc[i]);
            acc[i] = __dp4a(a.y, b.y, acc[i]);
            acc[i] = __dp4a(a.z, b.z, acc[i]);
            acc[i] = __dp4a(a.w, b.w, acc[i]);
        }
    }

    // Sum every row over its eight lanes; lane (sub, part) then owns row 4 * part + sub, so the
    // warp's 32 stores cover the group's 32 rows.
    int score = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int s = acc[i];
        s += __shfl_xor_sync(FULL_MASK, s, 1);
        s += __shfl_xor_sync(FULL_MASK, s, 2);
        s += __shfl_xor_sync(FULL_MASK, s, 4);
        if (part == i)
            score = s;
    }
    const long long row = first + 4 * part + sub;
    int best = SENTINEL_SCORE;
    if (row < n) {
        scores[(long long)query * n + row] = score;
        best = score;
    }
    for (int offset = 16; offset > 0; offset >>= 1)
        best = max(best, __shfl_xor_sync(FULL_MASK, best, offset));
    if (lane == 0)
        group_max[(long long)query * groups + group] = best;
}

#if __CUDA_ARCH__ >= 800
__device__ __forceinline__ void cp_async16(signed char *shared, const signed char *global,
                                           int bytes)
{
    // Copies `bytes` (16 or 0) and zero-fills the rest of the 16.
    const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address),
                 "l"(global), "r"(bytes));
}

__device__ __forceinline__ unsigned shared_word(const signed char *p)
{
    return *reinterpret_cast<const unsigned *>(p);
}

__device__ __forceinline__ void mma_s8(int (&d)[4], const unsigned (&a)[4], unsigned b0,
                                       unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Stages k-slice `slice` of the tile's rows and queries: thread e copies 16-byte half (e & 1)
// of row (e >> 1). Rows past n and queries past q are zero-filled (the source is then unread).
__device__ __forceinline__ void stage_slice(signed char *rows_s, signed char *queries_s,
                                            const signed char *codes,
                                            const signed char *queries, long long row0,
                                            int query0, int slice, int n, int q, int row_bytes)
{
    for (int e = threadIdx.x; e < MMA_ROWS * 2; e += MMA_THREADS) {
        const int r = e >> 1, half = e & 1;
        const long long row = row0 + r;
        const bool ok = row < n;
        const long long offset = ok ? row * row_bytes + slice * SLICE + 16 * half : 0;
        cp_async16(rows_s + r * MMA_STRIDE + 16 * half, codes + offset, ok ? 16 : 0);
    }
    for (int e = threadIdx.x; e < MMA_QUERIES * 2; e += MMA_THREADS) {
        const int j = e >> 1, half = e & 1;
        const int query = query0 + j;
        const bool ok = query < q;
        const long long offset =
            ok ? (long long)query * row_bytes + slice * SLICE + 16 * half : 0;
        cp_async16(queries_s + j * MMA_STRIDE + 16 * half, queries + offset, ok ? 16 : 0);
    }
}
#endif

// q queries against n rows on the tensor cores, D = A B + C by mma.m16n8k32 (s8 x s8 -> s32):
// A is 16 rows x 32 codes row-major, B 32 codes x 8 queries column-major (a query's codes
// contiguous): both are the device layout as it is. A block scores MMA_ROWS rows x MMA_QUERIES
// queries; warp w owns rows 32w .. 32w + 31 of the tile (two m-tiles: one group) against all
// of its queries (n-tiles j < ntiles, those holding real queries): 64 accumulators a thread.
// K advances one SLICE at a time through a MMA_STAGES-deep cp.async ring. Rows past n and
// queries past q are zero-filled, add nothing and are never written.
// Fragments (PTX ISA, mma.m16n8k32 with .s8): lane = 4g + t holds A's a0 = row g, codes
// 4t .. 4t+3; a1 = row g+8, the same codes; a2 = row g, codes 16+4t .. 16+4t+3; a3 = row g+8,
// those codes; B's b0 = query g, codes 4t .. 4t+3; b1 = query g, codes 16+4t .. 16+4t+3; C's
// c0 = (row g, query 2t), c1 = (g, 2t+1), c2 = (g+8, 2t), c3 = (g+8, 2t+1). MMA_STRIDE = 12
// words puts rows g = 0..7 of a fragment load on distinct banks (12g mod 32 steps by 4 apart).
extern "C" __global__ void __launch_bounds__(MMA_THREADS)
score_mma(const signed char *__restrict__ codes, const signed char *__restrict__ queries,
          int *__restrict__ scores, int *__restrict__ group_max, int n, int row_bytes, int q)
{
#if __CUDA_ARCH__ >= 800
    __shared__ __align__(16) signed char rows_s[MMA_STAGES][MMA_ROWS * MMA_STRIDE];
    __shared__ __align__(16) signed char queries_s[MMA_STAGES][MMA_QUERIES * MMA_STRIDE];

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const long long row0 = (long long)blockIdx.x * MMA_ROWS;
    const int query0 = blockIdx.y * MMA_QUERIES;
    const int slices = row_bytes / SLICE;
    const int ntiles = min(MMA_QUERIES / 8, (q - query0 + 7) / 8);

    int acc[2][MMA_QUERIES / 8][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < MMA_QUERIES / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                acc[i][j][e] = 0;

#pragma unroll
    for (int s = 0; s < MMA_STAGES - 1; ++s) {
        if (s < slices)
            stage_slice(rows_s[s], queries_s[s], codes, queries, row0, query0, s, n, q,
                        row_bytes);
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int c = 0; c < slices; ++c) {
        // Slice c has landed once at most MMA_STAGES - 2 younger groups are pending; the
        // barrier also frees the stage slice c - 1 was read from, which slice c + 2 refills.
        asm volatile("cp.async.wait_group %0;\n" ::"n"(MMA_STAGES - 2));
        __syncthreads();
        const int next = c + MMA_STAGES - 1;
        if (next < slices)
            stage_slice(rows_s[next % MMA_STAGES], queries_s[next % MMA_STAGES], codes, queries,
                        row0, query0, next, n, q, row_bytes);
        asm volatile("cp.async.commit_group;\n" ::);

        const signed char *a_s = rows_s[c % MMA_STAGES] + (32 * warp + g) * MMA_STRIDE + 4 * t;
        const signed char *b_s = queries_s[c % MMA_STAGES] + g * MMA_STRIDE + 4 * t;
        unsigned a[2][4];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const signed char *p = a_s + 16 * i * MMA_STRIDE;
            a[i][0] = shared_word(p);
            a[i][1] = shared_word(p + 8 * MMA_STRIDE);
            a[i][2] = shared_word(p + 16);
            a[i][3] = shared_word(p + 8 * MMA_STRIDE + 16);
        }
#pragma unroll
        for (int j = 0; j < MMA_QUERIES / 8; ++j) {
            if (j < ntiles) {
                const signed char *p = b_s + 8 * j * MMA_STRIDE;
                const unsigned b0 = shared_word(p), b1 = shared_word(p + 16);
                mma_s8(acc[0][j], a[0], b0, b1);
                mma_s8(acc[1][j], a[1], b0, b1);
            }
        }
    }

    // acc[i][j][2h + b] is row 32w + 16i + 8h + g, query 8j + 2t + b of the tile. The group's
    // maximum per query is taken over i, h, then the eight lanes g (lane bits 2..4).
    const int groups = (n + GROUP_ROWS - 1) / GROUP_ROWS;
    const long long first = row0 + 32 * warp;
#pragma unroll
    for (int j = 0; j < MMA_QUERIES / 8; ++j) {
        if (j >= ntiles)
            continue;  // uniform across the block
#pragma unroll
        for (int b = 0; b < 2; ++b) {
            const int query = query0 + 8 * j + 2 * t + b;
            int best = SENTINEL_SCORE;
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const long long row = first + 16 * i + 8 * h + g;
                    const int s = acc[i][j][2 * h + b];
                    if (row < n) {
                        best = max(best, s);
                        if (query < q)
                            scores[(long long)query * n + row] = s;
                    }
                }
            best = max(best, __shfl_xor_sync(FULL_MASK, best, 4));
            best = max(best, __shfl_xor_sync(FULL_MASK, best, 8));
            best = max(best, __shfl_xor_sync(FULL_MASK, best, 16));
            if (g == 0 && query < q && first < n)
                group_max[(long long)query * groups + (first / GROUP_ROWS)] = best;
        }
    }
#endif
}

// Per query (blockIdx.x): threshold = the m-th largest of its `groups` group maxima, counted
// with multiplicity (1 <= m <= groups); and the query's candidate count reset to 0. A radix
// select over order-preserving unsigned keys, eight bits a pass from the top: each pass counts
// the keys matching the digits chosen so far by their next digit, then picks the digit holding
// the m-th largest (warp 0 scans the 256 counts from the top, eight digits a lane).
extern "C" __global__ void __launch_bounds__(THRESHOLD_THREADS)
group_threshold(const int *__restrict__ group_max, int *__restrict__ threshold,
                int *__restrict__ counts, int groups, int m)
{
    __shared__ unsigned hist[256];
    __shared__ unsigned prefix_s;
    __shared__ int remaining_s;
    const int *values = group_max + (long long)blockIdx.x * groups;
    unsigned prefix = 0, mask = 0;
    int remaining = m;  // the rank still sought among keys matching prefix on mask
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int i = threadIdx.x; i < 256; i += blockDim.x)
            hist[i] = 0;
        __syncthreads();
        for (int i = threadIdx.x; i < groups; i += blockDim.x) {
            const unsigned key = static_cast<unsigned>(values[i]) ^ 0x80000000u;
            if ((key & mask) == prefix)
                atomicAdd(&hist[(key >> shift) & 255u], 1u);
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            const int lane = threadIdx.x;
            unsigned own = 0;  // keys with digits 255 - 8 lane down to 248 - 8 lane
            for (int b = 0; b < 8; ++b)
                own += hist[255 - 8 * lane - b];
            unsigned inclusive = own;
            for (int offset = 1; offset < 32; offset <<= 1) {
                const unsigned up = __shfl_up_sync(FULL_MASK, inclusive, offset);
                if (lane >= offset)
                    inclusive += up;
            }
            const unsigned reach = __ballot_sync(FULL_MASK, inclusive >= (unsigned)remaining);
            if (lane == __ffs(reach) - 1) {  // the matching keys number at least `remaining`
                unsigned above = inclusive - own;
                int digit = 255 - 8 * lane;
                while (above + hist[digit] < (unsigned)remaining)
                    above += hist[digit--];
                prefix_s = prefix | (static_cast<unsigned>(digit) << shift);
                remaining_s = remaining - static_cast<int>(above);
            }
        }
        __syncthreads();
        prefix = prefix_s;
        remaining = remaining_s;
        mask |= 255u << shift;
    }
    if (threadIdx.x == 0) {
        threshold[blockIdx.x] = static_cast<int>(prefix ^ 0x80000000u);
        counts[blockIdx.x] = 0;
    }
}

// Per query (blockIdx.y): append every row scoring >= threshold to the query's list of
// `capacity` slots. Warp w of block x checks groups 32 (8x + w) .. +31; each group whose maximum
// reaches the threshold is read by the whole warp, one row a lane, and the rows kept take
// consecutive slots from one atomicAdd. counts[query] ends as the number of rows kept, which
// exceeds capacity when the list overflowed (then only some were written: the host redoes the
// query's selection over all scores).
extern "C" __global__ void __launch_bounds__(GATHER_THREADS)
gather_candidates(const int *__restrict__ scores, const long long *__restrict__ ids,
                  const int *__restrict__ group_max, const int *__restrict__ threshold,
                  int *__restrict__ cand_scores, long long *__restrict__ cand_ids,
                  int *__restrict__ counts, int n, int groups, int capacity)
{
    const int query = blockIdx.y, lane = threadIdx.x & 31;
    const int bar = threshold[query];
    const int base = (blockIdx.x * (GATHER_THREADS / 32) + (threadIdx.x >> 5)) * 32;
    const int mine = base + lane;
    const bool reaches = mine < groups && group_max[(long long)query * groups + mine] >= bar;
    unsigned todo = __ballot_sync(FULL_MASK, reaches);
    const int *row_scores = scores + (long long)query * n;
    while (todo) {
        const long long row = (long long)(base + __ffs(todo) - 1) * GROUP_ROWS + lane;
        todo &= todo - 1;
        const int s = row < n ? row_scores[row] : SENTINEL_SCORE;
        const bool keep = row < n && s >= bar;
        const unsigned kept = __ballot_sync(FULL_MASK, keep);
        int slot = 0;
        if (lane == 0)
            slot = atomicAdd(counts + query, __popc(kept));
        slot = __shfl_sync(FULL_MASK, slot, 0) + __popc(kept & ((1u << lane) - 1u));
        if (keep && slot < capacity) {
            cand_scores[(long long)query * capacity + slot] = s;
            cand_ids[(long long)query * capacity + slot] = ids[row];
        }
    }
}

// True when candidate a ranks before candidate b: higher score, then lower object id.
__device__ __forceinline__ bool ranks_before(int score_a, long long id_a, int score_b,
                                             long long id_b)
{
    return score_a > score_b || (score_a == score_b && id_a < id_b);
}

// One reduction pass of the per-query top-k. For query blockIdx.y, block blockIdx.x takes the
// candidates [blockIdx.x * TOPK_TILE, +TOPK_TILE) of its input, bitonic-sorts them in shared
// memory by (score desc, id asc), and writes its best m to
// out[blockIdx.y * out_stride + blockIdx.x * m + i]. A query has `count` inputs, or
// min(count, counts[query]) when counts is given (candidate lists); positions past them are
// sentinels, so a short tile still writes m entries and sentinels sort after every real
// candidate. The host repeats passes (each shrinks the count by TOPK_TILE / m >= 4) until one
// block remains; that block's m entries are the answer, already ordered. Input strides are per
// query: a first pass over all scores reads scores[q * n + i] with the shared id array
// (id_stride 0); other passes read candidate lists or the previous pass's output.
extern "C" __global__ void __launch_bounds__(TOPK_THREADS)
topk_pass(const int *__restrict__ scores_in, const long long *__restrict__ ids_in,
          const int *__restrict__ counts, int *__restrict__ scores_out,
          long long *__restrict__ ids_out, long long score_stride, long long id_stride,
          long long out_stride, int count, int m)
{
    __shared__ int score_s[TOPK_TILE];
    __shared__ long long id_s[TOPK_TILE];

    const int base = blockIdx.x * TOPK_TILE;
    const int inputs = counts ? min(count, counts[blockIdx.y]) : count;
    const int valid = min(TOPK_TILE, inputs - base);  // may be <= 0: all sentinels
    int size = 1;  // sort only the power of two that covers this tile's candidates
    while (size < valid)
        size <<= 1;
    scores_in += blockIdx.y * score_stride;
    ids_in += blockIdx.y * id_stride;
    for (int i = threadIdx.x; i < size; i += blockDim.x) {
        if (i < valid) {
            score_s[i] = scores_in[base + i];
            id_s[i] = ids_in[base + i];
        } else {
            score_s[i] = SENTINEL_SCORE;
            id_s[i] = SENTINEL_ID;
        }
    }
    __syncthreads();

    // Bitonic sort: for each stage, element i pairs with i + stride; the pair belongs to a
    // sequence that must end up in ranking order when (i & span) == 0, reversed otherwise.
    for (int span = 2; span <= size; span <<= 1) {
        for (int stride = span >> 1; stride > 0; stride >>= 1) {
            for (int t = threadIdx.x; t < size / 2; t += blockDim.x) {
                const int i = 2 * t - (t & (stride - 1));
                const int j = i + stride;
                const bool forward = (i & span) == 0;
                const int si = score_s[i], sj = score_s[j];
                const long long ii = id_s[i], ij = id_s[j];
                if (ranks_before(sj, ij, si, ii) == forward) {
                    score_s[i] = sj;
                    score_s[j] = si;
                    id_s[i] = ij;
                    id_s[j] = ii;
                }
            }
            __syncthreads();
        }
    }

    scores_out += blockIdx.y * out_stride + (long long)blockIdx.x * m;
    ids_out += blockIdx.y * out_stride + (long long)blockIdx.x * m;
    for (int i = threadIdx.x; i < m; i += blockDim.x) {
        scores_out[i] = i < size ? score_s[i] : SENTINEL_SCORE;
        ids_out[i] = i < size ? id_s[i] : SENTINEL_ID;
    }
}

// Upload: device rows row0 .. row0 + cols - 1 from one piece of a host column block, staged as
// `dim` lines of `cols` codes (line k holds code k of every row of the piece). Block (x, y)
// moves rows 64x .. 64x + 63 of the piece, k-slice y: it reads the slice's 32 lines (coalesced
// along the rows), and writes each row's 32 codes as 8 little-endian words, codes past dim as
// zeros, so the padding of every row is written too.
extern "C" __global__ void __launch_bounds__(PACK_THREADS)
pack_rows(const signed char *__restrict__ src, signed char *__restrict__ codes, long long row0,
          int cols, int dim, int row_bytes)
{
    __shared__ unsigned char tile[SLICE][PACK_ROWS + 4];
    const int col0 = blockIdx.x * PACK_ROWS;
    const int k0 = blockIdx.y * SLICE;
    for (int e = threadIdx.x; e < SLICE * PACK_ROWS; e += PACK_THREADS) {
        const int k = e / PACK_ROWS, c = e % PACK_ROWS;
        const bool ok = k0 + k < dim && col0 + c < cols;
        tile[k][c] = ok ? static_cast<unsigned char>(src[(long long)(k0 + k) * cols + col0 + c])
                        : 0;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < PACK_ROWS * (SLICE / 4); e += PACK_THREADS) {
        const int c = e / (SLICE / 4), w = e % (SLICE / 4);
        if (col0 + c < cols) {
            const unsigned word = tile[4 * w][c] | (tile[4 * w + 1][c] << 8) |
                                  (tile[4 * w + 2][c] << 16) |
                                  (static_cast<unsigned>(tile[4 * w + 3][c]) << 24);
            *reinterpret_cast<unsigned *>(codes + (row0 + col0 + c) * row_bytes + k0 + 4 * w) =
                word;
        }
    }
}
