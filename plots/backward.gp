# backward.png: backward TFLOP/s against N, for the steps that have a backward, and the peers
# (bench/peer_sdpa.py times SDPA's forward and backward as CUDA-graph replays, so that autograd's
# launch overhead is not in the peers' times, as it is not in ours).
# Variables from draw.sh: results, out, plotdir, gpu, date, sha, gpumem.
pass = 'bwd'
what = 'backward'
what_title = "Backward attention throughput (dQ, dK, dV): bf16, batch 4, 8 heads (FLOPs = 2.5 × forward)\n". \
             "SDPA's backward timed as CUDA-graph replays: the GPU's work, without autograd's launch overhead"
load plotdir.'/_throughput.gp'
