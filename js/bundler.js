// The package's entry for webpack (the "webpack" export condition): wasm-pack's
// `--target bundler` build, which webpack 5 loads with `experiments.asyncWebAssembly`, so the
// module is ready once imported. `init()` is kept, and does nothing, so app code written for
// the ES-module build (`await init()`) works unchanged.
export * from "../pkg/bundler/superset_job_guard.js";

export default async function init() {}
