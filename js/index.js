// The package's entry, for every bundler and browser: wasm-pack's `--target web` build, with
// the JobGuard class wrapped so that calls after free() throw a GuardError (js/freeable.js),
// and an `init()` that finds the .wasm where a dev server's pre-bundling left this file.
import load, { JobGuard as Base, __freedError } from "../pkg/superset_job_guard.js";
import { freeable } from "./freeable.js";

export * from "../pkg/superset_job_guard.js";
export const JobGuard = freeable(Base, __freedError);

// Where Vite's dev server puts the dependencies it pre-bundles (its default cacheDir).
const VITE_DEPS = /\/node_modules\/\.vite\/deps(_temp_[^/]*)?\/[^/]*$/;

/**
 * Loads the module, once per page. Without an argument it fetches the .wasm beside the glue,
 * as wasm-bindgen does; but Vite's dev server bundles this file into
 * node_modules/.vite/deps/ without the .wasm, and answers a request for it there with the
 * app's index.html. There, the .wasm is fetched from the package's own folder, which the dev
 * server serves. `input` is wasm-bindgen's: `{ module_or_path }` (a URL, a Response, bytes).
 */
export default function init(input) {
  const here = new URL(import.meta.url);
  if (input === undefined && VITE_DEPS.test(here.pathname)) {
    // Made at run time, so that no bundler takes the path for an asset of its own.
    const own = ["..", "..", "superset-job-guard", "pkg", "superset_job_guard_bg.wasm"].join("/");
    return load({ module_or_path: new URL(own, here) });
  }
  return load(input);
}
