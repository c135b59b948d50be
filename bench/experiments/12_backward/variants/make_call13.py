#!/usr/bin/env python3
"""Call 13's variants of step 12, applied to the step with dK after dQ at D = 128 (the file this
script is given, default the step's own file):
  head   causal blocks in the non-causal order, head by head (a head's key tiles side by side,
         longest first), instead of key tile 0 of every head first: a head's Q, dO and dQ
         accumulator stay in L2 while its blocks run
  stm    dS^T stored with stmatrix .x4 (four 8 x 8 matrices per instruction) instead of one
         32-bit store per register pair
  headstm  both
  group  (call 14, applied to the step with stm at D = 128) causal: heads in groups of G, key tile 0
         of every head of the group first; G = ceil(B*H / n) with n = B*H * key tiles / (2 SMs),
         the per-SM work over the longest block's (at most n groups keep the last group's long
         blocks from ending late); not causal as before
Usage: make_call13.py MODE OUT.cu [IN.cu]"""
import sys
mode, out = sys.argv[1], sys.argv[2]
src = sys.argv[3] if len(sys.argv) > 3 else "steps/12_backward_wgmma/attention.cu"
s = open(src).read()

def rep(old, new):
    global s
    assert s.count(old) == 1, old[:70]
    s = s.replace(old, new)

if "head" in mode:
    rep("""    const int kt = causal ? (int)(blockIdx.x / bh_count) : (int)(blockIdx.x % n_kt);
    const int bh = causal ? (int)(blockIdx.x % bh_count) : (int)(blockIdx.x / n_kt);""",
        """    const int kt = (int)(blockIdx.x % n_kt), bh = (int)(blockIdx.x / n_kt);
    (void)bh_count;""")
if "stm" in mode:
    rep("""#pragma unroll
        for (int j = 0; j < Br / 8; j++)
#pragma unroll
            for (int a = 0; a < 2; a++)
                *reinterpret_cast<uint32_t *>(at(ds_buf + j / 8 * DS_ATOM +
                                                 sw128_offset(key[a] - k0, j % 8) + 4 * t)) =
                    dsa[2 * j + a];
""", """#pragma unroll
        for (int x = 0; x < Br / 16; x++) {
            /* matrix lane / 8 of four: keys 8 (lane / 8 % 2).. of the warp's 16, queries
             * 8 (2x + lane / 16)..; lane gives the address of its row lane % 8 */
            const int j = 2 * x + lane / 16;
            const uint32_t r = 64 * wg + 16 * warp + 8 * (lane / 8 % 2) + lane % 8;
            asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\\n" ::"r"(
                             ds_buf + j / 8 * DS_ATOM + sw128_offset(r, j % 8)),
                         "r"(dsa[4 * x]), "r"(dsa[4 * x + 1]), "r"(dsa[4 * x + 2]), "r"(dsa[4 * x + 3])
                         : "memory");
        }
""")
if mode == "group":
    rep("""         float scale, int causal)
{
    constexpr int Bc = BWD_BC, Br = bwd_br<D>();""", """         float scale, int causal, int hpg)
{
    constexpr int Bc = BWD_BC, Br = bwd_br<D>();""")
    rep("""    const int kt = causal ? (int)(blockIdx.x / bh_count) : (int)(blockIdx.x % n_kt);
    const int bh = causal ? (int)(blockIdx.x % bh_count) : (int)(blockIdx.x / n_kt);""",
        """    int kt = (int)(blockIdx.x % n_kt), bh = (int)(blockIdx.x / n_kt);
    if (causal) {
        const int per = hpg * n_kt, grp = (int)(blockIdx.x / per), r = (int)(blockIdx.x % per);
        const int gn = min(hpg, bh_count - grp * hpg);
        kt = r / gn;
        bh = grp * hpg + r % gn;
    }""")
    rep("""    auto kernel = bwd_main<D>;""", """    int hpg = bh;
    if (p->causal) {
        int dev, sms;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            return ATTN_ERR_CUDA;
        const long long n = (long long)bh * n_kt / (2LL * sms);
        if (n > 1)
            hpg = (int)((bh + n - 1) / n);
    }
    auto kernel = bwd_main<D>;""")
    rep("""        p->scale * 1.4426950408889634f, p->scale, p->causal);""",
        """        p->scale * 1.4426950408889634f, p->scale, p->causal, hpg);""")
open(out, "w").write(s)
