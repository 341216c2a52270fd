#!/usr/bin/env bash
# tools/fault-run.sh — allocation fault injection over `localtensor run`.
#
#   tools/fault-run.sh [-a MAXALL] [-j JOBS] [-s SITES_OUT] LOCALTENSOR FILE...
#
# Why: every out-of-memory path of the loader, the runner and the library
# must give a clean error (exit 2, a message saying "out of memory" and
# where), leak nothing and never crash. kernels/alloc.h counts allocations
# and fails a chosen one; this script drives the CLI through it.
#
# For each scenario FILE: one counting run (LOCALTENSOR_FAULT_AT=0) gives the
# allocation count, the call sites reached and the baseline output. Then
#  - a file with at most MAXALL allocations (default 3000) is run once for
#    every N = 1..count with the Nth allocation failing (SQLite style);
#  - a bigger file is run per call site reached: its 1st, 2nd and last
#    allocation there failing (LOCALTENSOR_FAULT_SITE), so every injection
#    point the file reaches is hit, also inside loops and after a warm cache.
# Each run must either
#  - exit 2 with "out of memory" in its output (the failure was reported), or
#  - give exactly the baseline exit code and output (timings aside): the
#    allocation was optional (a cache entry) and the result is unchanged;
# and must not crash, time out or report a sanitizer error or leak (build
# with `make asan`; leak detection is on). A run whose fault did not fire
# must match the baseline too.
#
# Prints one line per problem and a summary; exit 0 when there is none,
# 1 otherwise, 2 for bad usage. SITES_OUT gets the sites reached, one
# "FILE:LINE" per line (for counting coverage against the source).
set -u
maxall=3000
jobs=2
sites_out=
while getopts "a:j:s:" o; do
  case $o in
    a) maxall=$OPTARG ;;
    j) jobs=$OPTARG ;;
    s) sites_out=$OPTARG ;;
    *) echo "usage: $0 [-a MAXALL] [-j JOBS] [-s SITES_OUT] LOCALTENSOR FILE..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -lt 2 ] || [ ! -x "$1" ]; then
  echo "usage: $0 [-a MAXALL] [-j JOBS] [-s SITES_OUT] LOCALTENSOR FILE... (LOCALTENSOR must be built)" >&2
  exit 2
fi
bin=$1; shift
work=$(mktemp -d "${TMPDIR:-/tmp}/lt-fault.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:exitcode=99:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-exitcode=98:print_stacktrace=1}

# durations and the progress line vary from run to run
normalize() { sed -E 's/\(?[0-9]+(\.[0-9]+)? ?(ms|s|us|µs)\)?//g' "$1"; }

# one_run FILE TAG N [SITE]: runs once, writes "TAG status fired at" to
# $work/res.TAG; status is ok / absorbed / FAIL:reason
one_run() {
  local file=$1 tag=$2 n=$3 site=${4:-}
  local out=$work/out.$tag rep=$work/rep.$tag rc st fired at
  rm -f "$rep"
  LOCALTENSOR_FAULT_AT=$n LOCALTENSOR_FAULT_SITE=$site LOCALTENSOR_FAULT_REPORT=$rep \
    timeout 120 "$bin" run "$file" >"$out" 2>&1
  rc=$?
  fired=0; at=-
  if [ -s "$rep" ]; then
    read -r _ fired_kv rest <"$rep"
    fired=${fired_kv#fired=}
    case $rest in at\ *) at=${rest#at } ;; esac
  fi
  local base=$work/base.$(basename "$file").$(echo "$file" | cksum | cut -d' ' -f1)
  if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|Segmentation|Aborted' "$out"; then
    st="FAIL:sanitizer"
  elif [ $rc -ge 3 ] || [ ! -s "$rep" ]; then
    st="FAIL:exit-$rc"
  elif [ "$rc" = "$(cat "$base.rc")" ] && normalize "$out" | cmp -s - "$base.out"; then
    if [ "$fired" = 0 ]; then st=ok; else st=absorbed; fi
  elif [ "$fired" != 0 ] && [ $rc -eq 2 ] && grep -q 'out of memory' "$out"; then
    st=ok
  elif [ "$fired" = 0 ]; then
    st="FAIL:differs-without-fault"
  else
    st="FAIL:exit-$rc-without-oom-message"
  fi
  echo "$tag $st $fired $at" >"$work/res.$tag"
  if [ "${st#FAIL}" != "$st" ]; then
    { echo "== $file N=$n site=${site:-any}: $st (exit $rc, fault at $at)"; tail -15 "$out"; } >"$work/fail.$tag"
  fi
  rm -f "$out" "$rep"
}
export -f one_run normalize
export bin work

total=0; nfail=0; nabsorbed=0; nfired=0
: >"$work/sites.all"; : >"$work/sites.fired"; : >"$work/sites.absorbed"
for file in "$@"; do
  key=$(basename "$file").$(echo "$file" | cksum | cut -d' ' -f1)
  base=$work/base.$key
  LOCALTENSOR_FAULT_AT=0 LOCALTENSOR_FAULT_REPORT=$base.rep timeout 300 "$bin" run "$file" >"$base.raw" 2>&1
  echo $? >"$base.rc"
  normalize "$base.raw" >"$base.out"
  if [ ! -s "$base.rep" ]; then
    echo "FAIL  $file: the counting run did not finish (exit $(cat "$base.rc"))"
    nfail=$((nfail + 1)); continue
  fi
  allocs=$(head -1 "$base.rep" | sed -E 's/allocs=([0-9]+).*/\1/')
  grep '^site ' "$base.rep" | awk '{print $2}' >>"$work/sites.all"
  : >"$work/jobs"
  if [ "$allocs" -le "$maxall" ]; then
    mode="every N of $allocs"
    for n in $(seq 1 "$allocs"); do echo "$file $key.$n $n" >>"$work/jobs"; done
  else
    mode="per site"
    i=0
    grep '^site ' "$base.rep" | while read -r _ s h; do
      for k in $(printf '%s\n' 1 2 "$h" | sort -nu); do
        [ "$k" -le "$h" ] && echo "$file $key.s$i.$k $k $s"
      done
      i=$((i + 1))
    done >>"$work/jobs"
  fi
  njobs=$(wc -l <"$work/jobs")
  # shellcheck disable=SC2016
  xargs -P "$jobs" -L 1 bash -c 'one_run "$@"' _ <"$work/jobs"
  f=0; a=0; fi_=0
  for r in "$work"/res."$key".*; do
    [ -e "$r" ] || continue
    read -r _ st fired at <"$r"
    [ "$fired" != 0 ] && { fi_=$((fi_ + 1)); echo "$at" >>"$work/sites.fired"; }
    case $st in FAIL*) f=$((f + 1)) ;; absorbed) a=$((a + 1)); echo "$at" >>"$work/sites.absorbed" ;; esac
    rm -f "$r"
  done
  for x in "$work"/fail."$key".*; do [ -e "$x" ] && cat "$x" && rm -f "$x"; done
  total=$((total + njobs)); nfail=$((nfail + f)); nabsorbed=$((nabsorbed + a)); nfired=$((nfired + fi_))
  printf '%-5s %s: %d runs (%s), %d faults fired, %d absorbed, %d failed\n' \
    "$([ $f -eq 0 ] && echo ok || echo FAIL)" "$file" "$njobs" "$mode" "$fi_" "$a" "$f"
done
nsites=$(sort -u "$work/sites.all" | wc -l)
nfsites=$(sort -u "$work/sites.fired" | grep -vc '^-$')
[ -n "$sites_out" ] && sort -u "$work/sites.all" >"$sites_out"
echo
echo "fault injection: $total runs over $# files, $nfired faults fired at $nfsites distinct sites" \
     "($nsites sites reached), $nabsorbed absorbed, $nfail failed"
if [ $nabsorbed -gt 0 ]; then
  echo "absorbed (the run went on with the same result) at:"
  sort "$work/sites.absorbed" | uniq -c | sed 's/^/  /'
fi
[ $nfail -eq 0 ]
