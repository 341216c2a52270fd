#!/usr/bin/env bash
# tools/run-tests.sh BUILD [--valgrind] TEST_BIN... — runs the cmocka unit
# tests, then (unless --valgrind) the scenario library, the MPI engine under
# mpirun (tools/run-mpi-tests.sh, when built with MPI), the bad-input cases
# and the fuzz harnesses over their seeds and regression inputs, then the
# citation check (tools/check-citations.sh) and (unless --valgrind) the
# install check (tools/check-install.sh), and prints one closing line
# "N passed, N failed, N skipped". The kernel, op, collective and
# redistribute tests run a second time on cuda-emu, and a third on the
# device where there is one. The scenario library runs on the CPU
# backend, on cuda-emu (the CUDA kernels on the host) and, where the build
# has CUDA and a device is present, on the device, the last two compared
# value by value with the CPU backend's run; a test binary's line
# "skipped: REASON" (a test that needs a device) counts as skipped, never
# as passed.
set -u
build=$1; shift
vg=0
if [ "${1:-}" = "--valgrind" ]; then vg=1; shift; fi
pass=0; fail=0; skip=0; failed=()
for t in "$@"; do
  name=$(basename "$t")
  if [ $vg -eq 1 ]; then
    out=$(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
          "$t" 2>&1); rc=$?
  else
    out=$("$t" 2>&1); rc=$?
  fi
  nskip=$(echo "$out" | grep -c '^skipped: ')
  if [ "$nskip" -gt 0 ]; then
    skip=$((skip+nskip))
    echo "$out" | grep '^skipped: ' | sort -u | sed "s/^skipped: /skip  $name: /"
  fi
  if [ $rc -eq 0 ]; then
    pass=$((pass+1)); echo "ok    $name"
  else
    fail=$((fail+1)); failed+=("$name"); echo "FAIL  $name (exit $rc)"; echo "$out" | tail -40
  fi
done
# unusable BACKEND: 0 (and the reason in $why) when this build's CLI
# cannot run on backend BACKEND here (no CUDA in the build, no device)
unusable() { why=$("$build/localtensor" --backend "$1" --version 2>&1 >/dev/null) && return 1; why=${why#localtensor: --backend $1: }; }
# the kernel, op, collective and redistribute tests again with every tensor
# on cuda-emu (LT_TEST_BACKEND, test/testutil.h): the CUDA kernel code on
# the host, behind memory the host cannot read in place; and on the device
# itself where the build has CUDA and one is present (else one skip line)
emu_tests="test_kernels test_views test_math test_ops test_ops_torch test_op_dtypes test_collectives test_dtensor test_redistribute test_planner test_numerics"
if [ $vg -eq 0 ]; then
  for be in cuda-emu cuda; do
    if [ -x "$build/localtensor" ] && unusable $be; then
      skip=$((skip+1)); echo "skip  unit tests on $be: $why"; continue
    fi
    for name in $emu_tests; do
      t="$build/$name"
      [ -x "$t" ] || continue
      out=$(LT_TEST_BACKEND=$be "$t" 2>&1); rc=$?
      if [ $rc -eq 0 ]; then
        pass=$((pass+1)); echo "ok    $name on $be"
      else
        fail=$((fail+1)); failed+=("$name-$be"); echo "FAIL  $name on $be (exit $rc)"; echo "$out" | tail -40
      fi
    done
  done
fi
if [ $vg -eq 0 ] && [ -x "$build/localtensor" ] && [ -d scenarios ] && ls scenarios/*/*.yaml >/dev/null 2>&1; then
  if "$build/localtensor" run scenarios/ > "$build/scenarios.log" 2>&1; then
    pass=$((pass+1)); echo "ok    scenarios ($(tail -1 "$build/scenarios.log"))"
  else
    fail=$((fail+1)); failed+=("scenarios"); echo "FAIL  scenarios"; tail -40 "$build/scenarios.log"
  fi
  # the same library through the CUDA kernel code (kernels/cuda/kern.h),
  # every case run first on the CPU backend and every value each step
  # stores compared with it (--compare-backend cpu): on the host (cuda-emu)
  # always, without the sweeps/ files (they repeat the other files' cases
  # at scale: about 80 s more), and all of it on the device when there is
  # one; LT_TEST_BACKENDS (default "cuda-emu cuda") narrows the list
  emu_paths=$(ls -d scenarios/*/ | grep -vx 'scenarios/sweeps/')
  for be in cuda-emu cuda; do
    if [[ " ${LT_TEST_BACKENDS-cuda-emu cuda} " != *" $be "* ]]; then
      skip=$((skip+1)); echo "skip  scenarios on $be: not in LT_TEST_BACKENDS"; continue
    fi
    if unusable $be; then
      skip=$((skip+1)); echo "skip  scenarios on $be: $why"; continue
    fi
    paths=scenarios/
    [ $be = cuda-emu ] && paths=$emu_paths
    # shellcheck disable=SC2086
    if "$build/localtensor" --backend $be run --compare-backend cpu $paths > "$build/scenarios-$be.log" 2>&1; then
      pass=$((pass+1)); echo "ok    scenarios on $be ($(tail -1 "$build/scenarios-$be.log"); $(grep -m1 '^--compare-backend' "$build/scenarios-$be.log"))"
    else
      fail=$((fail+1)); failed+=("scenarios-$be"); echo "FAIL  scenarios on $be"; tail -40 "$build/scenarios-$be.log"
    fi
  done
fi
# the MPI engine under mpirun (tools/run-mpi-tests.sh; --quick in the
# sanitizer builds, which run about three times slower) when this build has
# it, i.e. when mpicc was there (make deps installs Open MPI)
if [ $vg -eq 0 ]; then
  if [ -x "$build/mpi_engine" ]; then
    mode=""; [ -n "${SAN:-}" ] && mode=--quick
    if bash tools/run-mpi-tests.sh "$build" $mode > "$build/mpi-tests.log" 2>&1; then
      pass=$((pass+1)); echo "ok    mpi ($(tail -1 "$build/mpi-tests.log"))"
    else
      fail=$((fail+1)); failed+=("mpi"); echo "FAIL  mpi"; grep -v "^ok " "$build/mpi-tests.log" | tail -40
    fi
  else
    echo "skip  mpi: $build has no MPI build (mpicc was not found when it was built); not counted"
  fi
fi
# the fuzz harnesses (test/fuzz/) replayed over their seeds and regression
# inputs; make test builds BUILD/replay_<harness> for each
if [ $vg -eq 0 ] && ls test/fuzz/fuzz_*.c >/dev/null 2>&1; then
  if ! bash test/fuzz/make-seeds.sh "$build/fuzz-seeds" > "$build/fuzz-seeds.log" 2>&1; then
    fail=$((fail+1)); failed+=("fuzz-seeds"); echo "FAIL  fuzz seeds"; tail -20 "$build/fuzz-seeds.log"
  fi
  for src in test/fuzz/fuzz_*.c; do
    h=$(basename "$src" .c); h=${h#fuzz_}
    name="replay_$h"
    if [ ! -x "$build/$name" ]; then
      fail=$((fail+1)); failed+=("$name"); echo "FAIL  $name (not built)"; continue
    fi
    dirs=()
    for d in "$build/fuzz-seeds/$h" "test/fuzz/regressions/$h"; do [ -d "$d" ] && dirs+=("$d"); done
    out=$(OPENBLAS_NUM_THREADS=1 "$build/$name" "${dirs[@]}" 2>&1); rc=$?
    if [ $rc -eq 0 ]; then
      pass=$((pass+1)); echo "ok    $name ($(echo "$out" | tail -1 | sed 's/^replay: //'))"
    else
      fail=$((fail+1)); failed+=("$name"); echo "FAIL  $name (exit $rc)"; echo "$out" | tail -40
    fi
  done
fi
# every docs/... citation names an existing section (and the check itself
# rejects bad ones); `make install` gives users what the README says
if out=$(bash tools/check-citations.sh 2>&1 && bash tools/check-citations.sh --self-test 2>&1); then
  pass=$((pass+1)); echo "ok    citations ($(echo "$out" | head -1))"
else
  fail=$((fail+1)); failed+=("citations"); echo "FAIL  citations"; echo "$out" | tail -40
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
