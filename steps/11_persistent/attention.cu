/* Step 11: a persistent grid and a tile scheduler (sm_90a).
 *
 * The change against step 10: which work tiles a block runs, and in which order. Until now a
 * block ran one work tile (128 query rows of one head), head fastest; TileScheduler now decides:
 *   - Persistent grid (not causal): one block per SM walks work tiles b, b + gridDim.x, ... The
 *     K/V ring and the ping-pong turns run on from one tile into the next, and a second Q
 *     barrier (empty_q: every consumer warp is done with this tile's Q) lets the producer load
 *     the next tile's Q, K and V while this one runs its last P V and stores O. Causal keeps one
 *     block per work tile: the hardware hands them out as SMs free up, which balances tiles of
 *     uneven length better than a fixed stride.
 *   - Head-major order: the blocks that run at once take the query tiles of one head, so its K
 *     and V come from DRAM once and then from L2. Causal goes by sections of G heads (as many as
 *     fit in 2/3 of L2), heaviest query tile first across the section, so the SMs finish together.
 *   - Stream-K (D = 128, not causal, >= 16 key tiles per work tile): 1024 work tiles on 132 SMs
 *     are 7.76 rounds of work in 8. The last two rounds are cut into gridDim.x equal ranges of
 *     key tiles instead; a tile cut in two leaves two partial (O, m, l) in the workspace, and
 *     whichever piece ends second merges them (merge(): the same rounding whichever it is, so
 *     the output is bitwise repeatable) and stores O.
 *   - The key tile per problem (not causal): a wider tile reads fewer bytes of Q per FLOP and
 *     spreads the per-tile bookkeeping over more keys: 192 at D = 64, 176 at D = 128, or 160
 *     where Nk fits it better (the ragged last tile costs a whole one: use_bc_alt).
 *
 * Prediction (H200, bf16, N = 4096): step 10 pays a start-up (Q and K_0 in flight, S_0 with
 * nothing to overlap) and a drain for every work tile, about 2 of its 32 tile times: persistence
 * +3-5%; head-major a few % (more at N = 16384, where K and V stop fitting L2 head-fastest);
 * stream-K recovers part of the idle last round (up to 3%); wider tiles +1-3%. About +10% at
 * D = 128, which should reach cuDNN.
 *
 * Limits: forward only; bf16; D = 64 or 128; scale > 0; any Nq, Nk >= 1; causal top-left with
 * tile skipping. Hopper only (sm_90a). One block of 384 threads per SM; shared memory 209 KB
 * (D = 128, Bc = 176) / 113 KB (D = 64, Bc = 192). Workspace: none, except at D = 128 not
 * causal: stream-K's partials, 139 KB per block of the grid (at most 144 blocks: 20 MB).
 *
 * Run:  build/attn run --step 11 --shape 4,8,4096,4096,128     (needs an H100 / H200)
 *       make diff A=10 B=11
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>   /* CUtensorMap, PFN_cuTensorMapEncodeTiled (header only, no -lcuda) */
#include "attention.h"
#include "mma_sm80.cuh"
#include "mma_sm90.cuh"
#include "step.cuh"

typedef __nv_bfloat16 bf16;

/* Tiles per head dim: NWG consumer warpgroups of 64 query rows each (Br = 64 * NWG). Bc keys per
 * tile when causal (square diagonal tiles); when not, Bc_full, or at D = 128 Bc_alt where the
 * problem's Nk fits it better (use_bc_alt). */
template <int D> struct Tiles;
template <> struct Tiles<64> {
    static constexpr int NWG = 2, Bc = 128, Bc_full = 192;
};
template <> struct Tiles<128> {
    static constexpr int NWG = 2, Bc = 128, Bc_full = 176, Bc_alt = 160;
};

constexpr int WG = 128;   /* threads per warpgroup */
constexpr int STAGES = 2; /* K/V ring depth (FA3: 2): stage j % STAGES holds K_j and V_j */

/* Register reallocation: the block starts with 65536 / 384 -> 168 registers per thread; the
 * producer warpgroup drops to 24 and the two consumers rise to 240 (24*128 + 2*240*128 = 64512
 * <= 65536, FA3's D=128 split). */
constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;

/* Shared-memory bytes of one tile of `rows` rows x D bf16: D/64 swizzle atoms side by side, each
 * rows x 128 bytes. */
template <int D> __host__ __device__ constexpr uint32_t tile_bytes(int rows)
{
    return (uint32_t)(D / 64) * rows * 128u;
}

/* Stream-K's workspace: a counter per consumer warp per block of the grid (rounded to 256
 * bytes), then two partials per block: every consumer thread's D/2 floats of O and its m, m, l, l.
 * The kernel's epilogue and workspace_bytes() both size it from these, and the kernel asserts
 * that its consumer warps are these. */
constexpr int SK_WARPS = Tiles<128>::NWG * 4, SK_THREADS = Tiles<128>::NWG * WG;
__host__ __device__ constexpr size_t sk_counter_bytes(unsigned blocks)
{
    return ((size_t)blocks * SK_WARPS * 4 + 255) & ~(size_t)255;
}
__host__ __device__ constexpr size_t sk_partial_bytes(int d)
{
    return (size_t)SK_THREADS * (d / 8 + 1) * 16;
}

/* rows [row0, row0 + ROWS) of head bh of a [B*H, N, D] tensor -> a swizzled smem tile, by TMA:
 * D/64 boxes of ROWS rows x 64 features (128 bytes, the widest box the 128-byte swizzle takes),
 * box a into atom a. The tensor map says N, so rows past N come back as zeros, inside this head.
 * Completion (ROWS * D * 2 bytes) is signalled on bar; one thread issues. */
template <int ROWS, int D>
__device__ __forceinline__ void load_tile(uint32_t dst, const CUtensorMap *map, int row0, int bh,
                                          uint32_t bar)
{
#pragma unroll
    for (int a = 0; a < D / 64; a++)
        tma_load_3d(dst + a * tile_bytes<64>(ROWS), map, 64 * a, row0, bh, bar);
}

/* s = Q_wg K^T for one key tile: D/16 wgmmas m64n{Bc}k16, both operands K-major in smem. The
 * k-th slice of 16 features is 32 bytes into atom k / 4 (the hardware applies the swizzle). */
template <int D, int Bc, int Br>
__device__ __forceinline__ void issue_qk(float (&s)[Bc / 2], uint32_t q_wg, uint32_t k_tile)
{
#pragma unroll
    for (int k = 0; k < D / 16; k++) {
        const uint32_t off = (k % 4) * 32;
        const uint64_t a = wgmma_desc(q_wg + (k / 4) * tile_bytes<64>(Br) + off, 16, 1024);
        const uint64_t b = wgmma_desc(k_tile + (k / 4) * tile_bytes<64>(Bc) + off, 16, 1024);
        wgmma_bf16<Bc>::ss(s, a, b, k > 0);
    }
}

/* o += P V for one key tile: Bc/16 wgmmas m64n{D}k16, P from registers, V [keys, D] in smem as
 * an MN-major B (16 keys = 16 rows = 2048 bytes further per slice; LBO = the next 64 features). */
template <int D, int Bc>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&p)[Bc / 4],
                                         uint32_t v_tile)
{
#pragma unroll
    for (int k = 0; k < Bc / 16; k++) {
        const uint32_t a[4] = {p[4 * k], p[4 * k + 1], p[4 * k + 2], p[4 * k + 3]};
        const uint64_t b = wgmma_desc(v_tile + k * 16 * 128, tile_bytes<64>(Bc), 1024);
        wgmma_bf16<D>::rs_mn(o, a, b, 1);
    }
}

/* Online softmax of one S tile held as the wgmma accumulator: s[4j + 2a + b] is
 * S[row[a]][k0 + 8j + 2t + b]. On return s holds p = 2^(s c - m c) in fp32, m and l are updated
 * and alpha[a] = 2^((m_old - m_new) c) rescales what came before. The four threads of a quad
 * (same g) share a row: two shuffles finish each max. l stays a per-thread partial sum until the
 * epilogue (FA2): alpha is the same across the quad, so partial sums rescale correctly. */
template <int Bc>
__device__ __forceinline__ void online_softmax(float (&s)[Bc / 2], float (&m)[2], float (&l)[2],
                                               float (&alpha)[2], float c, bool mask, int k0,
                                               const int (&row)[2], int Nk, int causal, int t)
{
    if (mask) {   /* only the ragged last tile and tiles crossing the diagonal get here */
#pragma unroll
        for (int j = 0; j < Bc / 8; j++)
#pragma unroll
            for (int a = 0; a < 2; a++)
#pragma unroll
                for (int b = 0; b < 2; b++) {
                    const int col = k0 + 8 * j + 2 * t + b;
                    if (col >= Nk || (causal && col > row[a]))
                        s[4 * j + 2 * a + b] = -INFINITY;
                }
    }
#pragma unroll
    for (int a = 0; a < 2; a++) {
        /* four independent chains, not one of Bc/4: 8 warps per SM hide little latency */
        float mq[4] = {m[a], m[a], m[a], m[a]};
#pragma unroll
        for (int j = 0; j < Bc / 8; j++)
            mq[j % 4] = fmaxf(mq[j % 4], fmaxf(s[4 * j + 2 * a], s[4 * j + 2 * a + 1]));
        float mx = fmaxf(fmaxf(mq[0], mq[1]), fmaxf(mq[2], mq[3]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        /* mx is finite (key 0 is in the first tile and every row sees it); the guard keeps a
         * fully masked row out of -inf - -inf = NaN all the same. */
        const float mc = (mx == -INFINITY ? 0.f : mx) * c;
        alpha[a] = ex2_approx(m[a] * c - mc);   /* 0 on the first tile: m = -inf */
        m[a] = mx;
        float sq[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int j = 0; j < Bc / 8; j++)
#pragma unroll
            for (int b = 0; b < 2; b++) {
                const float p = ex2_approx(fmaf(s[4 * j + 2 * a + b], c, -mc));
                s[4 * j + 2 * a + b] = p;
                sq[j % 4] += p;
            }
        l[a] = l[a] * alpha[a] + ((sq[0] + sq[1]) + (sq[2] + sq[3]));
    }
}

/* Stream-K's merge of two partial sums, mine * a_me + theirs * a_o: each product rounded on its
 * own, then added (no fused multiply-add, which would round only one of them), so the result is
 * the same bits whichever of the two pieces ends second and merges. */
__device__ __forceinline__ float merge(float mine, float a_me, float theirs, float a_o)
{
    return __fadd_rn(__fmul_rn(mine, a_me), __fmul_rn(theirs, a_o));
}

/* One piece of a block's work: key tiles [j0, j0 + n_tiles) of the Br query rows from q0 of head
 * bh. slot is -1 for a whole work tile; for a tile that stream-K cut in two, the workspace slot
 * where its two pieces meet, and role 0 (the head piece, j0 = 0) or 1 (the tail piece). */
struct WorkTile {
    int bh, q0, j0, n_tiles, slot, role;
};

/* The tile scheduler: the pieces block blockIdx.x runs, in order: get(0), ..., get(count() - 1).
 * Work tile w of the B*H*Tq: the heads go in sections of G; within a section the query tiles go
 * heaviest (last) first, then head: w is query tile Tq - 1 - r / h of head sec * G + r % h, where
 * sec = w / (G Tq), r = w % (G Tq) and h is the section's number of heads (G, or fewer in a
 * short last section). G = 1 (not causal) is head-major; G > 1 (causal) spreads the heavy tiles
 * of G heads over the SMs first.
 * Block b takes work tiles b, b + gridDim.x, ... of [0, n_dp) whole (causal: one block per work
 * tile, so just w = b). With SPLIT (stream-K), the rest, n_work - n_dp tiles (the last full round
 * and the remainder), are cut: their key tiles, all (n_work - n_dp) * n_kt of them in work
 * order, make gridDim.x equal ranges [lo, hi), one per block. A range is at least n_kt long, so a
 * work tile is cut at most once, between blocks b and b + 1: its head piece ends block b, its
 * tail piece starts block b + 1, and both use slot b of the workspace. */
template <int Br, int Bc, bool SPLIT> struct TileScheduler {
    unsigned BH, G, Tq, n_dp, n_kt, n_whole, lo, hi, n_pieces;
    int Nk, causal;

    __device__ TileScheduler(unsigned bh_count, unsigned heads_per_section, unsigned whole_tiles,
                             int Nq, int nk, int is_causal)
        : BH(bh_count), G(heads_per_section), Tq((Nq + Br - 1) / Br), n_dp(whole_tiles),
          n_kt((nk + Bc - 1) / Bc), lo(0), hi(0), Nk(nk), causal(is_causal)
    {
        const unsigned b = blockIdx.x, nb = gridDim.x, n_work = BH * Tq;   /* < 2^31: supports() */
        n_whole = b < n_dp ? (n_dp - b + nb - 1) / nb : 0;
        n_pieces = n_whole;
        if (SPLIT && n_dp < n_work) {   /* n_sk < 2^32: launch() checks */
            const unsigned n_sk = (n_work - n_dp) * n_kt, len = n_sk / nb, rem = n_sk % nb;
            lo = b * len + min(b, rem);   /* ranges of len + 1 key tiles first, then len */
            hi = lo + len + (b < rem);
            n_pieces += (hi - 1) / n_kt - lo / n_kt + 1;
        }
    }

    __device__ unsigned count() const { return n_pieces; }
    __device__ bool last(unsigned k) const { return k + 1 == n_pieces; }

    /* work tile w, whole: causal, its key tiles end at its last visible key, q0 + Br - 1 */
    __device__ WorkTile tile(unsigned w) const
    {
        const unsigned sec = w / (G * Tq), r = w % (G * Tq), heads = min(G, BH - sec * G);
        WorkTile x;
        x.bh = (int)(sec * G + r % heads);
        x.q0 = (int)(Tq - 1 - r / heads) * Br;
        const int kv_end = causal ? min(Nk, x.q0 + Br) : Nk;
        x.j0 = 0;
        x.n_tiles = (kv_end + Bc - 1) / Bc;
        x.slot = -1;
        x.role = 0;
        return x;
    }

    __device__ WorkTile get(unsigned k) const
    {
        if (!SPLIT || k < n_whole)
            return tile(blockIdx.x + k * gridDim.x);
        const unsigned u = lo / n_kt + (k - n_whole);   /* the u-th cut work tile */
        WorkTile x = tile(n_dp + u);
        const int j1 = u == (hi - 1) / n_kt ? (int)((hi - 1) % n_kt) + 1 : x.n_tiles;
        x.j0 = k == n_whole ? (int)(lo % n_kt) : 0;
        x.slot = x.j0 > 0 ? (int)blockIdx.x - 1 : j1 < x.n_tiles ? (int)blockIdx.x : -1;
        x.role = x.j0 > 0;
        x.n_tiles = j1 - x.j0;
        return x;
    }
};

/* The producer's one thread: per work tile its Q into the single Q buffer, then its K and V tiles
 * through the ring (load_kv: the kernel's, which knows the ring). */
template <int D, int Br, int Bc, bool SPLIT, class LoadKV>
__device__ __forceinline__ void produce(const TileScheduler<Br, Bc, SPLIT> &sched,
                                        const CUtensorMap *tmQ, uint32_t sQ, uint32_t bar_q,
                                        uint32_t empty_q, LoadKV load_kv)
{
    /* it counts K/V tiles over the block's whole life: the ring runs on across work tiles, so
     * the next tile's first K and V load while this one finishes. */
    int it = 0;
    for (unsigned k = 0; k < sched.count(); k++) {
        const WorkTile w = sched.get(k);
        /* the single Q buffer: the k-th load waits for the (k-1)-th release */
        mbar_wait(empty_q, (k & 1) ^ 1);
        mbar_arrive_expect_tx(bar_q, tile_bytes<D>(Br));
        load_tile<Br, D>(sQ, tmQ, w.q0, w.bh, bar_q);
        for (int j = 0; j < w.n_tiles; j++, it++)
            load_kv(w, j, it);
    }
}

/* Stream-K, at the end of a cut work tile: each of its two pieces ends with a partial O
 * (unnormalised), m and l for the same rows, in the same threads. Each warp writes its own to
 * slot w.slot of the workspace (as role 0 or 1), then counts itself in on that warp's counter
 * (zeroed by launch()); the second to arrive reads the other's partial, merges the two as the
 * online softmax merges key tiles (sk_merge), and stores O; the first stops here. Nothing waits
 * for another block, and merge() rounds the same way whichever piece arrives second. The
 * partials: the workspace after the counters, (D / 8 + 1) float4 per consumer thread and piece. */
template <int D, int NWG>
__device__ __forceinline__ float4 *sk_partial(void *ws, const WorkTile &w, int role, int tid)
{
    constexpr int NT = NWG * WG;   /* consumer threads: tid < NT */
    float4 *part =
        reinterpret_cast<float4 *>(static_cast<char *>(ws) + sk_counter_bytes(gridDim.x));
    return part + (size_t)(2 * w.slot + role) * (D / 8 + 1) * NT + tid;
}

/* This warp's partial out, then the warp counted in: returns whether it came first (and stops). */
template <int D, int NWG>
__device__ __forceinline__ bool sk_count_in(const float (&o)[D / 2], const float (&m)[2],
                                            const float (&l)[2], const WorkTile &w, void *ws,
                                            int tid, int lane)
{
    constexpr int NT = NWG * WG;
    unsigned *count = reinterpret_cast<unsigned *>(ws) + w.slot * SK_WARPS + tid / 32;
    float4 *mine = sk_partial<D, NWG>(ws, w, w.role, tid);
#pragma unroll
    for (int j = 0; j < D / 8; j++)
        mine[j * NT] = make_float4(o[4 * j], o[4 * j + 1], o[4 * j + 2], o[4 * j + 3]);
    mine[D / 8 * NT] = make_float4(m[0], m[1], l[0], l[1]);
    __threadfence();   /* my partial is visible before my count */
    __syncwarp();
    /* Lane 0 counts the warp in and, with its fence after the atomic, acquires what the other
     * piece's warp released before its count; the warp barrier then orders lanes 1-31 after
     * lane 0's acquire (a shuffle alone carries the value, not the ordering: under the PTX
     * memory model their reads of the partial need the barrier). */
    unsigned first = 0;
    if (lane == 0) {
        first = atomicAdd(count, 1u) == 0;
        __threadfence();   /* the other partial, counted in before mine, is visible */
    }
    __syncwarp();
    return __shfl_sync(0xffffffffu, first, 0);
}

/* The second piece: the other's partial merged into this thread's rows. */
template <int D, int NWG>
__device__ __forceinline__ void sk_merge(float (&o)[D / 2], float (&m)[2], float (&l)[2],
                                         const WorkTile &w, void *ws, int tid, float c)
{
    constexpr int NT = NWG * WG;
    const float4 *theirs = sk_partial<D, NWG>(ws, w, w.role ^ 1, tid);
    const float4 ml = __ldcg(theirs + D / 8 * NT);
    const float m_o[2] = {ml.x, ml.y}, l_o[2] = {ml.z, ml.w};
    float a_me[2], a_o[2];
#pragma unroll
    for (int a = 0; a < 2; a++) {
        const float mx = fmaxf(m[a], m_o[a]);
        const float mc = (mx == -INFINITY ? 0.f : mx) * c;
        a_me[a] = ex2_approx(m[a] * c - mc);
        a_o[a] = ex2_approx(m_o[a] * c - mc);
        l[a] = merge(l[a], a_me[a], l_o[a], a_o[a]);
        m[a] = mx;
    }
#pragma unroll
    for (int j = 0; j < D / 8; j++) {
        const float4 x = __ldcg(theirs + j * NT);
        o[4 * j] = merge(o[4 * j], a_me[0], x.x, a_o[0]);
        o[4 * j + 1] = merge(o[4 * j + 1], a_me[0], x.y, a_o[0]);
        o[4 * j + 2] = merge(o[4 * j + 2], a_me[1], x.z, a_o[1]);
        o[4 * j + 3] = merge(o[4 * j + 3], a_me[1], x.w, a_o[1]);
    }
}

/* grid: one block per SM when not causal (persistent), one per work tile when causal; block: NWG
 * consumer warpgroups (0 .. NWG-1) + one producer warpgroup (NWG). Q, K, V: tensor maps over
 * [B*H, N, D] bf16; O: [B, H, Nq, D] bf16; lse: [B, H, Nq] float; ws: stream-K's workspace. */
template <int D, int NWG, int Bc, bool SPLIT>
__global__ void __launch_bounds__((NWG + 1) * WG, 1)
attention_fwd(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
              const __grid_constant__ CUtensorMap tmV, bf16 *__restrict__ O,
              float *__restrict__ lse, unsigned BH, unsigned G, unsigned n_dp, void *ws, int Nq,
              int Nk, float c, float scale, int causal)
{
    constexpr int Br = 64 * NWG;
    static_assert(!SPLIT || (NWG * 4 == SK_WARPS && NWG * WG == SK_THREADS),
                  "stream-K's workspace is sized for SK_WARPS consumer warps");
    extern __shared__ uint8_t smem_raw[];
    /* Swizzle atoms must sit on 1024-byte lines: round the base up (the launch adds 1 KB). */
    const uint32_t sQ = (smem_u32(smem_raw) + 1023u) & ~1023u;
    /* stage i of K at sK + i * KV, of V at sV + i * KV (no array: a run-time index would put it
     * in local memory) */
    constexpr uint32_t KV = tile_bytes<D>(Bc);
    const uint32_t sK = sQ + tile_bytes<D>(Br), sV = sK + STAGES * KV;
    /* mbarriers, 8 bytes each, after the tiles: Q full, Q empty (every consumer warp is done
     * with this work tile's Q); per stage K full, V full (TMA landed), K empty, V empty (every
     * consumer warp is done reading it) */
    const uint32_t bar_q = sV + STAGES * KV, empty_q = bar_q + 8, full_k = empty_q + 8,
                   full_v = full_k + 8 * STAGES, empty_k = full_v + 8 * STAGES,
                   empty_v = empty_k + 8 * STAGES;

    const int tid = threadIdx.x, wg = tid / WG, warp = (tid % WG) / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const TileScheduler<Br, Bc, SPLIT> sched(BH, G, n_dp, Nq, Nk, causal);

    if (tid == 0) {
        mbar_init(bar_q, 1);             /* full: the producer's arrive.expect_tx + the bytes */
        mbar_init(empty_q, NWG * 4);     /* empty: one arrival per consumer warp */
        for (int i = 0; i < STAGES; i++) {
            mbar_init(full_k + 8 * i, 1);
            mbar_init(full_v + 8 * i, 1);
            mbar_init(empty_k + 8 * i, NWG * 4);
            mbar_init(empty_v + 8 * i, NWG * 4);
        }
        mbar_fence_init();
    }
    __syncthreads();   /* the last block-wide barrier: from here on, mbarriers only */

    /* K_j and V_j of work tile w into stage i % STAGES (i counts key tiles over the block's whole
     * life), each once every consumer warp has released what the stage held: the n-th use of a
     * stage waits for the consumers' (n-1)-th release. One thread issues. */
    auto load_kv = [&](const WorkTile &w, int j, int i) {
        const int st = i % STAGES;
        const uint32_t empty_parity = ((i / STAGES) & 1) ^ 1;
        mbar_wait(empty_k + 8 * st, empty_parity);
        mbar_arrive_expect_tx(full_k + 8 * st, KV);
        load_tile<Bc, D>(sK + st * KV, &tmK, (w.j0 + j) * Bc, w.bh, full_k + 8 * st);
        mbar_wait(empty_v + 8 * st, empty_parity);
        mbar_arrive_expect_tx(full_v + 8 * st, KV);
        load_tile<Bc, D>(sV + st * KV, &tmV, (w.j0 + j) * Bc, w.bh, full_v + 8 * st);
    };

    if (wg == NWG) {
        /* ------------------------------------------------------------------ the producer */
        setmaxnreg_dec<PRODUCER_REGS>();   /* all 4 warps: the instruction is warpgroup-wide */
        if (tid % WG == 0) {   /* one thread issues every copy */
            tma_prefetch_map(&tmQ);
            tma_prefetch_map(&tmK);
            tma_prefetch_map(&tmV);
            produce<D>(sched, &tmQ, sQ, bar_q, empty_q, load_kv);
        }
        return;   /* copies in flight complete on the mbarriers; the block lives on */
    }

    /* -------------------------------------------------------------------------- consumers */
    setmaxnreg_inc<CONSUMER_REGS>();   /* waits until the producer's registers are back */
    const uint32_t q_wg = sQ + 64 * 128 * wg;   /* this warpgroup's 64 rows in each Q atom */

    float o[D / 2];        /* O accumulator, 64 x D per warpgroup (layout: mma_sm90.cuh) */
    float s[Bc / 2];       /* S accumulator, then P in fp32 */
    uint32_t p[Bc / 4];    /* P in bf16: the A operand of P V */

    /* Stage i % STAGES of K (or V) is in use for the (i / STAGES)-th time: its full phase
     * parity. Release: each warp, once its wgmma.wait_group says the reads are done. The index i
     * runs over the block's whole life (it + j), as the producer's does. */
    auto wait_full = [&](uint32_t full, int i) {
        mbar_wait(full + 8 * (i % STAGES), (i / STAGES) & 1);
    };
    auto release = [&](uint32_t empty, int i) {
        if (lane == 0)
            mbar_arrive(empty + 8 * (i % STAGES));
    };
    /* Ping-pong turns: warpgroup w waits on named barrier 1 + w for its turn (its own 128
     * threads + the 128 of the one before it, which arrive there when they have issued), issues,
     * then hands the turn on to w + 1. Per work tile every warpgroup issues n_tiles + 1 times,
     * so the turns run on from one work tile into the next; the last warpgroup's first arrival
     * is the initial one below and it skips its very last, so each barrier sees exactly as many
     * arrivals as waits and none is left pending at exit. */
    static_assert(NWG == 2, "the turns are written for two warpgroups");
    auto my_turn = [&]() { named_bar_sync(1 + wg, 2 * WG); };
    auto your_turn = [&](bool last) {
        if (!(last && wg == NWG - 1))
            named_bar_arrive(1 + (wg + 1) % NWG, 2 * WG);
    };
    if (wg == NWG - 1)
        named_bar_arrive(1, 2 * WG);   /* warpgroup 0 goes first */

    int it = 0;
    for (unsigned k = 0; k < sched.count(); k++) {
        const WorkTile w = sched.get(k);
        const int wg_row0 = w.q0 + 64 * wg;   /* first query row of this warpgroup */
        const int row[2] = {wg_row0 + 16 * warp + g, wg_row0 + 16 * warp + g + 8};   /* a = 0, 1 */
        float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
#pragma unroll
        for (int i = 0; i < D / 2; i++)
            o[i] = 0.f;

        /* A tile needs the mask iff it is ragged (past Nk) or crosses this warpgroup's diagonal.
         * Never drop the ragged half: TMA fills keys past Nk with zeros, scores of 0, not -inf. */
        auto needs_mask = [&](int k0) {
            return k0 + Bc > Nk || (causal && k0 + Bc - 1 > wg_row0);
        };

        /* Prologue: S_0 = Q K_0^T; its softmax. */
        mbar_wait(bar_q, k & 1);
        wait_full(full_k, it);

        my_turn();
        wgmma_fence();
        issue_qk<D, Bc, Br>(s, q_wg, sK + (it % STAGES) * KV);
        wgmma_commit();
        your_turn(false);
        wgmma_wait<0>();
        reg_fence(s);
        release(empty_k, it);
        if (w.n_tiles == 1 && lane == 0)
            mbar_arrive(empty_q);   /* the last S of this work tile is done: Q may be replaced */
        online_softmax<Bc>(s, m, l, alpha, c, needs_mask(w.j0 * Bc), w.j0 * Bc, row, Nk, causal,
                           t);
#pragma unroll
        for (int i = 0; i < Bc / 4; i++)
            p[i] = pack_bf16(s[2 * i], s[2 * i + 1]);

        for (int j = 1; j < w.n_tiles; j++) {
            /* K_j and V_{j-1} have landed (the producer has been ahead since the start). */
            wait_full(full_k, it + j);
            wait_full(full_v, it + j - 1);

            /* Issue S_j = Q K_j^T, then O += P_{j-1} V_{j-1}: two groups, both on the tensor
             * cores while this warpgroup goes on. */
            reg_fence(o);
            reg_fence(p);
            my_turn();
            wgmma_fence();
            issue_qk<D, Bc, Br>(s, q_wg, sK + ((it + j) % STAGES) * KV);
            wgmma_commit();
            issue_pv<D, Bc>(o, p, sV + ((it + j - 1) % STAGES) * KV);
            wgmma_commit();
            your_turn(false);

            /* S_j done (groups retire in order): K_j's stage goes back to the producer (and,
             * after the last S, Q), and the softmax runs while P V is still running. */
            wgmma_wait<1>();
            reg_fence(s);
            release(empty_k, it + j);
            if (j == w.n_tiles - 1 && lane == 0)
                mbar_arrive(empty_q);
            const int k0 = (w.j0 + j) * Bc;
            online_softmax<Bc>(s, m, l, alpha, c, needs_mask(k0), k0, row, Nk, causal, t);

            /* P V done: V_{j-1}'s stage goes back; rescale O to the new max and hand P_j over. */
            wgmma_wait<0>();
            reg_fence(o);
            reg_fence(p);
            release(empty_v, it + j - 1);
#pragma unroll
            for (int i = 0; i < D / 2; i++)
                o[i] *= alpha[(i / 2) % 2];
#pragma unroll
            for (int i = 0; i < Bc / 4; i++)
                p[i] = pack_bf16(s[2 * i], s[2 * i + 1]);
        }

        /* The last P V; its V stage goes back too (the next work tile's loads wait for it). */
        wait_full(full_v, it + w.n_tiles - 1);
        reg_fence(o);
        reg_fence(p);
        my_turn();
        wgmma_fence();
        issue_pv<D, Bc>(o, p, sV + ((it + w.n_tiles - 1) % STAGES) * KV);
        wgmma_commit();
        your_turn(sched.last(k));
        wgmma_wait<0>();
        reg_fence(o);
        release(empty_v, it + w.n_tiles - 1);
        it += w.n_tiles;

        /* Epilogue: finish the row sums across the quad, O = acc / l, lse = m * scale + ln l,
         * plain stores with the row guard as in step 07. Meanwhile the producer is already
         * loading the next work tile's Q, K and V. */
#pragma unroll
        for (int a = 0; a < 2; a++) {
            l[a] += __shfl_xor_sync(0xffffffffu, l[a], 1);
            l[a] += __shfl_xor_sync(0xffffffffu, l[a], 2);
        }
        if (SPLIT && w.slot >= 0) {   /* a cut work tile: the second piece stores its rows */
            if (sk_count_in<D, NWG>(o, m, l, w, ws, tid, lane))
                continue;
            sk_merge<D, NWG>(o, m, l, w, ws, tid, c);
        }
        bf16 *Ob = O + (size_t)w.bh * Nq * D;
        float *lseb = lse + (size_t)w.bh * Nq;
#pragma unroll
        for (int a = 0; a < 2; a++) {
            if (row[a] >= Nq)
                continue;   /* rows past Nq were computed from zero queries; never stored */
            const float inv = 1.f / l[a];
            bf16 *out = Ob + (size_t)row[a] * D + 2 * t;
#pragma unroll
            for (int j = 0; j < D / 8; j++)
                *reinterpret_cast<uint32_t *>(out + 8 * j) =
                    pack_bf16(o[4 * j + 2 * a] * inv, o[4 * j + 2 * a + 1] * inv);
            if (t == 0)
                lseb[row[a]] = m[a] * scale + logf(l[a]);
        }
    }
}

/* ------------------------------------------------------------------------ launch wrapper */

static attn_status supports(const attn_problem *p, int backward, const char **why)
{
    attn_status s = attn_problem_valid(p, why);
    if (s != ATTN_OK)
        return s;
    if (backward) {
        *why = "forward only (the backward is step 06)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (p->dtype != ATTN_BF16) {
        *why = "bf16 only (wgmma takes 16-bit operands; fp32 stops at step 02)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (p->head_dim != 64 && p->head_dim != 128) {
        *why = "head_dim must be 64 or 128 (swizzle atoms of 64 features, tiles sized per D)";
        return ATTN_ERR_UNSUPPORTED;
    }
    if (!(p->scale > 0.f)) {
        *why = "scale must be > 0 (the running max is taken on raw scores, as in FA2)";
        return ATTN_ERR_UNSUPPORTED;
    }
    const int Br = 64 * (p->head_dim == 64 ? Tiles<64>::NWG : Tiles<128>::NWG);
    if ((size_t)p->batch * p->heads * ((p->seq_q + Br - 1) / Br) > 2147483647u) {
        *why = "B*H*ceil(Nq/128) above 2^31-1 work tiles (the grid limit)";
        return ATTN_ERR_UNSUPPORTED;
    }
    *why = NULL;
    return ATTN_OK;
}

/* Stream-K only at D = 128, not causal: at D = 64 it gained at most 1.5% on the H200 and its
 * code cost the other kernels more than that even when it cut nothing, so they are built
 * without it (SPLIT = false). The workspace is asked for before the launch, maybe for another
 * device, so it may not depend on the GPU: it is sized for up to SK_MAX_GRID blocks (GH100 has
 * 144 SMs; an H200 132), and a larger grid runs without stream-K. */
constexpr long long SK_MAX_GRID = 144;
/* Cutting a tile costs each piece a start (Q and K in flight, S_0 alone) and a partial written
 * to and read from global memory (68 KB at D = 128); below this many key tiles per work tile
 * that costs more than the last round's idle SMs. */
constexpr long long SK_MIN_KEY_TILES = 16;

static bool streamk(const attn_problem *p)
{
    return !p->causal && p->head_dim == 128;
}

static size_t sk_bytes(long long blocks, int d)
{
    return sk_counter_bytes((unsigned)blocks) + (size_t)blocks * 2 * sk_partial_bytes(d);
}

static size_t workspace_bytes(const attn_problem *p, int backward)
{
    if (backward || !streamk(p))
        return 0;
    const long long n_work = (long long)p->batch * p->heads * ((p->seq_q + 127) / 128);
    const long long blocks = n_work < SK_MAX_GRID ? n_work : SK_MAX_GRID;
    return blocks > 1 ? sk_bytes(blocks, p->head_dim) : 0;
}

/* The tensor map of one of Q, K, V: the [B, H, N, D] tensor seen as 3-D (D, N, B*H), innermost
 * first, so that a box never crosses from one head into the next: rows past N of a head are
 * out of bounds and come back as zeros (a 2-D map over B*H*N rows would hand the next head's
 * first rows instead). Box: 64 features (128 bytes) x `rows` rows x 1 head, 128-byte swizzle,
 * which is step 07's smem layout, atom by atom. */
static void *encode_cache;   /* cuTensorMapEncodeTiled, once step_driver_fn finds it */

static attn_status make_map(PFN_cuTensorMapEncodeTiled_v12000 encode, CUtensorMap *map,
                            const void *ptr, int bh, int n, int d, int rows)
{
    const cuuint64_t dim[3] = {(cuuint64_t)d, (cuuint64_t)n, (cuuint64_t)bh};
    const cuuint64_t stride[2] = {(cuuint64_t)d * 2, (cuuint64_t)n * d * 2};   /* bytes, dims 1, 2 */
    const cuuint32_t box[3] = {64, (cuuint32_t)rows, 1};
    const cuuint32_t elem_stride[3] = {1, 1, 1};
    const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void *>(ptr),
                              dim, stride, box, elem_stride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? ATTN_OK : ATTN_ERR_CUDA;
}

template <int D, int Bc, bool SPLIT>
static attn_status launch(const attn_problem *p, const void *q, const void *k, const void *v,
                          void *o, float *lse, void *ws, cudaStream_t stream)
{
    constexpr int NWG = Tiles<D>::NWG, Br = 64 * NWG;
    /* The driver's encoder, reached through the runtime (no -lcuda), kept once found */
    const auto encode = (PFN_cuTensorMapEncodeTiled_v12000)step_driver_fn(
        &encode_cache, "cuTensorMapEncodeTiled", 12000);
    if (!encode)
        return ATTN_ERR_CUDA;
    const int bh = p->batch * p->heads;
    CUtensorMap tmQ, tmK, tmV;
    if (make_map(encode, &tmQ, q, bh, p->seq_q, D, Br) != ATTN_OK ||
        make_map(encode, &tmK, k, bh, p->seq_k, D, Bc) != ATTN_OK ||
        make_map(encode, &tmV, v, bh, p->seq_k, D, Bc) != ATTN_OK)
        return ATTN_ERR_CUDA;
    /* Q, STAGES K and V stages, the mbarriers, plus 1 KB to align the base to a swizzle line */
    constexpr size_t smem = tile_bytes<D>(Br) + 2 * STAGES * tile_bytes<D>(Bc) +
                            8 * (2 + 4 * STAGES) + 1024;
    auto kernel = attention_fwd<D, NWG, Bc, SPLIT>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
        cudaSuccess)
        return ATTN_ERR_CUDA;
    /* Not causal: one block per SM (persistent). Causal: one block per work tile. */
    const long long n_work = (long long)bh * ((p->seq_q + Br - 1) / Br);
    long long blocks = n_work;
    if (!p->causal) {
        int dev, sms;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return ATTN_ERR_CUDA;
        blocks = n_work < sms ? n_work : sms;
    }
    /* Work tiles [0, n_dp) go whole; with stream-K the last full round and the remainder are
     * cut into equal ranges of key tiles (none when the tiles fill the rounds exactly). H200,
     * N = 4096, B*H = 32: 1024 tiles on 132 blocks, 6 rounds whole, 232 tiles cut into 132
     * ranges of 45.7 key tiles (26 of 160 keys per work tile: use_bc_alt). */
    long long n_dp = n_work;
    const long long n_kt = (p->seq_k + Bc - 1) / Bc;
    if (SPLIT && n_work > blocks && n_work % blocks != 0 && blocks <= SK_MAX_GRID &&
        n_kt >= SK_MIN_KEY_TILES && (n_work % blocks + blocks) * n_kt < (1ll << 32)) {
        n_dp = (n_work / blocks - 1) * blocks;
        /* the counters start at 0 (the workspace comes undefined); the partials need nothing */
        if (!ws || cudaMemsetAsync(ws, 0, sk_counter_bytes((unsigned)blocks), stream) != cudaSuccess)
            return ATTN_ERR_CUDA;
    }
    /* Heads per section of the work order: 1 when not causal; when causal, as many heads as
     * have their K and V in 2/3 of L2 (at least 1), then as even as one G allows,
     * G = ceil(B*H / sections): a short last section would end the run on its heavy tiles.
     * H200 (60 MB of L2), B*H = 32: 32 heads per section at N = 4096, D = 64; 16 at D = 128; 5
     * at N = 16384, D = 128 (5 * 6 + 2). */
    int l2 = 0;
    if (p->causal) {
        int dev;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess)
            return ATTN_ERR_CUDA;
    }
    const size_t kv_head = (size_t)p->seq_k * D * 2 * sizeof(bf16);
    size_t G = (size_t)l2 * 2 / 3 / kv_head;
    G = G < 1 ? 1 : G > (size_t)bh ? (size_t)bh : G;
    const size_t sections = (bh + G - 1) / G;
    G = (bh + sections - 1) / sections;
    const float c = p->scale * 1.4426950408889634f;   /* scale * log2(e): exp2 in the loop */
    kernel<<<(unsigned)blocks, (NWG + 1) * WG, smem, stream>>>(
        tmQ, tmK, tmV, (bf16 *)o, lse, bh, (unsigned)G, (unsigned)n_dp, ws, p->seq_q, p->seq_k, c,
        p->scale, p->causal);
    return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
}

/* D = 128, not causal: the key tile per problem. Keys come in whole tiles, so the ragged last one
 * costs as much as a full one: N = 4096 is 24 tiles of 176 (4224 keys computed, 3.1% waste) or 26
 * of 160 (4160, 1.6%). A tile of Bc keys costs about Bc + BC_TILE_COST keys' time (the per-tile
 * work that does not shrink with Bc: the turns, the waits, the O rescale); fitted on the H200,
 * this picks 160 at N = 2048 and 4096 of the standard sweep and 176 elsewhere. */
constexpr long long BC_TILE_COST = 16;

static bool use_bc_alt(int nk)
{
    constexpr long long a = Tiles<128>::Bc_alt, f = Tiles<128>::Bc_full;
    return (nk + a - 1) / a * (a + BC_TILE_COST) < (nk + f - 1) / f * (f + BC_TILE_COST);
}

static attn_status forward(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream)
{
    attn_status s = step_check_forward(supports, workspace_bytes, p, q, k, v, o, lse, workspace);
    if (s != ATTN_OK)
        return s;
    if (step_device_cc() != 90)   /* TMA maps, wgmma, setmaxnreg: sm_90a only; never launch */
        return ATTN_ERR_UNSUPPORTED;   /* elsewhere, and never touch the driver API there */
    if (p->head_dim == 64)
        return p->causal
                   ? launch<64, Tiles<64>::Bc, false>(p, q, k, v, o, lse, workspace, stream)
                   : launch<64, Tiles<64>::Bc_full, false>(p, q, k, v, o, lse, workspace, stream);
    if (p->causal)
        return launch<128, Tiles<128>::Bc, false>(p, q, k, v, o, lse, workspace, stream);
    return use_bc_alt(p->seq_k)
               ? launch<128, Tiles<128>::Bc_alt, true>(p, q, k, v, o, lse, workspace, stream)
               : launch<128, Tiles<128>::Bc_full, true>(p, q, k, v, o, lse, workspace, stream);
}

extern "C" const attn_step attn_step_info = {
    "11_persistent",
    "a persistent grid and a tile scheduler: head-major order, causal sections, stream-K, the key tile per N",
    supports, workspace_bytes, forward, nullptr, nullptr, 90, 90,
    "needs a Hopper GPU (sm_90a): TMA, wgmma, setmaxnreg",
};
