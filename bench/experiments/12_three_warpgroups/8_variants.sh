#!/usr/bin/env bash
# Run 2026-12-01 (ab.csv, experiment 8_variants; 8_variants/). FlashAttention-4's sm90 forward is 5-8 % faster
# than step 12 at D = 128, its tensor pipe busy 77.9 % of the cycles against 71.9 % (note 12, "The
# bars it misses"). Step 12's SASS shows one cause that its source does not: ptxas moves the whole
# softmax of S_j below WARPGROUP.DEPBAR.LE gsb0, 0x0, after P_{j-1} V_{j-1} has finished, in all
# six kernels (`sass` below prints it), so the intra-warpgroup overlap is in the source and the
# PTX but not in the machine code. var3.patch (-D flags, all 0 = step 12's PTX) pins it, and
# tries FA4's tile with it:
#   bc160          D = 128 not causal with 160-key tiles at every N (step 12 takes 176 where
#                  Nk fits it better: N = 16384 of the bars); pin160's reference at N = 16384
#   pin160         the softmax held before wgmma.wait_group 0 (a never-taken store of the row
#                  sums), every kernel; 160-key tiles, since at 176 S, P and O held at once spill
#   pin128         the same with FA4's 128-key tiles at D = 128 not causal
#   pin160_kfirst  pin160 with K_{j+1} loaded before V_j (4_variants.sh's kfirst, +0.5-0.9 %)
# Here (nvcc, no GPU):
#   bench/experiments/12_three_warpgroups/8_variants.sh build   every build, its ptxas lines in
#       build/ab/v3_ptxas.txt (registers and spills per kernel); copies ../shared's
#       fa4-install.sh into build/ab, which travels
#   bench/experiments/12_three_warpgroups/8_variants.sh sass    each build's kernels: where the
#       softmax runs, then the order of HGMMA, turns, wgmma waits (DEPBAR.LE gsb0, N), MUFU.EX2
#       and STS (needs cuobjdump and nvdisasm on PATH: pip's nvidia-cuda-cuobjdump and
#       nvidia-cuda-nvdisasm carry them)
# On the H200, three calls, each within 30 s of the one before (the machine still warm):
#   1. carry ["build/fa4a1"]:  bash bench/experiments/12_three_warpgroups/8_variants.sh stage
#   2. carry ["build/fa4a2"]:  bash bench/experiments/12_three_warpgroups/8_variants.sh stage
#   3. carry ["build/attn", "build/ab", "out/fa4/b"]:
#      bash bench/experiments/12_three_warpgroups/8_variants.sh run $OUT
#   (1 and 2 bring FlashAttention-4's first part, which with the working tree is too close to a
#   call's 64 MiB to travel whole.) Without them the FlashAttention-4 steps are skipped; `run`
#   also skips them past 420 s, and `8_variants.sh fa4 $OUT`, in a call of its own right after,
#   does them alone. OUT receives:
#   checks.txt   each build's checked runs (attn run, the fp64 reference) on six ragged shapes
#   ab_fwd.csv   launch by launch (../tools/ab.c), the eight bar shapes, 3 rounds of 15
#   ncu.txt      Nsight Compute, clocks not locked, N = 4096 D = 128 not causal: base, pin160, FA4
#                (1_measure/ncu_lines.txt's sections)
#   fa4_order.txt, fa4_sass.tar.xz   FA4's own SASS (CUTE_DSL_KEEP) at D = 128 and 64 not causal:
#                does its softmax run between its two wgmma waits?
#   log.txt      progress and each step's exit status
set -u
cd "$(dirname "$0")/../../.."
B="base bc160 pin160 pin128 pin160_kfirst"
flags() {   # V_PIN V_BC V_KFIRST of a build
    case $1 in
    base) echo "0 0 0" ;; bc160) echo "0 160 0" ;; pin160) echo "1 160 0" ;;
    pin128) echo "1 128 0" ;; pin160_kfirst) echo "1 160 1" ;;
    esac
}
# The order of one kernel's SASS: consecutive runs of HGMMA (by shape), named-barrier turns,
# wgmma waits (with their depth), MUFU.EX2 and shared stores, one run a line.
order() {
    grep -E "HGMMA|BAR\.SYNC|BAR\.ARV|WARPGROUP\.DEPBAR|MUFU\.EX2|STS|EXIT" "$1" |
        sed -E 's@/\*[0-9a-f]+\*/@@; s@/\* 0x[0-9a-f]+ \*/@@; s/^[[:space:]]*(@!?U?P[0-9T]+[[:space:]]+)?//' |
        awk '{ k = $1; if (k ~ /DEPBAR/) k = k " " $2 " " $3; print k }' | uniq -c
}
# Where the main loop's softmax runs: the first run after its wait for S_j (DEPBAR.LE gsb0, 0x1)
# is MUFU.EX2 (before the wait for P V: overlapped) or that second wait (after it: not).
verdict() {
    awk '/gsb0, 0x1/ { w = 1; next } w && /MUFU/ { print "softmax between the two waits (overlaps P V)"; exit }
         w && /gsb0, 0x0/ { print "softmax after wait_group 0 (no overlap with its own P V)"; exit }'
}
case ${1:-} in
build)
    set -e
    NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
    make -s build/attn build/libharness.a
    mkdir -p build/ab build/v12
    patch -s -o build/v12/var3.cu steps/12_three_warpgroups/attention.cu \
        bench/experiments/12_three_warpgroups/var3.patch
    : >build/ab/v3_ptxas.txt
    for v in $B; do
        set -- $(flags $v)
        echo "== $v (V_PIN=$1 V_BC=$2 V_KFIRST=$3)" >>build/ab/v3_ptxas.txt
        $NVCC -O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC -cudart shared \
            -Xlinker -rpath=/usr/local/cuda/lib64 -Icommon -gencode arch=compute_90a,code=sm_90a \
            -Xptxas -v -DV_PIN=$1 -DV_BC=$2 -DV_KFIRST=$3 -o build/ab/v12_$v.so build/v12/var3.cu \
            2>&1 | grep -E "Compiling entry|spill|Used" | paste - - - |
            sed -E 's/.*_Z13attention_fwdILi([0-9]+)ELi([0-9])ELi([0-9]+)ELb([01])[^ ]* for .sm_90a.[[:space:]]*/D=\1 NWG=\2 Bc=\3 SPLIT=\4: /; s/ptxas info *: //; s/[[:space:]]+/ /g' \
                >>build/ab/v3_ptxas.txt
    done
    gcc -O2 -std=c11 -D_GNU_SOURCE -Icommon -I/usr/local/cuda/include -o build/ab/ab \
        bench/experiments/tools/ab.c build/libharness.a -L/usr/local/cuda/lib64 \
        -Wl,-rpath,/usr/local/cuda/lib64 -lcudart -ldl -lm
    # FlashAttention-4's installer travels with build/ab (../shared does not travel)
    [ -f ../shared/tools/fa4-install.sh ] && cp ../shared/tools/fa4-install.sh build/ab/
    # FlashAttention-4's first part (58 MiB) in two halves of a call each: with the working tree
    # (6 MiB) it is within 80 KB of a call's 64 MiB
    if [ -f out/fa4/a/cu13.part.aa ]; then
        rm -rf build/fa4a1 build/fa4a2 && mkdir -p build/fa4a1 build/fa4a2
        split -n 2 -d out/fa4/a/cu13.part.aa build/fa4a1/aa.
        mv build/fa4a1/aa.01 build/fa4a2/
    fi
    cat build/ab/v3_ptxas.txt
    ;;
stage)   # on the H200: one half of FlashAttention-4's first part into /tmp/fa4a
    mkdir -p /tmp/fa4a && cp build/fa4a*/aa.* /tmp/fa4a/ && ls -l /tmp/fa4a
    ;;
sass)
    for v in $B; do
        for k in 128ELi2ELi176ELb1 128ELi2ELi160ELb1 128ELi2ELi128ELb1 128ELi2ELi128ELb0 64ELi3ELi128ELb0 \
                 64ELi2ELi192ELb0 64ELi2ELi128ELb0; do
            f=_Z13attention_fwdILi${k}EEv14CUtensorMap_stS0_S0_P13__nv_bfloat16PfjjjPviiffi
            cuobjdump -sass -fun $f build/ab/v12_$v.so >/tmp/v3_$v.sass 2>/dev/null || continue
            grep -q HGMMA /tmp/v3_$v.sass || continue
            echo "== $v: attention_fwd<$(echo $k | sed 's/ELi/,/g; s/ELb/,/')>: $(order /tmp/v3_$v.sass | verdict)"
            order /tmp/v3_$v.sass | tr -s ' ' | paste -sd' '
        done
    done
    ;;
run | fa4)
    o=$2; t0=$SECONDS; log=$o/log.txt
    say() { echo "== $* at $((SECONDS - t0)) s" >>$log; }
    left() { [ $((SECONDS - t0)) -lt $1 ] || { say "skipped for time: $2"; false; }; }
    { echo "commit $(cat .git-sha 2>/dev/null)"; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; } >>$log
    for v in $B; do mkdir -p build/v12dir/$v && cp build/ab/v12_$v.so build/v12dir/$v/12_three_warpgroups.so; done
    secs="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --metrics sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum"
    if [ $1 = run ]; then
        # each build checked first on ragged shapes (attn run: the fp64 reference, exit 1 if
        # wrong): D = 128 not causal without and with stream-K's cut (133 work tiles of 19 key
        # tiles), D = 128 causal, D = 64 on three warpgroups (288 work tiles) and on two
        # (few_tiles, causal)
        for v in $B; do
            for s in "1,140,130,1000,128" "1,133,1,3000,128" "2,8,1200,1200,128" "2,4,777,1000,128 --causal" \
                     "3,16,1100,333,64" "2,3,1000,777,64 --causal"; do
                ATTN_STEPS_DIR=build/v12dir/$v timeout 60 build/attn run --step 12 --shape $s --reps 1 \
                    2>&1 | grep -E "^check" | sed "s/^/$v $s: /"
            done
        done >$o/checks.txt
        say "checks: $(grep -c PASS $o/checks.txt) PASS lines, $(grep -c FAIL $o/checks.txt) FAIL"
        sh8=""; for n in 4096 16384; do for d in 64 128; do sh8="$sh8 --shape 4,8,$n,$n,$d --shape 4,8,$n,$n,$d,c"; done; done
        so=""; for v in $B; do so="$so build/ab/v12_$v.so"; done
        timeout 240 build/ab/ab --rounds 3 --reps 15 $sh8 $so >$o/ab_fwd.csv 2>>$log; say "ab rc $?"
        for v in base pin160; do
            left 400 "ncu $v" || continue
            echo "######## step 12 $v, 4,8,4096,4096,128" >>$o/ncu.txt
            ATTN_STEPS_DIR=build/v12dir/$v timeout 90 ncu --clock-control none $secs -k regex:attention_fwd -c 1 \
                build/attn run --step 12 --shape 4,8,4096,4096,128 --reps 1 >>$o/ncu.txt 2>&1
            say "ncu $v rc $?"
        done
    fi
    # FlashAttention-4: installed from out/fa4/b (part a in /tmp/fa4a from the call before);
    # `run` does this only with time left, `fa4 OUT` alone in a call of its own
    lim=$([ $1 = run ] && echo 420 || echo 9999)
    [ -f /tmp/fa4a/cu13.part.aa ] || ! [ -f /tmp/fa4a/aa.00 ] || ! [ -f /tmp/fa4a/aa.01 ] ||
        cat /tmp/fa4a/aa.00 /tmp/fa4a/aa.01 >/tmp/fa4a/cu13.part.aa
    if ! [ -f /tmp/fa4a/cu13.part.aa ] || ! [ -f build/ab/fa4-install.sh ] || ! [ -d out/fa4/b ]; then
        say "FlashAttention-4 not installed (no /tmp/fa4a/cu13.part.aa, build/ab/fa4-install.sh or out/fa4/b): its steps skipped"
    elif left $lim "FlashAttention-4 (run: $0 fa4 OUT in a call of its own)"; then
        python3 -c "import flash_attn.cute" 2>/dev/null || bash build/ab/fa4-install.sh out/fa4/b >>$log 2>&1
        say "fa4-install rc $?"
        cat >/tmp/fa4_run.py <<'EOF'
import sys, torch
from flash_attn.cute.interface import flash_attn_func
b, h, n, d, causal = (int(x) for x in sys.argv[1:6])
q, k, v = (torch.randn(b, n, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
for _ in range(3):
    flash_attn_func(q, k, v, causal=bool(causal))
torch.cuda.synchronize()
EOF
        # its SASS as it runs (CUTE_DSL_KEEP), D = 128 first, then Nsight Compute on it; D = 64
        for d in 128 64; do
            left $((lim + 60)) "fa4 D=$d dump" || continue
            mkdir -p /tmp/fa4dump/d$d
            CUTE_DSL_KEEP=ptx,cubin,sass CUTE_DSL_DUMP_DIR=/tmp/fa4dump/d$d timeout 120 \
                python3 /tmp/fa4_run.py 4 8 4096 $d 0 >>$log 2>&1; say "fa4 D=$d dump rc $?"
            for c in $(ls /tmp/fa4dump/d$d/*.cubin 2>/dev/null); do   # no .sass kept: disassemble
                ls /tmp/fa4dump/d$d/*.sass >/dev/null 2>&1 || cuobjdump -sass $c >${c%.cubin}.sass
            done
            for f in /tmp/fa4dump/d$d/*.sass; do
                [ -f "$f" ] && grep -q HGMMA "$f" || continue
                echo "== D=$d $(basename $f | cut -c1-120): $(order "$f" | verdict)"
                order "$f" | tr -s ' ' | paste -sd' '
            done >>$o/fa4_order.txt
            if [ $d = 128 ] && left $((lim + 90)) "ncu fa4"; then
                echo "######## FlashAttention-4, 4,8,4096,4096,128" >>$o/ncu.txt
                timeout 120 ncu --clock-control none $secs -k regex:'(?i)flash|fwd' --launch-skip 1 -c 1 \
                    python3 /tmp/fa4_run.py 4 8 4096 128 0 >>$o/ncu.txt 2>&1
                say "ncu fa4 rc $?"
            fi
        done
        [ -d /tmp/fa4dump ] && tar cJf $o/fa4_sass.tar.xz -C /tmp fa4dump 2>>$log
    fi
    ;;
*) echo "usage: $0 build | sass | stage | run OUT | fa4 OUT" >&2; exit 2 ;;
esac
