# memory.png: the extra device memory a forward pass needs, against N (bf16, D=128, non-causal,
# batch 4, 8 heads): the step's workspace plus the fp32 lse (4·B·H·N bytes). Step 00's N×N
# scores grow as N²; the flash steps need only the lse (and a step with a workspace, its own
# line). Steps with the same bytes at every N are one line. A row whose status is oom still
# carries the workspace it would need: drawn as a hollow marker, "does not fit".
# Variables from draw.sh: results, out, plotdir, gpu, date, sha, gpumem (bytes, 0 if unknown).

load plotdir.'/_style.gp'
ours = results.'/standard.csv'
where = 'pass=fwd dtype=bf16 head_dim=128 causal=0'
fields = 'seq_q workspace_bytes batch heads'
GiB = 2.0**30
extra(ws, b, h, nq) = (ws + 4.0 * b * h * nq) / GiB     # workspace + fp32 lse, in GiB
by_n = ' | sort -t, -k1,1g'

# Not a step whose forward is an earlier step's kernel: the same memory, said in a note.
all_steps = distinct(ours, where.' status=ok|oom', 'step')
not_drawn = shared_forward(all_steps, 1)
steps = own_forward(all_steps, 1)
# Flash steps often need exactly the same bytes at every N; drawn one by one, their lines would
# hide each other. So steps with the same rows (N, workspace, status) are one line, named by its
# steps' numbers in the key; a step with rows of its own keeps its colour and name.
group_awk = 'FNR==1{for(i=1;i<=NF;i++)c[$i]=i; nw=split(w,W," "); next} \
{for(j=1;j<=nw;j++){split(W[j],kv,"="); if(index("|" kv[2] "|", "|" $c[kv[1]] "|")==0) next} \
 s=$c["step"]; sig[s]=sig[s] " " $c["seq_q"] ":" $c["workspace_bytes"] ":" $c["status"]} \
END{n=split(steps,S," "); for(i=1;i<=n;i++){k=sig[S[i]]; if(!(k in rep)){rep[k]=S[i]; ord[++g]=k} \
 cnt[k]++; num=substr(S[i],1,2)+0; \
 if(cnt[k]==1){lab[k]=substr(S[i],1,2)} else if(num==last[k]+1){run[k]=substr(S[i],1,2)} \
 else {lab[k]=lab[k] (run[k]!="" ? "–" run[k] : "") ", " substr(S[i],1,2); run[k]=""} last[k]=num} \
 for(i=1;i<=g;i++){k=ord[i]; print rep[k] "|" cnt[k] "|" lab[k] (run[k]!="" ? "–" run[k] : "")}}'
# One line per group: its first step | how many steps | their numbers ("01–05, 07–10").
groups = sprintf("awk -F, -v steps='%s' -v w='%s' '%s' '%s'", steps, where.' status=ok|oom', group_awk, ours)
reps = system(groups." | cut -d'|' -f1 | tr '\\n' ' '")
group_field(r, f) = system(sprintf("%s | awk -F'|' -v r='%s' '$1==r{print $%d}'", groups, r, f))
nreps = words(reps)
group_color(r) = int(group_field(r, 2)) > 1 ? "#505050" : color(r)
group_label(r) = int(group_field(r, 2)) > 1 ? sprintf("steps %s (the same bytes)", group_field(r, 3)) : label(r)

minmax = system(sprintf("%s | awk -F, 'NR==1{lo=hi=($2+4*$3*$4*$1)} {e=$2+4*$3*$4*$1; if(e<lo)lo=e; if(e>hi)hi=e; if($1>n)n=$1; if($1<m||!m)m=$1} END{print lo/2^30, hi/2^30, m+0, n+0}'", \
                rows(ours, where.' status=ok|oom', fields)[2:]))
# y range fitted to the data (and the GPU's memory line), in powers of 2.
ylo = 2.0**floor(log(num(word(minmax, 1)) / 2) / log(2))
top = num(word(minmax, 2)) > gpumem / GiB ? num(word(minmax, 2)) : gpumem / GiB
yhi = 2.0**ceil(log(top * 3) / log(2))
nmin = num(word(minmax, 3)); nmax = num(word(minmax, 4))
n_oom = int(system(rows(ours, where.' status=oom', 'step')[2:].' | wc -l'))

eval png(1400, 800)
set output out.'/memory.png'
set title "Extra device memory of one forward pass: workspace + fp32 lse (Q, K, V, O not counted)\nbf16, D = 128, non-causal, batch 4, 8 heads\n".caption font ",15" offset screen 0.115, 0
@set_n_axis
set xrange [nmin / 1.25 : nmax * 1.25]
set xlabel "sequence length N (tokens; N_q = N_k)"
set logscale y 2
set yrange [ylo:yhi]
set ytics ("1 KiB" 2.0**-20, "16 KiB" 2.0**-16, "256 KiB" 2.0**-12, "4 MiB" 2.0**-8, "64 MiB" 2.0**-4, \
           "1 GiB" 1, "16 GiB" 16, "256 GiB" 256, "4 TiB" 4096, "64 TiB" 65536)
set mytics 4
set ylabel "extra device memory (log scale)"
set lmargin at screen 0.11; set rmargin at screen 0.66
set key at screen 0.68, graph 1 left top Left reverse samplen 3 spacing 1.3 font ",12"
if (strlen(not_drawn)) { set label 3 shared_note(not_drawn, 1) at screen 0.685, screen 0.10 left font ",11" tc rgb "#505050" }

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

plot for [i = 1:nreps] rows(ours, where.' status=ok|oom step='.word(reps, i), fields).by_n \
       using 1:(extra($2, $3, $4, $1)) with lines dt 3 lw 1.5 lc rgb group_color(word(reps, i)) notitle, \
     for [i = 1:nreps] rows(ours, where.' status=ok step='.word(reps, i), fields).by_n \
       using 1:(extra($2, $3, $4, $1)) with linespoints lw 3 pt 7 ps 1.6 \
       lc rgb group_color(word(reps, i)) title group_label(word(reps, i)), \
     for [j = 1:(n_oom > 0)] rows(ours, where.' status=oom', fields) using 1:(extra($2, $3, $4, $1)) \
       with points pt 6 ps 3 lw 2 lc rgb "black" title "out of memory: what it would need", \
     for [j = 1:(n_oom > 0)] rows(ours, where.' status=oom', fields) using 1:(extra($2, $3, $4, $1)):("does not fit") \
       with labels center offset 0, 1.6 font ",12" notitle
