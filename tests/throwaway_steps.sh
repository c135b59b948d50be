#!/usr/bin/env bash
# Two throwaway steps dropped into a copy of this repository must not break the build, the tests
# or `attn list`: a bf16-only step (step 02 that refuses fp32, as every tensor-core step does) and
# a step whose .so does not load (linked against a library that is gone at run time). make test
# runs this; it needs nvcc, not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/lib/repo_copy.sh
repo_copy throwaway
mkdir -p steps/97_bf16_only steps/98_missing_lib libgone
sed -e 's/"02_ragged_mask"/"97_bf16_only"/' \
    -e 's/^    if (p->head_dim > 128) {$/    if (p->dtype != ATTN_BF16) {\n        *why = "throwaway: bf16 only";\n        return ATTN_ERR_UNSUPPORTED;\n    }\n&/' \
    steps/02_ragged_mask/attention.cu > steps/97_bf16_only/attention.cu
grep -q 'throwaway: bf16 only' steps/97_bf16_only/attention.cu
sed -e 's/"02_ragged_mask"/"98_missing_lib"/' steps/02_ragged_mask/attention.cu \
    > steps/98_missing_lib/attention.cu
echo 'int gone(void) { return 1; }' > libgone/gone.c
cc -shared -fPIC -o libgone/libgone.so libgone/gone.c
echo "98_missing_lib_LIBS := -L$tmp/libgone -Xlinker --no-as-needed -lgone" > steps/98_missing_lib/step.mk
make -s -j2 build/attn build/tests/cpu build/tests/cli build/steps/00_materialized.so \
    build/steps/01_online_softmax_16x16.so build/steps/02_ragged_mask.so \
    build/steps/97_bf16_only.so build/steps/98_missing_lib.so >make.log 2>&1 || { cat make.log; exit 1; }
rm -rf libgone                                   # now 98's .so cannot load
build/attn list >list.txt 2>&1 || { cat list.txt; exit 1; }
grep -q '^97_bf16_only  *bf16  ' list.txt || { echo "97_bf16_only not listed as bf16 only:"; cat list.txt; exit 1; }
grep -q 'skipping 98_missing_lib.so: it does not load: libgone.so' list.txt ||
    { echo "98_missing_lib's load failure not reported:"; cat list.txt; exit 1; }
build/tests/cpu >cpu.log 2>&1 || { cat cpu.log; exit 1; }
build/tests/cli >cli.log 2>&1 || { cat cli.log; exit 1; }
echo "throwaway steps: make, attn list, the CPU and CLI tests all pass with a bf16-only step and a step that does not load"
# What attn list said about the two, each line labelled: the loader error is the one this test
# provokes (libgone.so was deleted on purpose), not a failure.
grep -E '^attn list' list.txt | sed 's/^/  expected (98_missing_lib is made not to load): /'
grep -E '^97_bf16_only' list.txt | sed 's/^/  expected (97_bf16_only listed as bf16 only): /'
