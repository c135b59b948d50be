#!/usr/bin/env bash
# Here, before a lease (after make && make tests): every build the pending run.sh scripts name
# (their headers say how; this does it), build/v15/ab, the libraries the GPU machine lacks, and the
# carries: .carry/b.txz (the builds, ~6 MB) and FlashAttention-4's wheels split in two,
# build/fa4s1 and build/fa4s2, each under 64 MiB with b.txz and the tree (unpack_carry and
# fa4_install in candidates.sh put them back together there). Needs ../shared/tools (this
# workplace's pack-libs.sh, fa4-install.sh, fa4-wheels.sh) and, for the wheels, a package index.
#   bash bench/experiments/tools/pack.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
# shellcheck source=candidates.sh
. bench/experiments/tools/candidates.sh
git diff --quiet HEAD -- steps ||
    { echo "tools/pack.sh: steps/ has uncommitted changes; commit them first (each build below puts steps/ back with git checkout)" >&2; exit 1; }
build_ab
build() {   # build DIR PATCH STEP NAME [NVCC FLAGS]: a step with PATCH applied, as DIR/NAME.so
    local d=$1 p=$2 s=$3 n=$4
    shift 4
    mkdir -p "$d"
    git apply "$p"
    # shellcheck disable=SC2086
    $NV "$@" "steps/$s/attention.cu" -o "$d/$n.so" || { git checkout "steps/$s"; return 1; }
    git checkout "steps/$s"
}
# the pending experiments' builds, each as its run.sh names it, e.g.
#   build build/var12p bench/experiments/12_pin_partial/pin.patch 12_three_warpgroups pin4 -DPIN_COLS=4
#   cp build/steps/12_three_warpgroups.so build/var12p/base.so
# and the folders they are in:
# shellcheck disable=SC2034  # a pending build names its patch as $E/<folder>/<name>.patch
E=bench/experiments
# 12_power: step 12 as it was before 12_pin_alpha landed, beside the step as committed
mkdir -p build/var_power/before
git show d0c043f:steps/12_three_warpgroups/attention.cu >build/var_power/before.cu
$NV build/var_power/before.cu -o build/var_power/before/12_three_warpgroups.so
# 13_dq_handback: the deterministic writer as committed (order, landed) beside the writer before
# (a487da9's steps 13 and 14)
rm -rf build/var_dqh
mkdir -p build/var_dqh
for s in 13_backward_wgmma 14_gqa; do
    git show a487da9:steps/$s/attention.cu >build/var_dqh/prev_$s.cu
    $NV build/var_dqh/prev_$s.cu -o build/var_dqh/prev_${s%%_*}.so
done
cp build/steps/13_backward_wgmma.so build/var_dqh/base.so
cp build/steps/13_backward_wgmma.so build/var_dqh/det.so
cp build/steps/14_gqa.so build/var_dqh/base14.so
cp build/steps/14_gqa.so build/var_dqh/det14.so
# 12_lazy_rescale: O's rescale skipped while no row max of the warp grew by more than 2^8
rm -rf build/var_lazy
build build/var_lazy $E/12_lazy_rescale/lazy.patch 12_three_warpgroups lazy8
build build/var_lazy $E/12_lazy_rescale/lazy_b.patch 12_three_warpgroups lazyb
build build/var_lazy $E/12_lazy_rescale/lazy13.patch 13_backward_wgmma lazy13
build build/var_lazy $E/12_lazy_rescale/lazy14.patch 14_gqa lazy14
# the same at D = 128 only (D = 64 as the step: 0.6 % slower at N = 16384 on an H100)
build build/var_lazy $E/12_lazy_rescale/lazy128.patch 12_three_warpgroups lazy128
build build/var_lazy $E/12_lazy_rescale/lazy128_13.patch 13_backward_wgmma lazy128_13
build build/var_lazy $E/12_lazy_rescale/lazy128_14.patch 14_gqa lazy128_14
cp build/steps/12_three_warpgroups.so build/var_lazy/base.so
var=(build/var_power build/var_dqh build/var_lazy)
git rev-parse --short HEAD >.git-sha
rm -rf .device-libs
../shared/tools/pack-libs.sh .device-libs build/tests/cli build/tests/cpu build/tests/gpu build/attn build/v15/ab >/dev/null
cp ../shared/tools/fa4-install.sh build/v15/
mkdir -p .carry build/fa4s1 build/fa4s2
tar cf - build/steps build/attn build/tests build/v15 ${var[@]+"${var[@]}"} .device-libs .git-sha |
    xz -T2 -6 >.carry/b.txz
a=out/fa4/a b=out/fa4/b
[ -f $a/cu13.part.aa ] || bash ../shared/tools/fa4-wheels.sh out/fa4
rm -f build/fa4s1/* build/fa4s2/*
split -b 29M $a/cu13.part.aa build/fa4s1/aa.
mv build/fa4s1/aa.ab build/fa4s2/
cp $b/cu13.part.ab $b/apache_tvm_ffi-*.whl build/fa4s1/
for f in $b/*.whl; do [ -f "build/fa4s1/$(basename "$f")" ] || cp "$f" build/fa4s2/; done
du -sh .carry build/fa4s1 build/fa4s2
