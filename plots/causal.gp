# causal.png: causal forward TFLOP/s against N, one panel per head dim (bf16, B=4, H=8), for the
# steps from 03 on (tiles sized for the tensor cores; 05 stops the key loop at the diagonal) and
# the SDPA peers. A line per step, solid; the peers dashed, as in forward.png (and, as there, not a
# step whose forward is an earlier step's kernel: 06's is 05's). Steps 00-02 compute
# every tile and mask afterwards, so they are in forward.png, not here. draw.sh draws this chart
# only once standard.csv has causal rows of step 03 or later.
# Variables from draw.sh: results, out, plotdir, gpu, date, sha.

load plotdir.'/_style.gp'
ours = results.'/standard.csv'
theirs = results.'/peers_standard.csv'
base = 'status=ok dtype=bf16 pass=fwd causal=1'

# Steps 03 and later, found in the CSV (never listed here), but not a step whose forward is an
# earlier step's kernel (its line would hide that step's; see forward_shared in _style.gp).
steps_from03 = ""
not_drawn = ""
do for [s in (have(ours) ? distinct(ours, base, 'step') : "")] {
  if (!is_peer(s) && step_number(s) >= 3) {
    if (shares_forward(s)) { not_drawn = not_drawn.s." " } else { steps_from03 = steps_from03.s." " }
  }
}
dims = distinct(ours, base, 'head_dim')
dims = system(sprintf("echo '%s' | tr ' ' '\\n' | grep . | sort -n | tr '\\n' ' '", dims))
ndims = words(dims)

# One y range for every panel.
minmax = system(sprintf("{ %s; %s; } 2>/dev/null | awk -F, 'NR==1{lo=hi=$1} {if($1<lo)lo=$1; if($1>hi)hi=$1; if($2>n)n=$2} END{print lo+0, hi+0, n+0}'", \
    rows(ours, base, 'tflops seq_q')[2:], rows(theirs, base, 'tflops seq_q')[2:]))
ylo = nice_below(num(word(minmax, 1)) * 0.9)
yhi = num(word(minmax, 2)) * 1.35   # a little room above the top line
nmax = num(word(minmax, 3))

eval png(1400, 700)
set output out.'/causal.png'
set multiplot title "Causal forward throughput, steps 03 on and the peers: bf16, batch 4, 8 heads\n(FLOPs count only the visible query-key pairs)\n".caption font ",16"

@set_n_axis
set xrange [420:nmax * 1.22]
set logscale y 10
set yrange [ylo:yhi]
set ytics @log_tics
set ylabel "TFLOP/s (log scale)"
set xlabel "sequence length N (tokens; N_q = N_k)"
set key off

width = 0.70 / ndims
all_peers = ""
do for [i = 1:ndims] {
  d = int(word(dims, i))
  set lmargin at screen 0.07 + (i - 1) * width + (i > 1 ? 0.05 : 0); set rmargin at screen 0.05 + i * width
  set bmargin at screen 0.12; set tmargin at screen 0.80
  set title sprintf("D = %d, causal", d) font ",14"
  where = sprintf("%s head_dim=%d", base, d)
  sdpa = have(theirs) ? only_peers(distinct(theirs, where, 'step')) : ""
  do for [s in sdpa] { if (!strstrt(all_peers, s." ")) { all_peers = all_peers.s." " } }
  mine = ""
  do for [s in distinct(ours, where, 'step')] { if (strstrt(steps_from03, s." ")) { mine = mine.s." " } }
  series = sdpa.mine
  if (words(series) == 0) { plot NaN notitle } else {
    plot for [s in sdpa.draw_order(mine)] rows(is_peer(s) ? theirs : ours, where.' step='.s, 'seq_q tflops').' | sort -t, -k1,1g' \
           using 1:2 with linespoints lw (is_peer(s) ? 2 : step_lw(s)) dt dash(s) pt point(s) ps (is_peer(s) ? 1.1 : step_ps(s)) lc rgb color(s)
  }
}

# The shared key, right of the panels.
set lmargin at screen 0.78; set rmargin at screen 0.99; set bmargin at screen 0.12; set tmargin at screen 0.80
unset title; unset xlabel; unset ylabel; unset logscale; unset border; unset tics; unset grid
set xrange [0:1]; set yrange [0:1]
set key at screen 0.78, 0.80 left top Left reverse samplen 3.5 spacing 1.3 font ",12" title "solid: our steps\n".peer_key
if (strlen(not_drawn)) { set label 1 shared_note(not_drawn, 1) at screen 0.785, screen 0.16 left font ",11" tc rgb "#505050" }
plot for [s in steps_from03] NaN with linespoints lw step_lw(s) pt point(s) ps step_ps(s) lc rgb color(s) title label(s), \
     for [s in all_peers] NaN with linespoints lw 2 dt dash(s) pt point(s) ps 1.1 lc rgb color(s) title label(s)
unset multiplot
