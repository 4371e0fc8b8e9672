#!/usr/bin/env bash
# The cluster DAG build against raw `clod_build` in instructions, not time: the
# `phases` example (one run, one thread) under valgrind's callgrind, per corpus file
# of ../shared/data/meshes, the instructions inside `cook_clusters_encoded` (ours:
# split, DAG, stamping, trust checks, packing, records) over those inside
# `MaterialSplit::raw_builds` (the peer). Unlike a timing, the count does not move
# with the machine's load, so a change of a few percent shows on a shared machine.
# Prints one line per mesh, worst first. Needs valgrind; FILES overrides the list.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
meshes="${MESHES:-$root/../shared/data/meshes}"
cargo build --release -p farsight-mesh --example phases
bin="$root/target/release/examples/phases"
files="${FILES:-$(ls "$meshes"/*.obj "$meshes"/*.glb "$meshes"/*/*.gltf)}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
inclusive() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        grep "$2" | head -1 | awk '{gsub(",", "", $1); print $1}'
}
for f in $files; do
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" 1 1 "$f" >/dev/null 2>&1
    ours="$(inclusive "$out/cg" 'pack.rs:farsight_mesh::pack::cook_clusters_encoded')"
    peer="$(inclusive "$out/cg" 'split.rs:farsight_mesh::split::MaterialSplit::raw_builds')"
    awk -v n="$(basename "$f")" -v o="$ours" -v p="$peer" \
        'BEGIN { printf "%.3f %-28s ours %13.0f peer %13.0f instructions\n", o / p, n, o, p }'
done | sort -rn
