#!/usr/bin/env bash
# tools/run-tests.sh BUILD [--valgrind|--check|--units] [-k PATTERN] TEST_BIN...
# — runs the cmocka unit tests, then (unless --valgrind) the scenario
# library, the MPI engine under mpirun (tools/run-mpi-tests.sh, when built
# with MPI; its long sweeps are `make test-mpi-full`'s), the CLI's exit
# under a small address-space cap, the bad-input cases and the fuzz
# harnesses over their seeds and regression inputs, then the citation
# check (tools/check-citations.sh), the style check (tools/check-style.sh)
# and (unless --valgrind) the README check (tools/check-readme.sh) and the
# install check (tools/check-install.sh), and prints one closing line "N
# passed, N failed, N skipped". The kernel, op, collective and redistribute
# tests run a second time on cuda-emu, and a third on the device where there
# is one.
# The scenario library runs on the CPU backend, on cuda-emu (the CUDA
# kernels on the host) and, where the build has CUDA and a device is
# present, on the device, the last two compared value by value with the
# CPU backend's run; a test binary's line "skipped: REASON" (a test that
# needs a device) counts as skipped, never as passed.
#   --check  (`make check`) the unit tests and the scenario library on the
#            CPU backend only: no cuda-emu runs, MPI, fuzz replays,
#            citations, README or install check
#   --units  the unit tests alone (`make check T=... K=...`)
#   -k PATTERN  passed to every test binary: only its tests whose name
#            contains PATTERN (test/testutil.h); a binary with none is
#            skipped, and no binary with one is a failure
# Test binaries (and the cuda-emu reruns, and the scenario runs) run
# LT_TEST_JOBS at a time (default: the number of cores), each into its own
# log; their lines print in order. No pass or fail depends on wall time.
set -u
build=$1; shift
vg=0; mode=full; kpat=()
while [ $# -gt 0 ]; do
  case $1 in
    --valgrind) vg=1; shift ;;
    --check) mode=check; shift ;;
    --units) mode=units; shift ;;
    -k) kpat+=(-k "$2"); shift 2 ;;
    *) break ;;
  esac
done
pass=0; fail=0; skip=0; failed=()
jobs=${LT_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
logs=$build/test-logs
rm -rf "$logs"; mkdir -p "$logs"

# start NAME CMD...: runs CMD in the background, at most $jobs at once, its
# output into $logs/NAME.out and its exit code into $logs/NAME.rc
start() {
  local name=$1; shift
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  ( "$@" > "$logs/$name.out" 2>&1; echo $? > "$logs/$name.rc" ) &
}
# result NAME: waits for task NAME; its output into $out, its exit code into $rc
result() {
  while [ ! -f "$logs/$1.rc" ]; do wait -n || [ -f "$logs/$1.rc" ] || { echo 127 > "$logs/$1.rc"; }; done
  out=$(cat "$logs/$1.out"); rc=$(cat "$logs/$1.rc")
}

for t in "$@"; do
  name=$(basename "$t")
  if [ $vg -eq 1 ]; then
    start "$name" valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
          "$t" "${kpat[@]}"
  else
    start "$name" "$t" "${kpat[@]}"
  fi
done
nmatched=0
for t in "$@"; do
  name=$(basename "$t")
  result "$name"
  if [ ${#kpat[@]} -gt 0 ] && [ "$rc" -eq 1 ] && echo "$out" | grep -q "^$name: no test matches"; then
    skip=$((skip+1)); echo "skip  $name: no test matches ${kpat[*]}"; continue
  fi
  nmatched=$((nmatched+1))
  nskip=$(echo "$out" | grep -c '^skipped: ')
  if [ "$nskip" -gt 0 ]; then
    skip=$((skip+nskip))
    echo "$out" | grep '^skipped: ' | sort -u | sed "s/^skipped: /skip  $name: /"
  fi
  if [ "$rc" -eq 0 ]; then
    pass=$((pass+1)); echo "ok    $name"
  else
    fail=$((fail+1)); failed+=("$name"); echo "FAIL  $name (exit $rc)"; echo "$out" | tail -40
  fi
done
if [ ${#kpat[@]} -gt 0 ] && [ $# -gt 0 ] && [ $nmatched -eq 0 ]; then
  fail=$((fail+1)); failed+=("-k"); echo "FAIL  no test of these binaries matches ${kpat[*]}"
fi
# unusable BACKEND: 0 (and the reason in $why) when this build's CLI
# cannot run on backend BACKEND here (no CUDA in the build, no device)
unusable() { why=$("$build/localtensor" --backend "$1" --version 2>&1 >/dev/null) && return 1; why=${why#localtensor: --backend $1: }; }
# the kernel, op, collective and redistribute tests again with every tensor
# on cuda-emu (LT_TEST_BACKEND, test/testutil.h): the CUDA kernel code on
# the host, behind memory the host cannot read in place; and on the device
# itself where the build has CUDA and one is present (else one skip line)
emu_tests="test_kernels test_views test_math test_ops test_ops_torch test_op_dtypes test_collectives test_dtensor test_redistribute test_planner test_numerics"
if [ $vg -eq 0 ] && [ $mode = full ]; then
  ran=()
  for be in cuda-emu cuda; do
    if [ -x "$build/localtensor" ] && unusable $be; then
      skip=$((skip+1)); echo "skip  unit tests on $be: $why"; continue
    fi
    for name in $emu_tests; do
      [ -x "$build/$name" ] || continue
      start "$name-$be" env LT_TEST_BACKEND=$be "$build/$name"
      ran+=("$name-$be")
    done
  done
  for task in "${ran[@]}"; do
    result "$task"
    name=${task%-cuda*}; be=${task#"$name"-}
    if [ "$rc" -eq 0 ]; then
      pass=$((pass+1)); echo "ok    $name on $be"
    else
      fail=$((fail+1)); failed+=("$task"); echo "FAIL  $name on $be (exit $rc)"; echo "$out" | tail -40
    fi
  done
fi
if [ $vg -eq 0 ] && [ $mode != units ] && [ -x "$build/localtensor" ] && [ -d scenarios ] &&
   ls scenarios/*/*.yaml >/dev/null 2>&1; then
  start scenarios "$build/localtensor" run scenarios/
  # the same library through the CUDA kernel code (kernels/cuda/kern.h),
  # every case run first on the CPU backend and every value each step
  # stores compared with it (--compare-backend cpu): on the host (cuda-emu)
  # always, without the sweeps/ files (they repeat the other files' cases
  # at scale: about 80 s more), and all of it on the device when there is
  # one; LT_TEST_BACKENDS (default "cuda-emu cuda") narrows the list.
  # `make check` leaves them out.
  emu_paths=$(ls -d scenarios/*/ | grep -vx 'scenarios/sweeps/')
  ran=()
  for be in cuda-emu cuda; do
    [ $mode = full ] || break
    if [[ " ${LT_TEST_BACKENDS-cuda-emu cuda} " != *" $be "* ]]; then
      skip=$((skip+1)); echo "skip  scenarios on $be: not in LT_TEST_BACKENDS"; continue
    fi
    if unusable $be; then
      skip=$((skip+1)); echo "skip  scenarios on $be: $why"; continue
    fi
    paths=scenarios/
    [ $be = cuda-emu ] && paths=$emu_paths
    # shellcheck disable=SC2086
    start "scenarios-$be" "$build/localtensor" --backend $be run --compare-backend cpu $paths
    ran+=("$be")
  done
  result scenarios
  cp "$logs/scenarios.out" "$build/scenarios.log"
  if [ "$rc" -eq 0 ]; then
    pass=$((pass+1)); echo "ok    scenarios ($(tail -1 "$build/scenarios.log"))"
  else
    fail=$((fail+1)); failed+=("scenarios"); echo "FAIL  scenarios"; tail -40 "$build/scenarios.log"
  fi
  for be in "${ran[@]}"; do
    result "scenarios-$be"
    cp "$logs/scenarios-$be.out" "$build/scenarios-$be.log"
    if [ "$rc" -eq 0 ]; then
      pass=$((pass+1)); echo "ok    scenarios on $be ($(tail -1 "$build/scenarios-$be.log"); $(grep -m1 '^--compare-backend' "$build/scenarios-$be.log"))"
    else
      fail=$((fail+1)); failed+=("scenarios-$be"); echo "FAIL  scenarios on $be"; tail -40 "$build/scenarios-$be.log"
    fi
  done
fi
if [ $mode != full ]; then
  echo
  [ $fail -gt 0 ] && echo "failed: ${failed[*]}"
  echo "$pass passed, $fail failed, $skip skipped"
  [ $fail -eq 0 ]
  exit
fi
# the MPI engine under mpirun (tools/run-mpi-tests.sh; --quick in the
# sanitizer builds, which run about three times slower; the sweep files at
# P = 4 and P = world = 8 are `make test-mpi-full`'s) when this build has
# it, i.e. when mpicc was there (make deps installs Open MPI). Alone: its
# processes share the cores (mpirun --oversubscribe)
if [ $vg -eq 0 ]; then
  if [ -x "$build/mpi_engine" ]; then
    mpi_mode=""; [ -n "${SAN:-}" ] && mpi_mode=--quick
    if bash tools/run-mpi-tests.sh "$build" $mpi_mode > "$build/mpi-tests.log" 2>&1; then
      pass=$((pass+1)); echo "ok    mpi ($(tail -1 "$build/mpi-tests.log"))"
    else
      fail=$((fail+1)); failed+=("mpi"); echo "FAIL  mpi"; grep -v "^ok " "$build/mpi-tests.log" | tail -60
    fi
  else
    echo "skip  mpi: $build has no MPI build (mpicc was not found when it was built); not counted"
  fi
fi
# the CLI always exits, also where the address space is capped too small
# for OpenBLAS's worker threads (ulimit -v: each maps 128 MiB first and, when
# it cannot, retries forever; kernels/blas_impl.h): a small redistribute
# under `ulimit -v 61440` (60 MiB; more when this build needs more just to
# start, as a CUDA build's libraries do) exits 0 with its report. Not under
# the sanitizers (ASan maps terabytes of shadow memory) or valgrind.
if [ $vg -eq 0 ] && [ -z "${SAN:-}" ] && [ -x "$build/localtensor" ]; then
  cap=61440
  # a build that needs more than that just to start: the least cap (to
  # 10 MiB) at which it prints its version without OpenBLAS workers, plus
  # 20 MiB (about what the plain build has over it at 60 MiB)
  # (the CUDA libraries crash at load under some caps: quietly a "no")
  starts() { { (ulimit -v "$1"; OPENBLAS_NUM_THREADS=1 "$build/localtensor" --version) > /dev/null 2>&1; } 2> /dev/null; }
  if ! starts $cap; then
    lo=$cap hi=$((cap * 2))
    while ! starts $hi && [ $hi -lt 67108864 ]; do lo=$hi; hi=$((hi * 2)); done
    while [ $((hi - lo)) -gt 10240 ]; do
      mid=$(((lo + hi) / 2)); if starts $mid; then hi=$mid; else lo=$mid; fi
    done
    cap=$((hi + 20480))
  fi
  out=$( (ulimit -v $cap; timeout 60 "$build/localtensor" redistribute --mesh 2 --shape 4 --from 'S(0)' --to R) 2>&1); rc=$?
  if [ $rc -eq 0 ] && echo "$out" | grep -q "^verified: yes"; then
    pass=$((pass+1)); echo "ok    exit under ulimit -v $cap: redistribute --mesh 2 --shape 4 exits 0 with its report"
  else
    why=""; [ $rc -eq 124 ] && why=": it never exited, killed after 60 s"
    fail=$((fail+1)); failed+=("ulimit"); echo "FAIL  exit under ulimit -v $cap (exit $rc$why)"
    echo "$out" | tail -20
  fi
fi
# the fuzz harnesses (test/fuzz/) replayed over their seeds and regression
# inputs; make test builds BUILD/replay_<harness> for each
if [ $vg -eq 0 ] && ls test/fuzz/fuzz_*.c >/dev/null 2>&1; then
  if ! bash test/fuzz/make-seeds.sh "$build/fuzz-seeds" > "$build/fuzz-seeds.log" 2>&1; then
    fail=$((fail+1)); failed+=("fuzz-seeds"); echo "FAIL  fuzz seeds"; tail -20 "$build/fuzz-seeds.log"
  fi
  ran=()
  for src in test/fuzz/fuzz_*.c; do
    h=$(basename "$src" .c); h=${h#fuzz_}
    name="replay_$h"
    if [ ! -x "$build/$name" ]; then
      fail=$((fail+1)); failed+=("$name"); echo "FAIL  $name (not built)"; continue
    fi
    dirs=()
    for d in "$build/fuzz-seeds/$h" "test/fuzz/regressions/$h"; do [ -d "$d" ] && dirs+=("$d"); done
    start "$name" env OPENBLAS_NUM_THREADS=1 "$build/$name" "${dirs[@]}"
    ran+=("$name")
  done
  for name in "${ran[@]}"; do
    result "$name"
    if [ "$rc" -eq 0 ]; then
      pass=$((pass+1)); echo "ok    $name ($(echo "$out" | tail -1 | sed 's/^replay: //'))"
    else
      fail=$((fail+1)); failed+=("$name"); echo "FAIL  $name (exit $rc)"; echo "$out" | tail -40
    fi
  done
fi
# the size rules of the C sources (tools/check-style.sh: functions of at most
# 80 lines, lines of at most 100 columns; what was there before is listed in
# tools/style-debt.txt and may only shrink)
if out=$(bash tools/check-style.sh 2>&1 && bash tools/check-style.sh --self-test 2>&1); then
  pass=$((pass+1)); echo "ok    $(echo "$out" | head -1)"
else
  fail=$((fail+1)); failed+=("style"); echo "FAIL  style"; echo "$out" | tail -40
fi
# every docs/... citation names an existing section (and the check itself
# rejects bad ones); `make install` gives users what the README says
if out=$(bash tools/check-citations.sh 2>&1 && bash tools/check-citations.sh --self-test 2>&1); then
  pass=$((pass+1)); echo "ok    citations ($(echo "$out" | head -1))"
else
  fail=$((fail+1)); failed+=("citations"); echo "FAIL  citations"; echo "$out" | tail -40
fi
# the commands README.md and docs/*.md show print what they show
# (tools/check-readme.sh; and the check itself rejects wrong output)
if [ $vg -eq 0 ]; then
  if out=$(bash tools/check-readme.sh "$build" 2>&1 && bash tools/check-readme.sh --self-test 2>&1); then
    pass=$((pass+1)); echo "ok    $(echo "$out" | grep -m1 '^ok ' | sed 's/^ok *//')"
  else
    fail=$((fail+1)); failed+=("readme"); echo "FAIL  README"; echo "$out" | tail -60
  fi
fi
if [ $vg -eq 0 ]; then
  if out=$(bash tools/check-install.sh "$build" 2>&1); then
    pass=$((pass+1)); echo "ok    install ($(echo "$out" | tail -1))"
  else
    fail=$((fail+1)); failed+=("install"); echo "FAIL  install"; echo "$out" | tail -40
  fi
fi
echo
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
