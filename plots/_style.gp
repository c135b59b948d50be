# Shared by every chart (loaded first; draw.sh does not draw it on its own).
# draw.sh sets: results (folder of CSVs), out (folder for PNGs), plotdir, gpu, date, sha (of
# meta.txt), later (meta.txt's note of rows appended from a later run), check_sha (check.txt's commit), tiles_sha (tiles.log's commit), single_sha and
# single_date (single_head.log's first two lines),
# gpumem (bytes, 0 if unknown).

set encoding utf8
set datafile separator ","
# Every chart: eval png(width, height) (a plain "set terminal ... size" would reset the options).
png(w, h) = sprintf("set terminal pngcairo noenhanced font 'DejaVu Sans,13' linewidth 1.5 size %d,%d", w, h)
eval png(1200, 800)
set grid lc rgb "#d8d8d8" lw 0.75
set border lc rgb "#404040"
set tics nomirror
set key noautotitle

# The caption every chart carries: where and when the numbers were measured.
caption = gpu . (strlen(date) ? ", measured " . date : ", date unknown") . (strlen(sha) ? ", commit " . sha : "") \
          . (strlen(later) ? "; " . later : "")

# ---------------------------------------------------------------- reading the CSVs
# rows(file, where, fields): a '< awk' pipe printing, comma-separated, the named FIELDS
# ("seq_q tflops") of the rows of FILE that pass WHERE ("status=ok pass=fwd causal=0",
# all must hold; "status=ok|oom" allows either). Columns are found by header name.
awk_rows = 'FNR==1{for(i=1;i<=NF;i++)c[$i]=i; nw=split(w,W," "); nf=split(f,F," "); next} \
{for(j=1;j<=nw;j++){split(W[j],kv,"="); if(index("|" kv[2] "|", "|" $c[kv[1]] "|")==0) next} \
 for(j=1;j<=nf;j++) printf "%s%s", $c[F[j]], (j<nf ? "," : "\n")}'
# FILE may be several files, space-separated (each with its own header): their rows together.
quoted(list, i) = i > words(list) ? "" : sprintf(" '%s'", word(list, i)) . quoted(list, i + 1)
rows(file, where, fields) = sprintf("< awk -F, -v w='%s' -v f='%s' '%s'%s", \
                                    where, fields, awk_rows, quoted(file, 1))
# distinct(file, where, field): the distinct values of FIELD in those rows, sorted,
# space-separated: the list to loop over ("for [s in distinct(...)]").
distinct(file, where, field) = system(sprintf("%s | sort -u | tr '\\n' ' '", rows(file, where, field)[2:]))
have(file) = int(system(sprintf("test -s '%s' && echo 1 || echo 0", file)))

# num("1e-05"): a number from a string. gnuplot's own real("1e-05") fails on a mantissa
# without a point, which is how awk and C print round numbers, so insert the ".0".
epos(s) = strstrt(s, "e") ? strstrt(s, "e") : strstrt(s, "E")
num(s) = (epos(s) > 0 && !strstrt(s, ".")) ? real(s[1:epos(s) - 1].".0".s[epos(s):]) : real(s)

# ---------------------------------------------------------------- one look per step
# A step's colour and point come from its number (03_... is always the 4th colour), so a
# step looks the same in every chart; the peers are dashed: SDPA's black/red/greys and
# FlashAttention-4 magenta. The Hopper steps (07 on) share the top of the throughput charts with
# the peers, so their colours are far apart in hue (olive, navy, dark orange, plum, teal, brown,
# green) and their points differ.
step_colors = "#1f77b4 #ff7f0e #2ca02c #9467bd #8c564b #e377c2 #17becf #bcbd22 #393b79 #e6550d #7b4173 #1b9e77 #a6761d #4d9221"
step_points = "7 5 9 13 11 15 7 5 9 13 11 15"
peers       = "sdpa_flash sdpa_cudnn sdpa_efficient sdpa_math fa4"
peer_colors = "#000000 #b2182b #636363 #a6a6a6 #c51b7d"
peer_dashes = "2 4 3 5 2"
peer_points = "6 4 8 12 10"
peer_label(s) = s eq "sdpa_flash" ? "SDPA flash (FA2)" : s eq "sdpa_cudnn" ? "SDPA cuDNN" : \
                s eq "sdpa_efficient" ? "SDPA mem-efficient" : s eq "sdpa_math" ? "SDPA math" : \
                s eq "fa4" ? "FlashAttention-4" : s
peer_index(s) = s eq "sdpa_flash" ? 1 : s eq "sdpa_cudnn" ? 2 : s eq "sdpa_efficient" ? 3 : s eq "fa4" ? 5 : 4
is_peer(s) = strstrt(s, "sdpa_") == 1 || s eq "fa4"
digit(ch) = strstrt("0123456789", ch) - 1
step_number(s) = (digit(s[1:1]) >= 0 && digit(s[2:2]) >= 0) ? 10 * digit(s[1:1]) + digit(s[2:2]) : 0
color(s) = is_peer(s) ? word(peer_colors, peer_index(s)) \
                      : word(step_colors, step_number(s) % words(step_colors) + 1)
# Step 02 is step 01 with one line changed, and on shapes where Nk is a multiple of 16 they time
# alike: 02 gets a dashed line and hollow points, so that it shows on top of 01 without hiding it.
dash(s)  = is_peer(s) ? int(word(peer_dashes, peer_index(s))) : (step_number(s) == 2 ? 3 : 1)
point(s) = is_peer(s) ? int(word(peer_points, peer_index(s))) \
                      : step_number(s) == 2 ? 8 : int(word(step_points, step_number(s) % words(step_points) + 1))
label(s) = is_peer(s) ? peer_label(s) : s
# A step that adds only a backward runs an earlier step's forward kernel unchanged: drawn in the
# forward charts, its line would lie exactly on that step's and hide it. Pairs "step:earlier"; the
# forward charts (forward, causal, ladder, memory) leave such a step out and say so, the backward
# and accuracy charts draw it. A name not in the CSVs changes nothing. Step 14's forward is 13's
# with a K/V head shared by a group of query heads: where H_kv = H, as in every sweep, 13's kernel.
forward_shared = "06_backward:05_causal_skip 13_backward_wgmma:12_three_warpgroups 14_gqa:13_backward_wgmma"
shares_forward(s) = strstrt(" ".forward_shared." ", " ".s.":") > 0
forward_source(s) = (_fs = word(forward_shared, sum [i = 1:words(forward_shared)] \
                       (strstrt(word(forward_shared, i), s.":") == 1 ? i : 0)), _fs[strstrt(_fs, ":") + 1:])
# own_forward(list): LIST (space-separated steps) without those; shared_forward(list): only those.
own_forward(list, i) = i > words(list) ? "" : \
    (shares_forward(word(list, i)) ? "" : word(list, i)." ") . own_forward(list, i + 1)
shared_forward(list, i) = i > words(list) ? "" : \
    (shares_forward(word(list, i)) ? word(list, i)." " : "") . shared_forward(list, i + 1)
# The line a forward chart prints for each step it leaves out.
shared_note(list, i) = i > words(list) ? "" : \
    sprintf("not drawn: %s,\nits forward is step %s's kernel\n", word(list, i), forward_source(word(list, i))[1:2]) . shared_note(list, i + 1)
# Successive steps that differ in one idea often run at the same speed (01 and 02; 04 and 05 when
# not causal), and their lines would lie on each other. So even-numbered steps are drawn first,
# with wide lines and big points, and odd-numbered steps on top of them, narrow and small: where
# two lines meet, both colours show. Step 02 (hollow points, dashed, above) is the exception: 01 and
# 02 time alike wherever Nk is a multiple of 16, so 02 is thin, with big hollow points around 01's.
step_lw(s) = step_number(s) == 2 ? 1.8 : step_number(s) % 2 ? 1.8 : 3.8
step_ps(s) = step_number(s) == 2 ? 2.4 : step_number(s) % 2 ? 1.0 : 1.6
_parity(list, i, odd) = i > words(list) ? "" : \
    (step_number(word(list, i)) % 2 == odd ? word(list, i)." " : "") . _parity(list, i + 1, odd)
draw_order(list) = _parity(list, 1, 0) . _parity(list, 1, 1)
# How the peers were timed, for the keys.
peer_key = "dashed: the peers,\ntimed as CUDA-graph replays"

# Log-axis limits on the 1-2-5 ladder: the nearest 1, 2 or 5 × 10^k at or below v.
_dec(v) = 10**floor(log10(v) + 1e-9)        # (1e-9: log10(1000) is 2.9999999999999996)
nice_below(v) = _dec(v) * (v / _dec(v) >= 4.999 ? 5 : v / _dec(v) >= 1.999 ? 2 : 1)
log_tics = '("0.01" 0.01, "0.02" 0.02, "0.05" 0.05, "0.1" 0.1, "0.2" 0.2, "0.5" 0.5, "1" 1, "2" 2, "5" 5, \
  "10" 10, "20" 20, "50" 50, "100" 100, "200" 200, "500" 500, "1000" 1000, "2000" 2000, "5000" 5000, \
  "10000" 10000, "20000" 20000, "50000" 50000, "100000" 100000)'

# "#1f77b4" -> 0x1f77b4, for "lc rgb variable" (one plot element, a colour per point).
hexval(ch) = strstrt("0123456789abcdef", ch) - 1
rgbint(c) = sum [i = 2:7] hexval(c[i:i]) * 16**(7 - i)
# The peers present in a space-separated list, in the fixed order flash, cudnn, efficient, math,
# fa4.
only_peers(list) = (strstrt(" ".list." ", " sdpa_flash ") ? "sdpa_flash " : "") . \
                   (strstrt(" ".list." ", " sdpa_cudnn ") ? "sdpa_cudnn " : "") . \
                   (strstrt(" ".list." ", " sdpa_efficient ") ? "sdpa_efficient " : "") . \
                   (strstrt(" ".list." ", " sdpa_math ") ? "sdpa_math " : "") . \
                   (strstrt(" ".list." ", " fa4 ") ? "fa4 " : "")

# Sequence-length axis, log2 from 512 to 32768.
set_n_axis = 'set logscale x 2; set xrange [420:40000]; \
  set xtics ("512" 512, "1k" 1024, "2k" 2048, "4k" 4096, "8k" 8192, "16k" 16384, "32k" 32768)'
