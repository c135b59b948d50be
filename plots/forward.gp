# forward.png: forward TFLOP/s against N, per step and SDPA peer (bf16, B=4, H=8); a step that
# adds only a backward (06) is drawn in backward.png, not here.
# Variables from draw.sh: results, out, plotdir, gpu, date, sha, gpumem.
pass = 'fwd'
what = 'forward'
what_title = "Forward attention throughput: bf16, batch 4, 8 heads (4·B·H·D·visible pairs FLOPs)"
load plotdir.'/_throughput.gp'
