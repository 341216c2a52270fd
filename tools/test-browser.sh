#!/usr/bin/env bash
# tools/test-browser.sh BUILD — the HTML pictures checked in a real browser
# (`make test-browser`): the pages of the tutorials, the bug library, an
# 8x8x8 redistribute of a 256 MiB tensor, a would-hang program, a program
# that diverges from its single-device run and one `show` layout are drawn
# by BUILD/localtensor, then rendered by headless
# chromium: a screenshot of each into BUILD/<name>.png, and the DOM after
# the page's script ran (--dump-dom), whose #lt-check marker says how many
# rank-coloured blocks, legend rows and lanes were drawn and whether the
# page runs past its width. Console messages are read from chromium's log:
# an error there fails the page.
#
# Without chromium it prints one SKIPPED line and exits 0: a skip, not a pass.
set -u
BUILD=${1:-build}
BIN=$BUILD/localtensor
OUT=$BUILD/browser
fail=0

BROWSER=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$BROWSER" ]; then
    echo "test-browser: SKIPPED (not passed): chromium is not installed (apt-get install chromium)"
    exit 0
fi
[ -x "$BIN" ] || { echo "test-browser: $BIN is missing (build it first)" >&2; exit 2; }
mkdir -p "$OUT"
start=$(date +%s)

bad() { echo "FAIL  $1"; fail=1; }

# render NAME: screenshot and DOM of $OUT/NAME.html; sets $dom and $log
render() {
    local page="file://$(realpath "$OUT/$1.html")"
    timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --window-size=1280,1600 --screenshot="$BUILD/$1.png" "$page" >/dev/null 2>&1 \
        || bad "$1: chromium could not take the screenshot"
    dom=$(timeout 120 "$BROWSER" --headless --no-sandbox --disable-gpu --window-size=1280,1600 \
        --enable-logging=stderr --v=0 --dump-dom "$page" 2>"$OUT/$1.log")
    log=$(grep -i 'CONSOLE' "$OUT/$1.log" || true)
}

# check NAME MIN_BLOCKS MIN_LEGEND LANES(-1: any): the marker's counts, no
# overflow, no console error, size under 2 MB
check() {
    local name=$1 size
    size=$(stat -c %s "$OUT/$name.html")
    [ "$size" -lt 2097152 ] || bad "$name: $size bytes, over 2 MB"
    render "$name"
    local marker
    marker=$(printf '%s' "$dom" |
        grep -o 'lt-check blocks=[0-9]* legend=[0-9]* lanes=[0-9]* overflow=[0-9]*')
    if [ -z "$marker" ]; then bad "$name: the page's check script did not run"; return; fi
    local blocks legend lanes over before=$fail
    read -r blocks legend lanes over <<<"$(echo "$marker" | grep -o '=[0-9]*' | tr -d = |
        tr '\n' ' ')"
    [ "$blocks" -ge "$2" ] || bad "$name: $blocks rank-coloured blocks, expected at least $2"
    [ "$legend" -ge "$3" ] || bad "$name: $legend legend rows, expected at least $3"
    [ "$4" -lt 0 ] || [ "$lanes" -eq "$4" ] || bad "$name: $lanes lanes, expected $4"
    [ "$over" -eq 0 ] || bad "$name: the page runs past its width"
    if printf '%s' "$log" | grep -qiE 'error|uncaught'; then bad "$name: console: $log"; fi
    [ $fail -ne $before ] || echo "ok    $name ($size bytes; $marker) -> $BUILD/$name.png"
}

# The console check must see an error when there is one.
printf '<!DOCTYPE html><html><body><script>console.error("planted")</script></body></html>' \
    > "$OUT/console-probe.html"
render console-probe
printf '%s' "$log" | grep -q planted ||
    bad "console-probe: chromium's log does not show console errors"

"$BIN" show --mesh 2x2 --shape 6,5 --placements 'S(0),S(1)' --html "$OUT/show_2x2.html" \
    >/dev/null ||
    bad "show --html failed"
check show_2x2 4 4 0
# exactly four blocks, one per rank
printf '%s' "$dom" | grep -q 'data-blocks="4"' || bad "show_2x2: not exactly 4 blocks"

"$BIN" run scenarios/tutorials --html "$OUT/tutorials.html" >/dev/null ||
    bad "run scenarios/tutorials failed"
check tutorials 10 10 -1
"$BIN" run scenarios/bugs --html "$OUT/bugs.html" >/dev/null || bad "run scenarios/bugs failed"
check bugs 1 1 -1

lines=$("$BIN" redistribute --mesh 8x8x8 --shape 8192,8192 --from 'S(0),S(1),R' --to 'R,S(0),S(1)' \
    --quiet --html "$OUT/redistribute_8x8x8.html" | wc -l)
[ "$lines" -le 40 ] || bad "redistribute 8x8x8 --quiet printed $lines lines (at most 40)"
check redistribute_8x8x8 64 16 0

cat > "$OUT/hang.yaml" <<'EOF'
- name: rank3_skips_all_reduce
  mesh: {shape: [4], names: [dp]}
  tensors:
    x: {shape: [3], init: arange}
  steps:
    - distribute: {tensor: x, placements: ["S(0)"], as: xd}
    - to_local: {tensor: xd, as: xl}
    - local_op: {op: sum, inputs: xl, as: s}
    - collective: {kind: all_reduce, mesh_dim: dp, tensor: s, as: total}
      when: "rank < 3"
EOF
"$BIN" run "$OUT/hang.yaml" --html "$OUT/hang.html" --timeline "$OUT/hang-timeline.json" >/dev/null
[ $? -eq 1 ] || bad "the would-hang run should fail (exit 1)"
check hang 0 0 4
printf '%s' "$dom" | grep -q 'would hang (missing)' || bad "hang: no would-hang column"
[ "$(printf '%s' "$dom" | grep -o 'class="lt-hang"' | wc -l)" -eq 4 ] ||
    bad "hang: not 4 rank boxes"
grep -q '"ph":"i"' "$OUT/hang-timeline.json" || bad "hang: the timeline has no instant events"

# a divergence: the planted per-rank bug of the bug library, its own checks
# left out (--single-device), so the run fails at the first divergence
"$BIN" run scenarios/bugs/first_divergence.yaml -k planted --single-device \
    --html "$OUT/divergence.html" \
    --timeline "$OUT/divergence-timeline.json" >/dev/null
[ $? -eq 1 ] || bad "the divergence run should fail (exit 1)"
check divergence 0 0 3
printf '%s' "$dom" | grep -q 'class="lt-diverge"' || bad "divergence: the step is not marked"
grep -q '"name":"first divergence","ph":"i"' "$OUT/divergence-timeline.json" ||
    bad "divergence: the timeline has no divergence event"

echo "test-browser: $(( $(date +%s) - start )) s"
if [ $fail -ne 0 ]; then echo "test-browser: FAILED"; exit 1; fi
echo "test-browser: all pages passed"
