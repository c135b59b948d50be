#!/usr/bin/env bash
# tools/ptx_same.sh A.cu B.cu: do two versions of a step file compile to the same PTX?
#
# Both files are compiled as make builds a Hopper step (-O3 -lineinfo, C++17, -Icommon, sm_90a),
# with -ptx, and the two PTX files are compared whole: every kernel, every instruction, every
# virtual register's number. Only what -lineinfo adds is ignored, since it moves whenever a line
# moves and names every inlined function: the .loc and .file directives, the // comment lines,
# and everything from the first .section .debug on. A refactor that only moves code into
# force-inlined functions, renames, and names its constants passes; one that changes an
# expression or the order of statements shows up here even when ptxas would hide it.
# Exit 0 when identical; 1 with the diff's first 40 lines when not. Needs nvcc, not a GPU.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: tools/ptx_same.sh A.cu B.cu" >&2; exit 2; }
a=$(realpath "$1") b=$(realpath "$2")
cd "$(dirname "$0")/.."
NVCC=${NVCC:-${CUDA:-/usr/local/cuda}/bin/nvcc}   # as the Makefile's defaults
tmp=$(mktemp -d /tmp/ptx-same-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
flags=(-O3 -lineinfo -std=c++17 -Icommon -gencode arch=compute_90a,code=sm_90a -ptx)
"$NVCC" "${flags[@]}" -o "$tmp/a.ptx" "$a"
"$NVCC" "${flags[@]}" -o "$tmp/b.ptx" "$b"
# The code alone: stop at the first debug section, drop line info and comment lines.
code() { awk '/^[[:space:]]*\.section[[:space:]]+\.debug/ { exit } { print }' "$1" |
         grep -v -E '^[[:space:]]*(\.loc|\.file)([[:space:]]|$)|^[[:space:]]*//' || true; }
code "$tmp/a.ptx" >"$tmp/a.code"
code "$tmp/b.ptx" >"$tmp/b.code"
if cmp -s "$tmp/a.code" "$tmp/b.code"; then
    echo "PTX identical: $(grep -c '^\.visible \.entry' "$tmp/a.code") kernels," \
         "$(wc -l <"$tmp/a.code") lines ($1 and $2)"
    exit 0
fi
echo "PTX NOT identical ($1 against $2); the first differences:"
diff "$tmp/a.code" "$tmp/b.code" | head -40 || true
exit 1
