#!/usr/bin/env bash
# tools/check-style.sh [--list] — the two size rules of the C sources, checked
# the way curl's checksrc checks its own (`make test` runs it):
#   - a function body is at most 80 lines (from its head's first line to the
#     closing brace in column 0), so it reads at once;
#   - a line is at most 100 columns.
# Files: every tracked *.c, *.h and *.cu (git ls-files; without git, find).
# Code written before these rules still breaks them in places: those places
# are listed in tools/style-debt.txt ("fn FILE NAME LINES" for a function,
# "cols FILE COUNT" for a file's count of long lines). A listed place may
# shrink but never grow, and nothing unlisted may break a rule, so the debt
# only goes down; when a listed place is fixed, its line is deleted (the
# check says which lines are stale).
#   --list  prints the current places in the debt file's format (to rewrite
#           it after paying some off: tools/check-style.sh --list >
#           tools/style-debt.txt) and exits 0.
#   --self-test  runs the check on a scratch tree (a function of 81 lines,
#           a line of 101 columns, a listed function that grew, a stale
#           debt line) and fails unless each is judged right.
# STYLE_ROOT (environment): the tree to check (default: this repository).
# Prints "style: ..." and exits 0 when the rules hold, 1 otherwise.
set -u
export LC_ALL=C
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
max_fn=80
max_cols=100
if [ "${1:-}" = "--self-test" ]; then
  t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
  mkdir -p "$t/tools"
  fn() { echo "static int $1(int a) {"; for ((i = 0; i < $2 - 2; i++)); do echo "    a++;"; done; echo "    return a;"; echo "}"; }
  { echo "static int one(int a) { return a; }"; fn short 79; fn long81 80; fn grown 90; printf 'int w = 1; /* %084d */\n' 0; printf 'int v = 1; /* %083d */\n' 0; } > "$t/a.c"
  # (fn NAME N writes N + 1 lines: short 80, long81 81, grown 91; then a
  # line of 101 columns and one of 100)
  ok=1
  expect() {   # expect WANT_RC WHAT DEBT_LINES...
    local want=$1 what=$2; shift 2
    printf '%s\n' "$@" > "$t/tools/style-debt.txt"
    out=$(STYLE_ROOT=$t bash "$self" 2>&1); rc=$?
    if [ $rc -ne "$want" ]; then echo "self-test: $what: exit $rc, wanted $want:"; echo "$out"; ok=0; fi
  }
  expect 1 "nothing listed" "# none"
  expect 0 "all listed" "fn a.c long81 81" "fn a.c grown 91" "cols a.c 1"
  expect 1 "a listed function grew" "fn a.c long81 81" "fn a.c grown 85" "cols a.c 1"
  expect 1 "a stale line" "fn a.c long81 81" "fn a.c grown 91" "cols a.c 1" "fn a.c gone 99"
  expect 1 "the short one is not over" "fn a.c long81 81" "cols a.c 1"
  out=$(STYLE_ROOT=$t bash "$self" --list | grep -c '^fn a.c short ')
  [ "$out" = 0 ] || { echo "self-test: an 81-line function was counted over $max_fn"; ok=0; }
  [ $ok = 1 ] && echo "style self-test: ok" && exit 0
  exit 1
fi
cd "${STYLE_ROOT:-$(dirname "$0")/..}" || exit 2
debt=tools/style-debt.txt

if [ -z "${STYLE_ROOT:-}" ] && git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' | while read -r f; do [ -f "$f" ] && echo "$f"; done)
else
  mapfile -t files < <(find . \( -name '.git' -o -name 'build*' \) -prune -o -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -print | sed 's|^\./||' | sort)
fi

# current places: "fn FILE NAME LINES" for each function over max_fn lines,
# "cols FILE COUNT" for each file with lines over max_cols columns. A
# function head starts in column 0 with a name and "(" and reaches a "{" at
# a line's end before any ";"; its body ends at the next "}" in column 0.
current() {
  awk -v max_fn="$max_fn" -v max_cols="$max_cols" '
    FNR == 1 { cand = 0; infn = 0 }
    length($0) > max_cols { cols[FILENAME]++ }
    infn { if ($0 ~ /^}/) { n = FNR - start + 1; if (n > max_fn) print "fn", FILENAME, name, n; infn = 0 }; next }
    !cand && /^[A-Za-z_][A-Za-z0-9_ \t\*]*\(/ && !/^(typedef|struct|enum|union|static const|extern)[ \t]/ && !/;[ \t]*$/ {
      cand = 1; start = FNR
      h = $0; sub(/\(.*/, "", h); k = split(h, w, /[ \t\*]+/); name = w[k]
    }
    cand && /\{.*\}[ \t]*(\/\*.*)?$/ { cand = 0; next }   # a one-line function
    cand && /;[ \t]*(\/\*.*)?$/ && !/\{[ \t]*$/ { cand = 0; next }
    cand && /\{[ \t]*$/ { cand = 0; infn = 1; next }
    END { for (f in cols) print "cols", f, cols[f] }' "${files[@]}" | sort
}

if [ "${1:-}" = "--list" ]; then
  echo "# tools/style-debt.txt — places written before tools/check-style.sh's rules that"
  echo "# still break them; each may shrink, never grow (see that script)."
  current
  exit 0
fi

now=$(current)
problems=0
report() { echo "$1"; problems=$((problems + 1)); }
listed() { grep -v '^#' "$debt" 2>/dev/null; }
while read -r kind file what count; do
  [ -n "$kind" ] || continue
  if [ "$kind" = fn ]; then
    allowed=$(listed | awk -v f="$file" -v n="$what" '$1 == "fn" && $2 == f && $3 == n {print $4}')
    if [ -z "$allowed" ]; then
      report "$file: function $what is $count lines, over $max_fn (split it)"
    elif [ "$count" -gt "$allowed" ]; then
      report "$file: function $what grew to $count lines ($allowed listed in $debt; at most $max_fn for new code)"
    fi
  else
    count=$what
    allowed=$(listed | awk -v f="$file" '$1 == "cols" && $2 == f {print $3}')
    if [ -z "$allowed" ]; then
      awk -v m="$max_cols" -v f="$file" 'length($0) > m {print f ":" FNR ": " length($0) " columns, over " m}' "$file" | head -5
      report "$file: $count lines over $max_cols columns"
    elif [ "$count" -gt "$allowed" ]; then
      report "$file: $count lines over $max_cols columns, more than the $allowed listed in $debt"
    fi
  fi
done <<< "$now"
# stale debt lines: fixed places still listed (so the list stays the truth)
while read -r kind file what count; do
  case $kind in fn) ;; cols) ;; *) continue ;; esac
  key="$kind $file $what"; [ "$kind" = cols ] && key="$kind $file"
  grep -q "^$key " <<< "$now" || report "$debt: '$kind $file $what${count:+ $count}' is paid off: delete its line"
done < <(listed)

nfn=$(grep -c '^fn ' <<< "$now"); ncols=$(grep '^cols ' <<< "$now" | awk '{s += $3} END {print s + 0}')
if [ $problems -eq 0 ]; then
  echo "style: ${#files[@]} files, no new function over $max_fn lines or line over $max_cols columns" \
       "(left from before, listed in $debt: $nfn functions, $ncols lines)"
  exit 0
fi
echo "style: $problems problems (tools/check-style.sh; $debt lists what was there before)"
exit 1
