# single_head.png: the single-head fp32 shapes (bench/sweeps.txt: batch 1, one head,
# non-causal): forward latency in µs per shape M×N×D, one bar per step and per SDPA peer that
# takes fp32 (flash and cuDNN do not). A bar whose answer is wrong (status xfail: step 01's
# padded-key bug, where N % 16 != 0) is hatched and its label says "wrong": its time is real, its
# output is not. Variables from draw.sh: results, out, plotdir, gpu, date, sha.

load plotdir.'/_style.gp'
ours = results.'/single_head.csv'
theirs = results.'/peers_single_head.csv'
where = 'status=ok|xfail dtype=fp32 pass=fwd'   # xfail: step 01's real time, wrong answer
files = (have(ours) ? "'".ours."' " : "").(have(theirs) ? "'".theirs."'" : "")

# The bars, left to right in each cluster: our steps in step order, then the peers.
mine = have(ours) ? distinct(ours, where, 'step') : ""
series = mine.(have(theirs) ? only_peers(distinct(theirs, where, 'step')) : "")
nmine = words(mine)
nseries = words(series)

# One line per bar: shape number (in sweep order), series number, µs, shape label "M×N×D",
# 1 if the answer is wrong (status xfail) else 0.
bar_awk = 'BEGIN{nw=split(w,W," "); n=split(series,S," "); for(i=1;i<=n;i++) idx[S[i]]=i} \
FNR==1{for(i=1;i<=NF;i++)c[$i]=i; next} \
{for(j=1;j<=nw;j++){split(W[j],kv,"="); if(index("|" kv[2] "|", "|" $c[kv[1]] "|")==0) next} \
 shape=$c["seq_q"] "×" $c["seq_k"] "×" $c["head_dim"]; if(!(shape in sx)){sx[shape]=++ns} \
 if($c["step"] in idx) printf "%d,%d,%.6g,%s,%d\n", sx[shape], idx[$c["step"]], 1000*$c["ms_median"], shape, $c["status"]=="xfail"}'
bars = sprintf("< awk -F, -v series='%s' -v w='%s' '%s' %s", series, where, bar_awk, files)
nshapes = int(system(sprintf("%s | awk -F, '$1>n{n=$1} END{print n+0}'", bars[2:])))
minmax = system(sprintf("%s | awk -F, 'NR==1{lo=hi=$3} {if($3<lo)lo=$3; if($3>hi)hi=$3} END{print lo+0, hi+0}'", bars[2:]))
# y range fitted to the bars, with room above the tallest for its rotated label.
ylo = nice_below(num(word(minmax, 1)) * 0.6)
yhi = num(word(minmax, 2)) * 2.2

slot = 0.8 / nseries                       # cluster width 0.8, one slot per series
bar_x(shape, k) = shape + (k - (nseries + 1) / 2.0) * slot
us_label(v) = sprintf(v < 9.95 ? "%.1f" : "%.0f", v)

eval png(1300, 800)
set output out.'/single_head.png'
# Its own stamp where single_head.log names the run (it may be older than meta.txt's)
if (strlen(single_sha)) { caption = gpu . (strlen(single_date) ? ", measured " . single_date : "") . ", commit " . single_sha }
set title "Forward latency on the single-head shapes: fp32, batch 1, one head, non-causal\n".caption font ",15"
set logscale y 10
set yrange [ylo:yhi]
set ytics @log_tics
set ylabel "forward latency (µs, median; log scale)"
set xlabel "shape M×N×D (queries × keys × head dim)"
set xrange [0.5:nshapes + 0.5]
set xtics () nomirror
do for [i = 1:nshapes] {
  eval sprintf("set xtics add ('%s' %d)", system(sprintf("%s | awk -F, '$1==%d{print $4; exit}'", bars[2:], i)), i)
}
set grid noxtics ytics
nwrong = int(system(sprintf("%s | awk -F, '$5==1' | wc -l", bars[2:])))
set key inside left top vertical Left reverse samplen 2 spacing 1.3 font ",12" opaque

# Every bar solid in its series' colour; a wrong answer is the same bar cross-hatched.
bar_k = "using (bar_x($1, $2)):($2 == k && $5 == 0 ? $3 : NaN):(bar_x($1, $2) - slot * 0.42):(bar_x($1, $2) + slot * 0.42):(ylo):($2 == k && $5 == 0 ? $3 : NaN)"
bar_w = "using (bar_x($1, $2)):($2 == k && $5 == 1 ? $3 : NaN):(bar_x($1, $2) - slot * 0.42):(bar_x($1, $2) + slot * 0.42):(ylo):($2 == k && $5 == 1 ? $3 : NaN)"
plot for [k = 1:nseries] bars @bar_k with boxxyerror lc rgb color(word(series, k)) fs solid 0.85 border lc rgb "#404040" title label(word(series, k)), \
     for [k = 1:nmine * (nwrong > 0)] bars @bar_w with boxxyerror lw 2 lc rgb color(word(series, k)) fs pattern 2 border lc rgb "#d62728" notitle, \
     for [j = 1:(nwrong > 0)] NaN with boxxyerror lw 2 lc rgb "#606060" fs pattern 2 border lc rgb "#d62728" title "hatched: wrong answer, real time\n(status xfail: the step's declared bug)", \
     bars using (bar_x($1, $2)):($3 * 1.12):($5 == 1 ? us_label($3)." wrong" : us_label($3)) with labels rotate by 90 left font ",10" notitle
