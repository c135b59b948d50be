# hopper.png: the top of forward.png, readable. The Hopper steps (07 on), FlashAttention-2 and,
# where the peers' CSV has its rows, FlashAttention-4, each as its forward TFLOP/s over SDPA cuDNN's at the same shape (1 = cuDNN's speed), on a linear
# axis, against N, four panels (D = 64, 128 × non-causal, causal). A step whose forward is an
# earlier step's kernel (13) is left out, as in forward.png.
# Variables from draw.sh: results, out, plotdir, gpu, date, sha.

load plotdir.'/_style.gp'
ours = results.'/standard.csv'
theirs = results.'/peers_standard.csv'
base = 'status=ok dtype=bf16 pass=fwd batch=4 heads=8'
first_hopper = 7

# ratio(file, where, step): "N,ratio" rows of STEP over cuDNN at the same N (peers file first).
ratio_awk = 'FNR==1{for(i=1;i<=NF;i++)c[$i]=i; nw=split(w,W," "); next} \
{for(j=1;j<=nw;j++){split(W[j],kv,"="); if($c[kv[1]]!=kv[2]) next} \
 if($c["seq_q"]!=$c["seq_k"]) next; if($c["step"]=="sdpa_cudnn") ref[$c["seq_q"]]=$c["tflops"]; \
 if($c["step"]==s) val[$c["seq_q"]]=$c["tflops"]} \
END{for(n in val) if(ref[n]>0) printf "%s,%.6g\n", n, val[n]/ref[n]}'
ratio(where, s) = sprintf("< awk -F, -v s='%s' -v w='%s' '%s' '%s' '%s' | sort -t, -k1,1g", \
                          s, where, ratio_awk, theirs, ours)
hopper(list, i) = i > words(list) ? "" : \
    (step_number(word(list, i)) >= first_hopper ? word(list, i)." " : "") . hopper(list, i + 1)

eval png(1400, 1000)
set output out.'/hopper.png'
set multiplot title "The Hopper steps beside the best peers: forward TFLOP/s over SDPA cuDNN's at the same shape\nbf16, batch 4, 8 heads\n".caption font ",15"
@set_n_axis
set xrange [420:40000]
set yrange [0.35:1.45]
set ytics 0.1 format "%.1f"
set ylabel "TFLOP/s ÷ cuDNN's (linear)"
set key off
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb word(peer_colors, 2) back
panel(k, r) = sprintf("set lmargin at screen %g; set rmargin at screen %g; set bmargin at screen %g; set tmargin at screen %g", \
                      0.07 + k * 0.37, 0.38 + k * 0.37, 0.08 + (1 - r) * 0.445, 0.42 + (1 - r) * 0.445)
all_series = ""
do for [r = 0:1] {
  do for [k = 0:1] {
    d = k == 0 ? 64 : 128
    eval panel(k, r)
    set title sprintf("D = %d, %s", d, r ? "causal" : "non-causal") font ",14"
    if (r == 1) { set xlabel "sequence length N (tokens; N_q = N_k)" } else { unset xlabel }
    where = sprintf("%s head_dim=%d causal=%d", base, d, r)
    steps = hopper(own_forward(distinct(ours, where, 'step'), 1), 1)
    fa4 = have(theirs) && strlen(distinct(theirs, where.' step=fa4', 'step')) ? "fa4 " : ""
    series = "sdpa_flash ".fa4.draw_order(steps)
    do for [s in series] { if (!strstrt(all_series, s." ")) { all_series = all_series.s." " } }
    plot for [s in series] ratio(where, s) using 1:2 with linespoints \
           lw (is_peer(s) ? 2 : step_lw(s)) dt dash(s) pt point(s) ps (is_peer(s) ? 1.1 : step_ps(s)) lc rgb color(s)
  }
}
set lmargin at screen 0.78; set rmargin at screen 0.99; set bmargin at screen 0.08; set tmargin at screen 0.865
unset title; unset xlabel; unset ylabel; unset logscale; unset border; unset tics; unset grid; unset arrow 1
set xrange [0:1]; set yrange [0:1]
set key at screen 0.78, 0.865 left top Left reverse samplen 3.5 spacing 1.3 font ",12" title "dashed line at 1: SDPA cuDNN"
key_list = system(sprintf("echo '%s' | tr ' ' '\\n' | grep . | sort | tr '\\n' ' '", all_series))   # steps in order, then FA4, FA2
plot for [s in key_list] NaN with linespoints lw (is_peer(s) ? 2 : step_lw(s)) dt dash(s) pt point(s) \
       ps (is_peer(s) ? 1.1 : step_ps(s)) lc rgb color(s) title label(s)
unset multiplot
