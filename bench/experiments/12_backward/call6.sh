#!/usr/bin/env bash
# Sixth device call of step 12: the records of the committed step, on two GPUs of one host
# (nvidia-h200-x2) so that what times things runs alone on GPU 0 (host cores 0-3) while the checks
# run on GPU 1 (cores 4-31). With one GPU, the same run one after the other.
#   GPU 0: standard12.csv   step 12's rows of the standard sweep
#          peers_bars.csv   SDPA's cuDNN and flash backwards at the bar shapes, right after
#          train_demo.txt, cli.txt   the Python training demo (step 12 both ways), the CLI record
#          gpu_tests.txt    the Criterion GPU tests (every step)
#   GPU 1: check12.txt/.csv attn check --steps 12, the whole grid
#          sanitize.txt     memcheck, racecheck, synccheck of the backward on 8 shapes (call 3's)
#          runs.txt         attn run --backward on edge and long shapes
#          python_tests.txt pytest tests/test_torch.py
#          repeat.txt       five backwards on the same inputs: dQ, dK, dV against the first
# Usage (repo root): bench/experiments/12_backward/call6.sh OUT
set -u
o=$1; d=bench/experiments/12_backward; t0=$SECONDS; log=$o/r.log
say() { echo "== $* at $((SECONDS-t0)) s" >> $log; }
sha=$(cat .git-sha 2>/dev/null || echo unknown)
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  G0="env CUDA_VISIBLE_DEVICES=0 taskset -c 0-3"; G1="env CUDA_VISIBLE_DEVICES=1 taskset -c 4-31"; par=1
else
  G0=env; G1=env; par=0
fi
say start, two GPUs: $par
gpu0() {
  $G0 build/attn bench --sweep standard --steps 12 --out $o/standard12.csv 2>> $log; say standard
  ATTN_SWEEPS_FILE=$d/bars.txt $G0 env -u LD_LIBRARY_PATH python3 bench/peer_sdpa.py --sweep bwdbars --backends cudnn,flash --out $o/peers_bars.csv >> $log 2>&1; say peers
  { echo "commit $sha"; timeout 200 $G0 env -u LD_LIBRARY_PATH python3 python/train_demo.py; echo "[exit status $?]"; } > $o/train_demo.txt 2>&1
  { echo "commit $sha"; timeout 100 $G0 bash bench/cli_examples.sh; } > $o/cli.txt 2>&1; say demo, cli
  { echo "commit $sha"; timeout 300 $G0 build/tests/gpu --verbose; echo "[exit status $?]"; } > $o/gpu_tests.txt 2>&1; say gpu tests
}
gpu1() {
  { echo "commit $sha"; timeout 520 $G1 build/attn check --steps 12 --csv $o/check12.csv; echo "[exit status $?]"; } > $o/check12.txt 2>&1 &
  mkdir -p $o/s; n=0
  for tool in racecheck memcheck synccheck; do
    for sh in "1,1,300,65,128 --causal" "1,140,130,140,128" "1,2,130,1000,128" "1,2,129,1,64 --causal" \
              "1,2,1,129,128" "1,1,65,300,64 --causal" "1,2,129,127,64 --causal" "1,1,700,300,64"; do
      n=$((n+1))
      ( out=$(timeout 300 $G1 compute-sanitizer --tool $tool --error-exitcode 99 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1); rc=$?
        echo "step 12 $tool --backward $sh: rc $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' <<<"$out" | tail -1); $(grep -E '^check' <<<"$out")" > $o/s/$(printf %02d $n).txt
        [ $rc != 0 ] && grep -E "Race reported|access at" <<<"$out" | head -6 >> $o/s/$(printf %02d $n).txt ) &
    done
  done
  { echo "commit $sha"; for sh in "1,1,8192,8191,128" "1,2,4096,4096,64 --causal" "3,47,257,4099,128" "1,1,33700,2900,128 --causal" \
       "1,2,17,1000,64" "1,2,1000,17,128 --causal" "2,1,1,1,64" "1,1,1025,1000,128 --causal" "1,2,65,300,64 --causal"; do
     timeout 100 $G1 build/attn run --step 12 --backward --shape $sh --reps 1 2>&1 | grep -E "^problem|^check"; done; } > $o/runs.txt 2>&1
  { echo "commit $sha"; timeout 200 $G1 env -u LD_LIBRARY_PATH python3 -m pytest -q -rs tests/test_torch.py; echo "[exit status $?]"; } > $o/python_tests.txt 2>&1
  { echo "commit $sha"; timeout 200 $G1 env -u LD_LIBRARY_PATH python3 $d/repeat_bwd.py; echo "[exit status $?]"; } > $o/repeat.txt 2>&1
  wait
  { echo "commit $sha"; cat $o/s/*.txt; } > $o/sanitize.txt; rm -rf $o/s
  say check, sanitize, runs, pytest, repeat
}
if [ $par = 1 ]; then gpu0 & gpu1; wait; else gpu0; gpu1; fi
say done
