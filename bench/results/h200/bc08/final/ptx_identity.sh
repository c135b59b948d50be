#!/usr/bin/env bash
# Usage: from the repository root, on any machine with nvcc (no GPU needed).
# Step 08's kernels at the shipped commit (argument 1, default HEAD) against what was timed:
#   - e1f9d59 (the previous shipped step 08): every kernel it has;
#   - 35a0e89 built with -DATTN08_BC128_FULL=160 (bc08/call2's `bc160`): the D = 128 Bc = 160
#     kernel, new in the shipped commit.
# PTX by nvcc -O3 -std=c++17 -Icommon -gencode arch=compute_90a,code=sm_90a -ptx (no -lineinfo),
# compared function by function, labels, parameter names, blank lines and `// .globl` normalised.
set -e
head=${1:-HEAD}
build() {   # commit, flags, out
  git show $1:steps/08_tma_warp_specialized/attention.cu > steps/08_tma_warp_specialized/zz_$1.cu
  git show $1:common/mma_sm90.cuh > /tmp/zz_mma_sm90.cuh
  mkdir -p /tmp/zz_inc && cp /tmp/zz_mma_sm90.cuh /tmp/zz_inc/mma_sm90.cuh
  /usr/local/cuda/bin/nvcc -O3 -std=c++17 -I/tmp/zz_inc -Icommon -gencode arch=compute_90a,code=sm_90a \
    -ptx $2 -o $3 steps/08_tma_warp_specialized/zz_$1.cu
  rm steps/08_tma_warp_specialized/zz_$1.cu
}
build e1f9d59 "" /tmp/ptx_old.ptx
build 35a0e89 -DATTN08_BC128_FULL=160 /tmp/ptx_bc160.ptx
build $(git rev-parse --short $head) "" /tmp/ptx_new.ptx
python3 - <<'PY'
import re
def funcs(path):
    t = open(path).read()
    d = {}
    for p in re.split(r'\n(?=\.visible \.entry )', t)[1:]:
        name = re.match(r'\.visible \.entry (\S+)\(', p).group(1)
        m = re.search(r'ILi(\d+)ELi2ELi(\d+)ELb(\d)', name)
        body = re.sub(r'_Z13attention_fwd\w+', 'F', re.sub(r'_param_\d+', '_param_X', p[p.index('{'):]))
        body = re.sub(r'\$L__BB\d+_', '$L__BB_', body)
        body = '\n'.join(l for l in body.splitlines() if l.strip() and not l.strip().startswith('// .globl'))
        d['D=%s Bc=%s split=%s' % m.groups()] = body
    return d
old, b160, new = funcs('/tmp/ptx_old.ptx'), funcs('/tmp/ptx_bc160.ptx'), funcs('/tmp/ptx_new.ptx')
for k in sorted(new):
    ref, name = (old, 'e1f9d59') if k in old else (b160, '35a0e89 -DATTN08_BC128_FULL=160')
    print('%-24s shipped vs %-32s %s' % (k, name, 'identical' if ref.get(k) == new[k] else 'DIFFERENT'))
PY
