#!/usr/bin/env bash
# tools/check-citations.sh [ROOT] — every citation of the project's own
# documents must point at something that exists.
#
# Code comments, error messages, scenario descriptions and the READMEs cite
# the reference documents as `docs/SEMANTICS.md §7` (several sections:
# `docs/SEMANTICS.md §3, §4 and §11.1`; a comment may wrap between the
# document and its first section). This script scans the source, scenario and
# documentation files under ROOT (default: the repository) and reports, as
# FILE:LINE:COL: problem,
#   - a `docs/NAME.md` that does not exist;
#   - a `§N` whose document has no heading numbered N ("## 7." or "### 11.1");
#   - a `§N` with no document named on its line or the line before (inside
#     docs/*.md a bare `§N` means the same document);
#   - an older citation form that names no file of the repository
#     (`SEMANTICS 7`, a bare `SEMANTICS.md` or `DESIGN.md`, or such a file
#     in a folder other than docs/).
# A path may lead up to docs/ (`../docs/SEMANTICS.md` in a link, or an
# installed copy `share/doc/localtensor/docs/DESIGN.md`).
# Exit status: 0 when every citation resolves, 1 otherwise, 2 on bad usage.
#
# tools/check-citations.sh --self-test runs the check on a scratch tree with
# one good and several bad citations and fails unless each is judged right.
set -u
export LC_ALL=C   # byte semantics: '§' is the two bytes C2 A7 in every awk

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

check() {
  local root=$1 sections files
  [ -d "$root/docs" ] || { echo "check-citations: $root/docs: no such directory" >&2; return 2; }
  # Headings "## 7. Title" / "### 11.1 Title" of every document: "DOC NUM" lines.
  sections=$(cd "$root" && for d in docs/*.md; do [ -f "$d" ] || continue
      awk -v doc="$d" '/^#+ [0-9]/ { n = $2; sub(/\.$/, "", n); print doc, n }' "$d"
    done)
  mapfile -t files < <(cd "$root" && find . \( -name '.git' -o -name 'build*' \) -prune -o \
      -type f \( -name '*.c' -o -name '*.h' -o -name '*.yaml' -o -name '*.yml' -o -name '*.md' \
                 -o -name '*.sh' -o -name '*.in' -o -name 'Makefile' \) -print |
    sed 's|^\./||' | sort | grep -vx 'tools/check-citations.sh')
  [ ${#files[@]} -gt 0 ] || { echo "0 citations in 0 files, 0 problems"; return 0; }
  (cd "$root" && awk -v sections="$sections" '
      BEGIN {
        n = split(sections, rows, "\n")
        for (i = 1; i <= n; i++) if (rows[i] != "") { split(rows[i], f, " "); sec[f[1] " " f[2]] = 1; hasdoc[f[1]] = 1 }
        S = sprintf("%c%c", 194, 167)   # the section sign
        TOKEN = "[A-Za-z0-9_./-]*[A-Za-z0-9_-]\\.md|" S "[0-9]+(\\.[0-9]+)*|SEMANTICS"
        bad = 0; cites = 0; files = 0
      }
      function problem(col, msg) { printf "%s:%d:%d: %s\n", FILENAME, FNR, col, msg; bad++ }
      FNR == 1 {
        files++; prevdoc = ""
        indocs = (FILENAME ~ /^docs\/[^\/]*\.md$/)
      }
      {
        line = $0; doc = indocs ? FILENAME : prevdoc; lastdoc = ""
        pos = 0
        while (match(line, TOKEN)) {
          tok = substr(line, RSTART, RLENGTH); col = pos + RSTART
          if (tok ~ /\.md$/) {
            # only the project documents are judged (README.md and others are not citations)
            # (a path may lead up to docs/, as a relative link or an installed copy does)
            path = tok
            sub(/^.*\/docs\//, "docs/", path)
            if (path ~ /^docs\/[^\/]*$/ || path ~ /(^|\/)(SEMANTICS|DESIGN|STYLE)\.md$/) {
              cites++
              if (path !~ /^docs\/[^\/]*$/) problem(col, "\"" tok "\" is not a document of the repository: cite docs/SEMANTICS.md " S "N or docs/DESIGN.md " S "N")
              else if (!(path in hasdoc)) problem(col, "cites " path ", which is not in docs/")
              doc = path; lastdoc = path
            }
          } else if (tok == "SEMANTICS") {
            problem(col, "\"SEMANTICS\" names no document of the repository: cite docs/SEMANTICS.md " S "N")
          } else {
            cites++
            num = substr(tok, 3)
            if (doc == "") problem(col, "section " tok " names no document (write docs/NAME.md " tok ")")
            else if (!((doc " " num) in sec)) problem(col, doc " has no section " num " (cited as " tok ")")
          }
          pos += RSTART + RLENGTH - 1
          line = substr(line, RSTART + RLENGTH)
        }
        # a citation may wrap: the next line may continue with its sections
        prevdoc = indocs ? "" : lastdoc
      }
      END {
        printf "%d citations in %d files, %d problems\n", cites, files, bad
        exit bad > 0
      }' "${files[@]}")
}

self_test() {
  local tmp rc fails=0
  tmp=$(mktemp -d) || return 2
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$tmp/docs" "$tmp/src"
  printf '# Doc\n\n## 1. One\n\n### 1.2 Sub\n\nSee §1.2.\n' > "$tmp/docs/A.md"
  # expect: name, file text, expected exit status
  while IFS='|' read -r name text want; do
    printf '%b' "$text" > "$tmp/src/x.c"
    check "$tmp" > "$tmp/out" 2>&1; rc=$?
    if [ "$rc" != "$want" ]; then
      echo "self-test '$name': exit $rc, expected $want"; cat "$tmp/out"; fails=$((fails+1))
    fi
  done <<'EOF'
good|/* docs/A.md §1 and §1.2, wrapped (docs/A.md\\n * §1) */\\n|0
missing section|/* docs/A.md §3 */\\n|1
missing document|/* docs/B.md §1 */\\n|1
section without document|/* see §1 */\\n|1
old form|/* SEMANTICS 7 */\\n|1
bare file name|/* see DESIGN.md */\\n|1
path outside docs/|/* ../other/DESIGN.md */\\n|1
EOF
  [ $fails -eq 0 ] && echo "self-test: 7 cases judged right"
  [ $fails -eq 0 ]
}

case "${1:-}" in
  --self-test) self_test ;;
  -h|--help) sed -n '2,/^set -u/p' "$self" | grep '^#' | sed 's/^# \{0,1\}//' ;;
  -*) echo "usage: tools/check-citations.sh [ROOT] | --self-test" >&2; exit 2 ;;
  *) check "${1:-$(dirname "$self")/..}" ;;
esac
