#!/usr/bin/env bash
# npm test: native core tests, browser tests in Chromium and Firefox, then the built package
# (Node API tests, `require`, TypeScript types), the reference server, the packed package in
# apps and in each framework's own app, the dashboard end to end, and the guard on a real
# Superset 6.1.0. Ends with one count line.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

bash scripts/bootstrap.sh

log=$(mktemp)
trap 'rm -f "$log"' EXIT
step() { printf '\n== %s\n' "$*"; }

step "native core tests (cargo test)"
cargo test --color never 2>&1 | tee -a "$log"

step "browser tests against real localStorage: Chromium and Firefox (wasm-pack test), with the follow feature (tests/follow.rs)"
# wasm-bindgen-test-runner gives one test file 20 s by default; tests/follow.rs runs about 22 s
# (it waits on real timers, and reads pages of several MB in a debug build).
export WASM_BINDGEN_TEST_TIMEOUT=120
wasm-pack test --headless --chrome --firefox \
  --chromedriver "$(command -v chromedriver)" --geckodriver "$(command -v geckodriver)" \
  --mode no-install -- --features follow 2>&1 | tee -a "$log"

step "package build (pkg/)"
bash scripts/build.sh
# What a page loads, raw, gzip and brotli: every change shows what it costs (issue #43).
node scripts/size.mjs | tee -a "$log"

step "package API, imported by name (node --test)"
node --test tests/package/ 2>&1 | tee -a "$log"

step "TypeScript types (tsc --strict)"
npx tsc -p tests/types
echo "types: ok"

step "reference server's own rules (node --test)"
node --test tests/server/ 2>&1 | tee -a "$log"

step "the packed package in apps: webpack 5 and Vite 7 builds and dev servers, esbuild's serve, React 17/18/19 apps, Jest 28 + jsdom, tsc under node/node16/bundler, in Chromium (node --test)"
node --test tests/consumers/ 2>&1 | tee -a "$log"

step "each framework's own app with its binding, from the tarball: Vue 3 + Vite, SvelteKit, Nuxt 4, Angular 22, React Router 7 and 8 (dev servers, production builds, server rendering, under script-src 'self' 'wasm-unsafe-eval'), in Chromium (node --test)"
node --test tests/frameworks/ 2>&1 | tee -a "$log"

step "dashboard end to end in Chromium against the reference server, both contracts (node --test, playwright-core)"
node --test tests/e2e/ 2>&1 | tee -a "$log"

step "a real Apache Superset 6.1.0 with Talisman on (its default CSP plus 'wasm-unsafe-eval'; the default alone: wasm_blocked): Redis, Superset and a Celery worker on 127.0.0.1 (node --test)"
node --test tests/superset/ 2>&1 | tee -a "$log"

# One line for all runners: cargo's "test result: ok. N passed; M failed" and node's
# "# pass N" / "# fail M".
read -r passed failed < <(awk '
  /test result: [a-zA-Z]+\. [0-9]+ passed; [0-9]+ failed/ {
    for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;/) p += $i; if ($(i+1) ~ /^failed;/) f += $i } }
  /^# pass [0-9]+$/ { p += $3 }
  /^# fail [0-9]+$/ { f += $3 }
  END { print p + 0, f + 0 }' "$log")
echo
echo "npm test: $passed passed, $failed failed"
grep -m1 '^what a page loads:' "$log" || true
[ "$failed" -eq 0 ]
