#!/usr/bin/env bash
# tools/bench/run-mpi-bench.sh BUILD — `make bench`'s MPI rows (builds with
# MPI): all_gather, reduce_scatter and all_to_all on 8 ranks, global tensor
# 64 MiB of f32, under mpirun -np 8 (MPI engine, one rank per process) and
# -np 1 (in-process engine), side by side (tools/bench/mpi/bench_mpi.c), and
# mpirun's start-up for 1 and 8 processes (MPI_Init + MPI_Finalize).
# Seconds are medians of 5 calls; GB/s counts the bytes all ranks write;
# "mpi/inproc" is the in-process time over the MPI time (below 1: MPI slower).
set -u
build=$1
bin=$build/bench_mpi
command -v mpirun >/dev/null || { echo "run-mpi-bench: mpirun not found (make deps installs Open MPI)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader \
       OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1
startup() {
  local best=""
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s.%N)
    timeout 120 mpirun --oversubscribe -np "$1" "$bin" --startup || return 1
    t1=$(date +%s.%N)
    best=$(echo "$t0 $t1 ${best:-1e9}" | awk '{d=$2-$1; print (d<$3?d:$3)}')
  done
  echo "$best"
}
s1=$(startup 1) || exit 2
s8=$(startup 8) || exit 2
one=$(timeout 600 mpirun -np 1 "$bin") || exit 2
eight=$(timeout 600 mpirun --oversubscribe -np 8 "$bin") || exit 2
echo
echo "MPI engine vs in-process, 8 ranks, global tensor 64 MiB f32 (median of 5 calls)"
printf '%-22s %12s %10s %12s %10s %11s\n' "collective" "P=1 inproc s" "GB/s" "P=8 mpi s" "GB/s" "mpi/inproc"
echo "$one" | grep '^ROW' | while read -r _ name t bytes; do
  t8=$(echo "$eight" | awk -v n="$name" '$1=="ROW" && $2==n {print $3}')
  awk -v n="$name" -v a="$t" -v b="$t8" -v by="$bytes" \
    'BEGIN {printf "%-22s %12.4f %10.2f %12.4f %10.2f %11.3f\n", n, a, by/a/1e9, b, by/b/1e9, a/b}'
done
printf 'mpirun start-up (MPI_Init + MPI_Finalize, best of 3): -np 1 %.2f s, -np 8 %.2f s\n' "$s1" "$s8"
