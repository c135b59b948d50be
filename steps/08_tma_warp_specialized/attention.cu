/* Step 08: TMA and warp specialization (sm_90a), FlashAttention-3's forward structure.
 *
 * Step 07 made the products asynchronous (wgmma) but kept everything else in the same 256
 * threads: each thread issued 16 cp.async per key tile, waited for them, and met the other
 * warpgroup at a __syncthreads every tile. Step 08 gives each job its own warps:
 *   - TMA (the tensor memory accelerator) copies a whole tile global -> shared from ONE
 *     instruction, `cp.async.bulk.tensor.3d`, described by a tensor map built on the host
 *     (cuTensorMapEncodeTiled, reached through the runtime's driver entry point: no -lcuda).
 *     The map's 128-byte swizzle writes exactly step 07's smem layout (below), so the wgmma
 *     descriptors, issue_qk, issue_pv and online_softmax are unchanged.
 *   - A ring of STAGES = 2 K/V stages synchronised with mbarriers instead of __syncthreads:
 *     full_k[s], full_v[s] (the producer's arrive.expect_tx + the TMA bytes) and empty_k[s],
 *     empty_v[s] (one arrival per consumer warp once its wgmma.wait_group says it is done).
 *   - Warp specialization: warpgroup 2 is the PRODUCER (one thread issues every copy; the other
 *     127 only hand their registers back and leave), warpgroups 0 and 1 are the CONSUMERS (64
 *     query rows each, Br = 128; Bc = 128 as in step 07 when causal, wider when not: below).
 *   - Register reallocation (setmaxnreg): 384 threads start at 65536 / 384 -> 168 registers;
 *     the producer drops to 24, the consumers rise to 240 (24*128 + 240*256 = 64512 <= 65536).
 *     Without it D=128 spills (step 07's consumer needs ~200) and ptxas serializes the wgmmas.
 *   - Ping-pong: the two consumers take turns to ISSUE their GEMMs (named barriers 1, 2), so the
 *     tensor cores run one warpgroup's GEMMs while the other does its softmax.
 *   - Head-major block order: the blocks that run at once take the query tiles of one head, so
 *     its K and V are read from DRAM once and then from L2 (step 07's order, head on x, spread
 *     132 blocks over 32 heads: 28% of DRAM bandwidth against cuDNN's 6%). Faster for step 08,
 *     which TMA keeps fed (+3% at N=4096, +9% at 16384, D=128); measured slower for step 07, which
 *     keeps its order. Causal goes by sections of heads instead: heaviest query tile first
 *     across as many heads as fit in L2, so that the SMs finish together (head by head, the
 *     last heads' heavy tiles ran alone at the end: +9-16% causal at N=2048-4096, notes/08).
 *   - Persistent grid (not causal): one block per SM walks the work tiles w = blockIdx.x,
 *     + gridDim.x, ... (128 query rows of one head each, in the order above). The K/V ring and
 *     the ping-pong turns run on from one work tile into the next, and one more barrier pair
 *     guards the single Q buffer (full: bar_q; empty_q: 8 warp arrivals once the tile's last
 *     S = Q K^T is done), so the next tile's Q, K and V load while this one runs its last P V
 *     and stores O. With one block per work tile each block paid that start-up (Q and K_0 in
 *     flight, S_0 with nothing to overlap) and its drain alone. Causal keeps one block per work
 *     tile: the hardware's hand-out, heaviest first, balances the uneven tiles better than a
 *     fixed stride (measured: persistent causal +6-9% at N=4096 but -12% at 16384, D=128).
 *   - Stream-K (D = 128, not causal, >= 16 key tiles per work tile): whole work tiles leave the
 *     last round part-empty (1024 tiles on 132 SMs: 7.76 rounds' work in 8), so the last two
 *     rounds are cut into 132 equal ranges of key tiles instead. A tile cut in two leaves two
 *     partial (O, m, l) in the workspace, and whichever piece ends second merges them and
 *     stores O (an atomic count per warp, no waiting). H200: +1.1-1.4% at N=4096, +2.7-2.8% at
 *     8192, +1.9-2.0% at 16384 (notes/08); nothing at D = 64, where it is off.
 *
 * Tensor maps (make_map). [B, H, N, D] is seen as the 3-D tensor (D, N, B*H), innermost first,
 * box = 64 features (128 B: the widest the 128-byte swizzle allows) x Br or Bc rows x 1 head.
 * Being 3-D, a box at rows past N of a head is OUT OF BOUNDS and zero-filled, instead of reading
 * the next head (a 2-D map over B*H*N rows would). D = 128 is two boxes per tile, one per atom:
 *     box a (features 64a .. 64a+63) -> tile + a * rows * 128,   TMA swizzle: 16-byte chunk c of
 *     row r lands at chunk c ^ (r % 8) (address bits 4-6 ^= bits 7-9: tiles 1024-aligned)
 * = sw128_offset, step 07's layout: same descriptors (Q, K K-major SBO 1024; V MN-major, LBO =
 * Bc * 128). The bytes of the whole box, zero-fill included, count towards the expect_tx.
 * Zero-filled keys give scores of 0, not -inf: the ragged last tile still runs the mask (step
 * 01's bug otherwise; -DATTN08_NO_RAGGED_MASK=1 re-creates it for the lesson, and `attn check`
 * must then FAIL on every non-causal problem with Nk % 128 != 0). Zero-filled query rows past Nq
 * are computed and never stored. O and lse leave by plain stores with the row guard, as in step
 * 07: O is 1/64 of the bytes the key loop reads at N = 4096, D = 128, and a TMA store would need
 * an smem staging tile (stmatrix), a proxy fence and a barrier for a gain below 1%.
 *
 * mbarrier phases. A barrier completes a phase when its pending arrivals and transaction bytes
 * both reach 0, then flips its phase bit; try_wait.parity(P) passes once the phase of parity P
 * is over. The n-th use (n = j / STAGES) of stage s = j % STAGES: consumers wait full with
 * parity n & 1, the producer waits empty with parity (n & 1) ^ 1 (n = 0 passes at once on a
 * fresh barrier). Timeline of stage 0 (K side; V is the same, released one wgmma group later):
 *   producer:  expect_tx(full_k0) TMA K0 ......... wait empty_k0 (parity 0) ... expect_tx TMA K2
 *   full_k0:   phase 0 [1 arrival + 32 KB pending] -> K0 lands: phase 1 ...... K2 lands: phase 0
 *   consumers:   wait full_k0 (parity 0) | S_0 = Q K0^T | wait_group | 8 warps arrive empty_k0
 *   empty_k0:  phase 0 [8 arrivals pending] ------------------------> 8th arrival: phase 1
 *   consumers (tile 2):                                     wait full_k0 (parity 1) | S_2 ...
 * A wrong parity either deadlocks (waiting for a phase that never ends) or reads a stage before
 * its bytes land; /tmp emulation (see the notes) checked the protocol under random schedules.
 *
 * Per key tile j >= 1, each consumer warpgroup (step 07's loop, barriers replaced):
 *     wait full_k[j], full_v[j-1]           K_j and V_{j-1} have landed (TMA, async proxy)
 *     bar.sync(1 + wg)                      my turn (ping-pong)
 *     S_j = Q K_j^T, O += P_{j-1} V_{j-1}   two wgmma groups
 *     bar.arrive(1 + other)                 the other warpgroup's turn
 *     wgmma.wait_group 1; arrive empty_k[j] S_j is done: K_j's stage goes back to the producer
 *     softmax(S_j)                          under this warpgroup's P V and the other's GEMMs
 *     wgmma.wait_group 0; arrive empty_v[j-1]; O *= alpha; P_j = bf16(S_j)
 * Ping-pong timeline (issue order = tensor-core order, so the turns interleave the GEMMs):
 *   tensor cores: | WG0 S_j PV_j-1 | WG1 S_j PV_j-1 | WG0 S_j+1 PV_j | WG1 S_j+1 PV_j | ...
 *   WG0 MUFU/ALU:                  | softmax S_j    |                | softmax S_j+1  |
 *   WG1 MUFU/ALU: | softmax S_j-1  |                | softmax S_j    |                |
 * Warpgroup 1 arrives once on barrier 1 before the loop (WG0 goes first) and skips its very last
 * arrival, so both barriers end balanced. The producer never touches barriers 1, 2 and the
 * consumers never use __syncthreads after the setup (the producer has left by then).
 *
 * Prediction (H200, bf16, B=4, H=8, N=4096; step 07 measured 315 / 413 TFLOP/s at D=64 / 128,
 * cuDNN 469 / 586). Per key tile per SM: MMA 2 x 2 x 64*128*D*2 FLOP = 2048 clocks at D=128,
 * 1024 at D=64 (~4096 FLOP/clock); exps 2 x 64 x 128 / 16 per clock = 1024 clocks.
 *   TMA + producer + mbarriers: the consumers lose 16 cp.async + address math per tile and the
 *     block-wide barrier; FA3's ablation (D=128) puts warp specialization at +16% (570 -> 661
 *     without/with): D=128 413 -> ~460-480, D=64 315 -> ~340.
 *   setmaxnreg: no speed by itself; it is what lets 384 threads hold 240-register consumers
 *     (without it: 232 B spilled and serialized wgmmas at D=128, a loss of 20-40%).
 *   ping-pong: FA3 +9-12% (570 -> 620-640). At D=128 a tile is 2048 MMA clocks against 1024 of
 *     exps per SM, so the softmax fits entirely under the other warpgroup's GEMMs: ~510-540
 *     (0.87-0.92x cuDNN). At D=64 MMA and exps are equal (1024 each): ping-pong at best keeps
 *     both busy, ~1024-1300 clocks per tile against ~1536 in step 07: ~370-420 (0.8-0.9x).
 *   Causal: ~85% of non-causal at 4k (diagonal tiles masked, short blocks at the start).
 *   Wider key tiles when not causal (FA3: Bc = 176 at D=128): an S wgmma reads the 64-row Q
 *   slice (2 KB per k16) and Bc rows of K (32 B each) for 64 x Bc x 16 MACs, so a wider tile
 *   reads fewer bytes per FLOP (128 -> 176: -9%), and the per-tile bookkeeping (barriers, O
 *   rescale) is spread over more keys. Measured (H200, notes/08): at D=128, Bc = 160, 176 and 192
 *   all beat 128 (+0.5-1.5% at N=4096, +1.5-2.6% at 16384); D=64 gains most at 192 (+3.5% at
 *   16384). Shipped: 176 at D=128 (192 spills 16 bytes in the persistent kernel; 176 none, and
 *   measured the same), 192 at D=64. Causal keeps 128 = Br: the diagonal tiles stay square.
 *   A key tile per problem (D = 128): the ragged last tile costs a whole one, so where Nk fits
 *   160 better (N = 2048, 4096: 26 x 160 = 4160 keys computed for 4096, against 24 x 176 = 4224)
 *   the 160 kernel runs (use_bc_alt): +0.9-2.1% there (H200, bench/results/h200/bc08/).
 *   Measured and not kept: Bc = 128 (exact at 4096, but the tensor pipe ran 69% busy against
 *   73% at 160 and 176: -1% at 4096, -8% at 2048), and at 128 Q's A fragments in registers
 *   instead of shared memory (the same 69%: shared-memory bandwidth is not what holds 128 back;
 *   160 and 176 spill).
 *   Left for later (FA3's remaining gap): the ragged last key tile at its own width (at N=4096,
 *   Bc=176 computes 4224 keys for 4096: 3%; built as a separate step after the loop, a17f55a,
 *   and measured 1.1-1.9% slower at D=128; narrower wgmmas inside the loop make ptxas
 *   serialize every wgmma), 3 consumer warpgroups with 192x192 tiles at D=64, a
 *   persistent causal grid with a dynamic (atomic) tile scheduler (built and measured: +2-13%
 *   more at causal N <= 4096, but every way of handing the tile number to the consumers cost
 *   2-6% when not causal or was reported by racecheck; notes/08), 2-CTA clusters with TMA
 *   multicast of K/V.
 *
 * Limits: forward only; bf16; D = 64 or 128; scale > 0; any Nq, Nk >= 1; causal top-left with
 * tile skipping; pointers aligned as attention.h says (else ATTN_ERR_INVALID). Hopper only
 * (sm_90a): forward() returns UNSUPPORTED on any other GPU before touching the driver API. One
 * block of 384 threads per SM; shared memory 209 KB (D=128, Bc = 176; 193 KB at 160) / 113 KB
 * (D=64, Bc = 192), 161 / 81 KB (+1 KB of alignment) with Bc = 128 (causal). Workspace: none,
 * but at D = 128 not causal 139 KB per block of the grid (at most 144: 20 MB) for stream-K's
 * partials.
 *
 * Variants (one source): -DATTN08_PINGPONG=0 (no turns), -DATTN08_SETMAXNREG=0 (no register
 * reallocation; D=128 spills), -DATTN08_PERSISTENT=0 (one block per work tile) or =2 (persistent
 * causal too), -DATTN08_BC64_FULL=N / -DATTN08_BC128_FULL=N (N = 128, 160, 176, 192: the
 * non-causal key tile), -DATTN08_BC128_ALT=0 (176 at D = 128 whatever Nk), -DATTN08_STREAMK=0
 * (no stream-K), -DATTN08_SK_MIN_KEY_TILES=N (stream-K from N key tiles per work tile on),
 * -DATTN08_NO_RAGGED_MASK=1 (the deliberate bug above).
 *
 * Check when editing: `-Xptxas -v` must print no "(C7512)/(C7514) ... wgmma.mma_async
 * instructions are serialized" line and 0 spill bytes; SASS must show UTMALDG, HGMMA, SYNCS and
 * USETMAXREG.
 *
 * Run:  build/attn run --step 08 --shape 4,8,4096,4096,128     (needs an H100 / H200)
 *       make diff A=07 B=08
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>   /* CUtensorMap, PFN_cuTensorMapEncodeTiled (header only, no -lcuda) */
#include "attention.h"
#include "mma_sm80.cuh"
#include "mma_sm90.cuh"
#include "step.cuh"

typedef __nv_bfloat16 bf16;

/* Tiles per head dim: NWG warpgroups of 64 query rows each (Br = 64 * NWG), Bc keys per tile
 * when causal, Bc_full when not (the header says why; -DATTN08_BC64_FULL=... and
 * -DATTN08_BC128_FULL=... rebuild the sweep's variants: 128, 160, 176, 192), or at D = 128
 * Bc_alt where it computes less for the problem's Nk (use_bc_alt; -DATTN08_BC128_ALT=0: never). */
#ifndef ATTN08_BC64_FULL
#define ATTN08_BC64_FULL 192
#endif
#ifndef ATTN08_BC128_FULL
#define ATTN08_BC128_FULL 176
#endif
#ifndef ATTN08_BC128_ALT
#define ATTN08_BC128_ALT 160
#endif
template <int D> struct Tiles;
template <> struct Tiles<64> {
    static constexpr int NWG = 2, Bc = 128, Bc_full = ATTN08_BC64_FULL;
};
template <> struct Tiles<128> {
    static constexpr int NWG = 2, Bc = 128, Bc_full = ATTN08_BC128_FULL;
    static constexpr int Bc_alt = ATTN08_BC128_ALT > 0 ? ATTN08_BC128_ALT : Bc_full;
};

constexpr int WG = 128;   /* threads per warpgroup */
constexpr int STAGES = 2; /* K/V ring depth (FA3: 2): stage j % STAGES holds K_j and V_j */

/* Register reallocation: the block starts with 65536 / 384 -> 168 registers per thread; the
 * producer warpgroup drops to 24 and the two consumers rise to 240 (24*128 + 2*240*128 = 64512
 * <= 65536, FA3's D=128 split). -DATTN08_SETMAXNREG=0 leaves everyone at 168 (D=128 spills). */
#ifndef ATTN08_SETMAXNREG
#define ATTN08_SETMAXNREG 1
#endif
constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;

/* Ping-pong: the consumer warpgroups take turns to issue their GEMMs (named barriers 1 and 2),
 * so one's softmax runs under the other's GEMMs. -DATTN08_PINGPONG=0 lets them issue freely. */
#ifndef ATTN08_PINGPONG
#define ATTN08_PINGPONG 1
#endif

/* Persistent grid: 0 = one block per work tile (128 query rows of one head), 1 = one block per
 * SM walking the work tiles when not causal, 2 = always. */
#ifndef ATTN08_PERSISTENT
#define ATTN08_PERSISTENT 1
#endif

/* For the lesson only: 1 drops the mask of the ragged last key tile (step 01's bug, here with
 * TMA's zero fill); the checks must then fail. */
#ifndef ATTN08_NO_RAGGED_MASK
#define ATTN08_NO_RAGGED_MASK 0
#endif

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

/* grid: one block per SM (persistent; or one per work tile, see launch), reading work tiles
 * w = blockIdx.x, blockIdx.x + gridDim.x, ... of B*H*Tq; block: NWG consumer warpgroups
 * (0 .. NWG-1) + one producer warpgroup (NWG). Q, K, V: tensor maps over [B*H, N, D] bf16;
 * O: [B, H, Nq, D] bf16; lse: [B, H, Nq] float. */
template <int D, int NWG, int Bc, bool SPLIT>
__global__ void __launch_bounds__((NWG + 1) * WG, 1)
attention_fwd(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
              const __grid_constant__ CUtensorMap tmV, bf16 *__restrict__ O,
              float *__restrict__ lse, unsigned BH, unsigned G, unsigned n_dp, void *ws, int Nq,
              int Nk, float c, float scale, int causal)
{
    constexpr int Br = 64 * NWG;
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
    /* Work tile order. The heads go in sections of G; within a section the tiles are numbered
     * query tile first, heaviest (last) first, then head: work tile w is query tile
     * Tq - 1 - r / g of head sec * G + r % g, where sec = w / (G Tq), r = w % (G Tq) and g is
     * the section's number of heads (G, or fewer in a last, short section).
     *   - G = 1 (not causal): head-major. The tiles running at once share one head's K and V,
     *     which stay in L2 (with the head fastest, 132 blocks spanned 32 heads: 28% of DRAM
     *     bandwidth at N=4096, notes/08).
     *   - G > 1 (causal; launch() picks as many heads as have their K and V in 2/3 of L2): a
     *     causal tile costs 1 to Tq key tiles, and the hardware hands blocks out in this order
     *     to whichever SM frees up. Heaviest first across the section's heads leaves only light
     *     tiles for the end; head by head, every head's heavy tiles came round again, and the
     *     last ones ran alone (bench/causal_balance.py: 88% of the ideal balance at N=4096,
     *     against 99%). */
    const unsigned Tq = (Nq + Br - 1) / Br, n_work = BH * Tq;   /* < 2^31: supports() */
    auto work = [&](unsigned w, int &bh, int &q0, int &n_tiles) {
        const unsigned sec = w / (G * Tq), r = w % (G * Tq), g = min(G, BH - sec * G);
        bh = (int)(sec * G + r % g);
        q0 = (int)(Tq - 1 - r / g) * Br;
        /* Causal: the tile's last visible key is q0 + Br - 1; key tiles past it are skipped. */
        const int kv_end = causal ? min(Nk, q0 + Br) : Nk;
        n_tiles = (kv_end + Bc - 1) / Bc;
    };
    /* SPLIT = false (causal, and D = 64): block b takes work tiles w = b, b + gridDim.x, ...
     * whole, as above. SPLIT = true (D = 128, not causal; launch() says why only there): stream-K.
     * A block's pieces k = 0 .. n_pieces - 1 are each the key tiles [j0, j0 + n_tiles) of one
     * work tile. Work tiles 0 .. n_dp - 1 go whole, with the same stride. The rest, n_work - n_dp
     * (gridDim.x plus the remainder of n_work / gridDim.x: the last two rounds), are cut: their
     * key tiles, all (n_work - n_dp) * n_kt of them in work order, make gridDim.x equal ranges,
     * one per block. With whole tiles the last round ran n_work % gridDim.x of them while the
     * other SMs idled (N = 4096: 1024 tiles on 132 SMs, 7.76 tiles of work per SM in 8 rounds).
     * A range is at least n_kt long, so a work tile is cut at most once, at the boundary between
     * blocks b and b + 1: its head piece (j0 = 0) ends block b, its tail piece starts block
     * b + 1, and both use slot b of the workspace (below, at the epilogue). */
    const unsigned blk = blockIdx.x, nb = gridDim.x, n_kt = (unsigned)(Nk + Bc - 1) / Bc;
    unsigned n_pieces = 0, n_dp_b = 0, lo = 0, hi = 0;
    if constexpr (SPLIT)
        n_pieces = n_dp_b = blk < n_dp ? (n_dp - blk + nb - 1) / nb : 0;
    if (SPLIT && n_dp < n_work) {   /* stream-K (never causal): n_sk < 2^32 (launch() checks) */
        const unsigned n_sk = (n_work - n_dp) * n_kt, len = n_sk / nb, rem = n_sk % nb;
        lo = blk * len + min(blk, rem);   /* ranges of len + 1 key tiles first, then len */
        hi = lo + len + (blk < rem);
        n_pieces += (hi - 1) / n_kt - lo / n_kt + 1;
    }
    /* slot: -1 for a whole tile; else the boundary it is cut at, and role 0 (head) or 1 (tail) */
    auto piece = [&](unsigned k, int &bh, int &q0, int &j0, int &n_tiles, int &slot, int &role) {
        if (k < n_dp_b) {
            work(blk + k * nb, bh, q0, n_tiles);
            j0 = 0;
            slot = -1;
            role = 0;
            return;
        }
        const unsigned t = lo / n_kt + (k - n_dp_b);   /* in the stream-K tiles */
        int n_full;
        work(n_dp + t, bh, q0, n_full);
        j0 = k == n_dp_b ? (int)(lo % n_kt) : 0;
        const int j1 = t == (hi - 1) / n_kt ? (int)((hi - 1) % n_kt) + 1 : n_full;
        n_tiles = j1 - j0;
        role = j0 > 0;
        slot = j0 > 0 ? (int)blk - 1 : j1 < n_full ? (int)blk : -1;
    };

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

    if (wg == NWG) {
        /* ------------------------------------------------------------------ the producer */
        if constexpr (ATTN08_SETMAXNREG)
            setmaxnreg_dec<PRODUCER_REGS>();   /* all 4 warps: the instruction is warpgroup-wide */
        if (tid % WG == 0) {   /* one thread issues every copy */
            tma_prefetch_map(&tmQ);
            tma_prefetch_map(&tmK);
            tma_prefetch_map(&tmV);
            /* it counts K/V tiles over the block's whole life: the ring runs on across work
             * tiles, so the next tile's first K and V load while this one finishes. */
            int it = 0, nq = 0;
            for (unsigned k = 0, w = blockIdx.x; SPLIT ? k < n_pieces : w < n_work;
                 k++, w += gridDim.x, nq++) {
                int bh, q0, j0 = 0, n_tiles, slot = -1, role = 0;
                if constexpr (SPLIT)
                    piece(k, bh, q0, j0, n_tiles, slot, role);
                else
                    work(w, bh, q0, n_tiles);
                (void)slot;
                (void)role;
                /* the single Q buffer: the nq-th load waits for the (nq-1)-th release */
                mbar_wait(empty_q, (nq & 1) ^ 1);
                mbar_arrive_expect_tx(bar_q, tile_bytes<D>(Br));
                load_tile<Br, D>(sQ, &tmQ, q0, bh, bar_q);
                for (int j = 0; j < n_tiles; j++, it++) {
                    /* the n-th use of stage s waits for the consumers' (n-1)-th release */
                    const int s = it % STAGES;
                    const uint32_t empty_parity = ((it / STAGES) & 1) ^ 1;
                    mbar_wait(empty_k + 8 * s, empty_parity);
                    mbar_arrive_expect_tx(full_k + 8 * s, KV);
                    load_tile<Bc, D>(sK + s * KV, &tmK, (j0 + j) * Bc, bh, full_k + 8 * s);
                    mbar_wait(empty_v + 8 * s, empty_parity);
                    mbar_arrive_expect_tx(full_v + 8 * s, KV);
                    load_tile<Bc, D>(sV + s * KV, &tmV, (j0 + j) * Bc, bh, full_v + 8 * s);
                }
            }
        }
        return;   /* copies in flight complete on the mbarriers; the block lives on */
    }

    /* -------------------------------------------------------------------------- consumers */
    if constexpr (ATTN08_SETMAXNREG)
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
     * then hands the turn on to w + 1. Per work tile every warpgroup issues n_tiles + 1 times
     * (S_0, n_tiles - 1 pairs S_j + P_{j-1} V_{j-1}, the last P V), so the turns run on from
     * one work tile into the next; the last warpgroup's first arrival is the initial one below
     * and it skips its very last, so each barrier sees exactly as many arrivals as waits and
     * none is left pending at exit. */
    static_assert(!ATTN08_PINGPONG || NWG == 2, "the turns are written for two warpgroups");
    auto my_turn = [&]() {
        if constexpr (ATTN08_PINGPONG)
            named_bar_sync(1 + wg, 2 * WG);
    };
    auto your_turn = [&](bool last) {
        if constexpr (ATTN08_PINGPONG)
            if (!(last && wg == NWG - 1))
                named_bar_arrive(1 + (wg + 1) % NWG, 2 * WG);
    };
    if constexpr (ATTN08_PINGPONG)
        if (wg == NWG - 1)
            named_bar_arrive(1, 2 * WG);   /* warpgroup 0 goes first */

    /* One work tile per pass. Its body keeps step 07's indentation on purpose, so that `make
     * diff A=07 B=08` shows what changed inside it rather than a re-indented kernel. */
    int it = 0, nq = 0;
    for (unsigned k = 0, w = blockIdx.x; SPLIT ? k < n_pieces : w < n_work;
         k++, w += gridDim.x, nq++) {
    int bh, q0, j0 = 0, n_tiles, slot = -1, role = 0;
    if constexpr (SPLIT)
        piece(k, bh, q0, j0, n_tiles, slot, role);
    else
        work(w, bh, q0, n_tiles);
    const bool last_work = SPLIT ? k == n_pieces - 1 : n_work - w <= gridDim.x;
    const int wg_row0 = q0 + 64 * wg;   /* first query row of this warpgroup */
    const int row[2] = {wg_row0 + 16 * warp + g, wg_row0 + 16 * warp + g + 8};   /* rows a = 0, 1 */
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
#pragma unroll
    for (int i = 0; i < D / 2; i++)
        o[i] = 0.f;

    /* A tile needs the mask iff it is ragged (past Nk) or crosses this warpgroup's diagonal.
     * Never drop the ragged half: TMA fills keys past Nk with zeros, scores of 0, not -inf. */
    auto needs_mask = [&](int k0) {
        return (!ATTN08_NO_RAGGED_MASK && k0 + Bc > Nk) || (causal && k0 + Bc - 1 > wg_row0);
    };

    /* Prologue: S_0 = Q K_0^T; its softmax. */
    mbar_wait(bar_q, nq & 1);
    wait_full(full_k, it);

    my_turn();
    wgmma_fence();
    issue_qk<D, Bc, Br>(s, q_wg, sK + (it % STAGES) * KV);
    wgmma_commit();
    your_turn(false);
    wgmma_wait<0>();
    reg_fence(s);
    release(empty_k, it);
    if (n_tiles == 1 && lane == 0)
        mbar_arrive(empty_q);   /* the last S of this work tile is done: Q may be replaced */
    online_softmax<Bc>(s, m, l, alpha, c, needs_mask(j0 * Bc), j0 * Bc, row, Nk, causal, t);
#pragma unroll
    for (int i = 0; i < Bc / 4; i++)
        p[i] = pack_bf16(s[2 * i], s[2 * i + 1]);

    for (int j = 1; j < n_tiles; j++) {
        /* K_j and V_{j-1} have landed (the producer has been ahead since the start). */
        wait_full(full_k, it + j);
        wait_full(full_v, it + j - 1);

        /* Issue S_j = Q K_j^T, then O += P_{j-1} V_{j-1}: two groups, both on the tensor cores
         * while this warpgroup goes on. */
        reg_fence(o);
        reg_fence(p);
        my_turn();
        wgmma_fence();
        issue_qk<D, Bc, Br>(s, q_wg, sK + ((it + j) % STAGES) * KV);
        wgmma_commit();
        issue_pv<D, Bc>(o, p, sV + ((it + j - 1) % STAGES) * KV);
        wgmma_commit();
        your_turn(false);

        /* S_j done (groups retire in order): K_j's stage goes back to the producer (and, after
         * the last S, Q), and the softmax runs while P V is still running. */
        wgmma_wait<1>();
        reg_fence(s);
        release(empty_k, it + j);
        if (j == n_tiles - 1 && lane == 0)
            mbar_arrive(empty_q);
        const int k0 = (j0 + j) * Bc;
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
    wait_full(full_v, it + n_tiles - 1);
    reg_fence(o);
    reg_fence(p);
    my_turn();
    wgmma_fence();
    issue_pv<D, Bc>(o, p, sV + ((it + n_tiles - 1) % STAGES) * KV);
    wgmma_commit();
    your_turn(last_work);
    wgmma_wait<0>();
    reg_fence(o);
    release(empty_v, it + n_tiles - 1);
    it += n_tiles;

    /* Epilogue: finish the row sums across the quad, O = acc / l, lse = m * scale + ln l.
     * Plain stores, as in step 07: O is written once per work tile (1/64 of the bytes the key
     * loop reads at N = 4096, D = 128), so a TMA store would save little and cost an smem
     * staging tile and another fence; the row guard is what keeps rows past Nq out. Meanwhile
     * the producer is already loading the next work tile's Q, K and V. */
    if constexpr (SPLIT) {
#pragma unroll
    for (int a = 0; a < 2; a++) {
        l[a] += __shfl_xor_sync(0xffffffffu, l[a], 1);
        l[a] += __shfl_xor_sync(0xffffffffu, l[a], 2);
    }
    /* A cut work tile (stream-K, above): each of its two pieces ends with a partial O
     * (unnormalised), m and l for the same rows, in the same threads. Each warp writes its own to
     * slot `slot` of the workspace (as role 0 or 1), then counts itself in on that warp's
     * counter (zeroed by launch()); the second to arrive reads the other's partial, merges the
     * two as the online softmax merges key tiles, and stores O; the first stops here. Nothing
     * waits for another block: whichever piece ends last finishes the rows. */
    if (slot >= 0) {
        constexpr int NT = NWG * WG;   /* consumer threads: tid < NT */
        unsigned *count = reinterpret_cast<unsigned *>(ws) + slot * NWG * 4 + tid / 32;
        float4 *part = reinterpret_cast<float4 *>(static_cast<char *>(ws) +
                                                  ((nb * NWG * 4 * 4 + 255) & ~255u));
        float4 *mine = part + (size_t)(2 * slot + role) * (D / 8 + 1) * NT + tid;
        const float4 *theirs = part + (size_t)(2 * slot + (role ^ 1)) * (D / 8 + 1) * NT + tid;
#pragma unroll
        for (int j = 0; j < D / 8; j++)
            mine[j * NT] = make_float4(o[4 * j], o[4 * j + 1], o[4 * j + 2], o[4 * j + 3]);
        mine[D / 8 * NT] = make_float4(m[0], m[1], l[0], l[1]);
        __threadfence();   /* my partial is visible before my count */
        __syncwarp();
        unsigned first = 0;
        if (lane == 0)
            first = atomicAdd(count, 1u) == 0;
        if (__shfl_sync(0xffffffffu, first, 0))
            continue;   /* the other piece will finish these rows */
        __threadfence();   /* the other partial, counted in before mine, is visible */
        const float4 ml = __ldcg(theirs + D / 8 * NT);
        const float m_o[2] = {ml.x, ml.y}, l_o[2] = {ml.z, ml.w};
        float a_me[2], a_o[2];
#pragma unroll
        for (int a = 0; a < 2; a++) {
            const float mx = fmaxf(m[a], m_o[a]);
            const float mc = (mx == -INFINITY ? 0.f : mx) * c;
            a_me[a] = ex2_approx(m[a] * c - mc);
            a_o[a] = ex2_approx(m_o[a] * c - mc);
            l[a] = l[a] * a_me[a] + l_o[a] * a_o[a];
            m[a] = mx;
        }
#pragma unroll
        for (int j = 0; j < D / 8; j++) {
            const float4 x = __ldcg(theirs + j * NT);
            o[4 * j] = o[4 * j] * a_me[0] + x.x * a_o[0];
            o[4 * j + 1] = o[4 * j + 1] * a_me[0] + x.y * a_o[0];
            o[4 * j + 2] = o[4 * j + 2] * a_me[1] + x.z * a_o[1];
            o[4 * j + 3] = o[4 * j + 3] * a_me[1] + x.w * a_o[1];
        }
    }
    }   /* SPLIT */
    bf16 *Ob = O + (size_t)bh * Nq * D;
    float *lseb = lse + (size_t)bh * Nq;
#pragma unroll
    for (int a = 0; a < 2; a++) {
        if constexpr (!SPLIT) {
            l[a] += __shfl_xor_sync(0xffffffffu, l[a], 1);
            l[a] += __shfl_xor_sync(0xffffffffu, l[a], 2);
        }
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
    }   /* the work-tile loop */
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

/* Stream-K (the kernel says why): the last two rounds of work tiles are cut into equal ranges
 * of key tiles, one per block; -DATTN08_STREAMK=0 runs every work tile whole. Only at D = 128,
 * not causal (the kernel's SPLIT): measured on the H200 (notes/08), +1.1-2.8% there at N = 4096
 * to 16384, while at D = 64 it gained at most 1.5%, and its code cost the D = 64 and causal
 * kernels 0.6-2.5% even built to cut no tile; with SPLIT = false their PTX is as before it.
 * The workspace holds, per block boundary, the two partial results of the tile cut there, and a
 * counter per consumer warp. Its size may not depend on the GPU (workspace_bytes() is asked
 * before the launch, maybe for another device), so it is sized for up to SK_MAX_GRID blocks
 * (GH100 has 144 SMs; an H200 132), and a larger grid runs without stream-K. */
#ifndef ATTN08_STREAMK
#define ATTN08_STREAMK 1
#endif
constexpr long long SK_MAX_GRID = 144;
/* Cutting a tile costs each piece a start (Q and K in flight, S_0 alone) and a partial written
 * to and read from global memory (68 KB at D = 128); below this many key tiles per work tile
 * that cost more than the rounds' tail (H200: -7% to -20% at N = 1024 to 2048). */
#ifndef ATTN08_SK_MIN_KEY_TILES
#define ATTN08_SK_MIN_KEY_TILES 16
#endif
constexpr long long SK_MIN_KEY_TILES = ATTN08_SK_MIN_KEY_TILES;

static bool streamk(const attn_problem *p)
{
    return ATTN08_STREAMK && ATTN08_PERSISTENT >= 1 && !p->causal && p->head_dim == 128;
}

/* bytes: the counters (blocks x 8 warps, rounded to 256 bytes), then 2 partials per block:
 * 256 consumer threads x (D/2 floats of O + m, m, l, l) */
static size_t sk_counter_bytes(long long blocks)
{
    return ((size_t)blocks * 8 * 4 + 255) & ~(size_t)255;
}
static size_t sk_bytes(long long blocks, int d)
{
    return sk_counter_bytes(blocks) + (size_t)blocks * 2 * 256 * (d / 8 + 1) * 16;
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
    /* The driver's encoder, reached through the runtime (no -lcuda); looked up once. */
    static const auto encode =
        (PFN_cuTensorMapEncodeTiled_v12000)step_driver_fn("cuTensorMapEncodeTiled", 12000);
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
    /* Persistent: one block per SM walks the work tiles, so a block's next Q, K and V load while
     * it finishes the current tile. Otherwise one block per work tile, which the hardware hands
     * to SMs as they free up (heaviest first). */
    const long long n_work = (long long)bh * ((p->seq_q + Br - 1) / Br);
    long long blocks = n_work;
    if (ATTN08_PERSISTENT == 2 || (ATTN08_PERSISTENT == 1 && !p->causal)) {
        int dev, sms;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return ATTN_ERR_CUDA;
        blocks = n_work < sms ? n_work : sms;
    }
    /* Work tiles [0, n_dp) go whole; with stream-K the last full round and the remainder are
     * cut into equal ranges of key tiles (none when the tiles fill the rounds exactly). H200,
     * N = 4096, B*H = 32: 1024 tiles on 132 blocks, 6 rounds whole, 232 tiles cut into 132
     * ranges of 42.2 key tiles (24 per work tile at D = 128). */
    long long n_dp = n_work;
    const long long n_kt = (p->seq_k + Bc - 1) / Bc;
    if (SPLIT && streamk(p) && n_work > blocks && n_work % blocks != 0 && blocks <= SK_MAX_GRID &&
        n_kt >= SK_MIN_KEY_TILES && (n_work % blocks + blocks) * n_kt < (1ll << 32)) {
        n_dp = (n_work / blocks - 1) * blocks;
        /* the counters start at 0 (the workspace comes undefined); the partials need nothing */
        if (!ws || cudaMemsetAsync(ws, 0, sk_counter_bytes(blocks), stream) != cudaSuccess)
            return ATTN_ERR_CUDA;
    }
    /* Heads per section of the work order (the kernel says why): 1 when not causal; when causal,
     * as many heads as have their K and V in 2/3 of L2 (at least 1), then as even as one G
     * allows, G = ceil(B*H / sections): a short last section would end the run on its heavy
     * tiles. H200 (60 MB of L2), B*H = 32: 32 heads per section at N = 4096, D = 64; 16 at
     * D = 128; 5 at N = 16384, D = 128 (5 * 6 + 2). */
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
 * work that does not shrink with Bc: the turns, the waits, the O rescale). H200
 * (bench/results/h200/bc08/, two calls): 160 against 176 measured +1.4 / +2.1% at N = 2048,
 * +1.2 / +0.9% at 4096, -1% at 8192 and 16384, -3% at 1024; the constant fitted at 4096 and 8192
 * is 7-9, and any value from 8 to 30 picks as measured (160 at 2048 and 4096 only).
 * Both tiles run the same kernel source; 128 was slower everywhere (bc08/call1). */
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
    "08_tma_warp_specialized",
    "TMA loads into an mbarrier ring, a producer warp, two consumer warpgroups ping-ponging",
    supports, workspace_bytes, forward, nullptr, nullptr, 90, 90,
    "needs a Hopper GPU (sm_90a): TMA, wgmma, setmaxnreg",
};
