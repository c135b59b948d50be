# backward.png: backward TFLOP/s against N, for the steps that have a backward, and the peers.
# Variables from draw.sh: results, out, plotdir, gpu, date, sha, gpumem.
pass = 'bwd'
what = 'backward'
what_title = "Backward attention throughput (dQ, dK, dV): bf16, batch 4, 8 heads (FLOPs = 2.5 × forward)"
load plotdir.'/_throughput.gp'
