# tiles.png: the tile sweep (tiles.csv: d,br,bc,warps,stages,status,regs,spills,smem_bytes,
# ms_median,tflops): forward TFLOP/s for each tile shape (Br query rows × Bc keys), one panel per
# head dim D (rows of panels) and warp count (columns). A cell shows the best TFLOP/s over the
# pipeline stages tried, and "s=N" names the stage count that gave it when several were tried.
# A grey cell ran in no configuration; it names the status (e.g. too much shared memory).
# draw.sh draws this chart only when tiles.csv exists. Variables from draw.sh: results, out,
# plotdir, gpu, date, sha.

load plotdir.'/_style.gp'
tiles = results.'/tiles.csv'

# One line per cell: d, warps, br, bc, best TFLOP/s ("-" if no ok row), its stages, a status
# (the first non-ok one, for empty cells), how many distinct stage counts the file tries.
cell_awk = 'FNR==1{for(i=1;i<=NF;i++)c[$i]=i; next} \
{k=$c["d"] "," $c["warps"] "," $c["br"] "," $c["bc"]; if(!(k in seen)){seen[k]=1; key[++n]=k} st[$c["stages"]]=1; \
 if($c["status"]=="ok" && $c["tflops"]!="" && (!(k in best) || $c["tflops"]+0>best[k])){best[k]=$c["tflops"]+0; bs[k]=$c["stages"]} \
 else if($c["status"]!="ok" && !(k in why)) why[k]=$c["status"]} \
END{ns=0; for(s in st) ns++; for(i=1;i<=n;i++){k=key[i]; \
 printf "%s,%s,%s,%s,%d\n", k, (k in best) ? best[k] : "-", (k in best) ? bs[k] : "-", (k in best) ? "ok" : why[k], ns}}'
cells = sprintf("< awk -F, '%s' '%s'", cell_awk, tiles)
col(i) = system(sprintf("%s | cut -d, -f%d | grep . | sort -n -u | tr '\\n' ' '", cells[2:], i))
dims = col(1); warps = col(2); brs = col(3); bcs = col(4)
nd = words(dims); nw = words(warps); nbr = words(brs); nbc = words(bcs)
tmax = num(system(sprintf("%s | awk -F, '$5!=\"-\" && $5+0>m{m=$5+0} END{print m+0}'", cells[2:])))
nstages = int(system(sprintf("%s | head -n 1 | cut -d, -f8", cells[2:])))
idx(list, v) = sum [i = 1:words(list)] (int(word(list, i)) == int(v) ? i : 0)

eval png(200 + 380 * nw, 180 + 340 * nd)
set output out.'/tiles.png'
set multiplot title "Tile sweep: forward TFLOP/s per tile shape (Br query rows × Bc keys per tile)\n". \
    (nstages > 1 ? "best over the pipeline stages tried (s = stages); " : "")."grey: did not run (its status)\n".caption font ",15"
set palette defined (0 "#f7fbff", 0.5 "#6baed6", 1 "#08306b")
set cbrange [0:tmax]
unset colorbox
set xrange [0.5:nbc + 0.5]; set yrange [0.5:nbr + 0.5]
set xtics () nomirror scale 0; set ytics () nomirror scale 0
do for [i = 1:nbc] { eval sprintf("set xtics add ('%s' %d)", word(bcs, i), i) }
do for [i = 1:nbr] { eval sprintf("set ytics add ('%s' %d)", word(brs, i), i) }
unset grid
set style fill solid 1.0 border lc rgb "white"

# A cell belongs to the panel being drawn when it has that panel's D and warp count (d, w);
# the others are NaN there. Values above 55 % of the top are labelled in white.
here(a, b) = (a == d && b == w)
ran(a, b) = here(a, b) && strcol(5) ne "-"
bright(v) = v > 0.55 * tmax
cell_text = 'sprintf(nstages > 1 ? "%.0f\ns=%s" : "%.0f", $5, strcol(6))'

left = 0.06; right = 0.98; top = 1 - 140.0 / (180 + 340 * nd); bottom = 0.02
pw = (right - left) / nw; ph = (top - bottom) / nd
do for [r = 1:nd] {
  do for [k = 1:nw] {
    d = int(word(dims, r)); w = int(word(warps, k))
    set lmargin at screen left + (k - 1) * pw + 0.07; set rmargin at screen left + k * pw - 0.01
    set tmargin at screen top - (r - 1) * ph - 0.04; set bmargin at screen top - r * ph + 0.09
    set title sprintf("D = %d, %d warps", d, w) font ",13"
    set xlabel "Bc (keys per tile)" offset 0, 0.5; set ylabel "Br (query rows)" offset -0.5, 0
    plot cells using (ran($1, $2) ? idx(bcs, $4) : NaN):(idx(brs, $3)):(idx(bcs, $4) - 0.5):(idx(bcs, $4) + 0.5):(idx(brs, $3) - 0.5):(idx(brs, $3) + 0.5):5 \
           with boxxyerror fc palette, \
         cells using (here($1, $2) && strcol(5) eq "-" ? idx(bcs, $4) : NaN):(idx(brs, $3)):(idx(bcs, $4) - 0.5):(idx(bcs, $4) + 0.5):(idx(brs, $3) - 0.5):(idx(brs, $3) + 0.5) \
           with boxxyerror fc rgb "#d0d0d0", \
         cells using (here($1, $2) && strcol(5) eq "-" ? idx(bcs, $4) : NaN):(idx(brs, $3)):7 with labels font ",11" tc rgb "#404040", \
         cells using (ran($1, $2) && !bright($5) ? idx(bcs, $4) : NaN):(idx(brs, $3)):(@cell_text) with labels font ",11" tc rgb "black", \
         cells using (ran($1, $2) && bright($5) ? idx(bcs, $4) : NaN):(idx(brs, $3)):(@cell_text) with labels font ",11" tc rgb "white"
  }
}
unset multiplot
