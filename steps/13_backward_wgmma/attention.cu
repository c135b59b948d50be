/* Step 13: the Hopper backward (sm_90a). The forward is step 12's, unchanged.
 *
 * The change against step 12: a backward, built from the Hopper machinery of steps 07-12 instead
 * of step 06's mma.sync. The math is step 06's (P recomputed from lse, Di = rowsum(dO o O),
 * dS = P o (dP - Di)); what changes is who computes what, and where the operands live:
 *   - A block owns 128 keys: their K and V tiles sit in shared memory for the whole block, and
 *     two consumer warpgroups own 64 keys each (wgmma's M). They walk the query tiles (causal:
 *     from the first that sees a key of the tile), which a producer warpgroup loads by TMA into
 *     a two-stage ring: Q, dO, and the tile's lse2 = lse log2(e) and Di (bulk copies).
 *   - Keys are the rows: S^T = K Q^T and dP^T = V dO^T (wgmma SS, both operands K-major, as in
 *     the forward). Their accumulators, turned into P^T and dS^T, are then exactly the register
 *     A operands of dV += P^T dO and dK += dS^T Q (wgmma RS, dO and Q as MN-major B, like V in
 *     the forward): P and dS never go through shared memory on their way to dV and dK, which
 *     step 06 could not avoid (FlashAttention-3's "SdP_swapAB").
 *   - dQ = dS K needs dS with queries as rows: each warpgroup stores its dS^T tile once,
 *     swizzled, and dQ reads it as an MN-major A (both transpose bits, ss_mn). dQ is the only
 *     output that every key tile adds to: each warpgroup's 64 x 64 fp32 piece goes to a
 *     staging buffer in fragment order, and a writer warp of the producer warpgroup adds it
 *     into the fp32 accumulator in the workspace with one cp.reduce.async.bulk per tile (no
 *     per-element atomics), while the warpgroup goes on (FlashAttention-3's dQ writer).
 *   - Three kernels: a pre-pass (Di, lse2, zeroes the accumulator; query rows padded to whole
 *     tiles, where lse2 = +inf makes P = 0), the main kernel, a pass that scales dQ to bf16.
 * Tiles: 128 keys x 64 query rows at D = 128 (dK and dV hold 128 fp32 registers per thread);
 * 128 x 128 at D = 64 (twice the work per tile for the same waits and barriers). Each warpgroup
 * computes one 64 x 64 piece of a tile's dQ over all 128 keys (a barrier between the two): at
 * D = 128 its 64 columns, at D = 64 its 64 query rows, so no float of dQ gets two adds from one
 * tile. A tile issues its products in the order S^T, dP^T, dV, dQ, dK (FlashAttention-3's): dQ's
 * staging then runs while the tensor cores do dK. Each product builds its wgmma descriptors once
 * per operand tile and steps them by constants, and the causal and padded-key mask runs only on
 * the tiles that need it, as S^T's starting value (-inf where masked) chosen behind a branch a
 * warpgroup takes alike before the product, so the code after it has no compare (mma_s_dp):
 * 3-4 % faster at D = 128 and up to 11 % at D = 64 causal than a descriptor per k-slice and a mask
 * compiled into every tile's exponentials. dQ by rows with that order took 7-12 % more off D = 64
 * where nothing is masked, and the dQ writer, taking the add and the barrier before it off the
 * consumers' path, 1-7 % more at every shape (note 13's ablation).
 * D = 128 takes 80 query rows (BwdTiles<128, true>, FlashAttention-3's choice), not causal and,
 * from Nq = 8192, causal: each tile's waits, barriers and dQ add are spread over 25 % more rows.
 * wgmma's M is 64, so 80 rows can only be its N: dQ is computed transposed, dQ^T = K^T dS^T,
 * from dS stored [query][key]. Not causal, 3-8 % less time than 64 rows, the deterministic
 * backward 4-6 % (bench/experiments/13_br80); causal, 2-3 % at N = 16384 (13_causal_wide).
 *
 * Prediction (H200, bf16, N = 4096, D = 128): per (key tile, query tile), 5 products of
 * 2 x 128 x 64 x 128 = 10.5 MFLOP, ~2.6k clocks of tensor time at ~4k FLOP/clock/SM, against
 * 8k exps (0.5k clocks) and 32 KB of dQ added into L2. If the tensor cores stay ~75 % busy,
 * as in the forward: ~560 TFLOP/s, cuDNN's level, twice step 06's 263. D = 64: half the MMA
 * per score, the same exps: ~420.
 *
 * Limits: backward bf16 only; D = 64 or 128; any Nq, Nk >= 1; causal top-left; dQ is added in
 * whatever order the blocks finish, so it is not bitwise repeatable (dK, dV are: one block owns
 * each), unless the problem asks for a deterministic backward: then the dQ writer adds each
 * key tile's share in its turn (det2_turn, FlashAttention-3's shifted order), which needs every
 * SM open to the kernel while it runs (not causal: a group's blocks wait on each other; two
 * deterministic backwards at once on two streams can wait forever). Hopper only. One block of
 * 384 threads per SM; shared memory 194 KB (D = 128 causal, Nq < 8192), 226 KB (D = 128 otherwise), 195 KB
 * (D = 64). Workspace: (padded Nq) x (D + 2) x 4 bytes per head (66 MB at 4,8,4096,4096,128).
 *
 * Run:  build/attn run --step 13 --shape 4,8,4096,4096,128 --backward   (needs an H100 / H200)
 *       make diff A=12 B=13      (the forward is step 12's: the diff is the backward)
 */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>   /* CUtensorMap, PFN_cuTensorMapEncodeTiled (header only, no -lcuda) */
#include "attention.h"
#include "mma_sm80.cuh"
#include "mma_sm90.cuh"
#include "step.cuh"
#include <type_traits>

typedef __nv_bfloat16 bf16;

/* Tiles per head dim: NWG consumer warpgroups of 64 query rows each (Br = 64 * NWG). Bc keys per
 * tile when causal, Bc_full when not (D = 128: 160, the most that S, P and O held at once by
 * pin_softmax fit in 240 registers). D = 64 where 192-row tiles are too few to fill the GPU twice
 * (few_tiles): step 11's, two warpgroups and Bc_few_full keys when not causal. */
template <int D> struct Tiles;
template <> struct Tiles<64> {
    static constexpr int NWG = 3, Bc = 128, Bc_full = 128, NWG_few = 2, Bc_few_full = 192;
    static constexpr int PIN_COLS = 1;        /* pin_softmax holds 1/16 of the exponentials */
    static constexpr bool TMA_O = false;      /* O stored to global memory from registers */
};
template <> struct Tiles<128> {
    static constexpr int NWG = 2, Bc = 128, Bc_full = 160;
    static constexpr int PIN_COLS = 0;        /* ... the row maxima only */
    static constexpr bool TMA_O = true;       /* ... through shared memory and a TMA store */
};
/* Register reallocation: the block starts with 65536 / (128 (NWG + 1)) registers per thread (168
 * for 384 threads, 128 for 512); the producer warpgroup drops to PRODUCER_REGS and the consumers
 * rise to consumer_regs(NWG), within 65536 in all. Two consumers: 24*128 + 2*240*128 = 64512
 * (FlashAttention-3's D = 128 split). Three: 24*128 + 3*160*128 = 64512 (FlashAttention-3 and -4
 * give the producer 32: 0.7-2.3 % slower here), so at most 128 keys per tile at D = 64 (S, P and
 * O in 160 registers). */
constexpr int PRODUCER_REGS = 24;
__host__ __device__ constexpr int consumer_regs(int nwg) { return nwg == 3 ? 160 : 240; }

constexpr int WG = 128;   /* threads per warpgroup */
constexpr int STAGES = 2; /* K/V ring depth (FA3: 2): stage j % STAGES holds K_j and V_j */

/* Shared-memory bytes of one tile of `rows` rows x D bf16: D/64 swizzle atoms side by side, each
 * rows x 128 bytes. */
template <int D> __host__ __device__ constexpr uint32_t tile_bytes(int rows)
{
    return (uint32_t)(D / 64) * rows * 128u;
}

/* Stream-K's workspace: a counter per consumer warp per block of the grid (rounded to 256
 * bytes; SK_WARPS, the most consumer warps of any head dim), then two partials per block: every
 * consumer thread's D/2 floats of O and its m, m, l, l (Tiles<D>::NWG warpgroups). The kernel's
 * epilogue and workspace_bytes() both size it from these, and the kernel asserts that its
 * consumers are these. */
constexpr int SK_WARPS = 4 * (Tiles<64>::NWG > Tiles<128>::NWG ? Tiles<64>::NWG : Tiles<128>::NWG);
__host__ __device__ constexpr int sk_threads(int d)
{
    return (d == 64 ? Tiles<64>::NWG : Tiles<128>::NWG) * WG;
}
__host__ __device__ constexpr size_t sk_counter_bytes(unsigned blocks)
{
    return ((size_t)blocks * SK_WARPS * 4 + 255) & ~(size_t)255;
}
__host__ __device__ constexpr size_t sk_partial_bytes(int d)
{
    return (size_t)sk_threads(d) * (d / 8 + 1) * 16;
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
    const uint64_t a0 = wgmma_desc(q_wg, 16, 1024), b0 = wgmma_desc(k_tile, 16, 1024);
#pragma unroll
    for (int k = 0; k < D / 16; k++) {   /* a descriptor's address field counts 16 bytes */
        const uint32_t off = (k % 4) * 32;
        const uint64_t a = a0 + (((k / 4) * tile_bytes<64>(Br) + off) >> 4);
        const uint64_t b = b0 + (((k / 4) * tile_bytes<64>(Bc) + off) >> 4);
        wgmma_bf16<Bc>::ss(s, a, b, k > 0);
    }
}

/* o += P V for one key tile: Bc/16 wgmmas m64n{D}k16, P from registers, V [keys, D] in smem as
 * an MN-major B (16 keys = 16 rows = 2048 bytes further per slice; LBO = the next 64 features). */
template <int D, int Bc>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&p)[Bc / 4],
                                         uint32_t v_tile)
{
    const uint64_t b0 = wgmma_desc(v_tile, tile_bytes<64>(Bc), 1024);
#pragma unroll
    for (int k = 0; k < Bc / 16; k++) {
        const uint32_t a[4] = {p[4 * k], p[4 * k + 1], p[4 * k + 2], p[4 * k + 3]};
        const uint64_t b = b0 + ((k * 16 * 128) >> 4);
        wgmma_bf16<D>::rs_mn(o, a, b, 1);
    }
}

/* Online softmax of one S tile held as the wgmma accumulator: s[4j + 2a + b] is
 * S[row[a]][k0 + 8j + 2t + b]. On return s holds p = 2^(s c - m c) in fp32, m and l are updated
 * and alpha[a] = 2^((m_old - m_new) c) rescales what came before. The four threads of a quad
 * (same g) share a row: two shuffles finish each max. l stays a per-thread partial sum until the
 * epilogue (FA2): alpha is the same across the quad, so partial sums rescale correctly.
 * HEAD > 0: the exponentials of the first HEAD column groups j sum apart from the rest, into
 * head[a], which pin_softmax can hold before the wait for P V without holding the others. */
template <int Bc, int HEAD = 0>
__device__ __forceinline__ void online_softmax(float (&s)[Bc / 2], float (&m)[2], float (&l)[2],
                                               float (&alpha)[2], float (&head)[2], float c,
                                               bool mask, int k0, const int (&row)[2], int Nk,
                                               int causal, int t)
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
        /* four independent chains, not one of Bc/4: 8 warps per SM hide little latency. They
         * start from the tile's own scores, and the old maximum joins once, at the end: Bc/4 + 2
         * maxima a row, not Bc/4 + 5 (steps 07-11 start every chain from m) */
        float mq[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            mq[j] = fmaxf(s[4 * j + 2 * a], s[4 * j + 2 * a + 1]);
#pragma unroll
        for (int j = 4; j < Bc / 8; j++)
            mq[j % 4] = fmaxf(mq[j % 4], fmaxf(s[4 * j + 2 * a], s[4 * j + 2 * a + 1]));
        float mx = fmaxf(fmaxf(mq[0], mq[1]), fmaxf(mq[2], mq[3]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        mx = fmaxf(mx, m[a]);
        /* mx is finite (key 0 is in the first tile and every row sees it); the guard keeps a
         * fully masked row out of -inf - -inf = NaN all the same. */
        const float mc = (mx == -INFINITY ? 0.f : mx) * c;
        alpha[a] = ex2_approx(m[a] * c - mc);   /* 0 on the first tile: m = -inf */
        m[a] = mx;
        /* the row sum's chains, each started by its first p (no 0 + p adds): column groups in
         * turn, or with HEAD, chains 0-1 the first HEAD groups and chains 2-3 the rest */
        float sq[4];
#pragma unroll
        for (int j = 0; j < Bc / 8; j++)
#pragma unroll
            for (int b = 0; b < 2; b++) {
                const float p = ex2_approx(fmaf(s[4 * j + 2 * a + b], c, -mc));
                s[4 * j + 2 * a + b] = p;
                const int ch = HEAD ? (j < HEAD ? 0 : 2) + b : (2 * j + b) % 4;
                if (HEAD ? j == 0 || j == HEAD : j < 2)
                    sq[ch] = p;
                else
                    sq[ch] += p;
            }
        head[a] = sq[0] + sq[1];
        l[a] = l[a] * alpha[a] + (head[a] + (sq[2] + sq[3]));
    }
}

/* ptxas schedules register-only code freely across wgmma.wait_group: without this, the SASS
 * runs the whole softmax of S_j after the wait for P_{j-1} V_{j-1} (WARPGROUP.DEPBAR.LE gsb0,
 * 0x0), so it never overlaps this warpgroup's own P V. Memory operations keep their place
 * against the wait, so a store of two values, predicated on a condition that never holds
 * (Nk < 0; Nk >= 1 always), holds whatever they need before it: one STS that never executes,
 * one predicate register. Which values (Tiles<D>::PIN_COLS):
 *   - D = 128, the row maxima m: only the max (and the few exponentials ptxas puts beside it)
 *     runs before the wait, as in FlashAttention-4's SASS; the rest runs after it, where the
 *     rescale of O and the packing of P fill the gaps between MUFU.EX2s (16 a clock per SM).
 *     Held whole, the exponentials run back to back before the wait and the 64 FMULs and 40
 *     F2FPs after it, on the path to the next turn: 3-6 % more time not causal, 2-3 % causal
 *     (bench/experiments/12_fwd_timeline).
 *   - D = 64, the sum of the first of 16 column groups' exponentials (head): in the SASS 9-12
 *     of a thread's 66 MUFU run before the wait, the rest after it among P's F2FPs. The maxima
 *     alone cost 1-2.5 %; without alpha, 4 groups were best (bench/experiments/12_pin_partial).
 *   - At both, alpha (the rescale factors) too: otherwise ptxas issues alpha's two MUFU last,
 *     after every exponential of P, and O's 32 (D = 64) or 64 FMULs wait for them in one block
 *     after the trip's last MUFU; held, they interleave with the exponentials, and 11-15
 *     instructions follow the last MUFU instead of 41-76. With 1 group instead of 4: 1.2-2.0 %
 *     less time at D = 64, 0.2-0.8 % at D = 128, launch by launch on an H100; level in lockstep
 *     with FlashAttention-4 (bench/experiments/12_pin_alpha). */
__device__ __forceinline__ void pin_softmax(const float (&l)[2], int Nk, uint32_t addr)
{
    asm volatile("{\n.reg .pred q;\nsetp.lt.s32 q, %1, 0;\n@q st.shared.f32 [%2], %0;\n}\n" ::"f"(
                     l[0] + l[1]),
                 "r"(Nk), "r"(addr));
}

/* 0, which the compiler cannot see through: addresses built from it are computed where it is
 * read, not hoisted before the key loop and kept in registers across it. */
__device__ __forceinline__ uint32_t opaque_zero()
{
    uint32_t z;
    asm volatile("mov.u32 %0, 0;\n" : "=r"(z));
    return z;
}

/* A 4-byte store to shared memory, at a byte address (smem_u32's), and a load. */
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v)
{
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ uint32_t ld_shared_u32(uint32_t addr)
{
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
}

/* TMA tile store: the box at coordinates (c0, c1, c2) of the map from shared memory at src, in
 * the layout tma_load_3d writes; a bulk group (bulk_commit, bulk_wait_read). */
__device__ __forceinline__ void tma_store_3d(const void *map, uint32_t src, int c0, int c1, int c2)
{
    asm volatile(
        "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(map),
        "r"(src), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
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
 * Block b takes work tiles b, b + gridDim.x, ... of [0, n_dp) whole (causal: its first tile is b,
 * then the counter's, DYN in the kernel). With SPLIT (stream-K), the rest, n_work - n_dp tiles
 * (the last full round and the remainder), are cut: their key tiles, all (n_work - n_dp) * n_kt
 * of them in work order, make gridDim.x equal ranges [lo, hi), one per block. A range is at
 * least n_kt long, so a work tile is cut at most once, between blocks b and b + 1: its head
 * piece ends block b, its tail piece starts block b + 1, and both use slot b of the workspace. */
template <int Br, int Bc, bool SPLIT> struct TileScheduler {
    unsigned BH, G, Tq, n_dp, n_kt, n_whole, lo, hi, n_pieces;
    int Nk, causal, q_pad;

    __device__ TileScheduler(unsigned bh_count, unsigned heads_per_section, unsigned whole_tiles,
                             int Nq, int nk, int is_causal)
        : BH(bh_count), G(heads_per_section), Tq((Nq + Br - 1) / Br), n_dp(whole_tiles),
          n_kt((nk + Bc - 1) / Bc), lo(0), hi(0), Nk(nk), causal(is_causal),
          q_pad(is_causal && Br > Bc ? ((int)(Tq * Br) - Nq) & ~15 : 0)
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
    __device__ unsigned n_work() const { return BH * Tq; }
    __device__ bool last(unsigned k) const { return k + 1 == n_pieces; }

    /* work tile w, whole: causal, its key tiles end at its last visible key, q0 + Br - 1.
     * Causal with 192-row tiles, the query tiles end at Nq rather than start at 0 (q_pad rows of
     * padding before row 0): the one tile that is not whole (64 of 192 rows at N = 4096) is then the
     * first, which sees one key tile, not the last, which sees them all; its rows below 0 are zeros
     * (TMA), never stored.
     * Where Br = Bc the shift saves no trip (tile k sees k + 1 key tiles either way) and splits
     * every diagonal over two key tiles, so only Br > Bc shifts. The padding is a multiple of 16,
     * so no 16-row TMA box of O starts below row 0 and ends above it: a store box partly below 0
     * faults (illegal instruction, measured); one wholly below 0 is skipped. */
    __device__ WorkTile tile(unsigned w) const
    {
        const unsigned sec = w / (G * Tq), r = w % (G * Tq), heads = min(G, BH - sec * G);
        WorkTile x;
        x.bh = (int)(sec * G + r % heads);
        x.q0 = (int)(Tq - 1 - r / heads) * Br - q_pad;
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
template <int D, bool DYN, int Br, int Bc, bool SPLIT, class LoadKV>
__device__ __forceinline__ void produce(const TileScheduler<Br, Bc, SPLIT> &sched,
                                        const CUtensorMap *tmQ, uint32_t sQ, uint32_t bar_q,
                                        uint32_t empty_q, uint32_t slot, void *ws, LoadKV load_kv)
{
    /* it counts K/V tiles over the block's whole life: the ring runs on across work tiles, so
     * the next tile's first K and V load while this one finishes. */
    int it = 0;
    unsigned wi = blockIdx.x;   /* DYN: the work tile's number; the first is the block's */
    for (unsigned k = 0; DYN || k < sched.count(); k++) {
        /* the single Q buffer: the k-th load waits for the (k-1)-th release */
        mbar_wait(empty_q, (k & 1) ^ 1);
        if (DYN) {
            st_shared_u32(slot, wi);
            if (wi >= sched.n_work()) {   /* no more work: the consumers read it, leave */
                mbar_arrive(bar_q);
                break;
            }
        }
        const WorkTile w = DYN ? sched.tile(wi) : sched.get(k);
        mbar_arrive_expect_tx(bar_q, tile_bytes<D>(Br));
        load_tile<Br, D>(sQ, tmQ, w.q0, w.bh, bar_q);
        for (int j = 0; j < w.n_tiles; j++, it++)
            load_kv(w, j, it);
        /* DYN: the next work tile is the next number of a counter that every block shares
         * (zeroed by launch()), taken now, with this tile's last loads issued and its consumers
         * about two key tiles from done: tiles go out heaviest first to whichever block frees
         * up first, as the hardware hands out the blocks of a grid, and the atomic's latency
         * hides under those two tiles. */
        if (DYN)
            wi = gridDim.x + atomicAdd(reinterpret_cast<unsigned *>(ws), 1u);
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

/* The epilogue's stores: O = acc / l (l summed across the quad already) and lse = m * scale +
 * ln l for this thread's two rows, skipping rows past Nq or below 0 (computed from zero queries).
 * With Tiles<D>::TMA_O, O goes through shared memory and one TMA store per warp and atom
 * (FlashAttention-3's and -4's epilogue): 4-byte stores to global memory hold the long
 * scoreboard until the store unit has read their registers, and the next instructions to reuse
 * them wait. The staging of this warp's 16 rows is free once its last store has read it; the
 * TMA unit writes only the rows below Nq (the map's bound). Without it, plain stores with the
 * row guard as in step 07. */
template <int D, int Br>
__device__ __forceinline__ void store_o(const float (&o)[D / 2], const float (&m)[2],
                                        const float (&l)[2], const WorkTile &w, const int (&row)[2],
                                        int wg, int warp, int lane, uint32_t sO,
                                        const CUtensorMap *tmO, bf16 *O, float *lse, int Nq,
                                        float scale)
{
    const int g = lane / 4, t = lane % 4;
    float *lseb = lse + (size_t)w.bh * Nq;
    if constexpr (Tiles<D>::TMA_O) {
        const int r16 = 64 * wg + 16 * warp;      /* this warp's first row in the tile */
        const uint32_t so = sO + opaque_zero();   /* addresses built here, not kept */
        if (lane == 0)
            bulk_wait_read<0>();
        __syncwarp();
#pragma unroll
        for (int a = 0; a < 2; a++) {
            const float inv = 1.f / l[a];
            const int r = g + 8 * a;
#pragma unroll
            for (int j = 0; j < D / 8; j++)
                st_shared_u32(so + (j / 8) * tile_bytes<64>(Br) + (r16 + r) * 128 +
                                  (((j % 8) ^ (r % 8)) << 4) + 4 * t,
                              pack_bf16(o[4 * j + 2 * a] * inv, o[4 * j + 2 * a + 1] * inv));
            if (t == 0 && row[a] < Nq && row[a] >= 0)   /* rows past Nq or below 0: zero queries */
                lseb[row[a]] = m[a] * scale + logf(l[a]);
        }
        fence_proxy_async_smem();   /* the generic proxy's writes, seen by the TMA unit */
        __syncwarp();
        /* a box wholly past Nq or below 0 writes nothing; TMA clips a box's rows past Nq */
        if (lane == 0 && w.q0 + r16 < Nq && w.q0 + r16 + 16 > 0) {
#pragma unroll
            for (int at = 0; at < D / 64; at++)
                tma_store_3d(tmO, sO + at * tile_bytes<64>(Br) + r16 * 128, 64 * at, w.q0 + r16,
                             w.bh);
            bulk_commit();
        }
        return;
    }
    bf16 *Ob = O + (size_t)w.bh * Nq * D;
#pragma unroll
    for (int a = 0; a < 2; a++) {
        if (row[a] >= Nq || row[a] < 0)
            continue;   /* rows past Nq or below 0 were computed from zero queries */
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

/* grid: one block per SM (persistent; DYN, causal: tiles from the counter in ws); block: NWG
 * consumer warpgroups (0 .. NWG-1) + one producer warpgroup (NWG). Q, K, V: tensor maps over
 * [B*H, N, D] bf16; O: [B, H, Nq, D] bf16; lse: [B, H, Nq] float; ws: stream-K's workspace, or
 * DYN's counter. */
template <int D, int NWG, int Bc, bool SPLIT, bool DYN, bool MASK>
__global__ void __launch_bounds__((NWG + 1) * WG, 1)
attention_fwd(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
              const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmO,
              bf16 *__restrict__ O, float *__restrict__ lse, unsigned BH, unsigned G,
              unsigned n_dp, void *ws, int Nq, int Nk, float c, float scale, int causal)
{
    constexpr int Br = 64 * NWG;
    static_assert(!SPLIT || (NWG * 4 <= SK_WARPS && NWG * WG == sk_threads(D)),
                  "stream-K's workspace is sized for Tiles<D>::NWG consumer warpgroups");
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
    /* O's staging for its TMA store (Tiles<D>::TMA_O): Br rows in D/64 atoms, as Q; each
     * consumer warp writes and stores its own 16 rows */
    const uint32_t sO = sV + STAGES * KV;
    const uint32_t bar_q = sO + (Tiles<D>::TMA_O ? tile_bytes<D>(Br) : 0), empty_q = bar_q + 8,
                   full_k = empty_q + 8, full_v = full_k + 8 * STAGES,
                   empty_k = full_v + 8 * STAGES, empty_v = empty_k + 8 * STAGES;
    /* DYN: the number of the work tile whose Q is loading, for the consumers: the producer
     * writes it before its arrive on bar_q, each consumer warp's lane 0 reads it after its wait
     * on bar_q, and the producer writes the next one after its wait on empty_q */
    const uint32_t slot = empty_v + 8 * STAGES;

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
            produce<D, DYN>(sched, &tmQ, sQ, bar_q, empty_q, slot, ws, load_kv);
        }
        return;   /* copies in flight complete on the mbarriers; the block lives on */
    }

    /* -------------------------------------------------------------------------- consumers */
    setmaxnreg_inc<consumer_regs(NWG)>();   /* waits until the producer's registers are back */
    /* this warpgroup's 64 rows in each Q atom; wg read from lane 0, so that ptxas knows it is the
     * same across the warp and keeps the descriptors built from it in uniform registers */
    const uint32_t q_wg = sQ + 64 * 128 * __shfl_sync(0xffffffffu, wg, 0);

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
     * then hands the turn on to (w + 1) % NWG: 0, 1, 0, ... with two warpgroups, 0, 1, 2, 0, ...
     * with three. Per work tile every warpgroup issues n_tiles + 1 times, so the turns run on
     * from one work tile into the next; the last warpgroup's first arrival is the initial one
     * below and it skips its very last, so each barrier sees exactly as many arrivals as waits
     * and none is left pending at exit. */
    static_assert(NWG >= 2 && NWG <= 3, "named barriers 1 .. NWG; 4 warpgroups fill the block");
    auto my_turn = [&]() { named_bar_sync(1 + wg, 2 * WG); };
    auto your_turn = [&](bool last) {
        if (!(last && wg == NWG - 1))
            named_bar_arrive(1 + (wg + 1) % NWG, 2 * WG);
    };
    if (wg == NWG - 1)
        named_bar_arrive(1, 2 * WG);   /* warpgroup 0 goes first */

    int it = 0;
    for (unsigned k = 0; DYN || k < sched.count(); k++) {
        unsigned wi = 0;
        if (DYN) {   /* Q has landed, and its work tile's number with it (past the end: done) */
            mbar_wait(bar_q, k & 1);
            if (lane == 0)
                wi = ld_shared_u32(slot);
            wi = __shfl_sync(0xffffffffu, wi, 0);
            if (wi >= sched.n_work())
                break;
        }
        const WorkTile w = DYN ? sched.tile(wi) : sched.get(k);
        const int wg_row0 = w.q0 + 64 * wg;   /* first query row of this warpgroup */
        const int row[2] = {wg_row0 + 16 * warp + g, wg_row0 + 16 * warp + g + 8};   /* a = 0, 1 */
        float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2], head[2];
#pragma unroll
        for (int i = 0; i < D / 2; i++)
            o[i] = 0.f;

        /* A tile needs the mask iff it is ragged (past Nk) or crosses this warpgroup's diagonal.
         * Never drop the ragged half: TMA fills keys past Nk with zeros, scores of 0, not -inf.
         * A problem with neither (not causal, Nk a multiple of Bc) runs the kernel compiled
         * without it (MASK false): no branch in the loop, as the backward's bwd_main<D, false>. */
        auto needs_mask = [&](int k0) {
            return MASK && (k0 + Bc > Nk || (causal && k0 + Bc - 1 > wg_row0));
        };

        /* Prologue: S_0 = Q K_0^T; its softmax. */
        if (!DYN)
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
        online_softmax<Bc>(s, m, l, alpha, head, c, needs_mask(w.j0 * Bc), w.j0 * Bc, row, Nk,
                           causal, t);
#pragma unroll
        for (int i = 0; i < Bc / 4; i++)
            p[i] = pack_bf16(s[2 * i], s[2 * i + 1]);

        /* One key tile j >= 1. The tiles before the first that needs the mask run by a copy of
         * the loop compiled without it (masked false), the rest by one with it: a causal work
         * tile's diagonal tiles are its last, as FlashAttention-3's are its first. */
        auto key_tile = [&](int j, auto masked) {
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
            online_softmax<Bc, Tiles<D>::PIN_COLS>(s, m, l, alpha, head, c,
                                                   decltype(masked)::value && needs_mask(k0), k0,
                                                   row, Nk, causal, t);
            {   /* ... before the wait below, with alpha: O's rescale can start at the wait */
                const float pin[2] = {(Tiles<D>::PIN_COLS ? head[0] : m[0]) + alpha[0],
                                      (Tiles<D>::PIN_COLS ? head[1] : m[1]) + alpha[1]};
                pin_softmax(pin, Nk, sQ);
            }

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
        };
        /* needs_mask grows with k0: the first key tile (of the work tile's) that needs it, the
         * smallest index t with t * Bc > x for each of its two conditions */
        auto first_over = [&](int x) { return x < 0 ? 0 : x / Bc + 1; };
        int j_mask = w.n_tiles;
        if (MASK) {
            int t_mask = first_over(Nk - Bc);
            if (causal)
                t_mask = min(t_mask, first_over(wg_row0 - Bc + 1));
            j_mask = max(1, min(t_mask - w.j0, w.n_tiles));
            /* the same across the warp, as ptxas must know: loop bounds it cannot prove uniform
             * make the loop's counter, and the descriptors built from it, per-thread registers */
            j_mask = __shfl_sync(0xffffffffu, j_mask, 0);
        }
        int j = 1;
        for (; j < j_mask; j++)
            key_tile(j, std::integral_constant<bool, false>());
        for (; j < w.n_tiles; j++)
            key_tile(j, std::integral_constant<bool, true>());

        /* The last P V; its V stage goes back too (the next work tile's loads wait for it). */
        wait_full(full_v, it + w.n_tiles - 1);
        reg_fence(o);
        reg_fence(p);
        my_turn();
        wgmma_fence();
        issue_pv<D, Bc>(o, p, sV + ((it + w.n_tiles - 1) % STAGES) * KV);
        wgmma_commit();
        your_turn(!DYN && sched.last(k));
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
        store_o<D, Br>(o, m, l, w, row, wg, warp, lane, sO, &tmO, O, lse, Nq, scale);
    }
    /* DYN: the last warpgroup handed the turn on after its last issue, not knowing it was the
     * last; warpgroup 0 takes that turn, so that barrier 1 ends with no arrival pending */
    if (DYN && wg == 0)
        my_turn();
    if (Tiles<D>::TMA_O && lane == 0)
        bulk_wait<0>();   /* the block's shared memory must outlive the stores that read it */
}

/* ============================================================================= the backward
 *
 * Three kernels on the stream (the header tells why each exists):
 *   bwd_preprocess  Di = rowsum(dO o O), lse2 = lse log2(e), dq_acc = 0, per padded query row
 *   bwd_main        per key tile: dK, dV in registers, dQ added into dq_acc by bulk reduce-add
 *   bwd_convert_dq  dQ = scale dq_acc, to bf16, in [B, H, Nq, D]
 * Query rows are padded to whole tiles of Br: lse2 = +inf and Di = 0 there, so a padded row's
 * P = 2^(S c - inf) = 0 and it adds nothing, with no mask. */
/* The mask's moves (bwd_consumer, at key[]): a key past Nk goes PAST later, and, not causal,
 * every query LATER, so one compare masks both; supports() keeps Nq and Nk below LATER. A moved
 * key's uint32 swizzle offset is its row's: */
constexpr int PAST = 1 << 30, LATER = 1 << 29;
static_assert(sw128_offset(PAST + 77, 5) == sw128_offset(77, 5), "a moved key keeps its row's offset");
constexpr int BWD_BC = 128;     /* keys per block: two consumer warpgroups of 64 (wgmma's M) */
/* registers: the producer warpgroup 24, the two consumers 240 (dK and dV hold 128 per thread) */
constexpr int BWD_PRODUCER_REGS = 24, BWD_CONSUMER_REGS = 240;
constexpr int BWD_STAGES = 2;   /* the Q, dO, lse2, Di ring */
constexpr int BWD_DQ_FLOATS = 64 * 64;   /* one warpgroup's dQ piece: 64 rows x 64 columns */
constexpr float LOG2E = 1.4426950408889634f;   /* lse2 = lse LOG2E; c = scale LOG2E */

/* The backward's choices per head dim, each read where it switches (bwd_main's stages):
 *   Br             query rows per tile of the loop, the N of S^T and dP^T
 *   DQ_BY_COLUMNS  how the two warpgroups share dQ = dS K [Br x D] of a query tile, each one
 *                  64 x 64 fp32 piece of it over all 128 keys (both halves of dS^T: a barrier
 *                  between the two, two dS^T buffers). By columns (D = 128, Br = 64): warpgroup
 *                  w takes columns 64w... By rows (D = 64, Br = 128): query rows 64w... (Each
 *                  taking its own 64 keys, all rows and columns, would spare the barrier, but
 *                  both would add a whole Br x D tile into the same floats: twice the bytes
 *                  reduced in L2, which Nsight Compute found 80 % busy at D = 64 that way.)
 *   DS_STMATRIX    dS^T goes to shared memory by stmatrix, not by plain stores
 *   LSE2_EARLY     lse2's first two pairs are read before the wait for S^T
 *   DS_EARLY       dS^T is stored before dV's product is issued, not after, so its stores
 *                  drain while dV runs (1.2-2.6 % less time at D = 64; 0.6-5 % more at D = 128:
 *                  note 13)
 *   DQ_T           (WIDE only) dQ computed transposed, dQ^T = K^T dS^T (FlashAttention-3's
 *                  dQ_swapAB): wgmma's M is 64, so 80 query rows can only be its N
 *   TMA_DKV        dK and dV leave through K's and V's shared-memory tiles by TMA stores, not
 *                  by plain stores (store_dk_dv); TMA_DKV_MASKED: in the kernels with the mask
 *                  too (at D = 64 their loop grew 27 instructions with it:
 *                  bench/experiments/13_dkv64_unmasked)
 * WIDE: D = 128 (bwd_wide), deterministic or not, takes 80-row query tiles, FlashAttention-3's
 * choice there: not causal always, causal from BWD_WIDE_CAUSAL_NQ query rows (a causal key
 * tile's first query tile then starts up to 79 rows before its keys, rows the mask drops, a
 * share that shrinks as Nq grows). Warpgroup w computes dQ^T's features 64w.. (M = 64) for the tile's 80 queries
 * (N = 80) over all 128 keys; for that dS goes to shared memory as [query][key] (stmatrix
 * .trans), a K-major B, and K is read as an MN-major A. */
template <int D, bool WIDE = false> struct BwdTiles;
template <> struct BwdTiles<128> {
    static constexpr int Br = 64;   /* registers: dK and dV take 128 per thread */
    static constexpr bool DQ_BY_COLUMNS = true, DS_STMATRIX = true, LSE2_EARLY = true;
    static constexpr bool DQ_T = false, DS_EARLY = false, TMA_DKV = true, TMA_DKV_MASKED = true;
};
template <> struct BwdTiles<64> {
    static constexpr int Br = 128;   /* twice the products per tile for the same bookkeeping */
    /* stmatrix and the early lse2 measured slower here (spills then: note 13) */
    static constexpr bool DQ_BY_COLUMNS = false, DS_STMATRIX = false, LSE2_EARLY = false;
    static constexpr bool DQ_T = false, DS_EARLY = true, TMA_DKV = true, TMA_DKV_MASKED = false;
};
template <> struct BwdTiles<128, true> {
    static constexpr int Br = 80;   /* dS^T, dP^T: 40 registers each; dQ^T's piece 40 */
    static constexpr bool DQ_BY_COLUMNS = true, DS_STMATRIX = true, LSE2_EARLY = true;
    static constexpr bool DQ_T = true, DS_EARLY = false, TMA_DKV = true, TMA_DKV_MASKED = true;
};

/* bwd_main's named barriers (0 is __syncthreads) */
enum BwdBarrier : int {
    BAR_DS_BOTH = 1,   /* 2 * WG threads: both warpgroups' halves of dS^T are in */
    /* between warpgroup w and the dQ writer warp (WG + 32 threads, dq_writer): */
    BAR_DQ_FULL = 2,   /* BAR_DQ_FULL + w: w's staging is written (w arrives, the writer waits) */
    BAR_DQ_EMPTY = 4,  /* BAR_DQ_EMPTY + w: the writer has read it (the writer arrives, w waits) */
};

/* bwd_main's shared memory, one layout for the kernel and for the launch that sizes it: byte
 * offsets from the base (aligned to 1024 bytes, a swizzle line, by the kernel), and BYTES, what the
 * launch asks for, 1 KB of room for that alignment included.
 *   K, V      the block's 128 keys, [Bc][D] in 64-column atoms (TMA, once)
 *   Q, dO     BWD_STAGES stages of [Br][D] (the producer's ring)
 *   dS        dS^T [128 keys][Br queries] bf16, Br / 64 atoms of 64 queries; two buffers, as
 *             both warpgroups read it (the other may still read the last one)
 *   dQ        the two warpgroups' dQ staging, fp32 (a piece each: dq_piece)
 *   lse2, Di  BWD_STAGES stages of Br floats of lse2 and Di (bulk copies beside Q and dO)
 *   bar_kv, full, empty   the mbarriers: K/V arrived; a stage full; a stage free */
template <int D, bool WIDE = false> struct BwdSmem {
    using Tiles = BwdTiles<D, WIDE>;
    static constexpr int Br = Tiles::Br;
    static constexpr int DS_BUFS = 2;
    /* a dQ piece: 64 x 64 floats, or (DQ_T) 64 features x Br queries */
    static constexpr int DQ_FLOATS = Tiles::DQ_T ? 64 * Br : BWD_DQ_FLOATS;
    static constexpr uint32_t KV = tile_bytes<D>(BWD_BC), QT = tile_bytes<D>(Br);
    /* DQ_T: dS [Br queries][128 keys], Bc / 64 atoms of 64 keys (Br rows of 128 bytes each) */
    static constexpr uint32_t DS_ATOM = Tiles::DQ_T ? Br * 128 : BWD_BC * 128,
                              DS = Tiles::DQ_T ? BWD_BC / 64 * DS_ATOM : Br / 64 * DS_ATOM;
    static constexpr uint32_t DQ = DQ_FLOATS * 4;   /* one warpgroup's piece */
    static constexpr uint32_t K = 0, V = K + KV, Q = V + KV, dO = Q + BWD_STAGES * QT,
                              dS = dO + BWD_STAGES * QT, dQ = dS + DS_BUFS * DS,
                              lse2 = dQ + 2 * DQ, Di = lse2 + BWD_STAGES * Br * 4,
                              bar_kv = Di + BWD_STAGES * Br * 4, full = bar_kv + 8,
                              empty = full + 8 * BWD_STAGES, END = empty + 8 * BWD_STAGES;
    static constexpr size_t BYTES = END + 1024;
};
static_assert(BwdSmem<64>::BYTES <= 227 * 1024 && BwdSmem<128>::BYTES <= 227 * 1024,
              "bwd_main's shared memory exceeds the 227 KB a Hopper block may have");
static_assert(BwdSmem<64>::dS % 1024 == 0 && BwdSmem<128>::dS % 1024 == 0 &&
                  BwdSmem<64>::Q % 1024 == 0 && BwdSmem<128>::Q % 1024 == 0,
              "the swizzled tiles must start on a 1024-byte swizzle line");
static_assert(BwdSmem<64>::bar_kv % 8 == 0 && BwdSmem<128>::bar_kv % 8 == 0,
              "mbarriers are 8-byte aligned");
static_assert(BwdSmem<128, true>::BYTES <= 227 * 1024 &&
                  BwdSmem<128, true>::dS % 1024 == 0 &&
                  BwdSmem<128, true>::Q % 1024 == 0 &&
                  (BwdSmem<128, true>::Q + BwdSmem<128, true>::QT) % 1024 == 0 &&
                  (BwdSmem<128, true>::dS + BwdSmem<128, true>::DS) % 1024 == 0 &&
                  BwdSmem<128, true>::bar_kv % 8 == 0 &&
                  BwdSmem<128, true>::lse2 % 16 == 0 &&
                  BwdSmem<128, true>::Di % 16 == 0,
              "80-row tiles: the shared memory fits, swizzled tiles on 1024-byte lines, bulk "
              "copies 16-byte aligned");

/* stmatrix .x4 .trans: as stmatrix_x4, each 8 x 8 matrix stored transposed: the address thread l
 * gives is that of row l % 8 of matrix l / 8 as stored, i.e. column l % 8 of the fragment. */
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, const uint32_t (&r)[4])
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 ::"r"(addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
                 : "memory");
}

/* threadIdx.x read afresh (volatile: not merged with the kernel's first read), for values that
 * would otherwise be held in a register across the whole loop */
__device__ __forceinline__ int fresh_tid()
{
    int r;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(r));
    return r;
}

/* The backward's products, named by their operands' transposes as ThunderKittens names them
 * (mma_ABt: A B^T). Each issues one warpgroup's k-slices of 16 (wgmma m64nNk16); the caller
 * fences, commits and waits. */

/* acc[64 x N] = A B^T over D features: A is 64 rows of a tile of A_ROWS rows, B a tile of N rows,
 * both [rows][D] K-major in smem. The k-th slice of 16 features is 32 bytes into atom k / 4 (the
 * hardware applies the swizzle). The forward's issue_qk, S = Q K^T, is this with Q as A. ONTO:
 * the first slice adds onto acc as it is, acc += A B^T (the mask's bias: mma_s_dp). */
template <int D, int N, int A_ROWS, bool ONTO = false>
__device__ __forceinline__ void mma_ABt(float (&acc)[N / 2], uint32_t a_tile, uint32_t b_tile)
{
    const uint64_t a0 = wgmma_desc(a_tile, 16, 1024), b0 = wgmma_desc(b_tile, 16, 1024);
#pragma unroll
    for (int k = 0; k < D / 16; k++) {   /* a descriptor's address field counts 16 bytes */
        const uint32_t off = (k % 4) * 32;
        const uint64_t a = a0 + (((k / 4) * tile_bytes<64>(A_ROWS) + off) >> 4);
        const uint64_t b = b0 + (((k / 4) * tile_bytes<64>(N) + off) >> 4);
        wgmma_bf16<N>::ss(acc, a, b, ONTO || k > 0);
    }
}

/* acc[64 x N] += A B over K: A from registers (a 64 x K accumulator packed to bf16, as the
 * forward's P), B [K][N] in smem as an MN-major B (16 rows = 2048 bytes further per slice;
 * LBO = the next 64 columns). The forward's issue_pv, O += P V, is this with P as A. */
template <int N, int K>
__device__ __forceinline__ void mma_AB(float (&acc)[N / 2], const uint32_t (&a)[K / 4],
                                       uint32_t b_tile)
{
    const uint64_t b0 = wgmma_desc(b_tile, tile_bytes<64>(K), 1024);
#pragma unroll
    for (int k = 0; k < K / 16; k++) {
        const uint32_t ak[4] = {a[4 * k], a[4 * k + 1], a[4 * k + 2], a[4 * k + 3]};
        wgmma_bf16<N>::rs_mn(acc, ak, b0 + ((k * 16 * 128) >> 4), 1);
    }
}

/* acc[64 x 64] = A^T B over the rows row0 .. row0 + 16 KSTEPS - 1 of K: A [K][M] and B [K][N]
 * both stored row after row in 64-column atoms (128 bytes a row), so both MN-major (both
 * transpose bits: ss_mn). The product takes A's atom a_atom (64 of M) and B's atom b_atom (64 of
 * N), atoms a_lbo and b_lbo bytes apart. dQ = dS K is this with dS^T, as stored, for A. */
template <int KSTEPS>
__device__ __forceinline__ void mma_AtB(float (&acc)[32], uint32_t a_tile, int a_atom,
                                        uint32_t a_lbo, uint32_t b_tile, int b_atom,
                                        uint32_t b_lbo, int row0)
{
    const uint64_t a0 = wgmma_desc(a_tile + a_atom * a_lbo + row0 * 128, a_lbo, 1024),
                   b0 = wgmma_desc(b_tile + b_atom * b_lbo + row0 * 128, b_lbo, 1024);
#pragma unroll
    for (int kk = 0; kk < KSTEPS; kk++) {   /* 16 rows of 128 bytes further per step */
        const uint32_t r = (16 * kk * 128) >> 4;
        wgmma_bf16<64>::ss_mn(acc, a0 + r, b0 + r, kk > 0);
    }
}

/* D / 8 threads per padded query row, 8 features (16 bytes of dO and of O) each: Di and lse2
 * (the padding: 0 and +inf), and the row's D floats of the dQ accumulator set to 0 (the
 * workspace comes undefined). rows_pad * D / 8 is a multiple of 32: a warp's groups all exist. */
template <int D>
__global__ void __launch_bounds__(256)
bwd_preprocess(const bf16 *__restrict__ dO, const bf16 *__restrict__ O,
               const float *__restrict__ lse, float *__restrict__ lse2, float *__restrict__ Di,
               float *__restrict__ dq_acc, size_t rows_pad, int Nq, int Nq_pad)
{
    constexpr int TPR = D / 8;
    const size_t row = ((size_t)blockIdx.x * 256 + threadIdx.x) / TPR;
    const int e = threadIdx.x % TPR * 8;
    if (row >= rows_pad)
        return;
    const size_t bh = row / Nq_pad;
    const int q = (int)(row % Nq_pad);
    float4 *acc = reinterpret_cast<float4 *>(dq_acc + row * D + e);
    acc[0] = acc[1] = make_float4(0.f, 0.f, 0.f, 0.f);
    float sum = 0.f;
    if (q < Nq) {
        const size_t src = (bh * Nq + q) * D + e;
        const uint4 a = *reinterpret_cast<const uint4 *>(dO + src);
        const uint4 b = *reinterpret_cast<const uint4 *>(O + src);
        const uint32_t aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&aw[j]));
            const float2 y = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&bw[j]));
            sum += x.x * y.x + x.y * y.y;
        }
    }
#pragma unroll
    for (int off = TPR / 2; off > 0; off >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (e == 0) {
        Di[row] = sum;
        lse2[row] = q < Nq ? lse[bh * Nq + q] * LOG2E : INFINITY;
    }
}

/* bwd_main's shared memory as shared-window addresses: K at the base rounded up to a swizzle
 * line, the rest at BwdSmem's offsets from it. at() turns one into a pointer, for plain loads
 * and stores. */
struct BwdShared {
    uint8_t *raw;    /* the dynamic shared memory, whose shared address is base */
    uint32_t base, K, V, Q, dO, dS, dQ, lse2, Di, bar_kv, full, empty;
    __device__ __forceinline__ uint8_t *at(uint32_t a) const { return raw + (a - base); }
};

/* A thread of bwd_main: tid, its warpgroup wg (0, 1: the consumers; 2: the producer), its warp
 * in the warpgroup and lane; g = lane / 4 and t = lane % 4 place it in wgmma's fragments. */
struct BwdThread {
    int tid, wg, warp, lane, g, t;
};

/* A block's work: the key tile of 128 keys from k0 of head bh, and query tiles qt_begin ..
 * qt_begin + n_iter - 1 of the head's n_qt (n_qb blocks of 64 query rows). Not causal, the key
 * tiles of a head side by side (they share its Q, dO and dQ accumulator in L2); causal, the
 * heads in sections of hps (bwd_heads_per_section; step 12's forward has sections too), and in
 * a section key tile 0 of every head first (the longest: it sees every query tile), then key
 * tile 1, ... */
struct BwdBlock {
    int n_qt, n_qb, bh, k0, qt_begin, n_iter;
};

/* The deterministic backward's groups, not causal: the key tiles of a head go in groups whose
 * blocks run at once, and block r of a group (kt = first + r) walks every query tile from r on,
 * wrapping at n_qt (FlashAttention-3's ShiftScheduler): a group's blocks reach a query tile one
 * step after another instead of all at step qt. G = min(n_kt, n_qt, sms) key tiles a group (the
 * head's last group, what is left): at most n_qt (each block starts at its own query tile) and
 * at most sms consecutive blocks (det2_turn says why). */
struct Det2Group {
    int first, size;   /* key tiles first .. first + size - 1 of the head */
};
__device__ __forceinline__ Det2Group det2_group(int kt, int n_kt, int n_qt, int sms)
{
    const int G = min(min(n_kt, n_qt), sms), first = kt / G * G;
    return {first, min(G, n_kt - first)};
}

/* The deterministic kernel (DET) orders its blocks for det2_turn: causal, a section's last key
 * tile first; not causal, each block's walk starts at its place in its group (det2_group) and
 * wraps: it takes all n_qt query tiles from qt_begin (walk_qt), and a group's blocks launch last
 * key tile first, so the blocks each one waits on (det2_turn: the ones after it) start first. */
template <int D, bool DET, bool WIDE = false>
__device__ __forceinline__ BwdBlock bwd_block(int bh_count, int Nq, int Nk, int causal, int hps,
                                              int sms)
{
    constexpr int Bc = BWD_BC, Br = BwdTiles<D, WIDE>::Br;
    /* DQ_T: one block of Br rows per query tile */
    constexpr int QB = BwdTiles<D, WIDE>::DQ_T ? 1 : Br / 64;
    const int n_kt = (Nk + Bc - 1) / Bc, n_qt = (Nq + Br - 1) / Br, n_qb = n_qt * QB;
    int kt = (int)(blockIdx.x % n_kt), bh = (int)(blockIdx.x / n_kt);
    if (causal) {   /* section sec of hps heads (the last one may have fewer: h) */
        const int per = hps * n_kt, sec = (int)(blockIdx.x / per), r = (int)(blockIdx.x % per);
        const int h = min(hps, bh_count - sec * hps);
        kt = DET ? n_kt - 1 - r / h : r / h;
        bh = sec * hps + r % h;
    }
    if (DET && !causal) {
        const Det2Group g = det2_group(kt, n_kt, n_qt, sms);
        kt = 2 * g.first + g.size - 1 - kt;
        return {n_qt, n_qb, bh, kt * Bc, kt - g.first, n_qt};
    }
    const int k0 = kt * Bc;
    /* causal (top-left): query rows < k0 see none of these keys */
    const int qt_begin = causal ? min(k0 / Br, n_qt) : 0, n_iter = n_qt - qt_begin;
    return {n_qt, n_qb, bh, k0, qt_begin, n_iter};
}

/* The query tile of step i of a block's walk: qt_begin + i, wrapping at n_qt (only the
 * deterministic kernel's shifted walk gets that far) */
template <bool DET> __device__ __forceinline__ int walk_qt(const BwdBlock &blk, int i)
{
    const int qt = blk.qt_begin + i;
    return DET && qt >= blk.n_qt ? qt - blk.n_qt : qt;
}

/* The producer (one thread): K and V once, then per query tile Q, dO (TMA), lse2 and Di (bulk
 * copies) into the ring's stage i % BWD_STAGES, once the consumers have released it. */
template <int D, bool DET, bool WIDE = false>
__device__ __forceinline__ void bwd_load(const BwdShared &sm, const BwdBlock &blk,
                                         const CUtensorMap *tmQ, const CUtensorMap *tmK,
                                         const CUtensorMap *tmV, const CUtensorMap *tmdO,
                                         const float *lse2, const float *Di)
{
    constexpr int Bc = BWD_BC, Br = BwdTiles<D, WIDE>::Br;
    constexpr uint32_t KV = BwdSmem<D, WIDE>::KV, QT = BwdSmem<D, WIDE>::QT;
    tma_prefetch_map(tmQ);
    tma_prefetch_map(tmdO);
    mbar_arrive_expect_tx(sm.bar_kv, 2 * KV);
    load_tile<Bc, D>(sm.K, tmK, blk.k0, blk.bh, sm.bar_kv);
    load_tile<Bc, D>(sm.V, tmV, blk.k0, blk.bh, sm.bar_kv);
    for (int i = 0; i < blk.n_iter; i++) {
        const int st = i % BWD_STAGES, qt = walk_qt<DET>(blk, i);
        const size_t row = ((size_t)blk.bh * blk.n_qt + qt) * Br;   /* padded rows of lse2, Di */
        mbar_wait(sm.empty + 8 * st, ((i / BWD_STAGES) & 1) ^ 1);
        mbar_arrive_expect_tx(sm.full + 8 * st, 2 * QT + 2 * Br * 4);
        load_tile<Br, D>(sm.Q + st * QT, tmQ, qt * Br, blk.bh, sm.full + 8 * st);
        load_tile<Br, D>(sm.dO + st * QT, tmdO, qt * Br, blk.bh, sm.full + 8 * st);
        bulk_load(sm.lse2 + st * Br * 4, lse2 + row, Br * 4, sm.full + 8 * st);
        bulk_load(sm.Di + st * Br * 4, Di + row, Br * 4, sm.full + 8 * st);
    }
}

/* The deterministic backward's counters (DET): one per query tile of a head, counting the visits
 * (key tiles) whose dQ adds are in. A visit waits until the counter reads its turn (det2_turn; an
 * acquire) and, once its bulk adds are complete, counts itself (a release). The adds are fp32, so
 * their order is the result's last bits; fixed, dQ is bitwise repeatable. The bulk add reads and
 * writes global memory through the async proxy, so a proxy fence stands between it and the
 * counter's generic accesses on both sides. */
__device__ __forceinline__ void det_wait_turn(const int *counter, int turn)
{
    int seen;
    do
        asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    while (seen != turn);
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
}
__device__ __forceinline__ void det_pass_turn(int *counter)
{
    asm volatile("fence.proxy.async.global;\n" ::: "memory");
    asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(counter) : "memory");
}
__device__ __forceinline__ int det_peek_turn(const int *counter)   /* one acquire load */
{
    int seen;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
    return seen;
}

/* The turns (DET). A query tile's counter counts visits, a visit being both warpgroups' adds of
 * one key tile (dq_writer issues them in a fixed order), and the turn of key tile kt's visit
 * is the number of visits before it:
 *   not causal: all key tiles of the head's earlier groups (det2_group's first), then the
 *     group's blocks in the order they reach qt: block r' does at step (qt - r') mod n_qt, so
 *     block r's rank is (min(qt, size - 1) - r) mod size (FlashAttention-3's shift_dependency).
 *     For qt >= size - 1 the visitors are r = size - 1, ..., 0 at steps qt - size + 1, ..., qt,
 *     one step apart; for smaller qt, r = qt, ..., 0 and then size - 1, ..., qt + 1 near the
 *     walk's end (n_qt >= size).
 *   causal: the key tiles that see qt, from kt_max(qt) = min(n_kt - 1, qt Br / Bc) down to 0
 *     (Bc is a multiple of Br, so kt sees qt when kt Bc / Br <= qt). bwd_block launches them in
 *     that order and each walks up from its first query tile, so kt + 1 reaches qt Bc / Br
 *     steps before kt.
 * Why no deadlock, given what step 13's turns assume already (the GPU starts blocks in index
 * order and gives a free SM to the next one): causal, a block waits only on blocks of lower
 * index, so the lowest unfinished block waits on nobody. Not causal, a block also waits on
 * blocks of higher index in its group, which is at most sms consecutive blocks. Take the visit
 * still to do that comes first in (group, step) order: every visit it waits on comes before it,
 * so is done; if its block has not started, every started unfinished block is in that group (an
 * earlier group's would hold an earlier visit, a later group's has not started), fewer than sms
 * of them: an SM is free and the block starts. That needs one block per SM (bwd_main's shared
 * memory) and every SM open to this kernel: a kernel beside it that keeps SMs for good (a second
 * deterministic backward on another stream, a persistent kernel) or an MPS or green-context
 * limit below G can leave a group half started and its started blocks spinning. FlashAttention-3
 * assumes the same. */
template <int D, bool WIDE = false>
__device__ __forceinline__ int det2_turn(const BwdBlock &blk, int qt, int n_kt, Det2Group grp,
                                         int causal)
{
    constexpr int Bc = BWD_BC, Br = BwdTiles<D, WIDE>::Br;
    if (causal)   /* the last key tile that sees query tile qt's rows */
        return min(n_kt - 1, (qt * Br + Br - 1) / Bc) - blk.k0 / Bc;
    const int rank = min(qt, grp.size - 1) - blk.qt_begin;
    return grp.first + (rank < 0 ? rank + grp.size : rank);
}

/* The 64 x 64 piece of dq_acc that warpgroup w adds for query tile qt (DQ_BY_COLUMNS): by columns
 * its 64 columns of the tile's 64 rows, by rows its 64 rows (qb = qt Br / 64 + w) of the 64
 * columns. dq_acc holds the pieces of a head by 64-row block, then by 64-column atom. */
template <int D, bool WIDE = false>
__device__ __forceinline__ size_t dq_piece(const BwdBlock &blk, int qt, int w)
{
    constexpr int Br = BwdTiles<D, WIDE>::Br, QB = BwdTiles<D, WIDE>::DQ_T ? 1 : Br / 64;
    return ((size_t)blk.bh * blk.n_qb + (size_t)qt * QB) * (D / 64) + w;
}

/* The dQ writer: warp 1 of the producer warpgroup (24 registers), query tile by query tile in
 * the consumers' order (walk_qt). Per tile, warpgroup w's staging as it is handed over
 * (BAR_DQ_FULL + w), added into dq_acc by one bulk reduce-add and handed back once read
 * (BAR_DQ_EMPTY + w). The consumers go on to the next tile meanwhile: the barrier between a
 * warpgroup's 128 threads after their staging stores, and the wait for the last add to have read
 * the staging, are the writer's alone (a warpgroup only arrives, and waits for its staging back
 * a whole tile later). DET: one turn per visit, and the turn is the path every block of the
 * group waits on. The writer waits for it once warpgroup 0's staging is in and issues that add,
 * then warpgroup 1's (into different pieces, dq_piece: both run at once, one wait covers them);
 * it reads the next visit's counter, so a turn already come costs no round trip, and hands both
 * stagings back once read, so the consumers' next tile never waits on the landing; then it waits
 * for the adds to land and passes the turn. Each piece's adds come in the turns' order, the same
 * bits every run. The EMPTY barriers balance: one arrival before the first tile, one after each
 * tile but the last. */
template <int D, bool DET, bool WIDE = false>
__device__ __forceinline__ void dq_writer(const BwdShared &sm, const BwdBlock &blk, float *dq_acc,
                                          int *dq_turns, int Nk, int causal, int sms, int lane)
{
    constexpr int Bc = BWD_BC;
    constexpr uint32_t DQ = BwdSmem<D, WIDE>::DQ;
    constexpr int DQF = BwdSmem<D, WIDE>::DQ_FLOATS;
    const int n_kt = (Nk + Bc - 1) / Bc;
    const Det2Group grp = DET && !causal ? det2_group(blk.k0 / Bc, n_kt, blk.n_qt, sms)
                                         : Det2Group{0, 1};
    named_bar_arrive(BAR_DQ_EMPTY, WG + 32);
    named_bar_arrive(BAR_DQ_EMPTY + 1, WG + 32);
    int seen = -1;   /* DET: the next visit's counter, read while this visit's adds complete */
    for (int i = 0; i < blk.n_iter; i++) {
        const int qt = walk_qt<DET>(blk, i);
        if (DET) {   /* the turn with warpgroup 0's staging; both handed back once read */
            int *turns = dq_turns + (size_t)blk.bh * blk.n_qt + qt;
            named_bar_sync(BAR_DQ_FULL, WG + 32);
            if (lane == 0) {
                const int turn = det2_turn<D, WIDE>(blk, qt, n_kt, grp, causal);
                if (seen == turn)   /* seen already: the acquire's fence still */
                    asm volatile("fence.proxy.async.global;\n" ::: "memory");
                else
                    det_wait_turn(turns, turn);
                bulk_reduce_add_f32(dq_acc + dq_piece<D, WIDE>(blk, qt, 0) * DQF, sm.dQ, DQ);
                bulk_commit();
            }
            __syncwarp();
            named_bar_sync(BAR_DQ_FULL + 1, WG + 32);
            if (lane == 0) {
                bulk_reduce_add_f32(dq_acc + dq_piece<D, WIDE>(blk, qt, 1) * DQF, sm.dQ + DQ, DQ);
                bulk_commit();
                if (i + 1 < blk.n_iter)   /* the next visit's counter */
                    seen = det_peek_turn(dq_turns + (size_t)blk.bh * blk.n_qt +
                                         walk_qt<DET>(blk, i + 1));
                bulk_wait_read<0>();   /* both adds have read their stagings */
            }
            __syncwarp();
            if (i + 1 < blk.n_iter) {
                named_bar_arrive(BAR_DQ_EMPTY, WG + 32);
                named_bar_arrive(BAR_DQ_EMPTY + 1, WG + 32);
            }
            if (lane == 0) {
                bulk_wait<0>();   /* the visit is done in memory before the next one's turn */
                det_pass_turn(turns);
            }
            __syncwarp();
        } else {
#pragma unroll
            for (int w = 0; w < 2; w++) {
                named_bar_sync(BAR_DQ_FULL + w, WG + 32);
                if (lane == 0) {
                    bulk_reduce_add_f32(dq_acc + dq_piece<D, WIDE>(blk, qt, w) * DQF,
                                        sm.dQ + w * DQ, DQ);
                    bulk_commit();
                    bulk_wait_read<0>();
                }
                __syncwarp();
                if (i + 1 < blk.n_iter)
                    named_bar_arrive(BAR_DQ_EMPTY + w, WG + 32);
            }
            __syncwarp();
        }
    }
    if (lane == 0)
        bulk_wait<0>();   /* the last adds are done before the block's shared memory goes */
    __syncwarp();
}

/* One query tile of the walk: qt (rows q0 = qt Br ..) in the ring's stage st, which holds its Q
 * and dO (shared addresses) and its lse2 and Di (pointers, for plain loads). */
struct BwdQueryTile {
    int st, qt, q0;
    uint32_t q, dO;
    const float *lse2, *Di;
};

/* A consumer warpgroup's stages, in the order a query tile runs them: mma_s_dp, p_and_ds,
 * mma_dv and store_ds (in the order DS_EARLY says), share_ds, mma_dq, issue_dk_wait_dq,
 * stage_dq, wait_dk; then, once, store_dk_dv. They
 * work on the registers bwd_consumer declares, held here by reference (force-inlined, they stay
 * registers): s[4j + 2a + b] is key[a], query q0 + 8j + 2t + b, and so is dp; pa[2j + a] and
 * dsa[2j + a] are their bf16 pairs (layout: mma_sm90.cuh). */
template <int D, bool MASKED, bool DET, bool WIDE = false> struct BwdConsumer {
    using Tiles = BwdTiles<D, WIDE>;
    using Smem = BwdSmem<D, WIDE>;
    static constexpr int Bc = BWD_BC, Br = Tiles::Br;
    static constexpr int DQF = Smem::DQ_FLOATS;
    static constexpr uint32_t DS_ATOM = Smem::DS_ATOM, DQ = Smem::DQ;

    const BwdShared &sm;
    const BwdThread &th;
    const int k0;                  /* the block's first key */
    const float c;                 /* scale log2(e) */
    const int (&key)[2];           /* this thread's two keys and the mask: bwd_consumer says how */
    const int q_shift, mask_below;
    const int Nk;                  /* the keys from Nk on are padding (moved PAST on) */
    const uint32_t k_wg, v_wg;     /* this warpgroup's 64 keys of K and V */
    float (&dv)[D / 2], (&dk)[D / 2];
    float (&s)[Br / 2], (&dp)[Br / 2];
    uint32_t (&pa)[Br / 4], (&dsa)[Br / 4];
    float (&dq)[DQF / WG];
    float2 (&lse2_01)[2];

    /* S^T = K_wg Q^T and dP^T = V_wg dO^T: two groups, m64n{Br}k16, all operands K-major.
     * The mask goes in before the product, as S^T's starting value (a bias): -inf where key[a]
     * is masked for the query, 0 elsewhere, and the first k-slice adds onto it instead of
     * starting from 0. P^T = 2^(-inf) is then exactly 0, and dS^T = 0 (dP^T - Di) too, so the
     * code after the waits (p_and_ds) is the unmasked kernel's, with no compare or branch for
     * ptxas to schedule around. The branch sits here, just after the wait on the stage's
     * mbarrier, where there is nothing to schedule across it. Each arm issues the whole S^T
     * product with scale-d fixed: one product with a runtime scale-d makes S^T's registers
     * (the last tile's P^T) live around the whole loop, for the arm that does not read them,
     * and that spilled. A padded key (past Nk, moved PAST on) gets -inf too: 2^(-inf - lse2) = 0
     * for any lse2 but -inf, and lse2 is finite on a real row (every row sees key 0 at least)
     * and +inf on a padded one (bwd_preprocess), so the 2^(0 - lse2) = +inf of the unmasked
     * score cannot arise. */
    __device__ __forceinline__ void mma_s_dp(const BwdQueryTile &qtile)
    {
        if (MASKED && qtile.q0 < mask_below) {
            /* DQ_T: the keys and t read afresh, as store_dk_dv does (held across the loop, they
             * spilled in step 14) */
            int keys[2] = {key[0], key[1]}, t = th.t;
            if constexpr (Tiles::DQ_T) {
                const int l = fresh_tid() % WG, kr = k0 + 64 * th.wg + 16 * (l / 32) + l % 32 / 4;
                keys[0] = kr + (kr >= Nk ? PAST : 0);
                keys[1] = kr + 8 + (kr + 8 >= Nk ? PAST : 0);
                t = l % 4;
            }
            const int qs0 = qtile.q0 + q_shift + 2 * t;
#pragma unroll
            for (int j = 0; j < Br / 8; j++)
#pragma unroll
                for (int a = 0; a < 2; a++)
#pragma unroll
                    for (int b = 0; b < 2; b++)
                        s[4 * j + 2 * a + b] = keys[a] > qs0 + 8 * j + b ? -INFINITY : 0.f;
            wgmma_fence();
            mma_ABt<D, Br, Bc, true>(s, k_wg, qtile.q);
            wgmma_commit();
        } else {
            wgmma_fence();
            mma_ABt<D, Br, Bc>(s, k_wg, qtile.q);
            wgmma_commit();
        }
        mma_ABt<D, Br, Bc>(dp, v_wg, qtile.dO);
        wgmma_commit();
    }

    /* P^T = 2^(S^T c - lse2) while dP^T still runs (masked already: mma_s_dp); then dS^T, and
     * both to bf16. With LSE2_EARLY lse2's first two pairs are read before the wait, so the first
     * exponents need not wait for shared memory after it (all eight pairs cost spills). */
    __device__ __forceinline__ void p_and_ds(const BwdQueryTile &qtile)
    {
        const int t = Tiles::DQ_T ? fresh_tid() % 4 : th.t;
        const float *lse2_st = qtile.lse2;
        if (Tiles::LSE2_EARLY) {
            lse2_01[0] = *reinterpret_cast<const float2 *>(lse2_st + 2 * t);
            lse2_01[1] = *reinterpret_cast<const float2 *>(lse2_st + 8 + 2 * t);
        }
        wgmma_wait<1>();
        reg_fence(s);
#pragma unroll
        for (int j = 0; j < Br / 8; j++) {
            const float2 lse2_j = Tiles::LSE2_EARLY && j < 2
                                      ? lse2_01[j & 1]
                                      : *reinterpret_cast<const float2 *>(lse2_st + 8 * j + 2 * t);
#pragma unroll
            for (int a = 0; a < 2; a++) {
                s[4 * j + 2 * a] = ex2_approx(fmaf(s[4 * j + 2 * a], c, -lse2_j.x));
                s[4 * j + 2 * a + 1] = ex2_approx(fmaf(s[4 * j + 2 * a + 1], c, -lse2_j.y));
            }
        }
        /* dS^T = P^T o (dP^T - Di) */
        wgmma_wait<0>();
        reg_fence(dp);
#pragma unroll
        for (int j = 0; j < Br / 8; j++) {
            const float2 di = *reinterpret_cast<const float2 *>(qtile.Di + 8 * j + 2 * t);
#pragma unroll
            for (int a = 0; a < 2; a++) {
                dp[4 * j + 2 * a] = s[4 * j + 2 * a] * (dp[4 * j + 2 * a] - di.x);
                dp[4 * j + 2 * a + 1] = s[4 * j + 2 * a + 1] * (dp[4 * j + 2 * a + 1] - di.y);
            }
        }
#pragma unroll
        for (int x = 0; x < Br / 4; x++) {
            pa[x] = pack_bf16(s[2 * x], s[2 * x + 1]);
            dsa[x] = pack_bf16(dp[2 * x], dp[2 * x + 1]);
        }
    }

    /* dV += P^T dO: A from registers, dO as MN-major B (dK += dS^T Q the same way, after dQ,
     * in issue_dk_wait_dq) */
    __device__ __forceinline__ void mma_dv(const BwdQueryTile &qtile)
    {
        reg_fence(dv);
        reg_fence(dk);
        reg_fence(pa);
        reg_fence(dsa);
        wgmma_fence();
        mma_AB<D, Br>(dv, pa, qtile.dO);
        wgmma_commit();
    }

    /* dS^T to shared memory, [key][query] in the 128-byte swizzle: dsa[2j + a] is the pair
     * (key[a], queries 8j + 2t, +1), 4 bytes at chunk j % 8 of row key[a] - k0 of atom j / 8.
     * With DS_STMATRIX by stmatrix, four 8 x 8 pieces per instruction: dsa[4x .. 4x + 3] are the
     * pieces (j, a) = (2x, 0), (2x, 1), (2x + 1, 0), (2x + 1, 1), and lane gives the row
     * lane % 8 of piece lane / 8 (16 bytes, one swizzle chunk). At D = 64 it measured slower
     * than the plain stores. */
    __device__ __forceinline__ void store_ds(uint32_t ds_buf)
    {
        const int wg = th.wg, lane = th.lane;
        if (Tiles::DQ_T) {
            /* dS [query][key]: matrix (j, a) of four is keys 16 warp + 8a.. (chunk 2 warp + a of
             * atom wg) x queries 8j..; stored transposed, its row l % 8 is query 8j + l % 8 */
#pragma unroll
            for (int x = 0; x < Br / 16; x++) {
                const int j = 2 * x + lane / 16, a = lane / 8 % 2;
                const uint32_t four[4] = {dsa[4 * x], dsa[4 * x + 1], dsa[4 * x + 2],
                                          dsa[4 * x + 3]};
                stmatrix_x4_trans(ds_buf + wg * DS_ATOM +
                                      sw128_offset(8 * j + lane % 8, 2 * th.warp + a),
                                  four);
            }
        } else if (Tiles::DS_STMATRIX) {
#pragma unroll
            for (int x = 0; x < Br / 16; x++) {
                const int j = 2 * x + lane / 16;
                const uint32_t r = 64 * wg + 16 * th.warp + 8 * (lane / 8 % 2) + lane % 8;
                const uint32_t four[4] = {dsa[4 * x], dsa[4 * x + 1], dsa[4 * x + 2],
                                          dsa[4 * x + 3]};
                stmatrix_x4(ds_buf + j / 8 * DS_ATOM + sw128_offset(r, j % 8), four);
            }
        } else {
#pragma unroll
            for (int j = 0; j < Br / 8; j++)
#pragma unroll
                for (int a = 0; a < 2; a++)
                    *reinterpret_cast<uint32_t *>(sm.at(ds_buf + j / 8 * DS_ATOM +
                                                        sw128_offset(key[a] - k0, j % 8) +
                                                        4 * th.t)) = dsa[2 * j + a];
        }
    }

    /* dS^T's stores, made visible to the tensor cores' reads (the async proxy), and the other
     * warpgroup's half in: dQ's product reads both */
    __device__ __forceinline__ void share_ds()
    {
        fence_proxy_async_smem();
        named_bar_sync(BAR_DS_BOTH, 2 * WG);   /* both halves of dS^T are in */
    }

    /* dQ's piece = dS K over all 128 keys: A = dS^T as stored (MN-major), B = K as stored
     * (MN-major). By columns, this warpgroup's 64 columns of K (atom wg); by rows, its 64 query
     * rows of dS (atom wg). */
    __device__ __forceinline__ void mma_dq(uint32_t ds_buf)
    {
        if constexpr (Tiles::DQ_T) {   /* dV done first: P^T's registers are free for dQ^T's */
            wgmma_wait<0>();
            reg_fence(dv);
            reg_fence(pa);
        }
        reg_fence(dq);
        wgmma_fence();
        if constexpr (Tiles::DQ_T) {
            /* dQ^T [64 features of atom wg][Br queries] = K^T dS^T: A = K's atom wg as stored
             * (MN-major, 16 keys = 2048 bytes a k-step), B = dS as stored ([query][key],
             * K-major: 16 keys = 32 bytes into atom k / 4) */
            const uint64_t a0 = wgmma_desc(sm.K + th.wg * tile_bytes<64>(Bc), tile_bytes<64>(Bc),
                                           1024),
                           b0 = wgmma_desc(ds_buf, 16, 1024);
#pragma unroll
            for (int k = 0; k < Bc / 16; k++)
                wgmma_bf16<Br>::template ss<1, 0>(dq, a0 + ((k * 16 * 128) >> 4),
                                                  b0 + (((k / 4) * DS_ATOM + (k % 4) * 32) >> 4),
                                                  k > 0);
        } else if (Tiles::DQ_BY_COLUMNS) {
            mma_AtB<Bc / 16>(dq, ds_buf, 0, DS_ATOM, sm.K, th.wg, tile_bytes<64>(Bc), 0);
        } else {
            mma_AtB<Bc / 16>(dq, ds_buf, th.wg, DS_ATOM, sm.K, 0, tile_bytes<64>(Bc), 0);
        }
        wgmma_commit();
    }

    /* Once dV and dK are done, the stage's Q, dO, lse2 and Di go back to the producer. Every
     * thread arrives, not one per warp as in the forward: each has read lse2 and Di with plain
     * loads, and its own arrival (a release) is what orders those reads before the producer's
     * next bulk copy into the stage. dK is issued last (FlashAttention-3's order), so that the
     * tensor cores run it while this warpgroup stages dQ (stage_dq); dS^T's registers, which it
     * reads, stay untouched until it is done (wait_dk). */
    __device__ __forceinline__ void issue_dk_wait_dq(const BwdQueryTile &qtile)
    {
        reg_fence(dk);
        wgmma_fence();
        mma_AB<D, Br>(dk, dsa, qtile.q);
        wgmma_commit();
        wgmma_wait<1>();   /* dV, dQ */
        reg_fence(dv);
        reg_fence(dq);
    }

    /* The pieces to this warpgroup's staging in fragment order (float4 x of thread l at
     * (x * 128 + l) * 16 bytes of its piece: no bank conflicts), handed to the dQ writer, which
     * adds them into dq_acc (consecutive there too) with one bulk reduce-add. The writer's
     * previous add must have read the staging first. */
    __device__ __forceinline__ void stage_dq()
    {
        const int tid = th.tid, wg = th.wg;
        const uint32_t stage = sm.dQ + wg * DQ;
        named_bar_sync(BAR_DQ_EMPTY + wg, WG + 32);   /* the writer has read the last one */
#pragma unroll
        for (int x = 0; x < DQF / WG / 4; x++)
            *reinterpret_cast<float4 *>(sm.at(stage + (x * WG + tid % WG) * 16)) =
                make_float4(dq[4 * x], dq[4 * x + 1], dq[4 * x + 2], dq[4 * x + 3]);
        fence_proxy_async_smem();
        named_bar_arrive(BAR_DQ_FULL + wg, WG + 32);   /* the writer adds it; this one goes on */
    }

    /* dK done, dS^T's registers free, the stage goes back (issue_dk_wait_dq) */
    __device__ __forceinline__ void wait_dk(const BwdQueryTile &qtile)
    {
        wgmma_wait<0>();   /* dK */
        reg_fence(dk);
        reg_fence(dsa);
        mbar_arrive(sm.empty + 8 * qtile.st);
    }

    /* The epilogue, once per block: dK = scale dS^T Q, dV. With TMA_DKV through shared memory,
     * one TMA store per warp and tensor, as the forward stores O: 4-byte stores to global
     * memory hold the long scoreboard until the store unit has read their registers, and fill
     * half of each 32-byte sector. The staging is K's and V's own tiles, in their layout, free
     * once both warpgroups are past their last dQ product, which reads all 128 keys of K (with
     * no query tile the producer never loaded them); the TMA unit writes only the keys below Nk
     * (the map's bound), and the block leaves once it has read the staging. Without it, plain
     * stores of the rows that exist. */
    __device__ __forceinline__ void store_dk_dv(const CUtensorMap *tmdK, const CUtensorMap *tmdV,
                                                bf16 *dK, bf16 *dV, int bh, int Nk, float scale)
    {
        bf16 *dKb = dK + (size_t)bh * Nk * D, *dVb = dV + (size_t)bh * Nk * D;
        /* DQ_T: the keys and t read afresh (held across the loop, they spilled) */
        int keys[2] = {key[0], key[1]}, t = th.t;
        if constexpr (Tiles::DQ_T) {
            const int l = fresh_tid() % WG, kr = k0 + 64 * th.wg + 16 * (l / 32) + l % 32 / 4;
            keys[0] = kr;
            keys[1] = kr + 8;
            t = l % 4;
        }
        if constexpr (Tiles::TMA_DKV && (Tiles::TMA_DKV_MASKED || !MASKED)) {
            /* a key past Nk (moved 2^30 on) gives its row's offset modulo 2^32 all the same */
            const uint32_t sk = sm.K + opaque_zero(), sv = sm.V + opaque_zero();
            named_bar_sync(BAR_DS_BOTH, 2 * WG);   /* both warpgroups are done with K */
#pragma unroll
            for (int a = 0; a < 2; a++) {
                const uint32_t r = keys[a] - k0;
#pragma unroll
                for (int j = 0; j < D / 8; j++) {
                    const uint32_t e = (j / 8) * tile_bytes<64>(BWD_BC) + r * 128 +
                                       (((j % 8) ^ (r % 8)) << 4) + 4 * t;
                    st_shared_u32(sk + e, pack_bf16(dk[4 * j + 2 * a] * scale,
                                                    dk[4 * j + 2 * a + 1] * scale));
                    st_shared_u32(sv + e, pack_bf16(dv[4 * j + 2 * a], dv[4 * j + 2 * a + 1]));
                }
            }
            const int r16 = 64 * th.wg + 16 * th.warp;   /* this warp's first key in the tile */
            fence_proxy_async_smem();   /* the generic proxy's writes, seen by the TMA unit */
            __syncwarp();
            if (th.lane == 0 && k0 + r16 < Nk) {   /* a box wholly past Nk writes nothing */
#pragma unroll
                for (int at = 0; at < D / 64; at++) {
                    const uint32_t off = at * tile_bytes<64>(BWD_BC) + r16 * 128;
                    tma_store_3d(tmdK, sk + off, 64 * at, k0 + r16, bh);
                    tma_store_3d(tmdV, sv + off, 64 * at, k0 + r16, bh);
                }
                bulk_commit();
                bulk_wait_read<0>();
            }
        } else {
#pragma unroll
            for (int a = 0; a < 2; a++) {
                if (keys[a] >= Nk)
                    continue;
#pragma unroll
                for (int j = 0; j < D / 8; j++) {
                    const size_t e = (size_t)keys[a] * D + 8 * j + 2 * t;
                    *reinterpret_cast<uint32_t *>(dKb + e) =
                        pack_bf16(dk[4 * j + 2 * a] * scale, dk[4 * j + 2 * a + 1] * scale);
                    *reinterpret_cast<uint32_t *>(dVb + e) =
                        pack_bf16(dv[4 * j + 2 * a], dv[4 * j + 2 * a + 1]);
                }
            }
        }
    }
};

/* A consumer warpgroup: its 64 keys' dK and dV over the block's query tiles, stage by stage
 * (BwdConsumer), and dQ's share staged per tile for the dQ writer. */
template <int D, bool MASKED, bool DET, bool WIDE = false>
__device__ __forceinline__ void bwd_consumer(const BwdShared &sm, const BwdThread &th,
                                             const BwdBlock &blk, const CUtensorMap *tmdK,
                                             const CUtensorMap *tmdV, bf16 *dK, bf16 *dV, int Nk,
                                             float c, float scale, int causal)
{
    using Smem = BwdSmem<D, WIDE>;
    constexpr int Br = Smem::Br;
    constexpr uint32_t QT = Smem::QT, DS = Smem::DS, DS_BUFS = Smem::DS_BUFS;
    const int kw0 = blk.k0 + 64 * th.wg;   /* this warpgroup's first key */
    const int warp = th.warp, g = th.g;
    /* This thread's two keys (a = 0, 1) and the softmax's mask, in one compare: query q drops
     * key[a] when key[a] > q + q_shift. Causal, q_shift = 0: query q sees keys <= q. A key past
     * Nk, the last key tile's padding, is moved PAST = 2^30 later, after every query: TMA filled
     * those keys with zeros, so S = 0 there, and 2^(0 - lse2) overflows to +inf on a row whose
     * scores all sit far below zero (then dQ += inf * 0 = NaN); masked, they add exactly
     * nothing, whatever the row's lse. Not causal, the queries move LATER = 2^29 on, after every
     * real key and before every moved one. Only the tiles with a masked pair run the mask
     * (q0 < mask_below): causal ones with a key after one of their queries, and the last key
     * tile when it has keys past Nk; a problem with neither runs bwd_main<D, false>, compiled
     * without the mask (3-5 % faster at D = 64, about 2 % at D = 128). A separate mask value
     * per key (the key, or "never", or "always") costs a register, and at D = 128 that register
     * spills. The key
     * itself stays a row index everywhere below: a moved key's row, key - k0 + 2^30, gives the
     * right uint32 swizzle offset (2^30 rows x 128 bytes is a multiple of 2^32; a static_assert
     * at PAST checks it), and the last stores skip it (key >= Nk). */
    const int key[2] = {kw0 + 16 * warp + g + (kw0 + 16 * warp + g >= Nk ? PAST : 0),
                        kw0 + 16 * warp + g + 8 + (kw0 + 16 * warp + g + 8 >= Nk ? PAST : 0)};
    const int q_shift = causal ? 0 : LATER;
    const int mask_below = kw0 + 64 > Nk ? INT_MAX : causal ? kw0 + 63 : INT_MIN;
    const uint32_t k_wg = sm.K + 64 * 128 * th.wg, v_wg = sm.V + 64 * 128 * th.wg;
    float dv[D / 2], dk[D / 2];   /* 64 keys x D each, across the whole loop */
    float s[Br / 2], dp[Br / 2];  /* S^T, then P^T (fp32); dP^T, then dS^T */
    uint32_t pa[Br / 4], dsa[Br / 4];   /* P^T, dS^T in bf16: the A operands of dV, dK */
    float dq[Smem::DQ_FLOATS / WG];   /* this warpgroup's piece of dS K (or dQ^T) */
    float2 lse2_01[2];                      /* LSE2_EARLY: lse2's first two pairs */
#pragma unroll
    for (int i = 0; i < D / 2; i++)
        dv[i] = dk[i] = 0.f;
    if (blk.n_iter > 0)
        mbar_wait(sm.bar_kv, 0);
    BwdConsumer<D, MASKED, DET, WIDE> cons = {sm, th, blk.k0, c, key, q_shift, mask_below, Nk,
                                              k_wg, v_wg, dv, dk, s, dp, pa, dsa, dq, lse2_01};

    for (int i = 0; i < blk.n_iter; i++) {
        const int st = i % BWD_STAGES, qt = walk_qt<DET>(blk, i);
        const BwdQueryTile qtile = {
            st, qt, qt * Br, sm.Q + st * QT, sm.dO + st * QT,
            reinterpret_cast<const float *>(sm.at(sm.lse2 + st * Br * 4)),
            reinterpret_cast<const float *>(sm.at(sm.Di + st * Br * 4))};
        mbar_wait(sm.full + 8 * st, (i / BWD_STAGES) & 1);

        cons.mma_s_dp(qtile);
        cons.p_and_ds(qtile);
        const uint32_t ds_buf = sm.dS + (i % DS_BUFS) * DS;
        if (BwdTiles<D, WIDE>::DS_EARLY) {   /* dS^T's stores drain while dV is issued */
            cons.store_ds(ds_buf);
            cons.mma_dv(qtile);
        } else {
            cons.mma_dv(qtile);
            cons.store_ds(ds_buf);
        }
        cons.share_ds();
        cons.mma_dq(ds_buf);
        cons.issue_dk_wait_dq(qtile);
        cons.stage_dq();
        cons.wait_dk(qtile);
    }
    cons.store_dk_dv(tmdK, tmdV, dK, dV, blk.bh, Nk, scale);
}

/* The backward's main kernel, as named stages: the producer's load (bwd_load), then per query
 * tile S^T and dP^T (mma_s_dp), P^T and dS^T (p_and_ds), dV and dK (mma_dv, issue_dk_wait_dq,
 * wait_dk), the dS^T store (store_ds, share_ds), dQ (mma_dq, stage_dq; the writer's add: dq_writer), and the epilogue (store_dk_dv).
 * grid: ceil(Nk / 128) * B*H blocks, one per (key tile, head), in the order bwd_block says.
 * block: consumer warpgroups 0, 1 (keys 0-63, 64-127 of the tile) + the producer warpgroup 2.
 * Q, dO: tensor maps with Br-row boxes; K, V: 128-row boxes; dK, dV (TMA_DKV): 16-row boxes.
 * lse2, Di: [B*H, Nq_pad] fp32; dq_acc: per (head, query tile) D/64 pieces of 64 x 64 fp32 in
 * fragment order (stage_dq). dK, dV: [B, H, Nk, D] bf16. */
template <int D, bool MASKED, bool DET, bool WIDE = false>
__global__ void __launch_bounds__(3 * WG, 1)
bwd_main(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
         const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmdO,
         const float *__restrict__ lse2, const float *__restrict__ Di, float *__restrict__ dq_acc,
         int *__restrict__ dq_turns, const __grid_constant__ CUtensorMap tmdK,
         const __grid_constant__ CUtensorMap tmdV, bf16 *__restrict__ dK, bf16 *__restrict__ dV,
         int bh_count, int Nq, int Nk, float c,
         float scale, int causal, int hps, int sms)
{
    static_assert(!WIDE || D == 128, "80-row tiles: D = 128");
    using Smem = BwdSmem<D, WIDE>;
    extern __shared__ uint8_t smem_raw[];
    const uint32_t base = smem_u32(smem_raw);
    const uint32_t sK = (base + 1023u) & ~1023u;
    const BwdShared sm = {smem_raw,          base,          sK,            sK + Smem::V,
                          sK + Smem::Q,      sK + Smem::dO, sK + Smem::dS, sK + Smem::dQ,
                          sK + Smem::lse2,   sK + Smem::Di, sK + Smem::bar_kv,
                          sK + Smem::full,   sK + Smem::empty};

    /* wg read from lane 0: ptxas then knows it is the same across the warp, and keeps the wgmma
     * descriptors built from it in uniform registers (step 12's forward does the same) */
    const int tid = threadIdx.x, wg = __shfl_sync(0xffffffffu, tid / WG, 0),
              warp = (tid % WG) / 32, lane = tid % 32;
    const BwdThread th = {tid, wg, warp, lane, lane / 4, lane % 4};
    const BwdBlock blk = bwd_block<D, DET, WIDE>(bh_count, Nq, Nk, causal, hps, sms);

    if (tid == 0) {
        mbar_init(sm.bar_kv, 1);
        for (int i = 0; i < BWD_STAGES; i++) {
            mbar_init(sm.full + 8 * i, 1);
            mbar_init(sm.empty + 8 * i, 2 * WG);   /* every consumer thread releases the stage */
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (wg == 2) {
        /* ------------------------------------------------------------------ the producer */
        setmaxnreg_dec<BWD_PRODUCER_REGS>();
        if (tid % WG == 0 && blk.n_iter > 0)
            bwd_load<D, DET, WIDE>(sm, blk, &tmQ, &tmK, &tmV, &tmdO, lse2, Di);
        if (warp == 1 && blk.n_iter > 0)
            dq_writer<D, DET, WIDE>(sm, blk, dq_acc, dq_turns, Nk, causal, sms, lane);
        return;
    }

    /* -------------------------------------------------------------------------- consumers */
    setmaxnreg_inc<BWD_CONSUMER_REGS>();
    bwd_consumer<D, MASKED, DET, WIDE>(sm, th, blk, &tmdK, &tmdV, dK, dV, Nk, c, scale, causal);
}

/* dQ = scale dq_acc, to bf16, one block per 64 x 64 piece. dq_acc holds, per (head, block qb of
 * 64 query rows, piece of 64 columns), the 64 x 64 floats in the order bwd_main staged them:
 * float4 x of consumer thread l (warp w = l / 32, g = l % 32 / 4, t = l % 4) is rows
 * 64qb + 16w + g (+ 8), columns 8x + 2t, +1. The piece goes through shared memory to come out
 * as whole rows: 16-byte stores, 128 bytes per row. */
__global__ void __launch_bounds__(256)
bwd_convert_dq(const float *__restrict__ acc, bf16 *__restrict__ dq, int n_qb, int Nq, int D,
               float scale)
{
    constexpr int LD = 64 + 4;   /* padded row of the piece in shared memory, floats */
    __shared__ float tile[64 * LD];
    const size_t piece = blockIdx.x, t64 = piece / (D / 64);
    const float4 *src = reinterpret_cast<const float4 *>(acc + piece * BWD_DQ_FLOATS);
#pragma unroll
    for (int k = 0; k < BWD_DQ_FLOATS / 4 / 256; k++) {
        const int f = k * 256 + threadIdx.x, x = f / WG, l = f % WG;
        const int row = 16 * (l / 32) + l % 32 / 4, col = 8 * x + 2 * (l % 4);
        const float4 v = src[f];
        *reinterpret_cast<float2 *>(&tile[row * LD + col]) = make_float2(v.x, v.y);
        *reinterpret_cast<float2 *>(&tile[(row + 8) * LD + col]) = make_float2(v.z, v.w);
    }
    __syncthreads();
    const int qb = (int)(t64 % n_qb);
    bf16 *out = dq + t64 / n_qb * Nq * D + (piece % (D / 64)) * 64;
#pragma unroll
    for (int k = 0; k < 2; k++) {   /* 64 rows x 8 chunks of 8 columns */
        const int chunk = k * 256 + threadIdx.x, row = chunk / 8, col = 8 * (chunk % 8);
        if (qb * 64 + row >= Nq)
            continue;
        const float *r = &tile[row * LD + col];
        const uint4 v = make_uint4(pack_bf16(r[0] * scale, r[1] * scale),
                                   pack_bf16(r[2] * scale, r[3] * scale),
                                   pack_bf16(r[4] * scale, r[5] * scale),
                                   pack_bf16(r[6] * scale, r[7] * scale));
        *reinterpret_cast<uint4 *>(out + (size_t)(qb * 64 + row) * D + col) = v;
    }
}

/* bwd_convert_dq for the transposed pieces (DQ_T), one block per piece of R query rows x 64
 * columns: float4 x of consumer thread l (warp w = l / 32, g = l % 32 / 4, t = l % 4) is
 * (column 16w + g, rows 8x + 2t, +1), then (column 16w + g + 8, the same rows). */
template <int R>
__global__ void __launch_bounds__(256)
bwd_convert_dq_t(const float *__restrict__ acc, bf16 *__restrict__ dq, int n_qt, int Nq, int D,
                 float scale)
{
    constexpr int LD = 64 + 4, F4 = R * 64 / 4;
    __shared__ float tile[R * LD];
    const size_t piece = blockIdx.x, tq = piece / (D / 64);
    const float4 *src = reinterpret_cast<const float4 *>(acc + piece * (size_t)(R * 64));
#pragma unroll
    for (int k = 0; k < (F4 + 255) / 256; k++) {
        const int f = k * 256 + threadIdx.x, x = f / WG, l = f % WG;
        if (f >= F4)
            break;
        const int col = 16 * (l / 32) + l % 32 / 4, row = 8 * x + 2 * (l % 4);
        const float4 v = src[f];
        tile[row * LD + col] = v.x;
        tile[(row + 1) * LD + col] = v.y;
        tile[row * LD + col + 8] = v.z;
        tile[(row + 1) * LD + col + 8] = v.w;
    }
    __syncthreads();
    const int qt = (int)(tq % n_qt);
    bf16 *out = dq + tq / n_qt * Nq * D + (piece % (D / 64)) * 64;
#pragma unroll
    for (int k = 0; k < (R * 8 + 255) / 256; k++) {   /* R rows x 8 chunks of 8 columns */
        const int chunk = k * 256 + threadIdx.x, row = chunk / 8, col = 8 * (chunk % 8);
        if (row >= R || qt * R + row >= Nq)
            continue;
        const float *r = &tile[row * LD + col];
        const uint4 v = make_uint4(pack_bf16(r[0] * scale, r[1] * scale),
                                   pack_bf16(r[2] * scale, r[3] * scale),
                                   pack_bf16(r[4] * scale, r[5] * scale),
                                   pack_bf16(r[6] * scale, r[7] * scale));
        *reinterpret_cast<uint4 *>(out + (size_t)(qt * R + row) * D + col) = v;
    }
}

/* ------------------------------------------------------------------------ launch wrapper */

static attn_status supports(const attn_problem *p, int backward, const char **why)
{
    attn_status s = attn_problem_valid(p, why);
    if (s != ATTN_OK)
        return s;
    if (backward) {
        if (p->dtype != ATTN_BF16) {
            *why = "the backward takes bf16 only (wgmma takes 16-bit operands)";
            return ATTN_ERR_UNSUPPORTED;
        }
        if (p->head_dim != 64 && p->head_dim != 128) {
            *why = "the backward takes head_dim 64 or 128 only (tiles are compiled per D)";
            return ATTN_ERR_UNSUPPORTED;
        }
        if (p->seq_q >= LATER || p->seq_k >= LATER) {
            *why = "the backward takes Nq and Nk below 2^29 (its mask moves padded keys 2^30 later; "
                   "such a problem would not fit in memory anyway)";
            return ATTN_ERR_UNSUPPORTED;
        }
        if ((size_t)p->batch * p->heads * ((p->seq_k + BWD_BC - 1) / BWD_BC) > 2147483647u) {
            *why = "B*H*ceil(Nk/128) above 2^31-1 blocks (the grid limit)";
            return ATTN_ERR_UNSUPPORTED;
        }
        *why = NULL;
        return ATTN_OK;
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
    if ((size_t)p->batch * p->heads * ((p->seq_q + 127) / 128) > 2147483647u) {
        *why = "B*H*ceil(Nq/128) above 2^31-1 work tiles (the grid limit)";
        return ATTN_ERR_UNSUPPORTED;
    }
    *why = NULL;
    return ATTN_OK;
}

/* Stream-K when not causal, at both head dims (D = 64: 192-row tiles, whose last round leaves 88
 * of 132 SMs idle at N = 4096, a ninth of the run; step 11's 128-row tiles left 3 %, and there
 * stream-K gained at most 1.5 %). Causal, and D = 64 with few tiles, are built without it
 * (SPLIT = false). The workspace is asked for before the launch, maybe for another device, so it
 * may not depend on the GPU: it is sized for up to SK_MAX_GRID blocks (GH100 has 144 SMs; an H200
 * 132), and a larger grid runs without stream-K. */
constexpr long long SK_MAX_GRID = 144;
/* Cutting a tile costs each piece a start (Q and K in flight, S_0 alone) and a partial written
 * to and read from global memory (68 KB at D = 128); below this many key tiles per work tile
 * that costs more than the last round's idle SMs. */
constexpr long long SK_MIN_KEY_TILES = 16;

static size_t sk_bytes(long long blocks, int d)
{
    return sk_counter_bytes((unsigned)blocks) + (size_t)blocks * 2 * sk_partial_bytes(d);
}

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* causal D = 128 on 80-row tiles from this Nq (13_causal_wide, H200: 0.5-3.6 % slower at
 * Nq = 2048-6144, 0.4-1.4 % faster at 8192, 1-2 % at 12288, 2.3-3.4 % from 16384) */
#define BWD_WIDE_CAUSAL_NQ 8192

/* The backward's query rows, padded to whole tiles of BwdTiles<D>::Br per head. */
static bool bwd_wide(const attn_problem *p)   /* BwdTiles<128, true>: 80-row tiles */
{
    return p->head_dim == 128 && (!p->causal || p->seq_q >= BWD_WIDE_CAUSAL_NQ);
}

static int bwd_br(const attn_problem *p)
{
    return p->head_dim == 64 ? BwdTiles<64>::Br
           : bwd_wide(p)     ? BwdTiles<128, true>::Br
                             : BwdTiles<128>::Br;
}

static size_t bwd_rows(const attn_problem *p)
{
    const int br = bwd_br(p);
    return (size_t)p->batch * p->heads * ((p->seq_q + br - 1) / br) * br;
}

/* Forward: stream-K's partials (below). Backward: the fp32 dQ accumulator (padded rows x D), then
 * lse2 and Di (padded rows each), then, deterministic, a turn counter per query tile. */
static size_t workspace_bytes(const attn_problem *p, int backward)
{
    const int br = bwd_br(p);
    if (backward)
        return align256(bwd_rows(p) * p->head_dim * 4) + 2 * align256(bwd_rows(p) * 4) +
               (p->deterministic ? align256(bwd_rows(p) / br * 4) : 0);
    if (p->causal)
        return sizeof(unsigned);   /* DYN's counter */
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

template <int D, int NWG, int Bc, bool SPLIT, bool DYN>
static attn_status launch(const attn_problem *p, const void *q, const void *k, const void *v,
                          void *o, float *lse, void *ws, cudaStream_t stream)
{
    constexpr int Br = 64 * NWG;
    if constexpr (DYN) {   /* at most one tile per SM: one block per tile, no counter to zero */
        int dev, sms;      /* (its memset cost 8 % at 4,8,512,512, causal: 128 tiles, 12 us) */
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return ATTN_ERR_CUDA;
        if ((long long)p->batch * p->heads * ((p->seq_q + Br - 1) / Br) <= sms)
            return launch<D, NWG, Bc, SPLIT, false>(p, q, k, v, o, lse, ws, stream);
    }
    /* The driver's encoder, reached through the runtime (no -lcuda), kept once found */
    const auto encode = (PFN_cuTensorMapEncodeTiled_v12000)step_driver_fn(
        &encode_cache, "cuTensorMapEncodeTiled", 12000);
    if (!encode)
        return ATTN_ERR_CUDA;
    const int bh = p->batch * p->heads;
    CUtensorMap tmQ, tmK, tmV, tmO = {};
    if (make_map(encode, &tmQ, q, bh, p->seq_q, D, Br) != ATTN_OK ||
        make_map(encode, &tmK, k, bh, p->seq_k, D, Bc) != ATTN_OK ||
        make_map(encode, &tmV, v, bh, p->seq_k, D, Bc) != ATTN_OK ||
        (Tiles<D>::TMA_O && make_map(encode, &tmO, o, bh, p->seq_q, D, 16) != ATTN_OK))
        return ATTN_ERR_CUDA;
    /* Q, STAGES K and V stages, O's staging, the mbarriers, plus 1 KB to align the base to a
     * swizzle line */
    constexpr size_t smem = (Tiles<D>::TMA_O ? 2 : 1) * tile_bytes<D>(Br) +
                            2 * STAGES * tile_bytes<D>(Bc) +
                            8 * (2 + 4 * STAGES) + 8 + 1024;
    auto kernel = attention_fwd<D, NWG, Bc, SPLIT, DYN, true>;
    if constexpr (!DYN)   /* DYN is causal only */
        if (!p->causal && p->seq_k % Bc == 0)
            kernel = attention_fwd<D, NWG, Bc, SPLIT, DYN, false>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
        cudaSuccess)
        return ATTN_ERR_CUDA;
    /* One block per SM (persistent): not causal a fixed share, causal (DYN) from a counter. */
    const long long n_work = (long long)bh * ((p->seq_q + Br - 1) / Br);
    long long blocks = n_work;
    if (!p->causal || DYN) {
        int dev, sms;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return ATTN_ERR_CUDA;
        blocks = n_work < sms ? n_work : sms;
    }
    /* Work tiles [0, n_dp) go whole; with stream-K the last full round and the remainder are
     * cut into equal ranges of key tiles (none when the tiles fill the rounds exactly). H200,
     * N = 4096, B*H = 32: 1024 tiles on 132 blocks, 6 rounds whole, 232 tiles cut into 132
     * ranges of 45.7 key tiles (26 of 160 keys per work tile). */
    long long n_dp = n_work;
    if (DYN && (!ws || cudaMemsetAsync(ws, 0, sizeof(unsigned), stream) != cudaSuccess))
        return ATTN_ERR_CUDA;   /* the counter starts at 0 (the workspace comes undefined) */
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
        tmQ, tmK, tmV, tmO, (bf16 *)o, lse, bh, (unsigned)G, (unsigned)n_dp, ws, p->seq_q,
        p->seq_k, c, p->scale, p->causal);
    return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
}

/* D = 64: 192-row tiles pay where the grid runs at least two rounds of them. With fewer, the
 * last round leaves SMs idle for a whole tile of 192 rows: N = 1024, B*H = 32 is 192 tiles on
 * 132 SMs, 1.45 rounds, and 256 tiles of 128 rows (1.94 rounds) finish sooner. */
static attn_status few_tiles(const attn_problem *p, bool *few)
{
    int dev, sms;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return ATTN_ERR_CUDA;
    *few = (long long)p->batch * p->heads * ((p->seq_q + 191) / 192) < 2ll * sms;
    return ATTN_OK;
}

static attn_status forward(const attn_problem *p, const void *q, const void *k, const void *v,
                           void *o, float *lse, void *workspace, cudaStream_t stream)
{
    attn_status s = step_check_forward(supports, workspace_bytes, p, q, k, v, o, lse, workspace);
    if (s != ATTN_OK)
        return s;
    if (step_device_cc() != 90)   /* TMA maps, wgmma, setmaxnreg: sm_90a only; never launch */
        return ATTN_ERR_UNSUPPORTED;   /* elsewhere, and never touch the driver API there */
    if (p->head_dim == 64) {
        using T = Tiles<64>;
        bool few;
        if ((s = few_tiles(p, &few)) != ATTN_OK)
            return s;
        if (few)
            return p->causal ? launch<64, T::NWG_few, T::Bc, false, true>(p, q, k, v, o, lse,
                                                                           workspace, stream)
                             : launch<64, T::NWG_few, T::Bc_few_full, false, false>(
                                   p, q, k, v, o, lse, workspace, stream);
        return p->causal
                   ? launch<64, T::NWG, T::Bc, false, true>(p, q, k, v, o, lse, workspace, stream)
                   : launch<64, T::NWG, T::Bc_full, true, false>(p, q, k, v, o, lse, workspace,
                                                                 stream);
    }
    using T = Tiles<128>;
    if (p->causal)
        return launch<128, T::NWG, T::Bc, false, true>(p, q, k, v, o, lse, workspace, stream);
    return launch<128, T::NWG, T::Bc_full, true, false>(p, q, k, v, o, lse, workspace, stream);
}

/* Causal: how many heads a section of blocks takes. Key tile 0 of every head first is the order
 * that ends well (the longest blocks start first, the last ones are short), but with every head
 * in flight their Q, dO and dQ accumulators do not fit in L2 together (N = 16384, 32 heads:
 * 512 MB). Sections of a few heads keep fewer in flight; the price is that a section's long
 * blocks start only when the section does, so a late section's may end after everything else.
 * Which size ends first is not a formula's to say (32 heads in sections of 6, the last of 2,
 * end 4 % late at N = 8192; sections of 2 or 4 do not), so the launch plays the order: the
 * blocks in launch order, each to the SM that frees first (as the block scheduler does, near
 * enough), a block costing its query tiles and two more for its ends. Of sections of 1, 2, 4,
 * ... heads and of all of them, it takes the fewest heads that end within 0.5 % of the best:
 * fewer in flight, more of them in L2 (bench/experiments/13_sections: at B*H = 32 that is 4
 * heads at N = 4096, 2 at 8192, 1 at 16384). The answer for the last shape is kept: a play is
 * n_kt * bh blocks on a heap of the SMs.
 */
static long long bwd_play_sections(int hps, int bh, int n_kt, int n_mt, int Br, int sms)
{
    long long free_at[1024] = {0};   /* a min-heap of the SMs' free times (sms <= 1024) */
    for (int sec = 0; sec * hps < bh; sec++) {
        const int h = hps < bh - sec * hps ? hps : bh - sec * hps;
        for (int kt = 0; kt < n_kt; kt++) {
            const long long w = n_mt - (kt * BWD_BC / Br < n_mt ? kt * BWD_BC / Br : n_mt) + 2;
            for (int r = 0; r < h; r++) {   /* the earliest free SM takes it: the root, sifted down */
                long long t = free_at[0] + w;
                int i = 0;
                for (;;) {
                    int c = 2 * i + 1;
                    if (c >= sms)
                        break;
                    if (c + 1 < sms && free_at[c + 1] < free_at[c])
                        c++;
                    if (free_at[c] >= t)
                        break;
                    free_at[i] = free_at[c];
                    i = c;
                }
                free_at[i] = t;
            }
        }
    }
    long long end = 0;
    for (int i = 0; i < sms; i++)
        end = free_at[i] > end ? free_at[i] : end;
    return end;
}

static attn_status bwd_heads_per_section(int *hps, int bh, int n_kt, int n_mt, int Br)
{
    static thread_local int last[5] = {0, 0, 0, 0, 0}, last_hps = 0;
    int dev, sms;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return ATTN_ERR_CUDA;
    const int key[5] = {bh, n_kt, n_mt, Br, sms};
    if (memcmp(key, last, sizeof key) == 0) {
        *hps = last_hps;
        return ATTN_OK;
    }
    *hps = bh;
    if (sms <= 1024) {
        long long end[32], best = -1;   /* sections of 1, 2, 4, ... heads, then all */
        int n = 0, cand[32];
        for (int h = 1; h < bh && n < 31; h *= 2)
            cand[n++] = h;
        cand[n++] = bh;
        for (int i = 0; i < n; i++) {
            end[i] = bwd_play_sections(cand[i], bh, n_kt, n_mt, Br, sms);
            best = best < 0 || end[i] < best ? end[i] : best;
        }
        for (int i = n - 1; i >= 0; i--)
            if (end[i] * 200 <= best * 201)
                *hps = cand[i];
    }
    memcpy(last, key, sizeof key);
    last_hps = *hps;
    return ATTN_OK;
}

template <int D, bool WIDE = false>
static attn_status bwd_launch(const attn_problem *p, const void *q, const void *k, const void *v,
                              const void *o, const float *lse, const void *d_o, void *dq,
                              void *dk, void *dv, void *workspace, cudaStream_t stream)
{
    const auto encode = (PFN_cuTensorMapEncodeTiled_v12000)step_driver_fn(
        &encode_cache, "cuTensorMapEncodeTiled", 12000);
    if (!encode)
        return ATTN_ERR_CUDA;
    const int bh = p->batch * p->heads;
    CUtensorMap tmQ, tmK, tmV, tmdO, tmdK = {}, tmdV = {};
    constexpr int Br = BwdTiles<D, WIDE>::Br;
    if (make_map(encode, &tmQ, q, bh, p->seq_q, D, Br) != ATTN_OK ||
        make_map(encode, &tmK, k, bh, p->seq_k, D, BWD_BC) != ATTN_OK ||
        make_map(encode, &tmV, v, bh, p->seq_k, D, BWD_BC) != ATTN_OK ||
        make_map(encode, &tmdO, d_o, bh, p->seq_q, D, Br) != ATTN_OK ||
        (BwdTiles<D, WIDE>::TMA_DKV &&
         (make_map(encode, &tmdK, dk, bh, p->seq_k, D, 16) != ATTN_OK ||
          make_map(encode, &tmdV, dv, bh, p->seq_k, D, 16) != ATTN_OK)))
        return ATTN_ERR_CUDA;
    const int n_mt = (p->seq_q + Br - 1) / Br, n_kt = (p->seq_k + BWD_BC - 1) / BWD_BC;
    const size_t rows = bwd_rows(p);
    float *dq_acc = (float *)workspace;
    float *lse2 = (float *)((char *)workspace + align256(rows * D * 4));
    float *Di = (float *)((char *)lse2 + align256(rows * 4));
    int *dq_turns = p->deterministic ? (int *)((char *)Di + align256(rows * 4)) : nullptr;

    /* 1. Di, lse2, dq_acc = 0; deterministic, every query tile's turn 0 */
    if (dq_turns && cudaMemsetAsync(dq_turns, 0, rows / Br * 4, stream) != cudaSuccess)
        return ATTN_ERR_CUDA;
    bwd_preprocess<D><<<(unsigned)((rows * (D / 8) + 255) / 256), 256, 0, stream>>>(
        (const bf16 *)d_o, (const bf16 *)o, lse, lse2, Di, dq_acc, rows, p->seq_q, n_mt * Br);
    if (cudaGetLastError() != cudaSuccess)
        return ATTN_ERR_CUDA;
    /* 2. dK, dV; dS K into dq_acc, in the shared memory BwdSmem lays out */
    constexpr size_t smem = BwdSmem<D, WIDE>::BYTES;
    int hps = bh;
    if (p->causal && bwd_heads_per_section(&hps, bh, n_kt, n_mt, Br) != ATTN_OK)
        return ATTN_ERR_CUDA;
    /* the kernel compiled without the mask where no pair is masked; the deterministic one, with
     * dQ's adds in turns (DET), masked always */
    auto kernel = bwd_main<D, true, false, WIDE>;
    if (p->deterministic)
        kernel = bwd_main<D, true, true, WIDE>;
    const bool unmasked = !p->causal && p->seq_k % BWD_BC == 0 && !p->deterministic;
    if (unmasked)
        kernel = bwd_main<D, false, false, WIDE>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
        cudaSuccess)
        return ATTN_ERR_CUDA;
    int dev, sms;   /* det2_group's waves, and the most blocks of a group */
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return ATTN_ERR_CUDA;
    kernel<<<(unsigned)((size_t)n_kt * bh), 3 * WG, smem, stream>>>(
        tmQ, tmK, tmV, tmdO, lse2, Di, dq_acc, dq_turns, tmdK, tmdV, (bf16 *)dk, (bf16 *)dv, bh,
        p->seq_q, p->seq_k, p->scale * LOG2E, p->scale, p->causal, hps, sms);
    if (cudaGetLastError() != cudaSuccess)
        return ATTN_ERR_CUDA;
    /* 3. dQ = scale dq_acc, to bf16 */
    if constexpr (BwdTiles<D, WIDE>::DQ_T)
        bwd_convert_dq_t<Br><<<(unsigned)(rows * D / (Br * 64)), 256, 0, stream>>>(
            dq_acc, (bf16 *)dq, n_mt, p->seq_q, D, p->scale);
    else
        bwd_convert_dq<<<(unsigned)(rows * D / BWD_DQ_FLOATS), 256, 0, stream>>>(
            dq_acc, (bf16 *)dq, n_mt * (Br / 64), p->seq_q, D, p->scale);
    return cudaGetLastError() == cudaSuccess ? ATTN_OK : ATTN_ERR_CUDA;
}

static attn_status backward(const attn_problem *p, const void *q, const void *k, const void *v,
                            const void *o, const float *lse, const void *d_o, void *dq, void *dk,
                            void *dv, void *workspace, cudaStream_t stream)
{
    attn_status s = step_check_backward(supports, workspace_bytes, p, q, k, v, o, lse, d_o, dq,
                                        dk, dv, workspace);
    if (s != ATTN_OK)
        return s;
    if (step_device_cc() != 90)   /* TMA, wgmma, setmaxnreg, bulk reduce: sm_90a only */
        return ATTN_ERR_UNSUPPORTED;
    return p->head_dim == 64
               ? bwd_launch<64>(p, q, k, v, o, lse, d_o, dq, dk, dv, workspace, stream)
           : bwd_wide(p)
               ? bwd_launch<128, true>(p, q, k, v, o, lse, d_o, dq, dk, dv, workspace, stream)
               : bwd_launch<128>(p, q, k, v, o, lse, d_o, dq, dk, dv, workspace, stream);
}

extern "C" const attn_step attn_step_info = {
    "13_backward_wgmma",
    "the Hopper backward: per key tile, wgmma for S^T, dP^T, dV, dK, dQ; TMA ring, producer warpgroup, dQ by bulk reduce-add",
    supports, workspace_bytes, forward, backward, nullptr, 90, 90,
    "needs a Hopper GPU (sm_90a): TMA, wgmma, setmaxnreg",
};
