#!/usr/bin/env bash
# tools/run-mpi-tests.sh BUILD [--quick] — the MPI engine under mpirun
# (tools/run-tests.sh runs it in `make test` when BUILD has the MPI build):
#   - BUILD/mpi_engine (test/mpi/engine.c) with P = 1, 2, 3, 4, 8 processes;
#   - the whole scenario library, sweep files included, with --engine mpi
#     under mpirun -np 1, 2 and 4: text, JSON and JUnit reports equal to an
#     in-process run's, timings and the JSON "engine" field aside;
#   - P = world: the cases whose mesh has 3, 6 or 8 ranks (--world N) under
#     mpirun -np N (P = 1, 2, 4 are covered above), the 8-rank sweeps
#     included (about 41,000 cases: a few minutes on 2 cores);
#   - --cross-check over the library (non-sweep files) at P = 2, and finding
#     a planted bug (LT_MPI_PLANT_SWAP=1 swaps two members' pieces in the
#     MPI all_gather) set on process 1 only;
#   - bad runs end cleanly with a message, never a hang (each run has a
#     timeout): a check failing on one process only, an engine error on
#     one process only, too many processes, mpirun missing;
#   - --shards owned (each process holds only its own ranks' shards):
#     scenarios/mpi/owned.yaml at P = 1, 2, 4, 8 with the in-process text
#     report, a wrong value on process 1's rank, the planted swap found by
#     the verification and by --cross-check, and a 256 MiB tensor on 8
#     processes with no process reaching 256 MiB of resident memory.
# --quick (the sanitizer builds): the unit test at P = 1, 2, 4, the library
# (non-sweep files) at P = 2, the bad runs, and --shards owned at P = 2, 4
# without the 256 MiB run.
# Prints "ok    mpi: ..." / "FAIL  mpi: ..." lines and "mpi: N passed, N failed";
# exits 0 when all passed, 1 when one failed, 2 when mpirun is missing.
set -u
build=$1
mode=${2:-}
cd "$(dirname "$0")/.." || exit 2
MPIRUN=${MPIRUN:-mpirun}
if ! command -v "$MPIRUN" >/dev/null 2>&1; then
  echo "run-mpi-tests: $MPIRUN was not found: the MPI tests need Open MPI's launcher (make deps installs it;" \
       "Debian: apt-get install openmpi-bin libopenmpi-dev)" >&2
  exit 2
fi
[ "$mode" = "--check-launcher" ] && exit 0
# what Open MPI needs here: running as root in containers, 2 cores for up to
# 8 processes, shared-memory transport only (halves start-up), yielding
# while waiting (oversubscribed cores)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader \
       OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_rmaps_base_oversubscribe=1 NO_COLOR=1 OPENBLAS_NUM_THREADS=1
# LeakSanitizer cannot tell Open MPI's allocations (kept until exit, in
# plugins it unloads) from ours: off under mpirun. Our own blocks are still
# counted: test/mpi/engine.c checks that every kernels/alloc.h block is freed.
[ "$mode" = "--quick" ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
bin=$build/localtensor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); echo "ok    mpi: $1"; }
bad() { fail=$((fail+1)); echo "FAIL  mpi: $1"; [ -f "$tmp/log" ] && tail -30 "$tmp/log"; }
mpi() { timeout 600 "$MPIRUN" --oversubscribe "$@"; }

# timings differ run to run: "(0.3 ms)", "(1.25 s)", "time_s" lines
norm_text() { sed -E 's/\([0-9]+\.[0-9]+ (ms|s)\)/(T)/g' "$1"; }
norm_json() { sed -E 's/"time_s": *[0-9.e+-]+//g; s/,"engine":"mpi"//' "$1"; }
norm_junit() { sed -E 's/ time="[0-9.e+-]+"//g' "$1"; }

# the files of the library; "light" leaves out the sweep files
all_files=$(ls scenarios/*/*.yaml)
light_files=$(ls scenarios/*/*.yaml | grep -v '^scenarios/sweeps/\|^scenarios/ops/sweep.yaml$')

# same_reports NAME NP FILES... [-- OPTIONS]: in-process vs mpirun -np NP
# (the in-process reports of the last argument list are kept for the next call)
same_reports() {
  local name=$1 np=$2; shift 2
  if [ "$*" != "${last_args:-}" ]; then
    "$bin" run "$@" --json "$tmp/in.json" --junit "$tmp/in.xml" > "$tmp/in.txt" 2>/dev/null
    last_rin=$?
    last_args="$*"
  fi
  local rin=$last_rin
  mpi -np "$np" "$bin" run --engine mpi "$@" --json "$tmp/mpi.json" --junit "$tmp/mpi.xml" > "$tmp/mpi.txt" 2> "$tmp/log"
  local rmpi=$?
  if [ $rin -ne $rmpi ]; then cp "$tmp/mpi.txt" "$tmp/log"; bad "$name: exit $rmpi, in-process $rin"; return; fi
  if ! diff <(norm_text "$tmp/in.txt") <(norm_text "$tmp/mpi.txt") > "$tmp/log"; then bad "$name: text report differs"; return; fi
  if ! diff <(norm_json "$tmp/in.json") <(norm_json "$tmp/mpi.json") > "$tmp/log"; then bad "$name: JSON report differs"; return; fi
  if ! diff <(norm_junit "$tmp/in.xml") <(norm_junit "$tmp/mpi.xml") > "$tmp/log"; then bad "$name: JUnit report differs"; return; fi
  if ! grep -q '"engine":.*"mpi"' "$tmp/mpi.json"; then bad "$name: no engine field in the JSON"; return; fi
  ok "$name ($(tail -1 "$tmp/mpi.txt"))"
}

# 1. the engine against the in-process one, byte for byte
nps="1 2 3 4 8"; [ "$mode" = "--quick" ] && nps="1 2 4"
for np in $nps; do
  if mpi -np "$np" "$build/mpi_engine" > "$tmp/log" 2>&1; then ok "mpi_engine -np $np"; else bad "mpi_engine -np $np"; fi
done

# 2. the library, reports equal to the in-process run's
if [ "$mode" = "--quick" ]; then
  # shellcheck disable=SC2086
  same_reports "library (no sweeps) -np 2" 2 $light_files
else
  for np in 1 2 4; do
    # shellcheck disable=SC2086
    same_reports "library -np $np" "$np" $all_files
  done
  # 3. P = world
  for w in 3 6 8; do
    # shellcheck disable=SC2086
    same_reports "P = world = $w (--world $w)" "$w" $all_files --world "$w"
  done
  # 4. cross-check: nothing to find in a correct engine
  # shellcheck disable=SC2086
  if mpi -np 2 "$bin" run --engine mpi --cross-check $light_files > "$tmp/log" 2>&1; then
    ok "--cross-check -np 2 (no sweeps): $(tail -1 "$tmp/log")"
  else
    bad "--cross-check -np 2 (no sweeps)"
  fi
fi

# 5. a planted engine bug on process 1 only. Without --cross-check its
# wrong bytes fail a check there, reported by process 0; with it, the
# collective fails on every process with process 1's message (no hang).
f=scenarios/collectives/all_gather.yaml
run=("$bin" run --engine mpi "$f")
mpi -np 1 "${run[@]}" : -np 1 -x LT_MPI_PLANT_SWAP=1 "${run[@]}" > "$tmp/log" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "^FAIL .*all_gather_by_mesh_dim_name" "$tmp/log" &&
   grep -q "on process 1: $f:22:7: expect_local: " "$tmp/log"; then
  ok "a check failing on process 1 only: exit 1, reported by process 0"
else
  bad "a check failing on process 1 only (exit $rc)"
fi
mpi -np 1 "${run[@]}" --cross-check : -np 1 -x LT_MPI_PLANT_SWAP=1 "${run[@]}" --cross-check > "$tmp/log" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "all_gather on mesh dim 0 (dp), group \[0,2\]: engine 'mpi': cross-check: rank 2's result differs from the in-process engine's at element 0 (on process 1)" "$tmp/log"; then
  ok "--cross-check finds the planted swap (on process 1 only): exit 2, the collective, group and rank named"
else
  bad "--cross-check and the planted swap (exit $rc)"
fi

# 8. --shards owned: a process holds only its own ranks' shards; the plan's
# collectives move them between processes (scenarios/mpi/owned.yaml)
"$bin" run scenarios/mpi/owned.yaml > "$tmp/in.txt" 2>&1
onps="1 2 4 8"; [ "$mode" = "--quick" ] && onps="2 4"
for np in $onps; do
  mpi -np "$np" "$bin" run --engine mpi --shards owned scenarios/mpi/owned.yaml > "$tmp/mpi.txt" 2> "$tmp/log"; rc=$?
  if [ $rc -eq 0 ] && diff <(norm_text "$tmp/in.txt") <(norm_text "$tmp/mpi.txt") > "$tmp/log"; then
    ok "--shards owned -np $np: the same report as in-process ($(tail -1 "$tmp/mpi.txt"))"
  else
    bad "--shards owned -np $np (exit $rc)"
  fi
done
# the library (no sweeps): every case passes as in-process or stops with
# "not supported yet" (steps that need other processes' values); none fails
# shellcheck disable=SC2086
"$bin" run $light_files > "$tmp/in.txt" 2>&1
lnps="2 4"; [ "$mode" = "--quick" ] && lnps="2"
for np in $lnps; do
  # shellcheck disable=SC2086
  mpi -np "$np" "$bin" run --engine mpi --shards owned $light_files > "$tmp/mpi.txt" 2> "$tmp/log"; rc=$?
  nok=$(grep -c '^ok' "$tmp/mpi.txt"); nerr=$(grep -c '^ERROR' "$tmp/mpi.txt")
  nyet=$(grep -A1 '^ERROR' "$tmp/mpi.txt" | grep -c 'not supported yet')
  if [ $rc -le 2 ] && ! grep -q '^FAIL' "$tmp/mpi.txt" && [ "$nyet" -eq "$nerr" ] && [ "$nok" -gt 50 ] &&
     ! grep -Fxv -f <(norm_text "$tmp/in.txt" | grep '^ok') <(norm_text "$tmp/mpi.txt" | grep '^ok') > "$tmp/log"; then
    ok "--shards owned -np $np, the library (no sweeps): $nok cases as in-process, $nerr not supported yet, none failed"
  else
    cp "$tmp/mpi.txt" "$tmp/log"; bad "--shards owned -np $np, the library (exit $rc, $nok ok, $nerr errors of which $nyet not supported yet)"
  fi
done
# a wrong value held by process 1 only is found there and reported by process 0
sed 's/3: \[6, 7\]}}/3: [6, 9]}}/' scenarios/mpi/owned.yaml > "$tmp/owned_bad.yaml"
mpi -np 2 "$bin" run --engine mpi --shards owned "$tmp/owned_bad.yaml" > "$tmp/log" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "on process 1: .*expect_local of 'xd': rank 3 (coord \[3\]): index \[1\]: expected 9, actual 7" "$tmp/log"; then
  ok "--shards owned: a check failing on process 1's rank: exit 1, reported by process 0"
else
  bad "--shards owned: a check failing on process 1's rank (exit $rc)"
fi
# a planted engine bug (members 0 and 1 swapped in all_gather's MPI path):
# each process's verification of its own shards finds it
mpi -np 2 -x LT_MPI_PLANT_SWAP=1 "$bin" run --engine mpi --shards owned scenarios/mpi/owned.yaml > "$tmp/log" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "verification of redistribute of 'xd' \[S(0)\] -> \[R\] failed at plan step 1 of 1 (mesh dim 0: S(0) -> R, all_gather): rank 0, index \[0\] (global \[0\]): expected 0, actual 2" "$tmp/log"; then
  ok "--shards owned: verification finds the planted swap: exit 1, rank and index named"
else
  bad "--shards owned: the planted swap (exit $rc)"
fi
mpi -np 2 -x LT_MPI_PLANT_SWAP=1 "$bin" run --engine mpi --shards owned --cross-check scenarios/mpi/owned.yaml > "$tmp/log" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "all_gather on mesh dim 0, group \[0,1,2,3\]: engine 'mpi': cross-check: rank 0's result differs from the in-process engine's at element 0" "$tmp/log"; then
  ok "--shards owned --cross-check finds the planted swap: exit 2, the collective, group and rank named"
else
  bad "--shards owned --cross-check and the planted swap (exit $rc)"
fi
# a redistribute refused on process 1 only (its memory budget) before any
# collective: every process stops at that step, no hang
cat > "$tmp/owned_budget.yaml" <<'YAML'
- name: owned_budget
  mesh: 8
  tensors: {x: {shape: [1024, 1024]}}
  steps:
    - distribute: {tensor: x, placements: ["S(0)"], as: a}
    - redistribute: {tensor: a, to: ["S(1)"], as: b}
YAML
mpi -np 1 "$bin" run --engine mpi --shards owned "$tmp/owned_budget.yaml" : \
  -np 1 -x LOCALTENSOR_MEMORY_LIMIT=4M "$bin" run --engine mpi --shards owned "$tmp/owned_budget.yaml" > "$tmp/log" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "this redistribute (this process's 4 of 8 ranks, step 1) needs 6.0 MiB .*LOCALTENSOR_MEMORY_LIMIT (on process 1)" "$tmp/log"; then
  ok "--shards owned: a redistribute refused on process 1 only stops every process: exit 2, no hang"
else
  bad "--shards owned: a redistribute refused on process 1 only (exit $rc)"
fi
if [ "$mode" != "--quick" ]; then
  # scale-out: a 256 MiB tensor (too big for one scenario tensor in one
  # process) on 8 processes, each holding one rank's 32 MiB shard
  cat > "$tmp/owned_scale.yaml" <<'YAML'
- name: owned_scale_out
  description: "(4096, 16384) f32 = 256 MiB on 8 ranks, S(0) -> S(1): one all_to_all between processes"
  mesh: 8
  tensors: {x: {shape: [4096, 16384]}}
  steps:
    - distribute: {tensor: x, placements: ["S(0)"], as: a}
    - redistribute: {tensor: a, to: ["S(1)"], as: b}
    - expect_plan: {collectives: [all_to_all]}
    - expect_full: {tensor: b, equals: x}
YAML
  /usr/bin/time -f "maxrss_kb %M" -o "$tmp/rss" timeout 600 "$MPIRUN" --oversubscribe -np 8 "$bin" run --engine mpi \
    --shards owned "$tmp/owned_scale.yaml" > "$tmp/log" 2>&1; rc=$?
  rss=$(awk '/maxrss_kb/ {print $2}' "$tmp/rss" 2>/dev/null)
  if [ $rc -eq 0 ] && [ -n "$rss" ] && [ "$rss" -lt 262144 ] &&
     grep -q "a process holds 32.0 MiB of them when they are sharded over every rank" "$tmp/log"; then
    ok "--shards owned -np 8: a 256 MiB tensor, the largest process at $((rss / 1024)) MiB"
  else
    bad "--shards owned -np 8 scale-out (exit $rc, largest process ${rss:-?} KiB)"
  fi
fi

# 6. too many processes for every mesh of the run
mpi -np 8 "$bin" run --engine mpi "$f" > "$tmp/log" 2>&1; rc=$?
if [ $rc -ne 0 ] && grep -q "localtensor run: 8 processes but the largest mesh of the selected cases has 4 ranks: run with 1 to 4 processes (mpirun -np)" "$tmp/log"; then
  ok "-np 8 for meshes of at most 4 ranks: a clear error"
else
  bad "-np 8 for meshes of at most 4 ranks (exit $rc)"
fi

# 7. mpirun missing
out=$(MPIRUN=/nonexistent/mpirun bash tools/run-mpi-tests.sh "$build" --check-launcher 2>&1); rc=$?
if [ $rc -eq 2 ] && echo "$out" | grep -q "run-mpi-tests: /nonexistent/mpirun was not found"; then
  ok "mpirun missing: exit 2 with what to install"
else
  echo "$out" > "$tmp/log"; bad "mpirun missing (exit $rc)"
fi

echo "mpi: $pass passed, $fail failed"
[ $fail -eq 0 ]
