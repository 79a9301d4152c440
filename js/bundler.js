// The package's entry for webpack (the "webpack" export condition): wasm-pack's
// `--target bundler` build, which webpack 5 loads with `experiments.asyncWebAssembly`, so the
// module is ready once imported. `init()` is kept, and does nothing, so app code written for
// the ES-module build (`await init()`) works unchanged. JobGuard is wrapped as in js/index.js.
import { JobGuard as Base, __freedError } from "../pkg/bundler/superset_job_guard.js";
import { freeable } from "./freeable.js";

export * from "../pkg/bundler/superset_job_guard.js";
export const JobGuard = freeable(Base, __freedError);

export default async function init() {}
