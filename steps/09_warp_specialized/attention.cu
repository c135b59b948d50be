/* Step 09: warp specialization, with register reallocation (sm_90a).
 *
 * The change against step 08: who loads. A third warpgroup, the PRODUCER, does nothing else: one
 * of its threads runs load_kv for every key tile of the block as soon as a stage is free, as far
 * ahead as the ring allows. Warpgroups 0 and 1, the CONSUMERS, only wait on full barriers,
 * compute and release. In step 08 thread 0 waited for the slowest warp before each refill and
 * held its warpgroup's next wgmma with it; now no compute warp ever waits for another, and the
 * two consumers drift apart freely, so the tensor cores often have one's GEMMs to run while the
 * other does its softmax (by chance; step 10 makes it so by design).
 *
 * Registers pay for the extra warpgroup. 384 threads at one block per SM get 65536 / 384 = 168
 * registers each, and a consumer at D = 128 needs about 200 (O 64, S 64, P 32, addresses), so
 * `setmaxnreg` moves them: the producer drops to 24 (setmaxnreg.dec: it only keeps a few
 * counters) and the consumers rise to 240 (setmaxnreg.inc waits until the pool has them):
 * 24 * 128 + 2 * 240 * 128 = 64512 <= 65536, FlashAttention-3's split. Without it ptxas fits the
 * consumers into 168 registers: they spill and the wgmmas are serialized.
 *
 * Prediction (H200, bf16, N = 4096): FlashAttention-3's ablation puts warp specialization at
 * +16% at D = 128 (570 -> 661 TFLOP/s on an H100). Expect +10-20% over step 08 at D = 128 and
 * less at D = 64, where the exps, not the loads, bound a tile (1024 clocks of MMA against 1024
 * of ex2 per key tile per SM).
 *
 * Limits: forward only; bf16; D = 64 or 128; scale > 0; any Nq, Nk >= 1; causal top-left with
 * tile skipping. Hopper only (sm_90a). One block of 384 threads per SM; shared memory 161 KB
 * (D = 128) / 81 KB (D = 64).
 *
 * Check when editing: `-Xptxas -v` must print no "(C7514) ... wgmma.mma_async instructions are
 * serialized" line (nor C7512, the same for want of registers) and 0 spill bytes; the SASS shows USETMAXREG.
 *
 * Run:  build/attn run --step 09 --shape 4,8,4096,4096,128     (needs an H100 / H200)
 *       make diff A=08 B=09
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>   /* CUtensorMap, PFN_cuTensorMapEncodeTiled (header only, no -lcuda) */
#include "attention.h"
#include "mma_sm80.cuh"
#include "mma_sm90.cuh"
#include "step.cuh"

typedef __nv_bfloat16 bf16;

/* Tiles per head dim: NWG consumer warpgroups of 64 query rows each (Br = 64 * NWG), Bc keys per
 * tile. */
template <int D> struct Tiles;
template <> struct Tiles<64> {
    static constexpr int NWG = 2, Bc = 128;
};
template <> struct Tiles<128> {
    static constexpr int NWG = 2, Bc = 128;
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

/* A block's work: the key tiles [j0, j0 + n_tiles) of the Br query rows from q0 of head bh. */
struct WorkTile {
    int bh, q0, j0, n_tiles;
};

/* The tile scheduler: the work tiles block (blockIdx.x, blockIdx.y) runs, in order: get(0), ...,
 * get(count() - 1). Here one, step 07's: head blockIdx.x, query tile blockIdx.y counted from
 * the last, so the heaviest causal tiles start first; causal, its key tiles end at its last
 * visible key, q0 + Br - 1. */
template <int Br, int Bc> struct TileScheduler {
    int Nk, causal;

    __device__ TileScheduler(int nk, int is_causal) : Nk(nk), causal(is_causal) {}

    __device__ unsigned count() const { return 1; }

    __device__ WorkTile get(unsigned) const
    {
        WorkTile x;
        x.bh = (int)blockIdx.x;
        x.q0 = (int)(gridDim.y - 1 - blockIdx.y) * Br;
        const int kv_end = causal ? min(Nk, x.q0 + Br) : Nk;
        x.j0 = 0;
        x.n_tiles = (kv_end + Bc - 1) / Bc;
        return x;
    }
};

/* The producer's one thread: per work tile its Q, then its K and V tiles through the ring
 * (load_kv: the kernel's, which knows the ring). */
template <int D, int Br, int Bc, class LoadKV>
__device__ __forceinline__ void produce(const TileScheduler<Br, Bc> &sched, const CUtensorMap *tmQ,
                                        uint32_t sQ, uint32_t bar_q, LoadKV load_kv)
{
    /* it counts K/V tiles over the block's whole life */
    int it = 0;
    for (unsigned k = 0; k < sched.count(); k++) {
        const WorkTile w = sched.get(k);
        mbar_arrive_expect_tx(bar_q, tile_bytes<D>(Br));
        load_tile<Br, D>(sQ, tmQ, w.q0, w.bh, bar_q);
        for (int j = 0; j < w.n_tiles; j++, it++)
            load_kv(w, j, it);
    }
}

/* grid: (B*H, ceil(Nq / Br)); block: NWG consumer warpgroups (0 .. NWG-1) + one producer
 * warpgroup (NWG). Q, K, V: tensor maps over [B*H, N, D] bf16; O: [B, H, Nq, D] bf16; lse:
 * [B, H, Nq] float. */
template <int D, int NWG, int Bc>
__global__ void __launch_bounds__((NWG + 1) * WG, 1)
attention_fwd(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
              const __grid_constant__ CUtensorMap tmV, bf16 *__restrict__ O,
              float *__restrict__ lse, int Nq, int Nk, float c, float scale, int causal)
{
    constexpr int Br = 64 * NWG;
    extern __shared__ uint8_t smem_raw[];
    /* Swizzle atoms must sit on 1024-byte lines: round the base up (the launch adds 1 KB). */
    const uint32_t sQ = (smem_u32(smem_raw) + 1023u) & ~1023u;
    /* stage i of K at sK + i * KV, of V at sV + i * KV (no array: a run-time index would put it
     * in local memory) */
    constexpr uint32_t KV = tile_bytes<D>(Bc);
    const uint32_t sK = sQ + tile_bytes<D>(Br), sV = sK + STAGES * KV;
    /* mbarriers, 8 bytes each, after the tiles: Q full; per stage K full, V full (TMA landed),
     * K empty, V empty (every consumer warp is done reading it) */
    const uint32_t bar_q = sV + STAGES * KV, full_k = bar_q + 8,
                   full_v = full_k + 8 * STAGES, empty_k = full_v + 8 * STAGES,
                   empty_v = empty_k + 8 * STAGES;

    const int tid = threadIdx.x, wg = tid / WG, warp = (tid % WG) / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const TileScheduler<Br, Bc> sched(Nk, causal);

    if (tid == 0) {
        mbar_init(bar_q, 1);             /* full: the producer's arrive.expect_tx + the bytes */
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
            produce<D>(sched, &tmQ, sQ, bar_q, load_kv);
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
        mbar_wait(bar_q, 0);
        wait_full(full_k, it);

        wgmma_fence();
        issue_qk<D, Bc, Br>(s, q_wg, sK + (it % STAGES) * KV);
        wgmma_commit();
        wgmma_wait<0>();
        reg_fence(s);
        release(empty_k, it);
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
            wgmma_fence();
            issue_qk<D, Bc, Br>(s, q_wg, sK + ((it + j) % STAGES) * KV);
            wgmma_commit();
            issue_pv<D, Bc>(o, p, sV + ((it + j - 1) % STAGES) * KV);
            wgmma_commit();

            /* S_j done (groups retire in order): K_j's stage goes back to the producer, and the
             * softmax runs while P V is still running. */
            wgmma_wait<1>();
            reg_fence(s);
            release(empty_k, it + j);
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

        /* The last P V; its V stage goes back too. */
        wait_full(full_v, it + w.n_tiles - 1);
        reg_fence(o);
        reg_fence(p);
        wgmma_fence();
        issue_pv<D, Bc>(o, p, sV + ((it + w.n_tiles - 1) % STAGES) * KV);
        wgmma_commit();
        wgmma_wait<0>();
        reg_fence(o);
        release(empty_v, it + w.n_tiles - 1);
        it += w.n_tiles;

        /* Epilogue: finish the row sums across the quad, O = acc / l, lse = m * scale + ln l,
         * plain stores with the row guard as in step 07. */
        bf16 *Ob = O + (size_t)w.bh * Nq * D;
        float *lseb = lse + (size_t)w.bh * Nq;
#pragma unroll
        for (int a = 0; a < 2; a++) {
            l[a] += __shfl_xor_sync(0xffffffffu, l[a], 1);
            l[a] += __shfl_xor_sync(0xffffffffu, l[a], 2);
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
    if ((size_t)p->batch * p->heads > 2147483647u || (p->seq_q + Br - 1) / Br > 65535) {
        *why = "B*H above 2^31-1 or Nq above 65535 query tiles (grid limits)";
        return ATTN_ERR_UNSUPPORTED;
    }
    *why = NULL;
    return ATTN_OK;
}

static size_t workspace_bytes(const attn_problem *p, int backward)
{
    (void)p;
    (void)backward;
    return 0;
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

template <int D>
static attn_status launch(const attn_problem *p, const void *q, const void *k, const void *v,
                          void *o, float *lse, cudaStream_t stream)
{
    constexpr int NWG = Tiles<D>::NWG, Bc = Tiles<D>::Bc, Br = 64 * NWG;
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
                            8 * (1 + 4 * STAGES) + 1024;
    auto kernel = attention_fwd<D, NWG, Bc>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
        cudaSuccess)
        return ATTN_ERR_CUDA;
    dim3 grid(bh, (p->seq_q + Br - 1) / Br);
    const float c = p->scale * 1.4426950408889634f;   /* scale * log2(e): exp2 in the loop */
    kernel<<<grid, (NWG + 1) * WG, smem, stream>>>(tmQ, tmK, tmV, (bf16 *)o, lse, p->seq_q,
                                                   p->seq_k, c, p->scale, p->causal);
    return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
}

static attn_status forward(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream)
{
    attn_status s = step_check_forward(supports, workspace_bytes, p, q, k, v, o, lse, workspace);
    if (s != ATTN_OK)
        return s;
    if (step_device_cc() != 90)   /* TMA maps, wgmma, setmaxnreg: sm_90a only; never launch */
        return ATTN_ERR_UNSUPPORTED;   /* elsewhere, and never touch the driver API there */
    return p->head_dim == 64 ? launch<64>(p, q, k, v, o, lse, stream)
                             : launch<128>(p, q, k, v, o, lse, stream);
}

extern "C" const attn_step attn_step_info = {
    "09_warp_specialized",
    "warp specialization: a producer warpgroup loads, two consumer warpgroups compute; setmaxnreg",
    supports, workspace_bytes, forward, nullptr, nullptr, 90, 90,
    "needs a Hopper GPU (sm_90a): TMA, wgmma, setmaxnreg",
};
