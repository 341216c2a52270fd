#!/usr/bin/env bash
# tools/run-tests.sh BUILD [--valgrind] TEST_BIN... — runs the cmocka unit
# tests, then (unless --valgrind) the scenario library and the bad-input
# cases, and prints one closing line "N passed, N failed".
set -u
build=$1; shift
vg=0
if [ "${1:-}" = "--valgrind" ]; then vg=1; shift; fi
pass=0; fail=0; failed=()
for t in "$@"; do
  name=$(basename "$t")
  if [ $vg -eq 1 ]; then
    out=$(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
          "$t" 2>&1); rc=$?
  else
    out=$("$t" 2>&1); rc=$?
  fi
  if [ $rc -eq 0 ]; then
    pass=$((pass+1)); echo "ok    $name"
  else
    fail=$((fail+1)); failed+=("$name"); echo "FAIL  $name (exit $rc)"; echo "$out" | tail -40
  fi
done
if [ $vg -eq 0 ] && [ -x "$build/localtensor" ] && [ -d scenarios ] && ls scenarios/*/*.yaml >/dev/null 2>&1; then
  if "$build/localtensor" run scenarios/ > "$build/scenarios.log" 2>&1; then
    pass=$((pass+1)); echo "ok    scenarios ($(tail -1 "$build/scenarios.log"))"
  else
    fail=$((fail+1)); failed+=("scenarios"); echo "FAIL  scenarios"; tail -40 "$build/scenarios.log"
  fi
fi
echo
[ $fail -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
