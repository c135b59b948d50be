# ladder.png: the ladder. Top: each step's forward TFLOP/s at N = 4096 as % of PyTorch SDPA flash
# (FA2) at the same (D, causal), four bars per step (D = 64, 128 × non-causal, causal), the cuDNN
# backend and FlashAttention-4 (where measured) as references at the end; not a step whose forward is an earlier step's kernel (06).
# Bottom: the same for the backward, the steps that have one.
# Variables from draw.sh: results, out, plotdir, gpu, date, sha.

load plotdir.'/_style.gp'
ours = results.'/standard.csv'
theirs = results.'/peers_standard.csv'
n = 4096
where_for(p) = sprintf('status=ok pass=%s dtype=bf16 batch=4 heads=8 seq_q=%d seq_k=%d', p, n, n)
where = where_for('fwd')

# The groups, left to right: our steps in step order (not a step whose forward is an earlier
# step's kernel: its bars would repeat that step's), then cuDNN and FlashAttention-4 if measured.
all_ours = distinct(ours, where, 'step')
not_drawn = shared_forward(all_ours, 1)
refs(w) = have(theirs) ? distinct(theirs, w.' step=sdpa_cudnn', 'step') . distinct(theirs, w.' step=fa4', 'step') : ""
order = own_forward(all_ours, 1) . refs(where)
border = distinct(ours, where_for('bwd'), 'step') . refs(where_for('bwd'))

# One line per bar: group, config (1 D64, 2 D128, 3 D64 causal, 4 D128 causal), % of FA2, TFLOP/s.
# peers_standard.csv is read first, so FA2's number for each config is known when a step needs it.
ladder_awk = 'FNR==1{for(i=1;i<=NF;i++)c[$i]=i; next} \
{for(j=1;j<=nw;j++){split(W[j],kv,"="); if($c[kv[1]]!=kv[2]) next} \
 k=($c["head_dim"]==64 ? 1 : $c["head_dim"]==128 ? 2 : 0); if(!k) next; k+=2*$c["causal"]; \
 if($c["step"]=="sdpa_flash") ref[k]=$c["tflops"]; val[$c["step"],k]=$c["tflops"]} \
END{n=split(order,S," "); for(i=1;i<=n;i++) for(k=1;k<=4;k++) if(((S[i],k) in val) && ref[k]>0) \
 printf "%d,%d,%.6g,%s\n", i, k, 100*val[S[i],k]/ref[k], val[S[i],k]}'
ladder_for(o, w) = sprintf("< awk -F, -v order='%s' -v w='%s' 'BEGIN{nw=split(w,W,\" \")} %s' '%s' '%s'", \
                 o, w, ladder_awk, theirs, ours)
ladder = ladder_for(order, where)
bladder = ladder_for(border, where_for('bwd'))
fa2_for(w, k) = system(sprintf("%s | tail -n 1", rows(theirs, sprintf("%s step=sdpa_flash head_dim=%d causal=%d", \
                         w, k % 2 ? 64 : 128, k > 2), 'tflops')[2:]))
fa2(k) = fa2_for(where, k)

# y range fitted to the data of both panels, with room above the bars for their labels.
minmax = system(sprintf("{ %s; %s; } | awk -F, 'NR==1{lo=hi=$3} {if($3<lo)lo=$3; if($3>hi)hi=$3} END{print lo+0, hi+0}'", \
                        ladder[2:], bladder[2:]))
ylo = nice_below(num(word(minmax, 1)) * 0.7)
yhi = num(word(minmax, 2)) * 2.0

config_name(k) = sprintf("D=%d, %s", k % 2 ? 64 : 128, k > 2 ? "causal" : "non-causal")
config_colors = "#9ecae1 #2171b5 #fdae6b #d94801"
tf_or_na(t) = strlen(t) ? sprintf("%.0f", num(t)) : "–"
config_label(k) = sprintf("%s  (FA2: %s / %s TFLOP/s)", config_name(k), tf_or_na(fa2(k)), tf_or_na(fa2_for(where_for('bwd'), k)))
bar = 0.2          # distance between the bars of a group
half = 0.09        # half a bar's width
bar_x(g, k) = g + (k - 2.5) * bar

eval png(1600, 1450)
set output out.'/ladder.png'
set multiplot
# The title as a label at the top (a title sits on the plot, under the key).
set label 3 sprintf("The ladder: TFLOP/s as %% of PyTorch SDPA flash (FA2) at the same shape,\nforward (top) and backward (bottom); N = %d, bf16, batch 4, 8 heads\n%s", n, caption) \
    at screen 0.5, screen 0.972 center font ",15"
set logscale y 10
set yrange [ylo:yhi]
set ytics ("0.1%%" 0.1, "0.2%%" 0.2, "0.5%%" 0.5, "1%%" 1, "2%%" 2, "5%%" 5, "10%%" 10, "20%%" 20, "50%%" 50, \
           "100%%" 100, "200%%" 200, "500%%" 500)
set grid noxtics ytics
set style fill solid 0.9 border lc rgb "#404040"
set arrow 1 from graph 0, first 100 to graph 1, first 100 nohead dt 2 lw 1.5 lc rgb "#707070" back
set style textbox opaque noborder margins 1, 1   # the value labels mask the 100% line
# The key between the title and the plot, in two columns.
set key at screen 0.5, screen 0.915 center top horizontal maxcols 2 Left reverse samplen 2 spacing 1.2 width 2 font ",12" \
    title "shape (FA2's forward / backward TFLOP/s = 100%)"
set lmargin 16; set rmargin 3

# the forward panel
set ylabel "forward, % of FA2 (log scale)"
set xrange [0.4:words(order) + 0.6]
set xtics () rotate by 30 right nomirror
do for [i = 1:words(order)] { eval sprintf("set xtics add ('%s' %d)", label(word(order, i)), i) }
set tmargin at screen 0.845; set bmargin at screen 0.52
if (strlen(not_drawn)) { set label 2 shared_note(not_drawn, 1) at graph 0.01, graph 0.95 left font ",11" tc rgb "#505050" front }
plot for [k = 1:4] ladder using (bar_x($1, $2)):($2 == k ? $3 : NaN):(bar_x($1, $2) - half):(bar_x($1, $2) + half):(ylo):($2 == k ? $3 : NaN) \
       with boxxyerror lc rgb word(config_colors, k) title config_label(k), \
     ladder using (bar_x($1, $2)):($3 * 1.12):(sprintf($3 < 9.95 ? "%.1f%%" : "%.0f%%", $3)) \
       with labels boxed rotate by 90 left font ",10" notitle

# the backward panel: the steps with a backward, on the same scale
unset label 2; unset label 3; unset key
set ylabel "backward, % of FA2 (log scale)"
set xrange [0.4:words(border) + 0.6]
set xtics () rotate by 30 right nomirror
do for [i = 1:words(border)] { eval sprintf("set xtics add ('%s' %d)", label(word(border, i)), i) }
set tmargin at screen 0.40; set bmargin at screen 0.08
plot for [k = 1:4] bladder using (bar_x($1, $2)):($2 == k ? $3 : NaN):(bar_x($1, $2) - half):(bar_x($1, $2) + half):(ylo):($2 == k ? $3 : NaN) \
       with boxxyerror lc rgb word(config_colors, k) notitle, \
     bladder using (bar_x($1, $2)):($3 * 1.12):(sprintf($3 < 9.95 ? "%.1f%%" : "%.0f%%", $3)) \
       with labels boxed rotate by 90 left font ",10" notitle
unset multiplot
