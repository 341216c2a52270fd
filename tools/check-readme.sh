#!/usr/bin/env bash
# tools/check-readme.sh BUILD [FILE...] — the commands the README and the
# pages of docs/ show still print what they show.
#
# Reads README.md and docs/*.md (or the FILEs given) and, in every ```console
# block, takes each line that starts with `$ build/localtensor` (optionally
# after environment assignments: `$ LT_THREADS=2 build/localtensor ...`) as a
# command and the lines after it, up to the next `$ ` line or the end of the
# block, as its output. Each command runs with bash -c (so a pipe such as
# `| tail -1` is part of it), stdout and stderr together, with NO_COLOR=1 and
# without LT_BACKEND or LOCALTENSOR_MEMORY_LIMIT, in a scratch directory that
# mirrors the repository root (`scenarios/...` resolves as there) and whose
# build/ is BUILD, so `build/localtensor` is BUILD's binary (a file a shown
# command writes, such as `--svg out.svg`, stays there; one written under a
# folder of the repository, `docs/x.svg`, would land in the repository).
# Other `$ ` lines (mpirun, cc, another build folder) are not run, nor is
# their output read.
#
# The output must equal the text shown, line for line, after one
# normalisation applied to both: a timing, a number followed by ns, us, µs,
# ms or s ("(0.3 ms)", "1.25 s"), reads as <time>. Besides that:
#   - a line `...` alone stands for any number of output lines (none
#     included): at the end of a block, "more lines follow"; elsewhere the
#     line after it is matched at its first occurrence in the rest of the
#     output;
#   - a ```yaml block whose first line is a comment naming a file
#     (`# skip.yaml`, optionally followed by more words) is written, that
#     line included, to that file in the scratch directory, for the commands
#     after it in the same document (a later block of the same name replaces
#     it);
#   - an HTML comment line `<!-- check-readme: skip -->` right before a
#     console block leaves the block out (output that depends on the
#     machine), and `<!-- check-readme: not with CUDA -->` leaves it out when
#     BUILD has the CUDA backend (make CUDA=1).
# Prints one line, "ok    README: N commands, M blocks" or "FAIL  README: ...",
# after a unified diff (shown text vs output, both normalised) for every
# command whose output differs.
# Exit status: 0 every command printed what is shown, 1 a difference (or a
# shown command that could not be run), 2 bad usage.
#
# tools/check-readme.sh --self-test runs the check with a stand-in CLI on a
# scratch document of good and bad blocks and fails unless each is judged
# right.
set -u
export LC_ALL=C

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
root=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in
  -h|--help) sed -n '2,/^set -u/p' "$self" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
  --self-test) self_test=1 ;;
  *) self_test=0 ;;
esac
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

# normalise: timings read as <time>
norm() { sed -E 's/[0-9]+(\.[0-9]+)? (ns|us|µs|ms|s)([^A-Za-z0-9_]|$)/<time>\3/g' "$1"; }

# does output file $2 match shown text $1 (both normalised), `...` as above?
matches() {
  awk 'FILENAME == ARGV[1] { e[++ne] = $0; next } { a[++na] = $0 }
       END {
         i = 1; j = 1
         while (i <= ne) {
           if (e[i] == "...") {
             if (i == ne) exit 0
             for (k = j; k <= na && a[k] != e[i + 1]; k++) ;
             if (k > na) exit 1
             j = k; i++
           } else {
             if (j > na || a[j] != e[i]) exit 1
             i++; j++
           }
         }
         exit !(j == na + 1)
       }' "$1" "$2"
}

# check BUILD DOC... (DOC relative to the repository, or absolute)
check() {
  local build=$1 doc src work parts kind n rest line run_block cuda=0
  local commands=0 blocks=0 bad=0 skipped=0 page=0 note e
  shift
  local docs=("$@")
  ar t "$build/liblocaltensor.a" 2>/dev/null | grep -qx 'backend_cuda.o' && cuda=1
  for doc in "${docs[@]}"; do
    src=$doc; case $src in /*) ;; *) src="$root/$doc" ;; esac
    [ -f "$src" ] || { echo "check-readme: $doc: no such file" >&2; bad=$((bad+1)); continue; }
    page=$((page+1))
    # a fresh scratch directory per document: links to the repository's
    # entries (never followed when made: -n), build/ linked to BUILD
    work=$(mktemp -d "$tmp/work.XXXXXX") && parts=$(mktemp -d "$tmp/parts.XXXXXX") || return 2
    for e in "$root"/* "$root"/.[!.]*; do
      [ -e "$e" ] && [ "$(basename "$e")" != build ] && ln -sn "$e" "$work/$(basename "$e")"
    done
    ln -sn "$build" "$work/build"
    # Split the document into an ordered list of events, one per line:
    #   F N NAME     yaml block N defines file NAME (text in N.yaml)
    #   B LINE WHY   a console block at LINE (WHY: run, skip or nocuda)
    #   C N LINE     command N (N.cmd) shown at LINE, output in N.out
    awk -v dir="$parts" '
      function flush() { if (cmd != "") { close(out); cmd = "" } }
      !inblock && /^<!-- check-readme: skip -->$/ { mark = "skip"; next }
      !inblock && /^<!-- check-readme: not with CUDA -->$/ { mark = "nocuda"; next }
      !inblock && /^```console[ \t]*$/ {
        inblock = "console"; print "B", FNR, (mark == "" ? "run" : mark); mark = ""; next }
      !inblock && /^```yaml[ \t]*$/ { inblock = "yaml"; first = 1; next }
      !inblock && /^```/ { inblock = "other"; mark = ""; next }
      !inblock { if ($0 !~ /^[ \t]*$/) mark = ""; next }
      /^```[ \t]*$/ { flush(); if (yfile != "") close(yfile); inblock = ""; yfile = ""; next }
      inblock == "yaml" {
        if (first && $0 ~ /^# [A-Za-z0-9_.-]+\.ya?ml([ \t].*)?$/) {
          n++; split($0, w, /[ \t]+/); yfile = dir "/" n ".yaml"; print "F", n, w[2]
        }
        if (yfile != "") print > yfile
        first = 0; next
      }
      inblock != "console" { next }
      /^\$ / {
        flush()
        if ($0 ~ /^\$ ([A-Za-z_][A-Za-z0-9_]*=[^ ]* )*build\/localtensor( |$)/) {
          n++; cmd = substr($0, 3); out = dir "/" n ".out"
          printf "%s\n", cmd > (dir "/" n ".cmd"); close(dir "/" n ".cmd")
          printf "" > out
          print "C", n, FNR
        }
        next
      }
      cmd != "" { print > out }
    ' "$src" > "$parts/events" || { echo "check-readme: $doc: cannot be read" >&2; bad=$((bad+1)); continue; }
    run_block=1
    while read -r kind n rest; do
      case $kind in
        F) rm -f "$work/$rest"; cp "$parts/$n.yaml" "$work/$rest" ;;
        B) line=$n; run_block=1
           if [ "$rest" = skip ] || { [ "$rest" = nocuda ] && [ $cuda -eq 1 ]; }; then
             run_block=0; skipped=$((skipped+1))
           else blocks=$((blocks+1)); fi ;;
        C) [ $run_block -eq 1 ] || continue
           commands=$((commands+1))
           (cd "$work" && env -u LT_BACKEND -u LOCALTENSOR_MEMORY_LIMIT NO_COLOR=1 \
              timeout 300 bash -c "$(cat "$parts/$n.cmd")") > "$parts/$n.got" 2>&1 < /dev/null
           norm "$parts/$n.out" > "$parts/$n.want"; norm "$parts/$n.got" > "$parts/$n.have"
           if ! matches "$parts/$n.want" "$parts/$n.have"; then
             bad=$((bad+1))
             echo "$doc:$rest: \$ $(cat "$parts/$n.cmd"): the output differs from the text shown" \
                  "(--- shown, +++ output; timings read as <time>; '...' stands for any lines)"
             diff -u --label shown --label output "$parts/$n.want" "$parts/$n.have" | head -60
           fi ;;
      esac
    done < "$parts/events"
  done

  note=""; [ $skipped -gt 0 ] && note=", $skipped blocks not run here"
  if [ $bad -eq 0 ]; then
    echo "ok    README: $commands commands, $blocks blocks ($page documents$note)"
  else
    echo "FAIL  README: $bad of $commands commands differ, $blocks blocks ($page documents$note)"
    return 1
  fi
}

self_test() {
  local fake=$tmp/selftest-build t=$tmp/selftest fails=0 name want text rc fence='```'
  mkdir -p "$fake" "$t"
  # a stand-in CLI: `say ARGS` prints each argument on a line, `cat FILE` a file
  cat > "$fake/localtensor" <<'CLI'
#!/bin/sh
case $1 in say) shift; printf '%s\n' "$@" ;; cat) cat "$2" ;; esac
CLI
  chmod +x "$fake/localtensor"
  # expect: name, exit status, document text (FENCE: three backquotes)
  while IFS='|' read -r name want text; do
    printf '%b' "$text" | sed "s/FENCE/$fence/g" > "$t/doc.md"
    check "$fake" "$t/doc.md" > "$t/out" 2>&1; rc=$?
    if [ "$rc" != "$want" ]; then
      echo "self-test '$name': exit $rc, expected $want"; cat "$t/out"; fails=$((fails+1))
    fi
  done <<'EOF'
same but for timings|0|FENCEconsole\n$ build/localtensor say 'ok x (0.3 ms)' 'total 1.25 s'\nok x (12.0 ms)\ntotal 3 s\nFENCE\n
elided end|0|FENCEconsole\n$ build/localtensor say a b c\na\n...\nFENCE\n
elided middle|0|FENCEconsole\n$ build/localtensor say a b c d\na\n...\nd\nFENCE\n
a value differs|1|FENCEconsole\n$ build/localtensor say a 2\na\n3\nFENCE\n
a line missing|1|FENCEconsole\n$ build/localtensor say a b\na\nFENCE\n
a line too many|1|FENCEconsole\n$ build/localtensor say a\na\nb\nFENCE\n
elided line never printed|1|FENCEconsole\n$ build/localtensor say a b\na\n...\nc\nFENCE\n
a file from a yaml block|0|FENCEyaml\n# f.yaml\nx: 1\nFENCE\n\nFENCEconsole\n$ build/localtensor cat f.yaml\n# f.yaml\nx: 1\nFENCE\n
a skipped block|0|<!-- check-readme: skip -->\nFENCEconsole\n$ build/localtensor say a\nb\nFENCE\n
other commands not run|0|FENCEconsole\n$ mpirun build/localtensor say a\nb\nFENCE\n
EOF
  [ $fails -eq 0 ] && echo "self-test: 10 cases judged right"
  [ $fails -eq 0 ]
}

if [ $self_test -eq 1 ]; then self_test; exit; fi
build=${1:-}
[ -n "$build" ] && shift
case $build in /*) ;; *) build="$root/$build" ;; esac
if [ ! -x "$build/localtensor" ]; then
  echo "usage: tools/check-readme.sh BUILD [FILE...] | --self-test (BUILD: a build folder" \
       "of the repository holding the localtensor CLI: run make first)" >&2
  exit 2
fi
if [ $# -gt 0 ]; then docs=("$@"); else
  docs=(README.md); for d in "$root"/docs/*.md; do docs+=("docs/$(basename "$d")"); done
fi
check "$build" "${docs[@]}"
