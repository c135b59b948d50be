# accuracy.png: every checked case's relative L2 error against the fp64 reference, per step,
# one panel per dtype. The point's shape says which tensor (forward O, lse; backward dQ, dK, dV),
# its colour the step; expected failures (step 01's padded-key bug) are red; the dashed lines are
# the pass bounds. Variables from draw.sh: results, out, plotdir, gpu, date, sha.

load plotdir.'/_style.gp'
if (exists("check_sha") && strlen(check_sha)) {
    caption = gpu . (strlen(date) ? ", measured " . date : "") . ", commit " . check_sha
}
check = results.'/check.csv'
measured = 'verdict=PASS|FAIL|XFAIL|XPASS'       # SKIP rows have no numbers

order = distinct(check, '', 'step')                 # every step, so both panels line up
nsteps = words(order)
dtypes = ""
do for [dt in "fp32 bf16"] { if (strlen(distinct(check, measured.' dtype='.dt, 'dtype'))) { dtypes = dtypes.dt." " } }
do for [dt in distinct(check, measured, 'dtype')] { if (!strstrt(dtypes, dt." ")) { dtypes = dtypes.dt." " } }
npanels = words(dtypes)

# One line per point: x (step, then a slot per tensor, then a little jitter), rel_l2, tensor, step.
acc_awk = 'BEGIN{nw=split(w,W," "); n=split(order,S," "); for(i=1;i<=n;i++) idx[S[i]]=i; \
 nt=split("O lse dQ dK dV",T," "); for(i=1;i<=nt;i++) off[T[i]]=(i-3)*0.15; srand(7)} \
FNR==1{for(i=1;i<=NF;i++)c[$i]=i; next} \
{for(j=1;j<=nw;j++){split(W[j],kv,"="); if(index("|" kv[2] "|", "|" $c[kv[1]] "|")==0) next} \
 t=$c["tensor"]; printf "%.4f,%s,%s,%s\n", idx[$c["step"]] + off[t] + (rand()-0.5)*0.08, $c["rel_l2"], t, $c["step"]}'
cases(where) = sprintf("< awk -F, -v order='%s' -v w='%s' '%s' '%s'", order, where, acc_awk, check)
n_rows(where) = int(system(rows(check, where, 'step')[2:].' | wc -l'))
tensor_pt(t) = t eq "O" ? 7 : t eq "lse" ? 5 : t eq "dQ" ? 9 : t eq "dK" ? 11 : t eq "dV" ? 13 : 1
tensor_names = "O lse dQ dK dV"
tensor_label(t) = t.(t eq "O" || t eq "lse" ? " (forward)" : " (backward)")

# One y range for both panels, from the smallest non-zero error to the largest; exact zeros sit
# on the bottom edge.
minmax = system(sprintf("%s | awk -F, '$1>0{if(!lo||$1<lo)lo=$1; if($1>hi)hi=$1} END{print lo+0, hi+0}'", \
                        rows(check, measured, 'rel_l2 bound')[2:]))
ylo = 10**floor(log10(num(word(minmax, 1)) * 0.5))
yhi = 10**ceil(log10(num(word(minmax, 2)) * 3))
clamp(v) = v > ylo * 1.2 ? v : ylo * 1.2

eval png(1400, 1000)
set output out.'/accuracy.png'
set multiplot title "Accuracy: relative L2 error of every checked case against the fp64 CPU reference\n".caption font ",16"

set logscale y 10
set yrange [ylo:yhi]
set format y "1e%L"
set ytics 10
set ylabel "rel-L2 error  ‖out − ref‖ / ‖ref‖"
set xrange [0.5:nsteps + 0.5]
set grid noxtics ytics
set key off
set style textbox opaque noborder margins 1, 1

y_top = 0.88; y_bottom = 0.13; gap = 0.07
height = (y_top - y_bottom - gap * (npanels - 1)) / npanels
do for [p = 1:npanels] {
  dt = word(dtypes, p)
  set lmargin at screen 0.08; set rmargin at screen 0.70
  set tmargin at screen y_top - (p - 1) * (height + gap); set bmargin at screen y_top - (p - 1) * (height + gap) - height
  set title sprintf("%s inputs", dt) font ",14"
  # Step names under the last panel only; vertical separators between the steps.
  set xtics () nomirror
  do for [i = 1:nsteps] { eval sprintf("set xtics add ('%s' %d)", p == npanels ? word(order, i) : "", i) }
  if (p == npanels) { set xtics rotate by 20 right } else { set xtics norotate }
  unset arrow; unset label
  do for [i = 1:nsteps - 1] { set arrow from first i + 0.5, graph 0 to first i + 0.5, graph 1 nohead lc rgb "#e0e0e0" back }
  # A step that skipped this dtype entirely (e.g. fp32 on the tensor-core steps) says so.
  do for [i = 1:nsteps] {
    s = word(order, i)
    if (n_rows(measured.' dtype='.dt.' step='.s) == 0 && n_rows('dtype='.dt.' step='.s) > 0) {
      set label sprintf("skipped:\n%s not\nsupported", dt) at first i, graph 0.88 center boxed font ",11" tc rgb "#808080" front
    }
  }
  # The bounds: one dashed line per distinct bound, labelled with the tensors it applies to.
  bounds = distinct(check, measured.' dtype='.dt, 'bound')
  do for [b = 1:words(bounds)] {
    bv = word(bounds, b)
    set arrow from graph 0, first num(bv) to graph 1, first num(bv) nohead dt 2 lw 1.5 lc rgb "#404040" back
    set label sprintf("bound %s (%s)", bv, system(sprintf("%s | awk '{s[$1]=1} END{n=split(tensors,T,\" \"); for(i=1;i<=n;i++) if(T[i] in s) o=o (o ? \" \" : \"\") T[i]; print o}' tensors='%s'", \
        rows(check, measured.' dtype='.dt.' bound='.bv, 'tensor')[2:], tensor_names))) \
        at graph 0.995 - (b - 1) * 0.3, first num(bv) offset 0, 0.7 right boxed font ",11" front
  }
  # Optional elements are added only when they have points (an empty data set draws a warning).
  plot_cmd = "plot cases('verdict=PASS dtype='.dt) using 1:(clamp($2)):(tensor_pt(strcol(3))):(rgbint(color(strcol(4)))) with points pt variable ps 1.0 lc rgb variable"
  if (n_rows('verdict=XFAIL dtype='.dt) > 0) {
    plot_cmd = plot_cmd.", cases('verdict=XFAIL dtype='.dt) using 1:(clamp($2)):(tensor_pt(strcol(3))) with points pt variable ps 1.3 lc rgb '#e41a1c'"
  }
  if (n_rows('verdict=XPASS dtype='.dt) > 0) {
    plot_cmd = plot_cmd.", cases('verdict=XPASS dtype='.dt) using 1:(clamp($2)):(tensor_pt(strcol(3)) - 1) with points pt variable ps 1.8 lw 2 lc rgb '#e41a1c'"
  }
  if (n_rows('verdict=FAIL dtype='.dt) > 0) {
    plot_cmd = plot_cmd.", cases('verdict=FAIL dtype='.dt) using 1:(clamp($2)) with points pt 2 ps 2.2 lw 3 lc rgb 'black'"
  }
  eval plot_cmd
}

# The shared key, right of the panels.
unset arrow; unset label; unset title; unset xlabel; unset ylabel; unset logscale; unset border; unset tics; unset grid
set lmargin at screen 0.72; set rmargin at screen 0.99; set tmargin at screen y_top; set bmargin at screen y_bottom
set xrange [0:1]; set yrange [0:1]
set key at screen 0.72, y_top left top Left reverse samplen 2 spacing 1.4 font ",12" title "marker: tensor, colour: step" left
nzero = int(system(rows(check, measured, 'rel_l2')[2:]." | awk -F, '$1+0==0' | wc -l"))
if (nzero > 0) { set label 1 "points on the bottom edge:\nerror exactly 0" at screen 0.725, screen 0.50 left font ",11" tc rgb "#606060" }
allfail = n_rows('verdict=FAIL')
allxpass = n_rows('verdict=XPASS')
allxfail = n_rows('verdict=XFAIL')
plot for [t in tensor_names] NaN with points pt tensor_pt(t) ps 1.3 lc rgb "#505050" title tensor_label(t), \
     for [j = 1:(allxfail > 0)] NaN with points pt 7 ps 1.5 lc rgb "#e41a1c" title "expected failure (01's padded-key bug)", \
     for [j = 1:(allxpass > 0)] NaN with points pt 6 ps 1.8 lw 2 lc rgb "#e41a1c" title "XPASS: expected to fail, passed", \
     for [j = 1:(allfail > 0)] NaN with points pt 2 ps 2.2 lw 3 lc rgb "black" title "FAIL (unexpected)", \
     NaN with lines dt 2 lw 1.5 lc rgb "#404040" title "pass bound"
unset multiplot
