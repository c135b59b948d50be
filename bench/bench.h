/* bench.h: `attn bench`, the sweeps of bench/sweeps.txt, one CSV row per measurement. */
#ifndef BENCH_H
#define BENCH_H

/* argv[0] is "bench"; returns the exit status (0 ok, 1 a row wrong or changed, 2 bad input or
 * no usable GPU). */
int cmd_bench(int argc, char **argv);
extern const char bench_usage[];

#endif
