#!/usr/bin/env python3
"""Applies the TMA-store epilogue to a copy of steps 12-14's forward (the same hunks in each):
    python3 mk_tma.py steps/12_three_warpgroups/attention.cu OUT.cu   (run.sh's patches came so)"""
import sys
src, dst = sys.argv[1], sys.argv[2]
s = open(src).read()
def rep(a, b, n=1):
    global s
    assert s.count(a) == n, (a[:90], s.count(a))
    s = s.replace(a, b)
rep('''              const __grid_constant__ CUtensorMap tmV, bf16 *__restrict__ O,''',
    '''              const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmO,''')
rep('''    const uint32_t bar_q = sV + STAGES * KV, empty_q = bar_q + 8, full_k = empty_q + 8,''',
    '''    /* O's staging for its TMA store: Br rows in D/64 atoms, as Q; each consumer warp writes and
     * stores its own 16 rows */
    const uint32_t sO = sV + STAGES * KV;
    const uint32_t bar_q = sO + tile_bytes<D>(Br), empty_q = bar_q + 8, full_k = empty_q + 8,''')
rep('''        bf16 *Ob = O + (size_t)w.bh * Nq * D;
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
}''', '''        /* O through shared memory and one TMA store per warp and atom (FlashAttention-3's and
         * -4's epilogue): 4-byte stores to global memory hold the long scoreboard until the
         * store unit has read their registers, and the next instructions to reuse them wait.
         * The staging of this warp's 16 rows is free once its last store has read it; the TMA
         * unit writes only the rows below Nq (the tensor map's bound). */
        float *lseb = lse + (size_t)w.bh * Nq;
        const int r16 = 64 * wg + 16 * warp;   /* this warp's first row in the tile */
        const uint32_t so = sO + opaque_zero();  /* addresses built here, not kept from the start */
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
            if (t == 0 && row[a] < Nq)   /* rows past Nq were computed from zero queries */
                lseb[row[a]] = m[a] * scale + logf(l[a]);
        }
        fence_proxy_async_smem();   /* the generic proxy's writes, seen by the TMA unit */
        __syncwarp();
        if (lane == 0 && w.q0 + r16 < Nq) {   /* a box wholly past Nq writes nothing */
#pragma unroll
            for (int at = 0; at < D / 64; at++)
                tma_store_3d(&tmO, sO + at * tile_bytes<64>(Br) + r16 * 128, 64 * at, w.q0 + r16,
                             w.bh);
            bulk_commit();
        }
    }
    if (lane == 0)
        bulk_wait<0>();   /* the block's shared memory must outlive the stores that read it */
}''')
rep('''/* Stream-K's merge of two partial sums''', '''/* 0, which the compiler cannot see through: addresses built from it are computed where it is
 * read, not hoisted before the key loop and kept in registers (at D = 64, spilled) across it. */
__device__ __forceinline__ uint32_t opaque_zero()
{
    uint32_t z;
    asm volatile("mov.u32 %0, 0;\\n" : "=r"(z));
    return z;
}

/* A 4-byte store to shared memory, at a byte address (smem_u32's). */
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v)
{
    asm volatile("st.shared.u32 [%0], %1;\\n" ::"r"(addr), "r"(v) : "memory");
}

/* TMA tile store: the box at coordinates (c0, c1, c2) of the map from shared memory at src, in
 * the layout tma_load_3d writes; a bulk group (bulk_commit, bulk_wait_read). */
__device__ __forceinline__ void tma_store_3d(const void *map, uint32_t src, int c0, int c1, int c2)
{
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\\n" ::"l"(
                     map),
                 "r"(src), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

/* Stream-K's merge of two partial sums''')
rep('''    CUtensorMap tmQ, tmK, tmV;''', '''    CUtensorMap tmQ, tmK, tmV, tmO;''')
for kv in ('bh', 'bkv'):   # step 14: K and V on the K/V heads
    t = '''        make_map(encode, &tmV, v, %s, p->seq_k, D, Bc) != ATTN_OK)''' % kv
    if t in s:
        rep(t, t[:-1] + ''' ||
        make_map(encode, &tmO, o, bh, p->seq_q, D, 16) != ATTN_OK)''')
        break
else:
    raise SystemExit('no tmV map line')
rep('''    /* Q, STAGES K and V stages, the mbarriers, plus 1 KB to align the base to a swizzle line */
    constexpr size_t smem = tile_bytes<D>(Br) + 2 * STAGES * tile_bytes<D>(Bc) +''', '''    /* Q, STAGES K and V stages, O's staging, the mbarriers, plus 1 KB to align the base to a
     * swizzle line */
    constexpr size_t smem = 2 * tile_bytes<D>(Br) + 2 * STAGES * tile_bytes<D>(Bc) +''')
rep('''        tmQ, tmK, tmV, (bf16 *)o, lse,''', '''        tmQ, tmK, tmV, tmO, lse,''')
open(dst, 'w').write(s)
