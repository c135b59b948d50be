# memory.png: the extra device memory a forward pass needs, against N (bf16, D=128, non-causal,
# batch 4, 8 heads): the step's workspace plus the fp32 lse (4·B·H·N bytes). Step 00's N×N
# scores grow as N²; the flash steps need only the lse. A row whose status is oom still
# carries the workspace it would need: drawn as a hollow marker, "does not fit".
# Variables from draw.sh: results, out, plotdir, gpu, date, sha, gpumem (bytes, 0 if unknown).

load plotdir.'/_style.gp'
ours = results.'/standard.csv'
where = 'pass=fwd dtype=bf16 head_dim=128 causal=0'
fields = 'seq_q workspace_bytes batch heads'
GiB = 2.0**30
extra(ws, b, h, nq) = (ws + 4.0 * b * h * nq) / GiB     # workspace + fp32 lse, in GiB
by_n = ' | sort -t, -k1,1g'

steps = distinct(ours, where.' status=ok|oom', 'step')
nsteps = words(steps)
# Flash steps need exactly the same memory and draw on top of each other: earlier steps get
# bigger markers and wider lines, so each one shows as a ring around the next.
grow(i) = nsteps > 1 ? (nsteps - i) / (nsteps - 1.0) : 1
lwidth(i) = 1.5 + 3.0 * grow(i)
psize(i) = 1.0 + 2.0 * grow(i)

minmax = system(sprintf("%s | awk -F, 'NR==1{lo=hi=($2+4*$3*$4*$1)} {e=$2+4*$3*$4*$1; if(e<lo)lo=e; if(e>hi)hi=e; if($1>n)n=$1; if($1<m||!m)m=$1} END{print lo/2^30, hi/2^30, m+0, n+0}'", \
                rows(ours, where.' status=ok|oom', fields)[2:]))
ylo = 2.0**(4 * floor(log(num(word(minmax, 1)) / 2) / log(16)))
top = num(word(minmax, 2)) > gpumem / GiB ? num(word(minmax, 2)) : gpumem / GiB
yhi = 2.0**(4 * ceil(log(top * 3) / log(16)))
nmin = num(word(minmax, 3)); nmax = num(word(minmax, 4))
n_oom = int(system(rows(ours, where.' status=oom', 'step')[2:].' | wc -l'))

eval png(1200, 800)
set output out.'/memory.png'
set title "Extra device memory of one forward pass: workspace + fp32 lse (Q, K, V, O not counted)\nbf16, D = 128, non-causal, batch 4, 8 heads\n".caption font ",15"
@set_n_axis
set xrange [nmin / 1.25 : nmax * 1.25]
set xlabel "sequence length N (tokens; N_q = N_k)"
set logscale y 2
set yrange [ylo:yhi]
set ytics ("1 KiB" 2.0**-20, "16 KiB" 2.0**-16, "256 KiB" 2.0**-12, "4 MiB" 2.0**-8, "64 MiB" 2.0**-4, \
           "1 GiB" 1, "16 GiB" 16, "256 GiB" 256, "4 TiB" 4096, "64 TiB" 65536)
set mytics 4
set ylabel "extra device memory (log scale)"
set lmargin at screen 0.11; set rmargin at screen 0.68
set key at screen 0.70, graph 1 left top Left reverse samplen 3 spacing 1.3 font ",12"

# The GPU's memory: everything above this line cannot run.
if (gpumem > 0) {
  set arrow 1 from graph 0, first gpumem / GiB to graph 1, first gpumem / GiB nohead lw 2 lc rgb "#b2182b" back
  set label 1 sprintf("%s: %.1f GiB of device memory", gpu, gpumem / GiB) at graph 0.02, first gpumem / GiB \
      offset 0, 0.8 left tc rgb "#b2182b" font ",12"
}
# What every flash step needs: the lse alone, 4·B·H·N bytes (B = 4, H = 8).
nmid = sqrt(nmin * nmax)
if (int(system(rows(ours, where.' status=ok workspace_bytes=0', 'step')[2:].' | wc -l')) > 0) {
  set label 2 "only the fp32 lse: 4·B·H·N bytes, O(N)" at nmid, extra(0, 4, 8, nmid) * 5 center font ",12"
}

plot for [i = 1:nsteps] rows(ours, where.' status=ok|oom step='.word(steps, i), fields).by_n \
       using 1:(extra($2, $3, $4, $1)) with lines dt 3 lw 1.5 lc rgb color(word(steps, i)) notitle, \
     for [i = 1:nsteps] rows(ours, where.' status=ok step='.word(steps, i), fields).by_n \
       using 1:(extra($2, $3, $4, $1)) with linespoints lw lwidth(i) pt 7 ps psize(i) \
       lc rgb color(word(steps, i)) title label(word(steps, i)), \
     for [j = 1:(n_oom > 0)] rows(ours, where.' status=oom', fields) using 1:(extra($2, $3, $4, $1)) \
       with points pt 6 ps 3 lw 2 lc rgb "black" title "out of memory: what it would need", \
     for [j = 1:(n_oom > 0)] rows(ours, where.' status=oom', fields) using 1:(extra($2, $3, $4, $1)):("does not fit") \
       with labels center offset 0, 1.6 font ",12" notitle
