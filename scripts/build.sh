#!/usr/bin/env bash
# Builds the ES-module package into pkg/: superset_job_guard.js, _bg.wasm and .d.ts.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
# --mode no-install: use the wasm-bindgen on PATH (bootstrap.sh pins it), never download one.
wasm-pack build --target web --release --mode no-install --no-pack "$@"
