/* Step 07: wgmma, Hopper's asynchronous warpgroup MMA (sm_90a).
 *
 * The change against step 05: both products leave mma.sync (one warp, m16n8k16, operands pulled
 * into registers with ldmatrix) for wgmma.mma_async (one WARPGROUP = 4 warps, m64nNk16, the
 * tensor cores read the operands straight from shared memory, and the instruction returns before
 * the product is done):
 *     S  = Q K^T   wgmma m64n128k16 SS: Q and K from smem, both K-major; D/16 per key tile
 *     O += P V     wgmma m64nDk16 RS: P from registers (the S accumulator packed to bf16 IS the
 *                  A fragment, mma_sm90.cuh), V from smem as an MN-major B (transpose bit): V
 *                  stays [keys, D] row-major; Bc/16 per key tile
 * A warpgroup owns 64 query rows (wgmma's M); a block is 2 warpgroups = Br = 128 query rows, and a
 * key tile Bc = 128 keys, for D = 64 and 128. Two warpgroups of 64 rows rather than one issuing
 * two M=64 wgmmas: 64 rows cost a thread O D/2 + S Bc/2 + P Bc/4 registers (D=128: 160, 245 in
 * all), and 128 would spill; two also give the SM 8 warps. The rest is step 05: exp2, causal tile
 * skipping, the heaviest causal blocks first.
 *
 * Shared memory in the 128-byte swizzle, the layout the descriptors ask for: a tile [rows][D] is
 * D/64 "atoms" of [rows][64 bf16], 128-byte rows of 8 chunks of 16 B, chunk c of row r stored at
 * position c ^ (r % 8), each tile 1024-byte aligned (the hardware XORs address bits 4-6 with bits
 * 7-9). mma_sm90.cuh describes it and the descriptors (K-major Q, K; MN-major V). Loads:
 * cp.async 16 B per thread, zero-filled past Nq / Nk; K and V double-buffered.
 *
 * The asynchronous MMA and its fences, per key tile j >= 1 (each warpgroup):
 *     cp.async.wait_group 0; fence.proxy.async; __syncthreads   K_j, V_{j-1} landed, and visible
 *                                                               to the tensor cores (async proxy)
 *     wgmma.fence                                  O, P were written by ordinary instructions
 *     S_j = Q K_j^T ............ commit (group 1)
 *     O  += P_{j-1} V_{j-1} .... commit (group 2)
 *     cp.async K_{j+1}, V_j into the free stages
 *     wgmma.wait_group 1         S_j is done (groups retire in order); P V still runs
 *     softmax(S_j) in place      (mask only if needed; max, ex2, row sums)  <- overlaps P V
 *     wgmma.wait_group 0         O is done: O *= alpha_j, P_j = bf16(S_j)
 * softmax(S_j) hides under P V (FlashAttention-3's intra-warpgroup pipelining), but S_j itself is
 * waited for, and the __syncthreads per tile keeps the two warpgroups in step.
 *
 * Prediction (H200, bf16, N=4096). One block per SM, per key tile: MMA 2 warpgroups x 2 products
 * x 64*128*D*2 FLOP = 8.4 MFLOP at D=128, 2048 clocks at ~4096 dense bf16 FLOP/clock/SM; exps
 * 2 x 64 x 128 = 16384 at 16/clock = 1024 clocks. D=128 is MMA-bound and the exps fit under P V:
 * expect 430-500 TFLOP/s, short of FA3's ~640 because of the per-tile barrier, the loads issued
 * by the compute threads, the exposed S wait and 8 warps per SM. D=64: MMA 1024 clocks against
 * 1024 of exps, softmax-bound: ~1536 clocks per 4.2 MFLOP, expect 320-380. Causal at 4k: ~80% of
 * that on the causal FLOP count.
 *
 * Limits: forward only; bf16; D = 64 or 128; scale > 0 (the running max is taken on raw scores);
 * Hopper only (sm_90a: forward() refuses other GPUs). One block of 256 threads per SM
 * (registers), 161 KB (D=128) / 81 KB (D=64) of shared memory. Steps 08-10 replace the cp.async
 * loads and the block-wide barrier with TMA and mbarriers (08), give the loads a warpgroup of
 * their own (09), and make the two compute warpgroups take turns (10).
 *
 * Check when editing: `-Xptxas -v` must print no "(C7514) ... wgmma.mma_async instructions are
 * serialized" line (nor C7512, the same for want of registers). ptxas reports it as info, not
 * a warning, so -Werror does not catch it; touching O or P between the issue and
 * wgmma.wait_group 0 (where a reg_fence keeps the access) is enough to trigger it.
 *
 * Run:  build/attn run --step 07 --shape 4,8,4096,4096,128     (needs an H100 / H200)
 *       make diff A=05 B=07
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include "attention.h"
#include "mma_sm80.cuh"
#include "mma_sm90.cuh"
#include "step.cuh"

typedef __nv_bfloat16 bf16;

/* Tiles per head dim: NWG warpgroups of 64 query rows each (Br = 64 * NWG), Bc keys per tile. */
template <int D> struct Tiles;
template <> struct Tiles<64> {
    static constexpr int NWG = 2, Bc = 128;
};
template <> struct Tiles<128> {
    static constexpr int NWG = 2, Bc = 128;
};

constexpr int WG = 128;   /* threads per warpgroup */

/* Shared-memory bytes of one tile of `rows` rows x D bf16: D/64 swizzle atoms side by side, each
 * rows x 128 bytes. */
template <int D> __host__ __device__ constexpr uint32_t tile_bytes(int rows)
{
    return (uint32_t)(D / 64) * rows * 128u;
}

/* rows [row0, row0 + ROWS) of a [N, D] matrix -> a swizzled smem tile, 16 bytes per cp.async;
 * rows past N are zero-filled (src-size 0, nothing read). Chunk c of a row goes to atom c / 8,
 * chunk position (c % 8) ^ (row % 8). */
template <int ROWS, int D, int NT>
__device__ __forceinline__ void load_tile(uint32_t dst, const bf16 *__restrict__ src, int row0,
                                          int N, int tid)
{
    constexpr int CH = D / 8;   /* 16-byte chunks per row */
#pragma unroll
    for (int i = 0; i < (ROWS * CH + NT - 1) / NT; i++) {
        const int x = tid + i * NT, r = x / CH, c = x % CH;
        if (ROWS * CH % NT != 0 && x >= ROWS * CH)
            break;
        const bool in = row0 + r < N;
        cp_async_16(dst + (c / 8) * (ROWS * 128) + sw128_offset(r, c % 8),
                    src + (size_t)(in ? row0 + r : 0) * D + c * 8, in);
    }
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

/* grid: (B*H, ceil(Nq / Br)), the query tile reversed so the heaviest (causal) go first;
 * block: NWG warpgroups. Q, K, V, O: [B, H, N, D] bf16; lse: [B, H, Nq] float. */
template <int D, int NWG, int Bc>
__global__ void __launch_bounds__(NWG * WG, 1)
attention_fwd(const bf16 *__restrict__ Q, const bf16 *__restrict__ K, const bf16 *__restrict__ V,
              bf16 *__restrict__ O, float *__restrict__ lse, int Nq, int Nk, float c, float scale,
              int causal)
{
    constexpr int Br = 64 * NWG, NT = NWG * WG;
    extern __shared__ uint8_t smem_raw[];
    /* Swizzle atoms must sit on 1024-byte lines: round the base up (the launch adds 1 KB). */
    const uint32_t sQ = (smem_u32(smem_raw) + 1023u) & ~1023u;
    /* stage i of K at sK + i * KV, of V at sV + i * KV (no array: a run-time index would put it
     * in local memory) */
    constexpr uint32_t KV = tile_bytes<D>(Bc);
    const uint32_t sK = sQ + tile_bytes<D>(Br), sV = sK + 2 * KV;

    const int tid = threadIdx.x, wg = tid / WG, warp = (tid % WG) / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;
    const size_t bh = blockIdx.x;
    const int q0 = (gridDim.y - 1 - blockIdx.y) * Br;
    Q += bh * Nq * D;
    K += bh * Nk * D;
    V += bh * Nk * D;
    O += bh * Nq * D;
    lse += bh * Nq;

    /* Causal: the block's last visible key is q0 + Br - 1; tiles past it are skipped. */
    const int kv_end = causal ? min(Nk, q0 + Br) : Nk;
    const int n_tiles = (kv_end + Bc - 1) / Bc;
    const int wg_row0 = q0 + 64 * wg;   /* first query row of this warpgroup */
    const int row[2] = {wg_row0 + 16 * warp + g, wg_row0 + 16 * warp + g + 8};   /* rows a = 0, 1 */
    const uint32_t q_wg = sQ + 64 * 128 * wg;   /* this warpgroup's 64 rows in each Q atom */

    float o[D / 2];        /* O accumulator, 64 x D per warpgroup (layout: mma_sm90.cuh) */
    float s[Bc / 2];       /* S accumulator, then P in fp32 */
    uint32_t p[Bc / 4];    /* P in bf16: the A operand of P V */
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
#pragma unroll
    for (int i = 0; i < D / 2; i++)
        o[i] = 0.f;

    /* A tile needs the mask iff it is ragged (past Nk) or crosses this warpgroup's diagonal. */
    auto needs_mask = [&](int k0) {
        return k0 + Bc > Nk || (causal && k0 + Bc - 1 > wg_row0);
    };

    /* Prologue: {Q, K_0}, then {K_1, V_0} in flight; S_0 = Q K_0^T; its softmax. */
    load_tile<Br, D, NT>(sQ, Q, q0, Nq, tid);
    load_tile<Bc, D, NT>(sK, K, 0, Nk, tid);
    cp_async_commit();
    if (n_tiles > 1)
        load_tile<Bc, D, NT>(sK + KV, K, Bc, Nk, tid);
    load_tile<Bc, D, NT>(sV, V, 0, Nk, tid);
    cp_async_commit();
    cp_async_wait<1>();
    fence_proxy_async_smem();
    __syncthreads();

    wgmma_fence();
    issue_qk<D, Bc, Br>(s, q_wg, sK);
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(s);
    online_softmax<Bc>(s, m, l, alpha, c, needs_mask(0), 0, row, Nk, causal, t);
#pragma unroll
    for (int i = 0; i < Bc / 4; i++)
        p[i] = pack_bf16(s[2 * i], s[2 * i + 1]);

    for (int j = 1; j < n_tiles; j++) {
        /* K_j and V_{j-1} have landed (issued one iteration ago); every warpgroup is past
         * iteration j-1, so K_{j-1} and V_{j-2}'s buffers are free. */
        cp_async_wait<0>();
        fence_proxy_async_smem();
        __syncthreads();

        /* Issue S_j = Q K_j^T, then O += P_{j-1} V_{j-1}: two groups, both on the tensor cores
         * while this warpgroup goes on. */
        reg_fence(o);
        reg_fence(p);
        wgmma_fence();
        issue_qk<D, Bc, Br>(s, q_wg, sK + (j & 1) * KV);
        wgmma_commit();
        issue_pv<D, Bc>(o, p, sV + ((j - 1) & 1) * KV);
        wgmma_commit();

        /* Meanwhile: the loads for the next iteration, K_{j+1} and V_j. */
        if (j + 1 < n_tiles)
            load_tile<Bc, D, NT>(sK + ((j + 1) & 1) * KV, K, (j + 1) * Bc, Nk, tid);
        load_tile<Bc, D, NT>(sV + (j & 1) * KV, V, j * Bc, Nk, tid);
        cp_async_commit();

        /* S_j done (groups retire in order); its softmax runs while P V is still running. */
        wgmma_wait<1>();
        reg_fence(s);
        online_softmax<Bc>(s, m, l, alpha, c, needs_mask(j * Bc), j * Bc, row, Nk, causal, t);

        /* P V done: rescale O to the new max and hand P_j over. */
        wgmma_wait<0>();
        reg_fence(o);
        reg_fence(p);
#pragma unroll
        for (int i = 0; i < D / 2; i++)
            o[i] *= alpha[(i / 2) % 2];
#pragma unroll
        for (int i = 0; i < Bc / 4; i++)
            p[i] = pack_bf16(s[2 * i], s[2 * i + 1]);
    }

    /* The last P V. */
    cp_async_wait<0>();
    fence_proxy_async_smem();
    __syncthreads();
    reg_fence(o);
    reg_fence(p);
    wgmma_fence();
    issue_pv<D, Bc>(o, p, sV + ((n_tiles - 1) & 1) * KV);
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(o);

    /* Epilogue: finish the row sums across the quad, O = acc / l, lse = m * scale + ln l. */
#pragma unroll
    for (int a = 0; a < 2; a++) {
        l[a] += __shfl_xor_sync(0xffffffffu, l[a], 1);
        l[a] += __shfl_xor_sync(0xffffffffu, l[a], 2);
        if (row[a] >= Nq)
            continue;   /* rows past Nq were computed from zero queries; never stored */
        const float inv = 1.f / l[a];
        bf16 *out = O + (size_t)row[a] * D + 2 * t;
#pragma unroll
        for (int j = 0; j < D / 8; j++)
            *reinterpret_cast<uint32_t *>(out + 8 * j) =
                pack_bf16(o[4 * j + 2 * a] * inv, o[4 * j + 2 * a + 1] * inv);
        if (t == 0)
            lse[row[a]] = m[a] * scale + logf(l[a]);
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

template <int D>
static attn_status launch(const attn_problem *p, const void *q, const void *k, const void *v,
                          void *o, float *lse, cudaStream_t stream)
{
    constexpr int NWG = Tiles<D>::NWG, Bc = Tiles<D>::Bc, Br = 64 * NWG;
    /* Q, two K and two V stages, plus 1 KB to align the base to a swizzle line */
    constexpr size_t smem = tile_bytes<D>(Br) + 4 * tile_bytes<D>(Bc) + 1024;
    auto kernel = attention_fwd<D, NWG, Bc>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
        cudaSuccess)
        return ATTN_ERR_CUDA;
    dim3 grid(p->batch * p->heads, (p->seq_q + Br - 1) / Br);
    const float c = p->scale * 1.4426950408889634f;   /* scale * log2(e): exp2 in the loop */
    kernel<<<grid, NWG * WG, smem, stream>>>((const bf16 *)q, (const bf16 *)k, (const bf16 *)v,
                                             (bf16 *)o, lse, p->seq_q, p->seq_k, c, p->scale,
                                             p->causal);
    return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
}

static attn_status forward(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream)
{
    attn_status s = step_check_forward(supports, workspace_bytes, p, q, k, v, o, lse, workspace);
    if (s != ATTN_OK)
        return s;
    if (step_device_cc() != 90)   /* wgmma is sm_90a only: never launch elsewhere */
        return ATTN_ERR_UNSUPPORTED;
    return p->head_dim == 64 ? launch<64>(p, q, k, v, o, lse, stream)
                             : launch<128>(p, q, k, v, o, lse, stream);
}

extern "C" const attn_step attn_step_info = {
    "07_wgmma",
    "wgmma: Q K^T and P V on Hopper's asynchronous warpgroup MMA, softmax overlapped with P V",
    supports, workspace_bytes, forward, nullptr, nullptr, 90, 90,
    "needs a Hopper GPU (sm_90a): wgmma",
};
