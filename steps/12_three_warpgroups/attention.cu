/* Step 12: three consumer warpgroups at D = 64 (sm_90a).
 *
 * The change against step 11: at D = 64 a block has three consumer warpgroups instead of two, so
 * a work tile is 192 query rows (FlashAttention-3's and -4's D = 64 tile); D = 128 keeps step
 * 11's two warpgroups and 128-row tiles.
 *   - Why: at D = 64 a key tile is half the tensor work of D = 128 for the same softmax, so the
 *     tensor cores wait for the exp and max chain more often: two warpgroups taking turns cannot
 *     keep them busy. A third warpgroup brings one more softmax in flight per tensor-core turn,
 *     and each K/V tile loaded serves 192 query rows instead of 128 (1.5x fewer K/V bytes per
 *     FLOP from L2).
 *   - The price: four warpgroups share the 64K registers. The producer keeps 24 per thread and
 *     each consumer gets 160 (24*128 + 3*160*128 = 64512), not 240: S, P and O must fit in 160.
 *     With 128 keys per tile they take 64 + 32 + 32 = 128 registers and nothing spills; with 144
 *     keys ptxas spills 96 bytes, with 160 keys 216, with step 11's 192 keys 420. So the key
 *     tile at D = 64 is 128, causal or not (step 11: 192 not causal).
 *   - The ping-pong turns were already written for NWG warpgroups: warpgroup w waits on named
 *     barrier 1 + w and hands the turn to (w + 1) % NWG, so they now go 0, 1, 2, 0, ...
 *   - Where 192-row tiles are too few to run two rounds on the GPU (N <= 1024 at B*H = 32), the
 *     last round's idle SMs cost more than the third warpgroup gains: those problems keep step
 *     11's two warpgroups (few_tiles).
 *   - Stream-K (step 11's, there at D = 128 only) runs at D = 64 too, not causal: 192-row tiles
 *     leave the persistent grid's last round short (704 tiles are 5.33 rounds of 132 SMs at
 *     N = 4096, a ninth of the SM time idle; step 11's 128-row tiles left 3 %). Its partials are
 *     sized per head dim (sk_threads). Launch by launch: 8 % less time at N = 4096, 6 % at
 *     8192, 1-2 % at 16384, under 1 % at 2048 (bench/experiments/12_streamk64).
 *   - Causal runs on the persistent grid too, its blocks taking work tiles from a counter (DYN,
 *     FlashAttention-3's dynamic scheduler). With one block per causal work tile (steps 08-11)
 *     each tile paid its start and end with the SM's tensor cores idle (Q and K_0 in flight, S_0
 *     alone, O out): about one key tile in the 17 of an average tile at N = 4096, so ~5 % was
 *     predicted there, less at longer N. The producer takes the next tile's number from a
 *     global counter as it issues the current tile's last loads and hands it to the consumers
 *     beside Q; tiles still go out heaviest first to whichever block frees up first, as the
 *     hardware hands out a grid's blocks. Launch by launch: 4-8 % less time at N = 2048-4096,
 *     2 % at 8192, 0-1 % at 16384 (bench/experiments/12_dyn_causal).
 *   - Causal 192-row tiles end at Nq (TileScheduler's q_pad), so the one partial tile is the
 *     first, which sees one key tile, not the last, which sees them all: 5.5 % fewer key-tile
 *     trips at N = 4096, measured 4-6 % less time at N = 2048-4096, ~1 % beyond
 *     (bench/experiments/12_causal_align).
 * Six changes to what the machine code does with steps 10-11's loop and epilogue, found by reading
 * this step's SASS beside FlashAttention-4's (bench/experiments/12_fa4_sass, 12_descriptors):
 *   - wgmma descriptors: issue_qk and issue_pv build one descriptor per operand tile and add
 *     each k-slice's offset as a constant, and the warpgroup's Q address comes from a warp-uniform
 *     index, so ptxas keeps them in uniform registers. Built from each slice's address (steps
 *     07-11), they cost 16 R2UR moves and ~60 uniform instructions per key tile: 645 instructions
 *     per iteration at D = 128 against 582 now (FlashAttention-4: 455 for 128 keys, ~570 for 160).
 *   - The intra-warpgroup overlap, made real: the source has issued S_j and P_{j-1} V_{j-1}
 *     before the softmax since step 07, but ptxas moves the exponentials past the wait for P V
 *     (register-only code crosses wgmma.wait_group), so a warpgroup's softmax hid only behind
 *     the other warpgroup's turn. pin_softmax holds part of it between the two waits: at
 *     D = 128 its maxima, so that most exponentials run after the wait, interleaved with O's
 *     rescale and P's packing, as in FlashAttention-4's SASS (3-6 % less time than holding them
 *     all, not causal; bench/experiments/12_fwd_timeline), at D = 64 a sixteenth of the
 *     exponentials too, and at both the rescale factors, so that O's rescale need not wait for
 *     the last exponential (bench/experiments/12_pin_partial, 12_pin_alpha). S, P and O are then
 *     live at once, so D = 128 takes 160-key tiles at every N (176 would spill).
 *   - The softmax's row max and row sum: online_softmax's four chains start from the tile's own
 *     values, not from m and 0, so 14 instructions fewer a key tile (FMNMX, FADD): a D = 64
 *     iteration 450 to 436 (FlashAttention-4's: 418).
 *   Launch by launch at the eight bar shapes: the first two +0.5-3.5 % over the step without
 *   them (each alone 1.7-2.5 % at D = 128 not causal, nothing elsewhere), the third +0.5-2.8 %
 *   over the first two (bench/experiments/12_softmax_chains).
 *   - O's store at D = 128 (Tiles<D>::TMA_O): each warp writes its 16 rows of O into shared
 *     memory and one TMA store per 64-column atom writes them out, as FlashAttention-3 and -4 do;
 *     4-byte global stores held 5.9 % of the warp samples at N = 4096 causal, their registers
 *     waited on until the store unit had read them. 1-2 % less time at D = 128; at D = 64,
 *     1-2 % more not causal, so D = 64 keeps its register stores (bench/experiments/12_tma_store).
 *   - The loop without its mask (MASK): a problem with nothing to mask (not causal, Nk a
 *     multiple of the key tile) runs the kernel compiled without it, as step 13's backward does.
 *     The per-tile test and the branch around the mask go: 423 instructions a key tile at D = 64
 *     against 440, in one block (FlashAttention-4: 418); 2.5-4.6 % less time at D = 64 not
 *     causal on the H200, level at D = 128 (bench/experiments/12_fwd_unmasked). Taking only the
 *     test out, the branch kept, had moved nothing (bench/experiments/12_mask_threshold).
 *   - Causal, the key tiles before a warpgroup's diagonal by a copy of the loop without the mask,
 *     the last one or two by the copy with it (FlashAttention-3's split). Predicted 2.5-4 % less
 *     time at D = 64 causal; measured 0.6 % at N = 16384, level at 2048-8192, 1-2 % at D = 128
 *     (an H100; bench/experiments/12_fwd_split): the copy runs inside the masked kernel, whose
 *     registers are allocated for the whole function, not as the kernel without the mask.
 *
 * Prediction (H200, bf16, D = 64, not causal): Nsight Compute has step 11's tensor pipe busy
 * 47 % of the time at N = 4096, FlashAttention-4's three-warpgroup kernel 53 %: matching it,
 * +12 %, times what the rounds of the persistent grid leave: at N = 4096, 704 work tiles of
 * 192 rows are 5.33 rounds on 132 SMs (11 % idle, step 11's 1024 tiles 7.76 rounds: 3 %),
 * so +3 %; at N = 16384, 20.8 rounds (under 1 %, step 11: 3 %), so +15 %. D = 128 unchanged.
 *
 * Limits: forward only; bf16; D = 64 or 128; scale > 0; any Nq, Nk >= 1; causal top-left with
 * tile skipping. Hopper only (sm_90a). One block per SM: 512 threads at D = 64, shared memory
 * 89 KB (few tiles: step 11's 384 threads, 113 KB); 384 threads at D = 128, 225 KB (Bc = 160,
 * and O's staging).
 * Workspace: causal, the counter (4 bytes); else stream-K's partials, 105 KB (D = 64) or 139 KB
 * (D = 128) per block of the grid (at most 144 blocks: 15 or 20 MB).
 *
 * Run:  build/attn run --step 12 --shape 4,8,4096,4096,64     (needs an H100 / H200)
 *       make diff A=11 B=12
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

static size_t workspace_bytes(const attn_problem *p, int backward)
{
    if (backward)
        return 0;
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

extern "C" const attn_step attn_step_info = {
    "12_three_warpgroups",
    "three consumer warpgroups at D = 64: 192-row work tiles, 160 registers each, 128-key tiles",
    supports, workspace_bytes, forward, nullptr, nullptr, 90, 90,
    "needs a Hopper GPU (sm_90a): TMA, wgmma, setmaxnreg",
};
