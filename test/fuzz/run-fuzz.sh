#!/usr/bin/env bash
# test/fuzz/run-fuzz.sh BUILD SECONDS HARNESS... — what `make fuzz` runs after
# building BUILD/fuzz_<harness> (clang, libFuzzer, ASan + UBSan).
#
# Each harness runs for SECONDS, one process, starting from its corpus
# BUILD/fuzz-corpus/<harness>/ (kept between runs: new coverage accumulates
# there), the seeds make-seeds.sh writes into BUILD/fuzz-seeds/<harness>/ and
# the regression inputs in test/fuzz/regressions/<harness>/, with the words of
# test/fuzz/<harness>.dict. A crash, leak,
# UB report, broken invariant, timeout or out-of-memory stops that harness
# and leaves the input in BUILD/fuzz-findings/<harness>/; this script then
# replays it to show the whole report. Exit status: 0 when no harness found
# anything, 1 otherwise, 2 on a setup problem.
#
# To keep a finding: minimise it (BUILD/fuzz_<h> -minimize_crash=1
# -runs=10000 FILE), copy the result to test/fuzz/regressions/<h>/, fix the
# cause; `make test` replays it from then on.
#
# FUZZ_SEED=N (environment) fixes libFuzzer's random seed, so a run from a
# fresh corpus walks the same inputs every time: CI uses it, so a CI run
# fails only on a change, never by drawing a new input. Unset: a new seed
# each run (to find new things). FUZZ_RUNS=N stops each harness after N
# inputs (SECONDS stays the cap): with a fixed seed the inputs tried are then
# the same on any machine, fast or slow.
set -u
build=${1:?usage: run-fuzz.sh BUILD SECONDS HARNESS...}
secs=${2:?usage: run-fuzz.sh BUILD SECONDS HARNESS...}
shift 2
cd "$(dirname "$0")/../.." || exit 2
case $secs in '' | *[!0-9]*) echo "run-fuzz: FUZZ_SECONDS '$secs' is not a whole number of seconds" >&2; exit 2 ;; esac

if ! bash test/fuzz/make-seeds.sh "$build/fuzz-seeds" >/dev/null; then
  echo "run-fuzz: could not write the seed corpus" >&2
  exit 2
fi
export OPENBLAS_NUM_THREADS=1 # one core each; the simulator is single-threaded anyway

found=0
summary=()
for h in "$@"; do
  bin="$build/fuzz_$h"
  if [ ! -x "$bin" ]; then
    echo "run-fuzz: $bin is not built" >&2
    exit 2
  fi
  case $h in
    scenario) maxlen=12288 ;;
    *) maxlen=1024 ;;
  esac
  corpus="$build/fuzz-corpus/$h"
  findings="$build/fuzz-findings/$h"
  log="$build/fuzz-$h.log"
  mkdir -p "$corpus" "$findings"
  dirs=("$corpus" "$build/fuzz-seeds/$h")
  [ -d "test/fuzz/regressions/$h" ] && dirs+=("test/fuzz/regressions/$h")
  seed=()
  [ -n "${FUZZ_SEED:-}" ] && seed=(-seed="$FUZZ_SEED")
  [ -n "${FUZZ_RUNS:-}" ] && seed+=(-runs="$FUZZ_RUNS")
  dict=()
  [ -f "test/fuzz/$h.dict" ] && dict=(-dict="test/fuzz/$h.dict")
  echo "fuzz  $h: ${secs}s (log: $log)"
  # -close_fd_mask=3: the harness's own stdout/stderr are dropped (libFuzzer
  # and sanitizer reports still print); -timeout: one input past 30 s is a
  # finding; -rss_limit_mb: a run past 4 GiB is one too.
  "$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -max_len=$maxlen \
    -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$findings/" "${seed[@]}" "${dict[@]}" "${dirs[@]}" > "$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    summary+=("ok    $h: ${execs:-?} executions, $(find "$corpus" -type f | wc -l) corpus inputs")
  else
    found=1
    art=$(grep -oE "(Test unit|input) written to [^ ]+" "$log" | tail -1 | awk '{print $NF}')
    summary+=("FOUND $h: exit $rc after ${execs:-?} executions; input: ${art:-see $log}")
    echo "---- $h: libFuzzer's report (tail of $log)"
    tail -n 40 "$log"
    if [ -n "$art" ] && [ -f "$art" ]; then
      echo "---- $h: the input replayed with the harness's own messages"
      "$bin" -timeout=30 -rss_limit_mb=4096 "$art" 2>&1 | tail -n 60
    fi
  fi
done
echo
printf '%s\n' "${summary[@]}"
exit $found
