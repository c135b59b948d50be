# Sourced by the experiments' run.sh scripts (bash): builds of a step that wait for a GPU, checked
# in the steps' place and timed against the step as committed.
#   ptxas_summary FILE REGEX     registers and spills of the kernels whose names match REGEX, from
#                                the output of nvcc -Xptxas -v in FILE
#   steps_with NAME=SO ...       prints a new folder holding build/steps with each NAME.so (a step's
#                                folder name) replaced by SO: for ATTN_STEPS_DIR
#   suite DIR LOGS STEPS...      with ATTN_STEPS_DIR=DIR: the whole GPU suite, and beside it
#                                bench/sanitize.sh, a copy per step and tool, each under 450 s;
#                                logs LOGS/gpu_tests.txt, LOGS/sanitize_TOOL_STEP.txt
#   suite_summary LOGS           their verdicts, a few lines
#   ab_ratios CSV                per shape and build of build/v15/ab's CSV, the build's time over
#                                base.so's in the same round: the lowest and highest over rounds
#   bars_run OUT DIR LINE        with ATTN_STEPS_DIR=DIR: attn bench --sweep bars, step 12's forward
#                                and step 13's backward, then SDPA cuDNN and FlashAttention-4 in
#                                the same call: OUT/bars.csv, peers_bars.csv, bars.log (LINE first)
#   bars_interleaved OUT R BACKENDS [PASSES]   the bar shapes through bench/peer_sdpa.py alone:
#                                step 12's forward and step 13's backward beside BACKENDS (e.g.
#                                cudnn,fa4), R rounds, each shape's calls in turn launch by launch (--steps,
#                                --lockstep, --rounds); PASSES "fwd bwd" unless given: OUT/interleaved_PASS.csv,
#                                OUT/interleaved.txt (the ratios, appended)
#   standard_run OUT PASS STEPS  (after bars_run, which writes /tmp/sweeps_fwd and _bwd) with
#                                build/steps: attn bench --sweep standard of STEPS (e.g. 12,13),
#                                PASS fwd or bwd only, then SDPA flash, cuDNN and FlashAttention-4
#                                on the same: OUT/standard.csv, peers_standard.csv, bench.log
#   flag FILE D NAME FROM TO     sets BwdTiles<D>'s flag NAME from FROM to TO in FILE (sed)
#   sass_counts REGEX N SO...    per build: the loop length of the kernels matching REGEX whose
#                                trip holds N wgmmas (tools/sass_loop.py; needs cuobjdump)
#   quick_runs DIR STEP ARGS SHAPE...   with ATTN_STEPS_DIR=DIR, attn run --step STEP ARGS on each
#                                shape, its check and time lines under a '## ...' line each
#   same_lines DIR STEP ARGS OUT SHAPE...   attn run --step STEP ARGS --seed 7 on each shape with
#                                build/steps, then with ATTN_STEPS_DIR=DIR: their check lines into
#                                OUT, and how many lines differ (0 when a change keeps the arithmetic)
#   same_bits OLD OUT            with ATTN_STEPS_DIR=OLD (step 12 before a change) and build/steps
#                                (after), attn run of step 12 on the same 12 seeded shapes: their
#                                check lines, before and after, into OUT (they must agree digit for
#                                digit when only the schedule or the store path changed)
#   build_ab                     build/v15/ab from ../tools/ab.c (make first: it links
#                                build/libharness.a)
#   unpack_carry                 on the H200: the builds in .carry/b.txz, and this call's share of
#                                FlashAttention-4 (build/fa4s1 or build/fa4s2) into /tmp/fa4, as
#                                lease.sh's unpack
#   python_door FILE             the Python door's tests, then its training demo, into FILE
#   fa4_install OUT              FlashAttention-4 from lease.sh's parts in /tmp/fa4 (both calls'
#                                carries unpacked), its log in OUT/fa4_install.txt
# and the variables BAR_SHAPES (build/v15/ab's --shape arguments of the eight bar shapes) and NV
# (nvcc as the Makefile builds a Hopper step, NVCC overriding the compiler).

ptxas_summary() {
    awk -v re="$2" '/Compiling entry function/ { k = $0; sub(/.*function ._Z[0-9]+/, "", k); sub(/EEv.*/, "", k); next }
                    /spill stores/ { sp = $5 "/" $9 " B spilled (stored/loaded)" }
                    /Used [0-9]+ registers/ && k ~ re { print "  " k ": " $5 " registers, " sp }' "$1"
}

steps_with() {
    local d f
    d=$(mktemp -d)/steps
    mkdir -p "$d"
    for f in build/steps/*.so; do ln -s "$PWD/$f" "$d/"; done
    for f in "$@"; do
        rm -f "$d/${f%%=*}.so"
        cp "${f#*=}" "$d/${f%%=*}.so"
    done
    echo "$d"
}

suite() {   # suite STEPS_DIR LOGS STEP...; SUITE_S: each job's limit (450 s)
    local d=$1 logs=$2 st tool lim=${SUITE_S:-450}
    shift 2
    { ATTN_STEPS_DIR=$d timeout -k 5 "$lim" build/tests/gpu --verbose; echo "[exit status $?]"; } >>"$logs/gpu_tests.txt" 2>&1 &
    for st in "$@"; do   # a process per step and tool: racecheck alone takes ~7 s a run
        for tool in memcheck synccheck racecheck; do
            { ATTN_STEPS_DIR=$d TOOLS=$tool timeout -k 5 "$lim" bench/sanitize.sh "$st"; echo "[exit status $?]"; } \
                >"$logs/sanitize_${tool}_$st.txt" 2>&1 &
        done
    done
    wait
}

suite_summary() {
    [ -f "$1/gpu_tests.txt" ] || return 0
    echo "gpu tests: $(grep -E 'Synthesis' "$1/gpu_tests.txt")"
    grep -E '^\[FAIL\]|CRASH' "$1/gpu_tests.txt" | head
    local f
    for f in "$1"/sanitize_*.txt; do
        echo "$(basename "$f"): $(grep -c 'rc 0;' "$f") clean of $(grep -c '^step ' "$f") runs$(grep -q \
            'exit status 124' "$f" && echo ', then cut by its time limit (the rest not run)')"
        grep '^step ' "$f" | grep -v 'rc 0;'
    done
}

ab_ratios() {
    [ -s "$1" ] || return 0
    awk -F'"' 'NR > 1 { split($1, a, ","); split($3, b, ","); v = a[1]; sub(/.*\//, "", v); sub(/\.so.*/, "", v)
                       k = $2 (b[2] == 1 ? " causal" : ""); t[v, k, b[3]] = b[4]; vs[v] = 1; ks[k] = 1; rs[b[3]] = 1 }
             END { for (k in ks) for (v in vs) if (v != "base") { lo = 9; hi = 0
                       for (r in rs) if (t["base", k, r] > 0 && t[v, k, r] > 0) {
                           x = t[v, k, r] / t["base", k, r]; if (x < lo) lo = x; if (x > hi) hi = x }
                       printf "  %-24s %-12s %.3f-%.3f\n", k, v, lo, hi } }' "$1" | sort
}

BAR_SHAPES="--shape 4,8,4096,4096,64 --shape 4,8,16384,16384,64 --shape 4,8,4096,4096,64,c
            --shape 4,8,16384,16384,64,c --shape 4,8,4096,4096,128 --shape 4,8,16384,16384,128
            --shape 4,8,4096,4096,128,c --shape 4,8,16384,16384,128,c"
NV="${NVCC:-/usr/local/cuda/bin/nvcc} -O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC,-Wall,-Wextra,-Werror
    -Werror all-warnings -cudart shared -Xlinker -rpath=/usr/local/cuda/lib64 -Icommon
    -gencode arch=compute_90a,code=sm_90a"

flag() { sed -i "/struct BwdTiles<$2>/,/^};/ s/$3 = $4/$3 = $5/" "$1"; }

bars_run() {
    local o=$1 sd=$2 sha
    sha=$(cat .git-sha 2>/dev/null)
    sed 's/fwd,bwd/fwd/' bench/sweeps.txt >/tmp/sweeps_fwd
    sed 's/fwd,bwd/bwd/' bench/sweeps.txt >/tmp/sweeps_bwd
    {
        echo "commit $sha; $3"
        ATTN_STEPS_DIR=$sd ATTN_SWEEPS_FILE=/tmp/sweeps_fwd ATTN_GIT_SHA=$sha timeout -k 5 150 \
            build/attn bench --sweep bars --steps 12 --out /tmp/bars_fwd.csv
        echo "forward rc $?"
        ATTN_STEPS_DIR=$sd ATTN_SWEEPS_FILE=/tmp/sweeps_bwd ATTN_GIT_SHA=$sha timeout -k 5 150 \
            build/attn bench --sweep bars --steps 13 --out /tmp/bars_bwd.csv
        echo "backward rc $?"
    } >"$o/bars.log" 2>&1
    { cat /tmp/bars_fwd.csv; tail -n +2 /tmp/bars_bwd.csv; } >"$o/bars.csv"
    timeout -k 5 200 python3 bench/peer_sdpa.py --sweep bars --backends cudnn,fa4 --out "$o/peers_bars.csv" \
        2>"$o/peers.log"
    echo "peers rc $?" | tee -a "$o/bars.log"
}

bars_interleaved() {
    local o=$1 r=$2 be=$3 pass step
    for pass in ${4:-fwd bwd}; do
        sed "s/fwd,bwd/$pass/" bench/sweeps.txt >/tmp/sweeps_$pass
        step=12; [ $pass = bwd ] && step=13
        ATTN_SWEEPS_FILE=/tmp/sweeps_$pass timeout -k 5 280 python3 bench/peer_sdpa.py --sweep bars \
            --backends "$be" --steps $step --lockstep --rounds "$r" --out "$o/interleaved_$pass.csv" \
            2>>"$o/interleaved.log"
        echo "$pass rc $?" >>"$o/interleaved.log"
        python3 bench/experiments/tools/interleaved.py "$o/interleaved_$pass.csv" >>"$o/interleaved.txt" 2>&1
    done
}

standard_run() {
    local o=$1 sw=/tmp/sweeps_$2 sha t0=$SECONDS log=$1/bench.log
    sha=$(cat .git-sha 2>/dev/null)
    { echo "commit $sha, steps as committed"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >"$log"
    ATTN_SWEEPS_FILE=$sw ATTN_GIT_SHA=$sha timeout 300 build/attn bench --sweep standard --steps "$3" \
        --out "$o/standard.csv" 2>>"$log"
    echo "== attn bench rc $? at $((SECONDS - t0)) s" >>"$log"
    ATTN_SWEEPS_FILE=$sw timeout 200 python3 bench/peer_sdpa.py --sweep standard \
        --backends flash,cudnn,fa4 --out "$o/peers_standard.csv" 2>>"$log"
    echo "== peers rc $? at $((SECONDS - t0)) s" >>"$log"
}

sass_counts() {
    local re=$1 n=$2 f co
    co=${CUOBJDUMP:-$(command -v cuobjdump || echo /tmp/tools-venv/lib/python3.11/site-packages/nvidia/cu13/bin/cuobjdump)}
    [ -x "$co" ] || { echo "  (no cuobjdump: SASS not counted)"; return 0; }
    shift 2
    for f in "$@"; do "$co" -sass "$f" | python3 bench/experiments/tools/sass_loop.py "$re" "$n"; done
}

quick_runs() {
    local d=$1 st=$2 args=$3 s
    shift 3
    for s in "$@"; do
        echo "## attn run --step $st $args --shape $s"
        # shellcheck disable=SC2086
        ATTN_STEPS_DIR=$d timeout -k 5 60 build/attn run --step "$st" $args --shape $s --reps 2 2>&1 |
            grep -E "^(check|timed)|FAIL|rror"
    done
}

unpack_carry() {
    local d f
    tar xJf .carry/b.txz
    mkdir -p /tmp/fa4/b
    for d in build/fa4s1 build/fa4s2; do
        [ -d $d ] || continue
        for f in $d/*; do
            case $f in */aa.*) cp $f /tmp/fa4/ ;; *) cp $f /tmp/fa4/b/ ;; esac
        done
    done
}

python_door() {
    {
        timeout -k 5 300 python3 -m pytest -q tests/test_torch.py 2>&1 | tail -4
        echo "[exit status ${PIPESTATUS[0]}]"
        timeout -k 5 120 python3 python/train_demo.py 2>&1 | tail -8
        echo "[exit status ${PIPESTATUS[0]}]"
    } >"$1" 2>&1
}

fa4_install() {
    { mkdir -p /tmp/fa4a && cat /tmp/fa4/aa.aa /tmp/fa4/aa.ab >/tmp/fa4a/cu13.part.aa &&
          bash build/v15/fa4-install.sh /tmp/fa4/b /tmp/fa4a; } >"$1/fa4_install.txt" 2>&1
}
same_bits() {
    local old=$1 s sh d
    for s in 11 12 13; do
        for sh in "2,4,1000,1000,128" "1,8,2048,3000,128 --causal" "2,8,4096,4096,128" "1,4,1000,777,64"; do
            for d in "$old" build/steps; do
                echo "## $([ "$d" = build/steps ] && echo after || echo before) seed $s $sh"
                # shellcheck disable=SC2086
                ATTN_STEPS_DIR=$d timeout 60 build/attn run --step 12 --shape $sh --seed $s --reps 1 2>&1 |
                    grep -E '^check|rel'
            done
        done
    done >"$2" 2>&1
}
build_ab() {
    mkdir -p build/v15
    gcc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Icommon -I/usr/local/cuda/include -o build/v15/ab \
        bench/experiments/tools/ab.c build/libharness.a -L/usr/local/cuda/lib64 \
        -Wl,-rpath,/usr/local/cuda/lib64 -lcudart -ldl -lm
}
same_lines() {
    local d=$1 st=$2 args=$3 out=$4 sh dd
    shift 4
    for sh in "$@"; do
        for dd in build/steps "$d"; do
            echo "## $dd $sh"
            # shellcheck disable=SC2086
            ATTN_STEPS_DIR=$dd timeout -k 5 60 build/attn run --step "$st" $args --shape $sh --seed 7 --reps 1 2>&1 |
                grep -E '^check'
        done
    done >"$out" 2>&1
    echo "same bits: $(awk '/^## build/{a=1;next} /^##/{a=0;next} {if(a)x[n++]=$0; else if($0!=x[m++])d++} END{print d+0}' "$out") lines differ"
}
