#!/usr/bin/env bash
# test/fuzz/make-seeds.sh OUTDIR — writes the seed corpus of every harness
# into OUTDIR/<harness>/, fresh each time, from what the repository already
# holds (so no copy of it is committed):
#   scenario  every scenarios/**/*.yaml and test/bad_scenarios/* file
#   parsers   the hand seeds in test/fuzz/seeds/parsers/, plus every
#             placement, placement list, mesh and shape spelled in the
#             scenario library, README.md and the guide and CLI reference
#             (docs/guide.md, docs/cli.md)
#   cli       the hand seeds in test/fuzz/seeds/cli/, plus a `show` and a
#             `redistribute` argv for placement lists found in the library
#             (on a mesh with one dim per placement)
#   safetensors every test/checkpoints/**/*.safetensors file (the fixtures
#             PyTorch and safetensors wrote, and the broken ones)
# `make fuzz` starts from these; `make test` replays them (tools/run-tests.sh).
set -euo pipefail
out=${1:?usage: make-seeds.sh OUTDIR}
cd "$(dirname "$0")/../.."
rm -rf "$out"
mkdir -p "$out/scenario" "$out/parsers" "$out/cli" "$out/safetensors"

# scenario: the files themselves, named after their path
find scenarios test/bad_scenarios -type f \( -name '*.yaml' -o -name '*.yml' \) | LC_ALL=C sort |
  while IFS= read -r f; do cp "$f" "$out/scenario/$(echo "$f" | tr '/' '_')"; done

# one file per line of stdin, named PREFIX-N
one_per_line() {
  local dir=$1 prefix=$2 i=0 line
  while IFS= read -r line; do
    i=$((i + 1))
    printf '%s' "$line" > "$dir/$prefix-$i"
  done
}

texts=$(find scenarios -type f -name '*.yaml'; echo README.md docs/guide.md docs/cli.md)
# shellcheck disable=SC2086
{
  # single placements in any spelling
  grep -ohE '(_StridedShard|StridedShard|Shard|Replicate|Partial|SS|S|P)\([^()]*\)' $texts
  # bracketed lists holding placements (one level of nested [] for explicit sizes)
  grep -ohE '\[[^][]*(\[[^][]*\][^][]*)*\]' $texts | grep -E '(^|[^A-Za-z])(R|S\(|SS\(|P\(|P[],])' | tr -d '"'"'"
  # meshes and shapes
  grep -ohE '(^|[^0-9A-Za-z])[0-9]+(x[0-9]+)+' $texts | grep -oE '[0-9]+(x[0-9]+)+'
  grep -ohE '[a-zA-Z_]+=[0-9]+(,[a-zA-Z_]+=[0-9]+)+' $texts
  grep -ohE 'shape: *\[[0-9, ]*\]' $texts | sed -E 's/shape: *//'
} | LC_ALL=C sort -u | head -n 600 | one_per_line "$out/parsers" lib
cp test/fuzz/seeds/parsers/* "$out/parsers/" 2>/dev/null || true

# cli: argvs from the placement lists (strip [ ] and quotes; count the
# entries at bracket depth 0 to size the mesh)
# shellcheck disable=SC2086
grep -ohE '\[[^][]*(\[[^][]*\][^][]*)*\]' $texts | grep -E '(^|[^A-Za-z])(R|S\(|SS\(|P\()' | tr -d '"'"'" |
  LC_ALL=C sort -u | head -n 200 |
  awk -v dir="$out/cli" '
    {
      s = substr($0, 2, length($0) - 2); depth = 0; n = 1
      for (i = 1; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "(" || c == "[") depth++
        else if (c == ")" || c == "]") depth--
        else if (c == "," && depth == 0) n++
      }
      if (n > 3) next
      mesh = "2"; for (i = 2; i <= n; i++) mesh = mesh "x" (i == 2 ? "3" : "2")
      k++
      printf "show\n--mesh\n%s\n--shape\n6,5,4\n--placements\n%s\n", mesh, s > (dir "/show-" k)
      close(dir "/show-" k)
      if (prev[n] != "") {
        printf "redistribute\n--mesh\n%s\n--shape\n7,6\n--from\n%s\n--to\n%s\n", mesh, prev[n], s > (dir "/redist-" k)
        close(dir "/redist-" k)
      }
      prev[n] = s
    }'
cp test/fuzz/seeds/cli/* "$out/cli/" 2>/dev/null || true
find test/checkpoints -type f -name '*.safetensors' | LC_ALL=C sort |
  while IFS= read -r f; do cp "$f" "$out/safetensors/$(echo "$f" | tr '/' '_')"; done
for h in scenario parsers cli safetensors; do
  echo "make-seeds: $h: $(find "$out/$h" -type f | wc -l) seeds"
done
