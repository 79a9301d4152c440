// The package's entry for every bundler and browser: wasm-pack's `--target web` build, with
// JobGuard wrapped (js/freeable.js) and an init() that finds the .wasm where a dev server or
// bundler left it behind. docs/building.md says more.
import load, { JobGuard as Base, __freedError } from "../pkg/superset_job_guard.js";
import { freeable } from "./freeable.js";

export * from "../pkg/superset_job_guard.js";
export const JobGuard = freeable(Base, __freedError);

// The package's own .wasm, relative to `base`; made at run time, so that no bundler takes the
// path for an asset of its own.
const own = (base, up) => new URL([...up, "superset-job-guard", "pkg", "superset_job_guard_bg.wasm"].join("/"), base);

// Without an argument: the .wasm beside the glue, as wasm-bindgen finds it. Vite's dev server
// bundles this file into node_modules/.vite/deps/ without the .wasm (and answers for it with
// index.html): there it comes from the package's folder at once. Where the .wasm beside the
// bundle is missing (esbuild copies no assets), the page's node_modules/ is tried next. In
// Node (20.16 and later) the file is read from disk.
export default function init(input) {
  // Once per page; a failed load may be tried again.
  loaded ??= start(input).catch((e) => {
    loaded = undefined;
    throw e;
  });
  return loaded;
}

let loaded;

async function start(input) {
  if (input !== undefined) return load(input);
  const here = new URL(import.meta.url);
  if (/\/node_modules\/\.vite\/deps(_temp_[^/]*)?\/[^/]*$/.test(here.pathname)) {
    return load({ module_or_path: own(here, ["..", ".."]) });
  }
  const beside = new URL("../pkg/superset_job_guard_bg.wasm", import.meta.url);
  // Node's ES modules, Vitest, server rendering: fetch() cannot read files; Node's fs can.
  const fs = beside.protocol === "file:" && globalThis.process?.getBuiltinModule?.("node:fs");
  if (fs) return load({ module_or_path: fs.readFileSync(beside) });
  const response = await fetch(beside);
  if (response.ok || typeof location === "undefined") return load({ module_or_path: response });
  return load({ module_or_path: own(location.href, ["", "node_modules"]) });
}
