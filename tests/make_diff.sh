#!/usr/bin/env bash
# `make diff A= B=` and `make sass/sanitize/profile STEP=` name a step by its number, with or
# without leading zeros (08 and 09 once read as bad octal and became step 00), or by the start of
# its folder's name; a missing step is named alone. No build, no GPU: make test runs this.
set -uo pipefail
cd "$(dirname "$0")/.."
unset MAKEFLAGS MFLAGS MAKELEVEL             # run by make test: no inherited flags, no "Entering"
mk() { make -s --no-print-directory "$@"; }
fail=0
no() { echo "FAIL: $*"; fail=1; }

# Steps 07 and 08, whose numbers printf '%02d' read as octal (08 is not octal: it became 00).
a=$(ls -d steps/07_* | head -1)
b=$(ls -d steps/08_* | head -1)
[ -n "$a" ] && [ -n "$b" ] || { echo "tests/make_diff.sh: no steps/07_* or steps/08_*"; exit 1; }

for pair in "07 08" "7 8" "007 8" "${a#steps/} ${b#steps/}"; do
    set -- $pair
    out=$(mk diff A="$1" B="$2" 2>&1)
    head -2 <<<"$out" | grep -q "^--- $a/attention.cu" &&
        head -2 <<<"$out" | grep -q "^+++ $b/attention.cu" ||
        no "make diff A=$1 B=$2 does not diff $a against $b: $(head -2 <<<"$out")"
done

# Every step's number resolves to its folder, with and without the leading zero, and so does the
# start of its name: the one function behind diff, sass, sanitize and profile (make step-flags).
for d in steps/[0-9][0-9]_*/; do
    d=${d%/}
    n=${d#steps/}; n=${n%%_*}
    for spec in "$n" "$((10#$n))" "${d#steps/}" "$d"; do
        got=$(mk step-flags STEP="$spec" 2>&1 | head -1)
        [ "$got" = "$d" ] || no "make step-flags STEP=$spec gives '$got', not $d"
    done
done
out=$(mk -n sass STEP=08 2>&1)
grep -q -- "-Xptxas -v -o /dev/null $b/attention.cu" <<<"$out" ||
    no "make -n sass STEP=08 does not compile $b/attention.cu"

# A missing step: exit status 2, and the message (its first line; make's own "Error 2" line
# follows) names it and only it.
out=$(mk diff A=99 B=02 2>&1); rc=$?
[ $rc -eq 2 ] || no "make diff A=99 B=02 exits $rc, not 2"
grep -q "A=99 names no step" <<<"$out" || no "make diff A=99 B=02 does not name step 99: $out"
head -1 <<<"$out" | grep -q "02" && no "make diff A=99 B=02 names step 02, which exists: $out"
out=$(mk diff A=02 B=98 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "B=98 names no step" <<<"$out" && ! head -1 <<<"$out" | grep -q "02" ||
    no "make diff A=02 B=98: exit $rc, '$out'"
out=$(mk diff A=99 B=98 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "99" <<<"$out" && grep -q "98" <<<"$out" ||
    no "make diff A=99 B=98: exit $rc, '$out'"
out=$(mk step-flags STEP=99 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "STEP=99 names no step" <<<"$out" || no "make step-flags STEP=99: exit $rc, '$out'"
out=$(mk diff A= B=02 2>&1); rc=$?
[ $rc -eq 2 ] || no "make diff A= B=02 exits $rc, not 2 (an empty name is no step)"
# one step named: no silent default for the other
out=$(mk diff A=11 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "needs both steps" <<<"$out" || no "make diff A=11 (no B): exit $rc, '$out'"
out=$(mk diff B=03 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "needs both steps" <<<"$out" || no "make diff B=03 (no A): exit $rc, '$out'"

[ $fail -eq 0 ] && echo "make diff/sass/step-flags: every step by number (with and without its zero) and by name; missing steps named alone"
exit $fail
