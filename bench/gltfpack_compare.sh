#!/usr/bin/env bash
# Cooked-table size against gltfpack@1.3.0 at the same bit depths, both followed by
# zstd -19. Installs gltfpack with npm into $TMPDIR/farsight-gltfpack-tool and prints
# bytes per triangle and the ratio per mesh (issue 3 target: ratio <= 0.9), then both
# files decoded side by side, ns per triangle on one thread (FARSIGHT_BENCH_RUNS
# interleaved runs, default 200).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tool="${TMPDIR:-/tmp}/farsight-gltfpack-tool"
if [ ! -f "$tool/node_modules/gltfpack/cli.js" ]; then
    mkdir -p "$tool"
    (cd "$tool" && npm install --no-audit --no-fund --silent gltfpack@1.3.0)
fi
GLTFPACK="$tool/node_modules/gltfpack/cli.js" \
    cargo bench -p farsight-bench --bench format_gltfpack
# A cluster level from its file bytes to bytes ready for the GPU, against the same
# gltfpack files decoded (issue 29 part 5, target <= 1.0x from 1,000 triangles).
GLTFPACK="$tool/node_modules/gltfpack/cli.js" \
    cargo bench -p farsight-bench --bench cluster_upload
