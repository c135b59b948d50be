#!/usr/bin/env bash
# What the front door prints, good input and bad, each with its exit status: the record behind
# bench/results/<gpu>/cli.txt. Run from the repository root, on a machine with a GPU.
cd "$(dirname "$0")/.."
show() {
    echo "\$ build/attn $*"
    build/attn "$@" 2>&1
    echo "[exit status $?]"
    echo
}
show
show list
show run --help
show run --step 02 --shape 2,2,300,200,64 --dtype bf16 --causal
show run --step 00 --shape 2,2,300,200,64 --dtype bf16 --backward
show run --step 01 --shape 2,1,100,100,64
show run --step 02 --shape 4,8,4096,4096,128 --dtype bf16 --reps 5
# no --dtype: bf16 where the step supports it (the Run: line of step 11's header, as written)
show run --step 11 --shape 4,8,4096,4096,128
show run --step 00 --shape 2,2,300,200,64 --dtype FP32
# bad input: one line each, exit status 2
show run --step 42 --shape 1,1,8,8,8
show run --step 02 --shape 1,1,8,8
show run --step 02 --shape 4,8,0,1024,64
show run --step 02 --shape 1,1,2147483648,8,64
show run --step 02 --shape 1,1,8,8,8 --dtype fp16
show run --step 02 --step 01 --shape 1,1,8,8,8
show run --step
show run --frobnicate
show run --step 01 --shape 1,1,64,64,256 --dtype bf16
show run --step 01 --shape 1,1,64,64,64 --backward
show run --step 03 --shape 1,1,64,64,96
show run --step 03 --shape 1,1,64,64,96 --dtype fp32
show bench --sweep standard --dtype fp32
show run --step 00 --shape 4,8,65536,65536,64 --dtype bf16
show run --step 02 --shape 64,64,65536,65536,128 --dtype bf16
show list extra
show check --step 99
show bench --sweep huge
show bench --sweep standard --steps 00,,02
show frobnicate
echo "\$ CUDA_VISIBLE_DEVICES= build/attn check     # no GPU visible"
CUDA_VISIBLE_DEVICES= build/attn check 2>&1
echo "[exit status $?]"
echo
echo "\$ CUDA_VISIBLE_DEVICES= build/attn run --step 01 --shape 1,1,16,16,300     # no GPU; the step's limit first"
CUDA_VISIBLE_DEVICES= build/attn run --step 01 --shape 1,1,16,16,300 2>&1
echo "[exit status $?]"
