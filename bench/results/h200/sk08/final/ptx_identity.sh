#!/usr/bin/env bash
# Usage: from the repository root, on any machine with nvcc (no GPU needed).
# PTX of step 08 at three commits, compared function by function (parameter names normalised):
# nvcc -O3 -std=c++17 -Icommon -gencode arch=compute_90a,code=sm_90a -ptx, no -lineinfo.
set -e
for c in 74b6eb7 e3b5f3f e1f9d59; do
  git show $c:steps/08_tma_warp_specialized/attention.cu > steps/08_tma_warp_specialized/zz_$c.cu
  /usr/local/cuda/bin/nvcc -O3 -std=c++17 -Icommon -gencode arch=compute_90a,code=sm_90a -ptx \
    -o /tmp/ptx_$c.ptx steps/08_tma_warp_specialized/zz_$c.cu
  rm steps/08_tma_warp_specialized/zz_$c.cu
done
python3 - <<'PY'
import re, difflib
def funcs(path):
    t = open(path).read()
    d = {}
    for p in re.split(r'\n(?=\.visible \.entry )', t)[1:]:
        name = re.match(r'\.visible \.entry (\S+)\(', p).group(1)
        m = re.search(r'ILi(\d+)ELi2ELi(\d+)', name)
        body = re.sub(r'_Z13attention_fwd\w+', 'F', re.sub(r'_param_\d+', '_param_X', p[p.index('{'):]))
        d['D=%s Bc=%s' % m.groups()] = body.splitlines()
    return d
a, b, c = (funcs('/tmp/ptx_%s.ptx' % x) for x in ('74b6eb7', 'e3b5f3f', 'e1f9d59'))
for k in c:
    for name, ref in (('74b6eb7', a), ('e3b5f3f', b)):
        n = sum(1 for l in difflib.unified_diff(ref[k], c[k], lineterm='', n=0) if not l.startswith('@@'))
        print('%-14s e1f9d59 vs %s: %5d PTX lines, %5d differing' % (k, name, len(c[k]), n))
PY
