# accuracy.png: every checked tensor's relative L2 error against the fp64 reference, one column
# per step, one panel per dtype (from check.csv, written by `attn check --csv`).
# Each mark means one thing:
#   sub-column     which tensor (forward O, lse; backward dQ, dK, dV), labelled under each step's
#                  column; the marker shape says it again
#   marker colour  that tensor's own error against its own bound: within it (hollow), beyond it
#                  where the step declares a known bug on that case (expected, filled), beyond it
#                  unexpectedly (filled)
#   short dash     the bound that tensor was held to, drawn over its own point only (so the
#                  per-case bound of a bf16 gradient shows where it applies, not as a global line)
#   black ring     a case whose verdict is FAIL (drawn only if there is one)
# Variables from draw.sh: results, out, plotdir, gpu, date, sha, check_sha.

load plotdir.'/_style.gp'
# check.txt names one commit per part (a step checked again later has a part of its own): the
# caption names the first, and says when there are more (the results README lists them).
if (exists("check_sha") && strlen(check_sha)) {
    _slash = strstrt(check_sha, "/")
    caption = gpu . (strlen(date) ? ", measured " . date : "") . ", commit " . \
              (_slash ? check_sha[1:_slash - 1] . " (a later step's part: its own run)" : check_sha)
}
# check.csv and any other check*.csv beside it (check_far.csv: the far inputs; a step checked in a
# later run), named in the caption, but not a check-<sha>.csv (an earlier check).
check = system(sprintf("for f in '%s'/check*.csv; do case ${f##*/} in check-*) ;; *) [ -s \"$f\" ] && printf '%%s ' \"$f\";; esac; done", results))
do for [f in check] {
    if (f[strlen(f) - 9:] ne "/check.csv") {
        caption = caption . sprintf("; and %s", f[strstrt(f, "/check") + 1:])
    }
}
measured = 'verdict=PASS|FAIL|XFAIL|XPASS'       # SKIP rows have no numbers

order = distinct(check, '', 'step')                 # every step, so the panels line up
nsteps = words(order)
dtypes = ""
do for [dt in "fp32 bf16"] { if (strlen(distinct(check, measured.' dtype='.dt, 'dtype'))) { dtypes = dtypes.dt." " } }
do for [dt in distinct(check, measured, 'dtype')] { if (!strstrt(dtypes, dt." ")) { dtypes = dtypes.dt." " } }
npanels = words(dtypes)

# One y range for every panel, from the smallest non-zero error or bound to the largest finite one.
minmax = system(sprintf("%s | awk -F, '{for(i=1;i<=2;i++) if($i ~ /^[0-9.eE+-]+$/ && $i>0){if(!lo||$i<lo)lo=$i; if($i>hi)hi=$i}} END{print lo+0, hi+0}'", \
                        rows(check, measured, 'rel_l2 bound')[2:]))
ylo = 10**floor(log10(num(word(minmax, 1)) * 0.5))
yhi = 10**ceil(log10(num(word(minmax, 2)) * 3))

# One line per checked tensor: x (step column, a slot per tensor, a little jitter), rel_l2 (exact
# zeros on the bottom edge, NaN/Inf on the top edge), tensor, class, bound, failed case.
#   class 0: rel_l2 <= bound;  1: beyond, in a case where the step declares a known bug (XFAIL or
#   XPASS);  2: beyond, no bug declared.  failed case: 1 if the case's verdict is FAIL.
acc_awk = 'BEGIN{nw=split(w,W," "); n=split(order,S," "); for(i=1;i<=n;i++) idx[S[i]]=i; \
 nt=split("O lse dQ dK dV",T," "); for(i=1;i<=nt;i++) off[T[i]]=(i-3)*subw; srand(7)} \
FNR==1{for(i=1;i<=NF;i++)c[$i]=i; next} \
{for(j=1;j<=nw;j++){split(W[j],kv,"="); if(index("|" kv[2] "|", "|" $c[kv[1]] "|")==0) next} \
 t=$c["tensor"]; r=$c["rel_l2"]; b=$c["bound"]+0; v=$c["verdict"]; \
 finite=(r ~ /^[0-9.eE+-]+$/); beyond=!(finite && r+0<=b); \
 y=!finite ? hi : (r+0 < lo ? lo : r+0); \
 cls=beyond ? ((v=="XFAIL"||v=="XPASS") ? 1 : 2) : 0; \
 printf "%.4f,%.6g,%s,%d,%.6g,%d\n", idx[$c["step"]] + off[t] + (rand()-0.5)*0.05, y, t, cls, b, (v=="FAIL")}'
cases(where) = sprintf("< awk -F, -v order='%s' -v w='%s' -v lo=%.6g -v hi=%.6g -v subw=%g '%s'%s", \
                       order, where, ylo * 1.2, yhi / 1.2, sub, acc_awk, quoted(check, 1))
n_rows(where) = int(system(rows(check, where, 'step')[2:].' | wc -l'))
# The tensors' sub-columns inside a step's column, sub apart: O, lse, dQ, dK, dV left to right.
sub = 0.17
tensor_names = "O lse dQ dK dV"
tensor_x(t) = sum [i = 1:5] (word(tensor_names, i) eq t ? (i - 3) * sub : 0)
# Shapes: hollow within the bound (so that piles of points stay readable), filled beyond it.
tensor_pt(t) = t eq "O" ? 6 : t eq "lse" ? 4 : t eq "dQ" ? 8 : t eq "dK" ? 10 : t eq "dV" ? 12 : 1
tensor_label(t) = t.(t eq "O" || t eq "lse" ? " (forward)" : " (backward)")
class_colors = "#4e79a7 #f28e2b #d62728"
# The tensors a step has, in tensor_names' order (over every dtype it was measured in).
tensors_of(s) = (_ts = distinct(check, measured.' step='.s, 'tensor'), \
                 _tensors_in(_ts, 1))
_tensors_in(ts, i) = i > 5 ? "" : (strstrt(" ".ts, " ".word(tensor_names, i)." ") ? word(tensor_names, i)." " : "") . _tensors_in(ts, i + 1)
class_color(k) = word(class_colors, k + 1)
class_label(k) = k == 0 ? "within its bound" : k == 1 ? "beyond it, a declared bug" \
                                             : "beyond it, unexpected: a FAIL"
# How many tensors of each class, over all panels (the key lists only the classes present).
nclass = system(sprintf("%s | awk -F, '{n[$4]++} END{print n[0]+0, n[1]+0, n[2]+0}'", cases(measured)[2:]))
nzero = int(system(rows(check, measured, 'rel_l2')[2:]." | awk -F, '$1 ~ /^[0-9.eE+-]+$/ && $1+0==0' | wc -l"))
ninf = int(system(rows(check, measured, 'rel_l2')[2:]." | awk -F, '$1 !~ /^[0-9.eE+-]+$/' | wc -l"))
nfail = int(n_rows("verdict=FAIL"))

eval png(1800, 1050)
set output out.'/accuracy.png'
set multiplot title "Accuracy: relative L2 error of every checked output against the fp64 CPU reference\n".caption font ",16"

set logscale y 10
set yrange [ylo:yhi]
set format y "1e%L"
set ytics 10
set mytics 10
set ylabel "rel-L2 error  ‖out − ref‖ / ‖ref‖"
set xrange [0.5:nsteps + 0.5]
set grid noxtics ytics
set key off

y_top = 0.885; y_bottom = 0.17; gap = 0.10
height = (y_top - y_bottom - gap * (npanels - 1)) / npanels
do for [p = 1:npanels] {
  dt = word(dtypes, p)
  set lmargin at screen 0.06; set rmargin at screen 0.75
  set tmargin at screen y_top - (p - 1) * (height + gap); set bmargin at screen y_top - (p - 1) * (height + gap) - height
  set title sprintf("%s inputs", dt) font ",14"
  # Under every panel, each sub-column's tensor (those the step has); under the last, the step
  # names too. Thin separators between the steps.
  set xtics () nomirror scale 0.5 font ",9" rotate by 90 right offset 0, 0.4
  do for [i = 1:nsteps] {
    do for [tn in tensors_of(word(order, i))] { eval sprintf("set xtics add ('%s' %g)", tn, i + tensor_x(tn)) }
  }
  unset arrow; unset label
  if (p == npanels) {
    do for [i = 1:nsteps] {
      set label word(order, i) at first i, graph 0 offset 0, -2.8 rotate by 25 right font ",12"
    }
  }
  do for [i = 1:nsteps - 1] { set arrow from first i + 0.5, graph 0 to first i + 0.5, graph 1 nohead lc rgb "#e0e0e0" back }
  # A step that skipped this dtype entirely (e.g. fp32 on the tensor-core steps) says so.
  do for [i = 1:nsteps] {
    s = word(order, i)
    if (n_rows(measured.' dtype='.dt.' step='.s) == 0 && n_rows('dtype='.dt.' step='.s) > 0) {
      set label sprintf("skipped:\n%s not\nsupported", dt) at first i, graph 0.88 center font ",11" tc rgb "#808080" front
    }
  }
  src = cases(measured.' dtype='.dt)
  # Bounds first (under the points), then the points class by class (beyond-bound on top).
  plot_cmd = "plot src using ($1 - 0.035):5:(0.07):(0) with vectors nohead lw 2 lc rgb '#303030'"
  do for [k = 0:2] {
    if (int(word(nclass, k + 1)) > 0) {
      plot_cmd = plot_cmd.sprintf(", src using 1:($4 == %d ? $2 : NaN):(tensor_pt(strcol(3)) + %d) with points pt variable ps %s lw 1.2 lc rgb '%s'", \
                                  k, k ? 1 : 0, k ? "1.6" : "1.4", class_color(k))
    }
  }
  if (nfail > 0) { plot_cmd = plot_cmd.", src using 1:($6 > 0 ? $2 : NaN) with points pt 6 ps 2.6 lw 2 lc rgb 'black'" }
  eval plot_cmd
}

# The shared key, right of the panels.
unset arrow; unset label; unset title; unset xlabel; unset ylabel; unset logscale; unset border; unset tics; unset grid
set lmargin at screen 0.77; set rmargin at screen 0.99; set tmargin at screen y_top; set bmargin at screen y_bottom
set xrange [0:1]; set yrange [0:1]
set key at screen 0.77, y_top left top Left reverse samplen 2 spacing 1.4 font ",12" title "sub-column and shape: which tensor" left
edges = (nzero > 0 ? "On the bottom edge: error exactly 0.\n" : "") . (ninf > 0 ? "On the top edge: NaN or Inf.\n" : "")
notes = "Bounds: fixed per dtype and tensor (check_bound in\ncommon/check.c); a bf16 gradient's bound is raised\nto twice the error bf16 operands alone cost on its\ncase where that is larger (grad_floor).\n". \
        (int(word(nclass, 2)) > 0 ? "Declared bug (an expected failure, XFAIL):\n".distinct(check, 'verdict=XFAIL|XPASS', 'step')."\n(step 01: padded keys, where Nk % 16 != 0).\n" : "") . edges
set label 1 notes at screen 0.775, screen y_bottom + 0.22 left font ",11" tc rgb "#505050"
plot for [t in tensor_names] NaN with points pt tensor_pt(t) ps 1.4 lw 1.2 lc rgb "#505050" title tensor_label(t), \
     NaN with points pt 0 lc rgb "white" title " ", \
     NaN with points pt 0 lc rgb "white" title "colour: that tensor against its bound", \
     for [k = 0:2] for [j = 1:(int(word(nclass, k + 1)) > 0)] NaN with points pt (k ? 7 : 6) ps 1.6 lw 1.2 lc rgb class_color(k) \
       title class_label(k).(k ? " (filled)" : " (hollow)"), \
     NaN with points pt 0 lc rgb "white" title " ", \
     NaN with vectors nohead lw 2 lc rgb "#303030" title "dash: the bound that tensor was held to", \
     for [j = 1:(nfail > 0)] NaN with points pt 6 ps 2.2 lw 2 lc rgb "black" title "ring: a case whose verdict is FAIL"
unset multiplot
