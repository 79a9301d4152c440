#!/usr/bin/env bash
# npm run mutants: cargo-mutants over the core's decision files (.cargo/mutants.toml), natively,
# one mutant at a time (2 cores). Installs cargo-mutants 27.1.0 first if it is missing (~3 min).
# Prints each missed mutant; the summary and mutants.out/ say the rest. Extra arguments go to
# cargo mutants (e.g. `npm run mutants -- --re '^src/core/retry\.rs'` for one file: `--file` does
# not narrow the files .cargo/mutants.toml names).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo mutants --version 2>/dev/null | grep -q '^cargo-mutants 27\.1\.'; then
  cargo install cargo-mutants --version 27.1.0
fi
exec cargo mutants -j 1 --timeout 120 "$@"
