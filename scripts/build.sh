#!/usr/bin/env bash
# Builds the package: the ES-module build (--target web) into pkg/ and the bundler build
# (--target bundler, for webpack's asyncWebAssembly) into pkg/bundler/.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# --mode no-install: use the wasm-bindgen on PATH (bootstrap.sh pins it), never download one.
wasm-pack build --target web --release --mode no-install --no-pack "$@"
wasm-pack build --target bundler --release --mode no-install --no-pack --out-dir pkg/bundler "$@"
# wasm-pack writes a `.gitignore` of `*` into each output folder; npm pack honours it and
# would leave pkg/bundler/ and pkg/snippets/ out of the package. The repository's own
# .gitignore already keeps pkg/ out of git.
rm -f pkg/.gitignore pkg/bundler/.gitignore
# wasm-opt from the npm package binaryen (never Debian's: its wasm-opt 108 makes modules that
# fail to load), with the wasm features the module uses. -O1 with dead-argument elimination,
# until nothing changes: the higher levels inline more and make the module larger gzipped
# (docs/measurements.md). It drops the name section (no --debuginfo); the target_features
# and producers sections go too.
features=(--enable-reference-types --enable-bulk-memory --enable-sign-ext --enable-mutable-globals
  --enable-nontrapping-float-to-int --enable-multivalue)
for wasm in pkg/superset_job_guard_bg.wasm pkg/bundler/superset_job_guard_bg.wasm; do
  node_modules/.bin/wasm-opt -O1 --dae-optimizing --converge --strip-target-features --strip-producers \
    "${features[@]}" "$wasm" -o "$wasm"
done
# Minified glue and snippets: scripts/minify.mjs.
node scripts/minify.mjs
# The React dashboard example (www/react/), served by `npm start` under /react/.
node scripts/react-example.mjs
