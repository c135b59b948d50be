# TFLOP/s against N, four panels (D = 64, 128 × non-causal, causal): one line per step, the
# SDPA peers dashed. Loaded by forward.gp and backward.gp, which set `pass` and `what`. The
# forward leaves out a step whose forward is an earlier step's kernel (forward_shared in
# _style.gp) and says so under the key.

load plotdir.'/_style.gp'
ours = results.'/standard.csv'
theirs = results.'/peers_standard.csv'
base = 'status=ok dtype=bf16 pass='.pass

# One y range for all four panels, so that the panels compare at a glance, fitted to the data;
# N up to the largest.
minmax = system(sprintf("{ %s; %s; } 2>/dev/null | awk -F, 'NR==1{lo=hi=$1} {if($1<lo)lo=$1; if($1>hi)hi=$1; if($2>n)n=$2} END{print lo+0, hi+0, n+0}'", \
    rows(ours, base, 'tflops seq_q')[2:], rows(theirs, base, 'tflops seq_q')[2:]))
ylo = nice_below(num(word(minmax, 1)) * 0.9)
yhi = num(word(minmax, 2)) * 1.35   # a little room above the top line
nmax = num(word(minmax, 3))

eval png(1400, 1000)
set output out.'/'.what.'.png'
set multiplot title what_title."\n".caption font ",16"

@set_n_axis
set xrange [420:nmax * 1.22]
set logscale y 10
set yrange [ylo:yhi]
set ytics @log_tics
set ylabel "TFLOP/s (log scale)"
set key off

# Panel (row r, column k): manual margins keep the right strip free for one shared key.
panel(k, r) = sprintf("set lmargin at screen %g; set rmargin at screen %g; set bmargin at screen %g; set tmargin at screen %g", \
                      0.07 + k * 0.37, 0.38 + k * 0.37, 0.08 + (1 - r) * 0.445, 0.42 + (1 - r) * 0.445)

all_steps = ""
all_peers = ""
not_drawn = ""      # forward only: steps whose forward is an earlier step's kernel
do for [r = 0:1] {
  do for [k = 0:1] {
    d = k == 0 ? 64 : 128
    causal = r
    eval panel(k, r)
    set title sprintf("D = %d, %s", d, causal ? "causal" : "non-causal") font ",14"
    if (r == 1) { set xlabel "sequence length N (tokens; N_q = N_k)" } else { unset xlabel }
    where = sprintf("%s head_dim=%d causal=%d", base, d, causal)
    steps = have(ours) ? distinct(ours, where, 'step') : ""
    if (pass eq 'fwd') {
      do for [s in shared_forward(steps, 1)] { if (!strstrt(not_drawn, s." ")) { not_drawn = not_drawn.s." " } }
      steps = own_forward(steps, 1)
    }
    sdpa = have(theirs) ? only_peers(distinct(theirs, where, 'step')) : ""
    do for [s in steps] { if (!strstrt(all_steps, s." ")) { all_steps = all_steps.s." " } }
    do for [s in sdpa]  { if (!strstrt(all_peers, s." ")) { all_peers = all_peers.s." " } }
    # One loop over peers then steps (peers first, so the steps draw on top; see draw_order).
    series = sdpa.draw_order(steps)
    if (words(series) == 0) { plot NaN notitle } else {
      plot for [s in series] rows(is_peer(s) ? theirs : ours, where.' step='.s, 'seq_q tflops').' | sort -t, -k1,1g' \
             using 1:2 with linespoints lw (is_peer(s) ? 2 : step_lw(s)) dt dash(s) pt point(s) ps (is_peer(s) ? 1.1 : step_ps(s)) lc rgb color(s)
    }
  }
}

key_title = (strlen(all_steps) ? "solid: our steps" : "") . (strlen(all_steps) && strlen(all_peers) ? "\n" : "") . \
            (strlen(all_peers) ? peer_key : "")
# The shared key: invisible plot whose only content is the key, in the right strip.
set lmargin at screen 0.78; set rmargin at screen 0.99; set bmargin at screen 0.08; set tmargin at screen 0.865
unset title; unset xlabel; unset ylabel; unset logscale; unset border; unset tics; unset grid
set xrange [0:1]; set yrange [0:1]
set key at screen 0.78, 0.865 left top Left reverse samplen 3.5 spacing 1.3 font ",12" title key_title
if (strlen(not_drawn)) { set label 1 shared_note(not_drawn, 1) at screen 0.785, screen 0.10 left font ",11" tc rgb "#505050" }
plot for [s in all_steps] NaN with linespoints lw step_lw(s) pt point(s) ps step_ps(s) lc rgb color(s) title label(s), \
     for [s in all_peers] NaN with linespoints lw 2 dt dash(s) pt point(s) ps 1.1 lc rgb color(s) title label(s)
unset multiplot
