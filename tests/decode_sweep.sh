#!/usr/bin/env bash
# The decode sweep is written down in one place (bench/sweeps.txt) and read in four: attn bench
# (bench/sweeps.c), the peers (bench/peer_sdpa.py, 6-field shapes with H_kv), the numbers of the
# notes (tools/gen_numbers.py's DECODE_BARS: the six bar shapes) and the device script
# (bench/experiments/15_decode/run.sh's SIX, its summary against the bars). They must agree: the
# sweep parses for both readers, its first six shapes are the bars everywhere, every shape is a
# bf16 forward of one to four queries, none twice; and run.sh's cp.async variant (a patch of the
# step) still applies. make test runs this; it needs python3, not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v python3 >/dev/null; then
    echo "tests/decode_sweep.sh skipped: no python3 here"
    exit 0
fi
fail() { echo "tests/decode_sweep.sh: FAILED: $*"; exit 1; }
# attn bench reads the file before it looks at the steps: a parse error would be named first
out=$(build/attn bench --sweep decode --steps 99 2>&1) && fail "attn bench accepted step 99"
grep -q "unknown step '99'" <<<"$out" || fail "attn bench --sweep decode: $out"
# the device script's TMA variant is a patch of the step: it must still apply
if command -v patch >/dev/null; then
    patch -s --dry-run -o /dev/null steps/15_decode/attention.cu \
        bench/experiments/15_decode/tma.patch >/dev/null 2>&1 ||
        fail "bench/experiments/15_decode/tma.patch no longer applies to steps/15_decode/attention.cu"
fi
six=$(sed -n 's/^SIX="\(.*\)"$/\1/p' bench/experiments/15_decode/run.sh)
[ -n "$six" ] || fail "no SIX=\"...\" line in bench/experiments/15_decode/run.sh"
SIX="$six" python3 - <<'PY' || exit 1
import importlib.util, os, sys
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m
peer = load("peer_sdpa", "bench/peer_sdpa.py")
gen = load("gen_numbers", "tools/gen_numbers.py")
rows = peer.read_sweeps()["decode"]
shapes = ["%d,%d,%d,%d,%d,%d" % (b, h, nq, nk, d, hkv) for (_, _, b, h, nq, nk, d, _, hkv, _) in rows]
bad = []
if tuple(shapes[:6]) != tuple(gen.DECODE_BARS):
    bad.append("sweeps.txt's first six decode shapes %s are not gen_numbers.DECODE_BARS %s" % (shapes[:6], gen.DECODE_BARS))
if os.environ["SIX"].split() != shapes[:6]:
    bad.append("run.sh's SIX %s is not the sweep's first six %s" % (os.environ["SIX"].split(), shapes[:6]))
for (pas, dt, b, h, nq, nk, d, causal, hkv, quick), s in zip(rows, shapes):
    if pas != "fwd" or dt != "bf16" or causal or not 1 <= nq <= 4 or h % hkv:
        bad.append("decode shape %s: %s %s causal %d" % (s, pas, dt, causal))
if len(set(shapes)) != len(shapes):
    bad.append("a decode shape is listed twice")
if bad:
    print("tests/decode_sweep.sh: FAILED: " + "; ".join(bad))
    sys.exit(1)
print("tests/decode_sweep.sh: OK (%d decode shapes, the six bars the same in sweeps.txt, "
      "gen_numbers.py and run.sh)" % len(shapes))
PY
