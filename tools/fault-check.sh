#!/usr/bin/env bash
# tools/fault-check.sh BUILD MAXALL FILE... — what `make fault` runs.
#
# Allocation fault injection (kernels/alloc.h) with the binaries of BUILD
# (an ASan + UBSan build, leak detection on):
#  1. every heap allocation of the library and the CLI goes through
#     kernels/alloc.h (a raw malloc/calloc/realloc/aligned_alloc/strdup/free
#     in kernels/, collectives_sim/, localtensor/, tools/ is an error);
#  2. BUILD/fault_driver api: the C API workload, every allocation failing
#     in turn (test/fault/);
#  3. BUILD/fault_driver run FILE...: each scenario file through
#     `localtensor run --json` in process, every N up to MAXALL allocations
#     per file, else the 1st, 2nd and last allocation of every call site;
#  4. tools/fault-run.sh on one scenario file and on `show` and
#     `redistribute` (text and --json): the real CLI process, whose exit code
#     must be 2 with "out of memory" on every failure;
# then prints how many allocation call sites (injection points) the source
# has and how many the runs reached (the unreached ones go to
# BUILD/fault-unreached.txt). Exit 0 when every step passed.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD MAXALL [FILE...]" >&2
  exit 2
fi
build=$1 maxall=$2
shift 2
cd "$(dirname "$0")/.." || exit 2
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=98:print_stacktrace=1}
status=0
srcs=$(ls kernels/*.[ch] collectives_sim/*.[ch] localtensor/*.[ch] localtensor/*/*.[ch] tools/*/*.[ch] | grep -v -e '^kernels/alloc\.' -e '^tools/bench/')

# 1. raw allocator calls
raw=$(grep -nP '(?<![\w>.])(malloc|calloc|realloc|aligned_alloc|posix_memalign|strdup|strndup|free)\s*\(' $srcs)
if [ -n "$raw" ]; then
  echo "FAIL  allocations that bypass kernels/alloc.h (use lt__malloc, lt__free, ...):"
  echo "$raw" | sed 's/^/      /'
  status=1
fi

# 2, 3
sites_api=$build/fault-sites-api.txt sites_run=$build/fault-sites-run.txt
"$build/fault_driver" -s "$sites_api" api || status=1
if [ $# -gt 0 ]; then
  "$build/fault_driver" -a "$maxall" -s "$sites_run" run "$@" || status=1
else
  : >"$sites_run"
fi

# 4. the CLI as a process
bash tools/fault-run.sh -a 100000 "$build/localtensor" scenarios/tutorials/04_r_s0_on_2x2.yaml || status=1
for args in "show --mesh 2x2 --shape 4,6 --placements S(0),SS(1,2)" \
            "show --mesh 2x2 --shape 4,6 --placements S(0),SS(1,2) --json" \
            "redistribute --mesh 2x2 --shape 4,6 --from S(0),S(1) --to R,S(0) --explain" \
            "redistribute --mesh 2x2 --shape 4,6 --from S(0),S(1) --to R,S(0) --json" \
            "redistribute --mesh 2x2 --shape 4,6 --from P(sum),S(1) --to R,S(0) --numerics sample:2 --json"; do
  bash tools/fault-run.sh -a 100000 -c "$args" "$build/localtensor" || status=1
done

# injection points: call sites in the source (one per line that allocates)
all=$(grep -nP '\blt__(malloc|calloc|realloc|aligned_alloc|strdup|fault_point)\s*\(' $srcs | cut -d: -f1,2 | sort -u)
nall=$(echo "$all" | grep -c .)
reached=$(cat "$sites_api" "$sites_run" | sort -u)
napi=$(sort -u "$sites_api" | grep -c .)
nrun=$(sort -u "$sites_run" | grep -c .)
nreached=$(comm -12 <(echo "$all") <(echo "$reached") | grep -c .)
comm -23 <(echo "$all") <(echo "$reached") >"$build/fault-unreached.txt"
echo
echo "injection points: $nall allocation call sites in the source; $nreached reached and failed" \
     "(C API workload $napi, scenario files $nrun); the other $((nall - nreached)) are listed in" \
     "$build/fault-unreached.txt"
[ $status -eq 0 ] && echo "fault injection: passed" || echo "fault injection: FAILED"
exit $status
