#!/usr/bin/env bash
# The full decode of each corpus mesh's cooked set (as `farsight cook` writes it,
# default options) in instructions, not time: farsight-format's `decode_profile`
# example under valgrind's callgrind, counting only inside `CookedSet::decode_into`,
# per triangle of the set's records. Unlike a timing, the count does not move with
# the machine's speed or load (this machine's drifts by up to a third between runs),
# so a decoder change of a few percent shows. Prints one line per mesh, most
# instructions per triangle first.
#
# The parts come from the format bench (`FARSIGHT_BENCH_DUMP`, the corpus of
# ../shared/data/meshes plus the generated stress cases); PARTS=DIR reuses a dump,
# MESHES="a b" limits the list. Needs valgrind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
cargo build --release -p farsight-format --example decode_profile
bin="$root/target/release/examples/decode_profile"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
parts="${PARTS:-}"
if [ -z "$parts" ]; then
    parts="$work/parts"
    FARSIGHT_BENCH_DUMP="$parts" FARSIGHT_BENCH_DUMP_ONLY=1 \
        cargo bench -p farsight-bench --bench format -- NONE >/dev/null
fi
names="${MESHES:-$(cd "$parts" && ls ./*.parts | sed 's|^\./||; s|\.parts$||')}"
for m in $names; do
    "$bin" "$parts/$m.parts" 1 "save=$work/$m.set" >/dev/null
    tris="$("$bin" "$work/$m.set" 1 | sed -n 's/.* records, \([0-9]*\) triangles.*/\1/p')"
    runs=10
    valgrind --tool=callgrind --toggle-collect='farsight_format::set::CookedSet::decode_into*' \
        --callgrind-out-file="$work/cg" "$bin" "$work/$m.set" "$runs" >/dev/null 2>&1
    total="$(callgrind_annotate --auto=no "$work/cg" 2>/dev/null |
        awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')"
    awk -v n="$m" -v t="$total" -v r="$runs" -v tris="$tris" 'BEGIN {
        printf "%8.1f %-22s %12.0f instructions per decode, %7d triangles\n",
            t / r / tris, n, t / r, tris }'
done | sort -rn
