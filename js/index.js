// The package's entry for every bundler and browser: wasm-pack's `--target web` build, with
// JobGuard wrapped (js/freeable.js) and an init() that finds the .wasm under Vite's dev server.
// docs/building.md says more.
import load, { JobGuard as Base, __freedError } from "../pkg/superset_job_guard.js";
import { freeable } from "./freeable.js";

export * from "../pkg/superset_job_guard.js";
export const JobGuard = freeable(Base, __freedError);

// Vite's dev server bundles this file into node_modules/.vite/deps/ without the .wasm (and
// answers for it with index.html): there, the .wasm comes from the package's own folder. The
// path is made at run time, so that no bundler takes it for an asset.
export default function init(input) {
  const here = new URL(import.meta.url);
  if (input === undefined && /\/node_modules\/\.vite\/deps(_temp_[^/]*)?\/[^/]*$/.test(here.pathname)) {
    input = { module_or_path: new URL(["..", "..", "superset-job-guard", "pkg", "superset_job_guard_bg.wasm"].join("/"), here) };
  }
  return load(input);
}
