// Exact integer selection on the GPU: int8 dot products with __dp4a, then top-k per query.
//
// The code matrix lives on the device row-major as int32 words: each row is d int8 codes padded
// with zeros to `words` = ceil(d / 4) words, four codes per word in memory order (the host packs
// queries the same way, so byte lanes line up for __dp4a). Scores are int32: |score| <= d * 127^2
// fits for d < 133,000. The result must equal memory/selection.py exactly: score descending,
// then object id (int64) ascending.
//
// Entry points are extern "C" so PyCUDA's SourceModule(no_extern_c=True) finds them by name.
// Kernels use 64-bit index arithmetic wherever a product of a row count and a width can exceed
// 2^31 (q * n scores, n * words codes).

#define SCORE_ONE_THREADS 256
#define BATCH_THREADS 256
#define BATCH_ROWS 64      // rows per score_batch tile
#define BATCH_QUERIES 64   // queries per score_batch tile
#define BATCH_WORDS 32     // words per shared-memory chunk
#define TOPK_THREADS 512
#define TOPK_TILE 4096     // elements one topk_pass block sorts; must match gpu/plan.py

// Sorts after every real candidate: real scores are far above INT_MIN.
#define SENTINEL_SCORE (-2147483647 - 1)
#define SENTINEL_ID 0x7fffffffffffffffLL

__device__ __forceinline__ int warp_sum(int v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// One query against n rows: one warp per row. Lanes read consecutive words of the row, so each
// warp load is one contiguous 128-byte transaction; the query sits in shared memory (dynamic,
// `words` ints). Memory-bound: every code byte is read exactly once.
extern "C" __global__ void __launch_bounds__(SCORE_ONE_THREADS)
score_one(const int *__restrict__ codes, const int *__restrict__ query, int *__restrict__ out,
          int n, int words)
{
    extern __shared__ int query_s[];
    for (int w = threadIdx.x; w < words; w += blockDim.x)
        query_s[w] = query[w];
    __syncthreads();

    const int lane = threadIdx.x & 31;
    const int row = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    if (row >= n)
        return;  // whole warps leave together: row is uniform across a warp
    const int *r = codes + (long long)row * words;
    int acc = 0;
#pragma unroll 8
    for (int w = lane; w < words; w += 32)
        acc = __dp4a(__ldg(r + w), query_s[w], acc);
    acc = warp_sum(acc);
    if (lane == 0)
        out[row] = acc;
}

// q queries against n rows, as a tiled int8 GEMM: a block computes a BATCH_ROWS x BATCH_QUERIES
// tile of scores, staging BATCH_WORDS-word slices of rows and queries through shared memory.
// Global loads are coalesced (a warp reads 32 consecutive words of one row); the shared arrays
// are stored word-major with one int of padding so the transposing store is conflict-free.
// Thread (tx, ty) owns rows tx + 16i and queries ty + 16j (i, j < 4): 16 int32 accumulators.
// Output layout: out[query * n + row].
extern "C" __global__ void __launch_bounds__(BATCH_THREADS)
score_batch(const int *__restrict__ codes, const int *__restrict__ queries,
            int *__restrict__ out, int n, int words, int q)
{
    __shared__ int rows_s[BATCH_WORDS][BATCH_ROWS + 1];
    __shared__ int queries_s[BATCH_WORDS][BATCH_QUERIES + 1];

    const int row0 = blockIdx.x * BATCH_ROWS;
    const int query0 = blockIdx.y * BATCH_QUERIES;
    const int tx = threadIdx.x & 15;
    const int ty = threadIdx.x >> 4;
    int acc[4][4] = {};

    for (int w0 = 0; w0 < words; w0 += BATCH_WORDS) {
        for (int e = threadIdx.x; e < BATCH_ROWS * BATCH_WORDS; e += BATCH_THREADS) {
            const int r = e / BATCH_WORDS, c = e % BATCH_WORDS;
            const int row = row0 + r, w = w0 + c;
            rows_s[c][r] = (row < n && w < words) ? __ldg(codes + (long long)row * words + w) : 0;
        }
        for (int e = threadIdx.x; e < BATCH_QUERIES * BATCH_WORDS; e += BATCH_THREADS) {
            const int j = e / BATCH_WORDS, c = e % BATCH_WORDS;
            const int qi = query0 + j, w = w0 + c;
            queries_s[c][j] = (qi < q && w < words) ? __ldg(queries + (long long)qi * words + w) : 0;
        }
        __syncthreads();
#pragma unroll 8
        for (int c = 0; c < BATCH_WORDS; ++c) {
            int a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                a[i] = rows_s[c][tx + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j)
                b[j] = queries_s[c][ty + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    acc[i][j] = __dp4a(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int qi = query0 + ty + 16 * j;
        if (qi >= q)
            continue;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int row = row0 + tx + 16 * i;
            if (row < n)
                out[(long long)qi * n + row] = acc[i][j];
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
// out[blockIdx.y * out_stride + blockIdx.x * m + i]. Positions past the input are sentinels, so
// a short tile still writes m entries, and sentinels sort after every real candidate. The host
// repeats passes (each shrinks the count by TOPK_TILE / m >= 4) until one block remains; that
// block's m entries are the answer, already ordered. Input strides are per query: the first
// pass reads scores[q * n + i] with the shared id array (id_stride 0); later passes read the
// previous pass's output.
extern "C" __global__ void __launch_bounds__(TOPK_THREADS)
topk_pass(const int *__restrict__ scores_in, const long long *__restrict__ ids_in,
          int *__restrict__ scores_out, long long *__restrict__ ids_out,
          long long score_stride, long long id_stride, long long out_stride, int count, int m)
{
    __shared__ int score_s[TOPK_TILE];
    __shared__ long long id_s[TOPK_TILE];

    const int base = blockIdx.x * TOPK_TILE;
    const int valid = min(TOPK_TILE, count - base);
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
