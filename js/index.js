// The package's entry for ES-module loaders (browsers, Vite, Rollup, esbuild, Node): wasm-pack's
// `--target web` build, with the JobGuard class wrapped so that calls after free() throw a
// GuardError (js/freeable.js).
import { JobGuard as Base, __freedError } from "../pkg/superset_job_guard.js";
import { freeable } from "./freeable.js";

export * from "../pkg/superset_job_guard.js";
export { default } from "../pkg/superset_job_guard.js";
export const JobGuard = freeable(Base, __freedError);
