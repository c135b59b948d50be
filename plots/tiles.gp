# tiles.png: the tile sweep (tiles.csv: d,br,bc,warps,stages,status,regs,spills,smem_bytes,
# ms_median,tflops): forward TFLOP/s for each tile shape (Br query rows × Bc keys), one panel per
# head dim D (rows of panels) and warp count (columns). A cell shows the best TFLOP/s over the
# pipeline stages tried, and "s=N" names the stage count that gave it when several were tried.
# A grey cell ran in no configuration; it names the status (e.g. too much shared memory).
# Each head dim has its own colour scale, from its slowest to its fastest cell, and its own colour
# bar (D = 128 runs at other speeds than D = 64: one scale would leave one row all pale).
# draw.sh draws this chart only when tiles.csv exists. Variables from draw.sh: results, out,
# plotdir, gpu, tiles_sha (the commit on tiles.log's first line, empty if none).

load plotdir.'/_style.gp'
tiles = results.'/tiles.csv'

# One line per cell: d, warps, br, bc, best TFLOP/s ("-" if no ok row), its stages, a status
# (the first non-ok one, for empty cells, cut at its first ':'), how many distinct stage counts
# the file tries, the register spills of the best configuration.
cell_awk = 'FNR==1{for(i=1;i<=NF;i++)c[$i]=i; next} \
{k=$c["d"] "," $c["warps"] "," $c["br"] "," $c["bc"]; if(!(k in seen)){seen[k]=1; key[++n]=k} st[$c["stages"]]=1; \
 if($c["status"]=="ok" && $c["tflops"]!="" && (!(k in best) || $c["tflops"]+0>best[k])){best[k]=$c["tflops"]+0; bs[k]=$c["stages"]; sp[k]=$c["spills"]+0} \
 else if($c["status"]!="ok" && !(k in why)){why[k]=$c["status"]; sub(/:.*/, "", why[k])}} \
END{ns=0; for(s in st) ns++; for(i=1;i<=n;i++){k=key[i]; \
 printf "%s,%s,%s,%s,%d,%d\n", k, (k in best) ? best[k] : "-", (k in best) ? bs[k] : "-", (k in best) ? "ok" : why[k], ns, sp[k]}}'
cells = sprintf("< awk -F, '%s' '%s'", cell_awk, tiles)
col(i) = system(sprintf("%s | cut -d, -f%d | grep . | sort -n -u | tr '\\n' ' '", cells[2:], i))
dims = col(1); warps = col(2); brs = col(3); bcs = col(4)
nd = words(dims); nw = words(warps); nbr = words(brs); nbc = words(bcs)
# The colour scale of head dim dd: its measured range (not 0..max), a little below its slowest.
dmax(dd) = num(system(sprintf("%s | awk -F, '$1==%d && $5!=\"-\" && $5+0>m{m=$5+0} END{print m+0}'", cells[2:], dd)))
dmin(dd) = num(system(sprintf("%s | awk -F, '$1==%d && $5!=\"-\" && (m==\"\" || $5+0<m){m=$5+0} END{print m+0}'", cells[2:], dd)))
# The full statuses of the configurations that did not run, one line each, for the footnote.
whynot = system(sprintf("awk -F, 'FNR==1{for(i=1;i<=NF;i++)c[$i]=i; next} $c[\"status\"]!=\"ok\"{print $c[\"status\"]}' '%s' | sort -u", tiles))
nwhy = words(whynot) > 0 ? int(system(sprintf("awk -F, 'FNR>1 && $6!=\"ok\"' '%s' | cut -d, -f6 | sort -u | wc -l", tiles))) : 0
nstages = int(system(sprintf("%s | head -n 1 | cut -d, -f8", cells[2:])))
idx(list, v) = sum [i = 1:words(list)] (int(word(list, i)) == int(v) ? i : 0)

foot = nwhy > 0 ? 30 + 22 * nwhy : 0          # pixels for the footnote under the panels
eval png(200 + 440 * nw, 230 + 340 * nd + foot)
set output out.'/tiles.png'
# The kernel and shape are bench/tiles.sh's (step 03 at B=4, H=8, N=4096, bf16, non-causal).
# Its own stamp: the tile sweep is not part of bench/run.sh's run (meta.txt), so its commit is
# the one tiles.log names.
caption = gpu . (strlen(tiles_sha) ? ", step 03 built at commit " . tiles_sha : ", commit not recorded")
set multiplot title "Tile sweep of step 03: forward TFLOP/s per tile shape (Br query rows × Bc keys per tile)\n". \
    "bf16, batch 4, 8 heads, N = 4096, non-causal; darker = faster, on a colour scale per D\n". \
    (nstages > 1 ? "each cell the best over the pipeline stages tried (s = stages); " : ""). \
    "grey: did not run\n\"N B spilled\": bytes of spill stores ptxas reports for that configuration\n".caption font ",14"
set palette defined (0 "#f7fbff", 0.5 "#6baed6", 1 "#08306b")
set cbtics font ",11"
set xrange [0.5:nbc + 0.5]; set yrange [0.5:nbr + 0.5]
set xtics () nomirror scale 0; set ytics () nomirror scale 0
do for [i = 1:nbc] { eval sprintf("set xtics add ('%s' %d)", word(bcs, i), i) }
do for [i = 1:nbr] { eval sprintf("set ytics add ('%s' %d)", word(brs, i), i) }
unset grid
set style fill solid 1.0 border lc rgb "white"

# A cell belongs to the panel being drawn when it has that panel's D and warp count (d, w);
# the others are NaN there. Cells past 55 % of the palette are labelled in white.
here(a, b) = (a == d && b == w)
ran(a, b) = here(a, b) && strcol(5) ne "-"
bright(v) = v > cmin + 0.55 * (cmax - cmin)
cell_text = 'sprintf(nstages > 1 ? "%.0f\ns=%s" : "%.0f", $5, strcol(6)).($9 > 0 ? sprintf("\n%d B spilled", $9) : "")'

H = 230 + 340 * nd + foot
left = 0.02; right = 0.90; top = 1 - 190.0 / H; bottom = (foot + 6.0) / H
pw = (right - left) / nw; ph = (top - bottom) / nd
do for [r = 1:nd] {
  do for [k = 1:nw] {
    d = int(word(dims, r)); w = int(word(warps, k))
    cmax = dmax(d); cmin = dmin(d) - 0.15 * (cmax - dmin(d) + 1)
    set cbrange [cmin:cmax]
    # This row's colour bar, right of its last panel.
    if (k == nw) {
      set colorbox user origin screen right + 0.015, screen top - r * ph + 80.0 / H size screen 0.018, screen ph - 0.04 - 80.0 / H
      set cblabel sprintf("TFLOP/s, D = %d", d) font ",12"
    } else { unset colorbox }
    set lmargin at screen left + (k - 1) * pw + 0.08; set rmargin at screen left + k * pw - 0.01
    set tmargin at screen top - (r - 1) * ph - 0.04; set bmargin at screen top - r * ph + 80.0 / H
    set title sprintf("D = %d, %d warps", d, w) font ",13"
    set xlabel "Bc (keys per tile)" offset 0, 0.5
    if (k == 1) { set ylabel "Br (query rows)" offset -0.5, 0 } else { unset ylabel }
    plot cells using (ran($1, $2) ? idx(bcs, $4) : NaN):(idx(brs, $3)):(idx(bcs, $4) - 0.5):(idx(bcs, $4) + 0.5):(idx(brs, $3) - 0.5):(idx(brs, $3) + 0.5):5 \
           with boxxyerror fc palette, \
         cells using (here($1, $2) && strcol(5) eq "-" ? idx(bcs, $4) : NaN):(idx(brs, $3)):(idx(bcs, $4) - 0.5):(idx(bcs, $4) + 0.5):(idx(brs, $3) - 0.5):(idx(brs, $3) + 0.5) \
           with boxxyerror fc rgb "#d0d0d0", \
         cells using (here($1, $2) && strcol(5) eq "-" ? idx(bcs, $4) : NaN):(idx(brs, $3)):7 with labels font ",11" tc rgb "#404040", \
         cells using (ran($1, $2) && !bright($5) ? idx(bcs, $4) : NaN):(idx(brs, $3)):(@cell_text) with labels font ",11" tc rgb "black", \
         cells using (ran($1, $2) && bright($5) ? idx(bcs, $4) : NaN):(idx(brs, $3)):(@cell_text) with labels font ",11" tc rgb "white"
  }
}
if (nwhy > 0) {
  set label 99 "Grey cells, why they did not run:\n".whynot at screen 0.03, screen (foot - 8.0) / H left font ",11" tc rgb "#404040"
  unset border; unset tics; unset xlabel; unset ylabel; unset title
  set lmargin at screen 0; set rmargin at screen 1; set tmargin at screen 1; set bmargin at screen 0
  plot NaN notitle
}
unset multiplot
