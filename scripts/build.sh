#!/usr/bin/env bash
# Builds the package: the ES-module build (--target web) into pkg/, the one build every bundler
# and browser loads (webpack 5 emits its .wasm as an asset with its default config).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# --mode no-install: use the wasm-bindgen on PATH (bootstrap.sh pins it), never download one.
wasm-pack build --target web --release --mode no-install --no-pack "$@"
# The CommonJS build for `require` (Node, Jest): js/node.cjs loads it.
wasm-pack build --target nodejs --release --mode no-install --no-pack --out-dir pkg/node "$@"
# wasm-pack writes a `.gitignore` of `*` into its output folder; npm pack honours it and would
# leave pkg/snippets/ out of the package. The repository's own .gitignore already keeps pkg/
# out of git. A bundler build of an earlier version goes.
# wasm-pack also writes a package.json of the crate's npm dependencies there, which would make
# Node and TypeScript read pkg/ as CommonJS: the repository's package.json is the package's.
rm -rf pkg/.gitignore pkg/node/.gitignore pkg/package.json pkg/bundler
# wasm-opt from the npm package binaryen (never Debian's: its wasm-opt 108 makes modules that
# fail to load), with the wasm features the module uses. -O1 with dead-argument elimination
# and inlining of only the smallest functions (binaryen's size up to 4 anywhere, up to 20
# where a function has one caller), until nothing changes: that makes the module about 1 KB smaller
# gzipped and in brotli, with 15% fewer functions for V8 to compile on their first calls. The
# higher levels and wider inlining make it larger gzipped (docs/measurements.md). It drops the
# name section (no --debuginfo); the target_features and producers sections go too.
features=(--enable-reference-types --enable-bulk-memory --enable-sign-ext --enable-mutable-globals
  --enable-nontrapping-float-to-int --enable-multivalue)
for wasm in pkg/superset_job_guard_bg.wasm pkg/node/superset_job_guard_bg.wasm; do
  node_modules/.bin/wasm-opt -O1 --dae-optimizing \
    --always-inline-max-function-size 4 --one-caller-inline-max-function-size 20 \
    --inlining-optimizing --converge --strip-target-features --strip-producers \
    "${features[@]}" "$wasm" -o "$wasm"
done
# Minified glue and snippets: scripts/minify.mjs; the CommonJS build's snippets as CommonJS.
node scripts/minify.mjs
node scripts/node-build.mjs
# The React dashboard example (www/react/), served by `npm start` under /react/.
node scripts/react-example.mjs
