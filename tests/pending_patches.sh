#!/usr/bin/env bash
# The changes waiting for a GPU (bench/experiments/README.md, "The pending changes, measured") are patches of the steps
# as committed; a step edited since must not leave them behind unnoticed. Each chain below must
# still apply, in order, to its step. A chain that lands in a step leaves this list with it.
# make test runs this; it needs patch, not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v patch >/dev/null; then
    echo "tests/pending_patches.sh skipped: no patch here"
    exit 0
fi
# shellcheck disable=SC2034  # a chain names its patches as $E/<folder>/<name>.patch
E=bench/experiments
# A new change waiting for a GPU adds its chain here ("step:patch patch ...").
chains=(
    "12_three_warpgroups:$E/12_lazy_rescale/lazy.patch"
    "12_three_warpgroups:$E/12_lazy_rescale/lazy_b.patch"
    "13_backward_wgmma:$E/12_lazy_rescale/lazy13.patch"
    "14_gqa:$E/12_lazy_rescale/lazy14.patch"
    "12_three_warpgroups:$E/12_lazy_rescale/lazy128.patch"
    "13_backward_wgmma:$E/12_lazy_rescale/lazy128_13.patch"
    "14_gqa:$E/12_lazy_rescale/lazy128_14.patch"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for c in ${chains[@]+"${chains[@]}"}; do
    step=${c%%:*}
    cp "steps/$step/attention.cu" "$tmp/a.cu"
    for p in ${c#*:}; do
        patch -s -p1 -o "$tmp/b.cu" "$tmp/a.cu" "$p" >"$tmp/log" 2>&1 ||
            { echo "tests/pending_patches.sh: FAILED: $p no longer applies to steps/$step (after the ones before it in its chain)"; cat "$tmp/log"; exit 1; }
        mv "$tmp/b.cu" "$tmp/a.cu"
        n=$((n + 1))
    done
done
echo "tests/pending_patches.sh: OK ($n patches apply to the steps as committed)"
