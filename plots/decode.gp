# decode.png: decode read as a memory copy. GB/s of K and V (the CSVs' gbps column: 2 * B * H_kv *
# Nk * D * 2 bytes over the median time) against the cache length Nk, one query against H = 32
# query heads on H_kv = 8 K/V heads at D = 128, two panels: B = 1 (one sequence: few work tiles,
# where splitting the keys matters most) and B = 8. The decode steps (15 on) and the peers (SDPA's
# backends, FlashAttention-4 where installed), with the roofline: the HBM peak from `attn info`
# (meta.txt's hbm_peak_gbps; the H200 datasheet's 4,800 GB/s when the run did not record it)
# and 90 % of it.
# Variables from draw.sh: results, out, plotdir, gpu, date, sha, hbm (GB/s, 0 if unknown).

load plotdir.'/_style.gp'
ours = results.'/decode.csv'
theirs = results.'/peers_decode.csv'
base = 'status=ok dtype=bf16 pass=fwd heads=32 heads_kv=8 seq_q=1 head_dim=128 causal=0'
peak = hbm > 0 ? hbm : 4800
peak_from = hbm > 0 ? "attn info" : "the H200 datasheet"
s_lc(s) = color(s)
s_dt(s) = dash(s)
s_pt(s) = point(s)
s_lw(s) = is_peer(s) ? 2 : 3
s_ps(s) = is_peer(s) ? 1.1 : 1.6
s_label(s) = s eq "15_decode" ? "15_decode (the step)" : label(s)
decode_steps(list, i) = i > words(list) ? "" : \
    (step_number(word(list, i)) >= 15 ? word(list, i)." " : "") . decode_steps(list, i + 1)

eval png(1400, 700)
set output out.'/decode.png'
set multiplot title sprintf("Decode: GB/s of K and V read against the cache length (one query, 32 query heads on 8 K/V heads, D = 128, bf16)\nHBM peak %.0f GB/s (%s), dotted: 90 %%\n%s", peak, peak_from, caption) font ",15"
set logscale x 2
set xrange [800:170000]
set xtics ("1k" 1024, "2k" 2048, "4k" 4096, "8k" 8192, "16k" 16384, "32k" 32768, "64k" 65536, "128k" 131072)
set yrange [0:peak * 1.12]
set ytics 500
set ylabel "GB/s of K and V (linear)"
set xlabel "keys in the cache, N_k"
set key off
set arrow 1 from graph 0, first peak to graph 1, first peak nohead lw 2 lc rgb "#404040" back
set arrow 2 from graph 0, first 0.9 * peak to graph 1, first 0.9 * peak nohead dt 3 lw 1.5 lc rgb "#404040" back
panel(k) = sprintf("set lmargin at screen %g; set rmargin at screen %g; set bmargin at screen 0.11; set tmargin at screen 0.80", \
                   0.06 + k * 0.34, 0.34 + k * 0.34)
all_series = ""
do for [k = 0:1] {
  b = k == 0 ? 1 : 8
  eval panel(k)
  set title sprintf("batch %d", b) font ",14"
  if (k == 0) { set ylabel "GB/s of K and V (linear)" } else { unset ylabel }
  where = sprintf("%s batch=%d", base, b)
  steps = have(ours) ? decode_steps(distinct(ours, where, 'step'), 1) : ""
  peers_here = have(theirs) ? only_peers(distinct(theirs, where, 'step')) : ""
  series = peers_here.steps
  do for [s in series] { if (!strstrt(all_series, s." ")) { all_series = all_series.s." " } }
  plot for [s in series] rows(is_peer(s) ? theirs : ours, where.' step='.s, 'seq_k gbps') \
         using 1:2 smooth unique with linespoints lw s_lw(s) dt s_dt(s) pt s_pt(s) ps s_ps(s) lc rgb s_lc(s)
}
set lmargin at screen 0.74; set rmargin at screen 0.99; set bmargin at screen 0.11; set tmargin at screen 0.80
unset title; unset xlabel; unset ylabel; unset logscale; unset border; unset tics; unset grid
unset arrow 1; unset arrow 2
set xrange [0:1]; set yrange [0:1]
set key at screen 0.74, 0.80 left top Left reverse samplen 3.5 spacing 1.3 font ",12" title peer_key
key_list = system(sprintf("echo '%s' | tr ' ' '\\n' | grep . | sort | tr '\\n' ' '", all_series))
plot for [s in key_list] NaN with linespoints lw s_lw(s) dt s_dt(s) pt s_pt(s) ps s_ps(s) \
       lc rgb s_lc(s) title s_label(s)
unset multiplot
