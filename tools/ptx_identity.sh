#!/usr/bin/env bash
# tools/ptx_identity.sh [BASE]: does a change to common/ leave the Hopper steps' code as it was?
#
# Every step whose nvcc flags (`make step-flags`, i.e. its steps/NN_name/step.mk) target sm_90a is
# compiled to PTX twice with exactly those flags and -ptx: once with the working tree's common/,
# once with common/ as it is at the commit BASE (`git archive` into a temporary folder, which
# replaces -Icommon). The step file is the working tree's both times. Only the line-number debug
# info (.loc, .file: -lineinfo) and the debug sections are ignored; they move whenever a header's
# lines move, and name every inlined function. Then a probe
# file calls every wgmma_bf16<N>::ss, ::ss_mn and ::rs_mn that BASE's mma_sm90.cuh defines, one kernel each,
# so a wrapper no step uses is compared too, and assembles every wrapper of the working tree's
# header to sm_90a (ptxas), the widths BASE lacked included.
#
# BASE defaults to HEAD when the working tree's common/ differs from HEAD, else to the commit
# before the last one that changed common/mma_sm90.cuh: run it before committing a change to
# common/, or after, with no argument. Needs nvcc and git history, not a GPU; about 15 s on two
# cores. It is a tool, not a test: which base to compare with is a question about one change,
# and it fails by design when a change to common/ means to change the code (make test does not
# run tools/).
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-${CUDA:-/usr/local/cuda}/bin/nvcc}                  # as the Makefile's defaults
unset MAKEFLAGS MFLAGS MAKELEVEL

if [ $# -ge 1 ]; then
    base=$1
elif ! git diff --quiet HEAD -- common; then
    base=HEAD
else
    last=$(git log -1 --format=%H -- common/mma_sm90.cuh)
    [ -n "$last" ] || { echo "tools/ptx_identity.sh: no commit changed common/mma_sm90.cuh; name a BASE" >&2; exit 2; }
    base=$last^
fi
sha=$(git rev-parse --verify -q "$base^{commit}") ||
    { echo "tools/ptx_identity.sh: $base is no commit here (a shallow clone? name a BASE)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/ptx-identity-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base"
git archive "$sha" common | tar -x -C "$tmp/base"
changed=$(git diff --name-only "$sha" -- common | paste -sd ' ')
echo "common/ of the working tree against $(git log -1 --format='%h (%s)' "$sha" | cut -c1-80)"
echo "files that differ: ${changed:-none}"

# The code alone: no line-number info, and nothing from the first debug section on (-lineinfo's
# tables name every inlined function, so a wrapper that becomes a template renames them there).
ptx_only() { awk '/^[[:space:]]*\.section[[:space:]]+\.debug/ { exit } { print }' "$1" |
             grep -v -E '^[[:space:]]*\.(loc|file)[[:space:]]'; }
status=0

# ---- every Hopper step, as make builds it
for dir in steps/*/; do
    name=$(basename "$dir")
    [ -f "$dir/attention.cu" ] || continue
    flags=$(make -s --no-print-directory step-flags STEP="$name" | sed -n 2p)
    case " $flags " in *sm_90a*|*compute_90a*) ;; *) continue ;; esac
    read -ra new <<<"$flags"
    old=()
    for f in "${new[@]}"; do [ "$f" = -Icommon ] && old+=("-I$tmp/base/common") || old+=("$f"); done
    "$NVCC" "${new[@]}" -ptx -o "$tmp/$name.new.ptx" "$dir/attention.cu"
    if ! "$NVCC" "${old[@]}" -ptx -o "$tmp/$name.old.ptx" "$dir/attention.cu" 2>"$tmp/$name.err"; then
        if ! git cat-file -e "$sha:$dir/attention.cu" 2>/dev/null; then
            echo "$name: new since BASE (it uses what BASE's common/ lacks; nothing to compare)"
            continue
        fi
        echo "$name: NOT identical (it does not compile with BASE's common/: $(head -1 "$tmp/$name.err"))"
        status=1
        continue
    fi
    mma=$(grep -o 'wgmma\.mma_async[^ ]*' "$tmp/$name.new.ptx" | sed 's/.*\.m64n\([0-9]*\)k16.*/\1/' |
          sort -n | uniq | tr '\n' ' ')
    if cmp -s <(ptx_only "$tmp/$name.old.ptx") <(ptx_only "$tmp/$name.new.ptx"); then
        echo "$name: identical ($(grep -c '^\.visible \.entry' "$tmp/$name.new.ptx") kernels," \
             "$(grep -c 'wgmma\.mma_async' "$tmp/$name.new.ptx") wgmma of N = ${mma% })"
    else
        echo "$name: NOT identical; the first differences:"
        diff <(ptx_only "$tmp/$name.old.ptx") <(ptx_only "$tmp/$name.new.ptx") | head -12 || true
        status=1
    fi
done

# ---- every wrapper BASE has, alone; every wrapper the working tree has, through ptxas
widths=$(seq 16 16 256)
{
    echo '#include <type_traits>'
    echo '#include "mma_sm90.cuh"'
    echo '#define HAS(fn, A) template <int N, class = void> struct has_##fn : std::false_type {}; \'
    echo '    template <int N> struct has_##fn<N, std::void_t<decltype(wgmma_bf16<N>::fn(std::declval<float (&)[N / 2]>(), \'
    echo '        std::declval<A>(), uint64_t(), 0))>> : std::true_type {};'
    echo 'HAS(ss, uint64_t) HAS(ss_mn, uint64_t) HAS(rs_mn, const uint32_t (&)[4])'
    echo 'template <int N> __global__ void probe_ss(float *out, uint64_t a, uint64_t b, int acc) {'
    echo '    if constexpr (has_ss<N>::value) { float d[N / 2];'
    echo '        for (int i = 0; i < N / 2; i++) d[i] = out[i];'
    echo '        wgmma_fence(); wgmma_bf16<N>::ss(d, a, b, acc); wgmma_commit(); wgmma_wait<0>();'
    echo '        for (int i = 0; i < N / 2; i++) out[i] = d[i]; } }'
    echo 'template <int N> __global__ void probe_ss_mn(float *out, uint64_t a, uint64_t b, int acc) {'
    echo '    if constexpr (has_ss_mn<N>::value) { float d[N / 2];'
    echo '        for (int i = 0; i < N / 2; i++) d[i] = out[i];'
    echo '        wgmma_fence(); wgmma_bf16<N>::ss_mn(d, a, b, acc); wgmma_commit(); wgmma_wait<0>();'
    echo '        for (int i = 0; i < N / 2; i++) out[i] = d[i]; } }'
    echo 'template <int N> __global__ void probe_rs_mn(float *out, const uint32_t *p, uint64_t b, int acc) {'
    echo '    if constexpr (has_rs_mn<N>::value) { float d[N / 2]; uint32_t a[4] = {p[0], p[1], p[2], p[3]};'
    echo '        for (int i = 0; i < N / 2; i++) d[i] = out[i];'
    echo '        wgmma_fence(); wgmma_bf16<N>::rs_mn(d, a, b, acc); wgmma_commit(); wgmma_wait<0>();'
    echo '        for (int i = 0; i < N / 2; i++) out[i] = d[i]; } }'
    for n in $widths; do
        echo "template __global__ void probe_ss<$n>(float *, uint64_t, uint64_t, int);"
        echo "template __global__ void probe_ss_mn<$n>(float *, uint64_t, uint64_t, int);"
        echo "template __global__ void probe_rs_mn<$n>(float *, const uint32_t *, uint64_t, int);"
    done
} >"$tmp/probe.cu"
probe_flags=(-std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Werror all-warnings)
"$NVCC" "${probe_flags[@]}" -I"$tmp/base/common" -ptx -o "$tmp/probe.old.ptx" "$tmp/probe.cu"
"$NVCC" "${probe_flags[@]}" -Icommon -ptx -o "$tmp/probe.new.ptx" "$tmp/probe.cu"
# One file per kernel: from its .entry line to the debug sections at the end.
split_entries() {
    mkdir -p "$2"
    awk -v dir="$2" '/^[[:space:]]*\.(file|section)[[:space:]]/ { out = "" }
        /\.entry / { out = dir "/" $NF; sub(/\($/, "", out) }
        out != "" { print > out }' "$1"
}
split_entries "$tmp/probe.old.ptx" "$tmp/probe.old"
split_entries "$tmp/probe.new.ptx" "$tmp/probe.new"
same="" differ="" added=""
for f in "$tmp"/probe.new/*; do
    k=$(basename "$f")
    label=$(sed -E 's/^_Z[0-9]+probe_([a-z_]+)ILi([0-9]+)EE.*/\1<\2>/' <<<"$k")
    if grep -q 'wgmma\.mma_async' "$tmp/probe.old/$k" 2>/dev/null; then
        if cmp -s <(ptx_only "$tmp/probe.old/$k") <(ptx_only "$f"); then same+=" $label"; else differ+=" $label"; fi
    elif grep -q 'wgmma\.mma_async' "$f"; then
        added+=" $label"
    fi
done
sort_labels() { tr ' ' '\n' | sort -t'<' -k1,1 -k2n | tr '\n' ' ' | sed 's/^ *//; s/ *$//'; }
echo "wrappers alone: identical: $(sort_labels <<<"$same")"
[ -z "$differ" ] || { echo "wrappers alone: NOT identical: $(sort_labels <<<"$differ")"; status=1; }
if "$NVCC" "${probe_flags[@]}" -Icommon -cubin -o "$tmp/probe.cubin" "$tmp/probe.cu" 2>"$tmp/ptxas.err"; then
    echo "wrappers new since BASE (no PTX to compare; assembled by ptxas for sm_90a): $(sort_labels <<<"$added")"
else
    echo "wrappers: ptxas rejects the working tree's header:"; head -20 "$tmp/ptxas.err"; status=1
fi
[ $status -eq 0 ] && echo "PTX identical" || echo "PTX NOT identical"
exit $status
