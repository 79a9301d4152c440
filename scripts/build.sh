#!/usr/bin/env bash
# Builds the package: the ES-module build (--target web) into pkg/, the one build every bundler
# and browser loads (webpack 5 emits its .wasm as an asset with its default config).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# --mode no-install: use the wasm-bindgen on PATH (bootstrap.sh pins it), never download one.
wasm-pack build --target web --release --mode no-install --no-pack "$@"
# wasm-pack writes a `.gitignore` of `*` into its output folder; npm pack honours it and would
# leave pkg/snippets/ out of the package. The repository's own .gitignore already keeps pkg/
# out of git. A bundler build of an earlier version goes.
rm -rf pkg/.gitignore pkg/bundler
# wasm-opt from the npm package binaryen (never Debian's: its wasm-opt 108 makes modules that
# fail to load), with the wasm features the module uses. -O1 with dead-argument elimination,
# until nothing changes: the higher levels inline more and make the module larger gzipped
# (docs/measurements.md). It drops the name section (no --debuginfo); the target_features
# and producers sections go too.
features=(--enable-reference-types --enable-bulk-memory --enable-sign-ext --enable-mutable-globals
  --enable-nontrapping-float-to-int --enable-multivalue)
wasm=pkg/superset_job_guard_bg.wasm
node_modules/.bin/wasm-opt -O1 --dae-optimizing --converge --strip-target-features --strip-producers \
  "${features[@]}" "$wasm" -o "$wasm"
# Minified glue and snippets: scripts/minify.mjs.
node scripts/minify.mjs
# The React dashboard example (www/react/), served by `npm start` under /react/.
node scripts/react-example.mjs
