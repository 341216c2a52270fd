#!/usr/bin/env bash
# tools/run-library.sh LOCALTENSOR [OPTIONS...] — runs the scenario library
# (every scenarios/**/*.yaml) with the given binary and prints its report; the
# last line is the summary "N passed, N failed, N errors". Extra options are
# passed to `localtensor run` (e.g. -v, -k FILTER, --junit FILE).
# Exit status: that of `localtensor run` (0 all passed, 1 a check failed,
# 2 a file could not be loaded or a step errored).
set -u
bin=${1:-build/localtensor}
shift || true
case $bin in /*) ;; *) bin="$PWD/$bin" ;; esac
cd "$(dirname "$0")/.." || exit 2
if [ ! -x "$bin" ]; then
  echo "run-library: $bin is not built (run make first)" >&2
  exit 2
fi
exec "$bin" run scenarios/ "$@"
