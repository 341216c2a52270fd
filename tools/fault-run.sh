#!/usr/bin/env bash
# tools/fault-run.sh — allocation fault injection over the `localtensor` process.
#
#   tools/fault-run.sh [-a MAXALL] [-j JOBS] [-s SITES_OUT] LOCALTENSOR FILE...
#   tools/fault-run.sh [-a MAXALL] [-j JOBS] [-s SITES_OUT] -c "ARGS" LOCALTENSOR
#
# Why: on every out-of-memory path the CLI must exit 2 with a message saying
# "out of memory" and where, leak nothing and never crash. The bulk of the
# fault injection runs in process (test/fault/, `make fault`); this script
# checks what only the real process shows: exit codes, what is printed, and
# LeakSanitizer at exit. kernels/alloc.h fails the chosen allocation; the
# CLI arms it from LOCALTENSOR_FAULT_AT / _SITE / _REPORT (tools/cli/main.c).
#
# Targets: `localtensor run FILE` for each FILE, or `localtensor ARGS` with
# -c (ARGS split on spaces). For each target one counting run
# (LOCALTENSOR_FAULT_AT=0) gives the allocation count, the call sites reached
# and the baseline output. Then
#  - with at most MAXALL allocations (default 3000) the target runs once for
#    every N = 1..count with the Nth allocation failing (SQLite style);
#  - otherwise once per call site reached with its 1st, 2nd and last
#    allocation failing (LOCALTENSOR_FAULT_SITE).
# Each run must either exit 2 with "out of memory" in its output, or give
# exactly the baseline exit code and output (durations aside: the failed
# allocation was optional, e.g. a cache entry); it must not crash, time out
# or report a sanitizer error or leak (use an ASan build).
#
# Prints one line per problem and per target, then a summary; exit 0 when
# nothing failed, 1 otherwise, 2 for bad usage. SITES_OUT gets the call
# sites reached, one FILE:LINE per line.
set -u
maxall=3000 jobs=2 sites_out= cmd=
usage() {
  echo "usage: $0 [-a MAXALL] [-j JOBS] [-s SITES_OUT] LOCALTENSOR FILE..." >&2
  echo "       $0 [-a MAXALL] [-j JOBS] [-s SITES_OUT] -c \"ARGS\" LOCALTENSOR" >&2
  exit 2
}
while getopts "a:j:s:c:" o; do
  case $o in
    a) maxall=$OPTARG ;;
    j) jobs=$OPTARG ;;
    s) sites_out=$OPTARG ;;
    c) cmd=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] && [ -x "$1" ] || usage
bin=$1; shift
[ -n "$cmd" ] || [ $# -ge 1 ] || usage
work=$(mktemp -d "${TMPDIR:-/tmp}/lt-fault.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:exitcode=99}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=98:print_stacktrace=1}

# durations vary from run to run
normalize() { sed -E 's/\([0-9]+(\.[0-9]+)? ?(ms|s|us)\)//g' "$1"; }

# one_run TAG N [SITE]: runs the target ($targs) once; writes
# "status fired at" to $work/res.TAG (status: ok, absorbed or FAIL:why)
one_run() {
  local tag=$1 n=$2 site=${3:-}
  local out=$work/out.$tag rep=$work/rep.$tag rc st fired=0 at=- kv rest
  # shellcheck disable=SC2086
  LOCALTENSOR_FAULT_AT=$n LOCALTENSOR_FAULT_SITE=$site LOCALTENSOR_FAULT_REPORT=$rep \
    timeout 120 "$bin" $targs >"$out" 2>&1
  rc=$?
  if [ -s "$rep" ]; then
    read -r _ kv rest <"$rep"
    fired=${kv#fired=}
    case $rest in at\ *) at=${rest#at } ;; esac
  fi
  if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$out"; then
    st=FAIL:sanitizer
  elif [ $rc -ge 3 ] || [ ! -s "$rep" ]; then
    st=FAIL:exit-$rc
  elif [ "$rc" = "$(cat "$work/base.rc")" ] && normalize "$out" | cmp -s - "$work/base.out"; then
    if [ "$fired" = 0 ]; then st=ok; else st=absorbed; fi
  elif [ "$fired" != 0 ] && [ $rc -eq 2 ] && grep -q 'out of memory' "$out"; then
    st=ok
  elif [ "$fired" = 0 ]; then
    st=FAIL:differs-without-a-fault
  else
    st=FAIL:exit-$rc-without-an-out-of-memory-message
  fi
  echo "$st $fired $at" >"$work/res.$tag"
  case $st in FAIL*)
    { echo "== localtensor $targs, N=$n${site:+ at site $site}: $st (exit $rc, fault at $at)"
      tail -12 "$out"; } >"$work/fail.$tag" ;;
  esac
  rm -f "$out" "$rep"
}
export -f one_run normalize
export bin work

targets=()
if [ -n "$cmd" ]; then targets=("$cmd"); else for f in "$@"; do targets+=("run $f"); done; fi
total=0 nfail=0 nabsorbed=0
: >"$work/sites.all"; : >"$work/sites.absorbed"
for targs in "${targets[@]}"; do
  export targs
  rm -f "$work"/res.* "$work"/fail.* "$work/base.rep"
  # shellcheck disable=SC2086
  LOCALTENSOR_FAULT_AT=0 LOCALTENSOR_FAULT_REPORT=$work/base.rep timeout 300 "$bin" $targs >"$work/base.raw" 2>&1
  echo $? >"$work/base.rc"
  normalize "$work/base.raw" >"$work/base.out"
  if [ ! -s "$work/base.rep" ]; then
    echo "FAIL  localtensor $targs: the counting run did not finish (exit $(cat "$work/base.rc"))"
    nfail=$((nfail + 1)); continue
  fi
  allocs=$(head -1 "$work/base.rep" | sed -E 's/allocs=([0-9]+).*/\1/')
  grep '^site ' "$work/base.rep" | awk '{print $2}' >>"$work/sites.all"
  if [ "$allocs" -le "$maxall" ]; then
    mode="every N"
    seq 1 "$allocs" | awk '{print "n" $1, $1}' >"$work/jobs"
  else
    mode="1st, 2nd, last per site"
    grep '^site ' "$work/base.rep" | awk '{ h = $3; print "s" NR "a", 1, $2; if (h >= 2) print "s" NR "b", 2, $2;
                                           if (h > 2) print "s" NR "c", h, $2 }' >"$work/jobs"
  fi
  njobs=$(wc -l <"$work/jobs")
  # shellcheck disable=SC2016
  xargs -P "$jobs" -L 1 bash -c 'one_run "$@"' _ <"$work/jobs"
  f=0 a=0 fi_=0
  for r in "$work"/res.*; do
    [ -e "$r" ] || continue
    read -r st fired at <"$r"
    [ "$fired" != 0 ] && fi_=$((fi_ + 1))
    case $st in
      FAIL*) f=$((f + 1)) ;;
      absorbed) a=$((a + 1)); echo "$at" >>"$work/sites.absorbed" ;;
    esac
  done
  for x in "$work"/fail.*; do [ -e "$x" ] && cat "$x"; done
  total=$((total + njobs)) nfail=$((nfail + f)) nabsorbed=$((nabsorbed + a))
  printf '%-5s localtensor %s: %d allocations; %d runs (%s), %d faults fired, %d absorbed, %d failed\n' \
    "$([ $f -eq 0 ] && echo ok || echo FAIL)" "$targs" "$allocs" "$njobs" "$mode" "$fi_" "$a" "$f"
done
nsites=$(sort -u "$work/sites.all" | grep -c .)
[ -n "$sites_out" ] && sort -u "$work/sites.all" >"$sites_out"
if [ $nabsorbed -gt 0 ]; then
  echo "absorbed (the run went on with the same result) at:"
  sort "$work/sites.absorbed" | uniq -c | sed 's/^/  /'
fi
echo "process fault injection: $total runs over ${#targets[@]} target(s), $nsites call sites reached," \
     "$nabsorbed absorbed, $nfail failed"
[ $nfail -eq 0 ]
