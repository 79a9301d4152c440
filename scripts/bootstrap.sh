#!/usr/bin/env bash
# Installs what building and testing need on a fresh Debian machine, skipping whatever is
# already there: Debian's Chromium, ChromeDriver, Firefox ESR and Redis; the wasm32 Rust target;
# wasm-bindgen-cli at exactly the version Cargo.lock pins; wasm-pack; geckodriver; the npm
# dev dependencies. Never downloads a browser or driver build of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$HOME/.cargo/bin:$PATH"
WASM_PACK_VERSION=0.15.1
GECKODRIVER_VERSION=0.37.1

say() { printf '[bootstrap] %s\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Browsers and drivers, from Debian only.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v firefox-esr >/dev/null 2>&1 || command -v firefox >/dev/null 2>&1 || missing+=(firefox-esr)
# Redis for the real-Superset test (tests/superset/), which starts its own on a free port.
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} from Debian"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The wasm target.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# wasm-bindgen-cli must equal the wasm-bindgen crate in Cargo.lock, or the glue won't match.
wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
if [ -z "$wb_version" ]; then
  echo "[bootstrap] cannot read the wasm-bindgen version from Cargo.lock" >&2
  exit 1
fi
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$wb_version" ]; then
  say "installing wasm-bindgen-cli $wb_version (about 3 minutes)"
  # Not --locked: its lockfile pins a crate version the registry no longer serves.
  cargo install -q wasm-bindgen-cli --version "$wb_version" --force
fi

if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  say "installing wasm-pack $WASM_PACK_VERSION (about 3 minutes)"
  cargo install -q wasm-pack --version "$WASM_PACK_VERSION" --force
fi

if ! command -v geckodriver >/dev/null 2>&1; then
  say "installing geckodriver $GECKODRIVER_VERSION"
  cargo install -q geckodriver --version "$GECKODRIVER_VERSION"
fi

# npm dev dependencies (TypeScript, playwright-core), exactly as package-lock.json says.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dev dependencies"
  npm ci --no-audit --no-fund --loglevel=error
fi
