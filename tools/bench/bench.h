/* tools/bench/bench.h — the benchmark harness shared by tools/bench/bench*.c.
 *
 * build-bench/bench (`make bench`) links every tools/bench/bench*.c. tools/bench/bench.c
 * holds main, the result table and the memcpy baseline; each other file
 * provides one `void lt_bench_<area>(lt_bench *b)` that adds rows, declared
 * here and called from the fixed list in main (add yours to both places).
 *
 * A row: what was measured, the bytes it wrote, the median seconds per call,
 * GB/s of those bytes, the baseline's GB/s for the same bytes measured in
 * the same process (memcpy between two pre-touched buffers, or one cblas
 * call), and ratio = gbps / baseline_gbps. A row without a baseline (e.g.
 * per-call overhead) passes NAN, and JSON shows null.
 *
 * Environment: LT_BENCH_FILTER=substr[|substr...] runs only matching rows;
 * LT_BENCH_SCALE_JOB is set by the scale rows for the processes they start.
 */
#ifndef LT_BENCH_H
#define LT_BENCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct lt_bench_row {
    char name[120];
    size_t bytes;            /* bytes written per call */
    double seconds;          /* median seconds per call */
    double gbps;             /* bytes / seconds / 1e9 */
    double baseline_gbps;    /* NAN: none */
    double ratio;            /* gbps / baseline_gbps; NAN: none */
} lt_bench_row;

typedef struct lt_bench {
    lt_bench_row *rows;
    size_t n, cap;
    char *base_src, *base_dst;   /* memcpy baseline buffers (pre-touched) */
    size_t base_cap;
} lt_bench;

/* Adds (and prints) a row; baseline_gbps NAN for none. Exits on NOMEM. */
void lt_bench_add(lt_bench *b, const char *name, size_t bytes, double seconds,
                  double baseline_gbps);
/* 1 when the row `name` should run: LT_BENCH_FILTER unset, or a substring
 * of name (several alternatives separated by '|'). */
int lt_bench_want(const char *name);
/* Monotonic clock in seconds. */
double lt_bench_now(void);
/* Median of v[n] (sorts v). */
double lt_bench_median(double *v, int n);
/* Seconds of one memcpy of `bytes` between the harness's pre-touched
 * buffers (grown on demand). Exits on NOMEM. */
double lt_bench_memcpy_once(lt_bench *b, size_t bytes);
/* Seconds of one row-major sgemm (m, k) @ (k, n) on lt_threads() BLAS threads,
 * on buffers it fills and frees (the floors' sgemm part; bench_workload.c). */
double lt_bench_sgemm_once(int64_t m, int64_t k, int64_t n);

/* The areas, one per file. */
void lt_bench_collectives(lt_bench *b);    /* tools/bench/bench_collectives.c */
void lt_bench_redistribute(lt_bench *b);   /* tools/bench/bench_redistribute.c */
void lt_bench_ops(lt_bench *b);            /* tools/bench/bench_ops.c */
void lt_bench_program(lt_bench *b);        /* tools/bench/bench_program.c */
void lt_bench_scenario(lt_bench *b);       /* tools/bench/bench_scenario.c */
void lt_bench_numerics(lt_bench *b);       /* tools/bench/bench_numerics.c */
void lt_bench_backend(lt_bench *b);        /* tools/bench/bench_backend.c */
void lt_bench_scale(lt_bench *b);          /* tools/bench/bench_scale.c */
/* In a process started by a scale row (LT_BENCH_SCALE_JOB set): runs its one
 * cold job, prints the seconds and returns 1; otherwise 0. */
int lt_bench_scale_child(void);
void lt_bench_sweep(lt_bench *b);          /* tools/bench/bench_scenario.c */
void lt_bench_workload(lt_bench *b);       /* tools/bench/bench_workload.c */
void lt_bench_train(lt_bench *b);          /* tools/bench/bench_train.c */

#endif
