// The package's entry for every bundler and browser: wasm-pack's `--target web` build with
// JobGuard wrapped (js/freeable.js), exports that throw a GuardError before init(), and an
// init() that finds the .wasm where a tool left it, compiles only WebAssembly and names a
// Content-Security-Policy that forbids it. docs/building.md says more.
import load, {
  JobGuard as Base,
  __freedError,
  classifyCancelResponse as classify,
  initSync as loadSync,
} from "../pkg/superset_job_guard.js";
import { freeable } from "./freeable.js";

export * from "../pkg/superset_job_guard.js";

let ready = false; // the module is loaded (init() or initSync())

// The shape of the guard's errors (src/web/error.rs).
function guardError(code, message) {
  const error = new Error(message);
  error.name = "GuardError";
  error.code = code;
  return error;
}

const notInitialized = (what) =>
  guardError(
    "not_initialized",
    `${what} was called before the guard's WebAssembly module was loaded: ` +
      'await init() (import init from "superset-job-guard") first, once per page',
  );

// src/web/error.rs's rule in JS, so that it answers before init() (and for init()'s errors).
export function isGuardError(error) {
  if (typeof error !== "object" || error === null) return false;
  try {
    return error.name === "GuardError" && typeof error.code === "string";
  } catch {
    return false; // a getter that throws
  }
}

export class JobGuard extends freeable(Base, __freedError) {
  constructor(options) {
    if (!ready) throw notInitialized("new JobGuard()");
    super(options);
  }
}

export function classifyCancelResponse(...args) {
  if (!ready) throw notInitialized("classifyCancelResponse()");
  return classify(...args);
}

export function initSync(module) {
  const exports = loadSync(module);
  ready = true;
  // A later init() answers with these exports, fetching nothing.
  loaded ??= Promise.resolve(exports);
  return exports;
}

// The package's .wasm under the `node_modules` folder `prefix` of `base`; made at run time, so
// that no bundler takes the path for an asset of its own.
const own = (base, prefix) => new URL(`${prefix}/superset-job-guard/pkg/superset_job_guard_bg.wasm`, base);

// Once per page (a failed load may be tried again). Without an argument: the .wasm beside the
// glue (a bundler's asset), the package's folder in the node_modules/ this file came from
// (Vite's dev server pre-bundles the package into its cacheDir without it: Vite's issue
// #8427), the page's /node_modules/, pkg/ under the page's base (Angular's assets step); in
// Node, the file. Only a 2xx is compiled: one served as application/wasm as it downloads, any
// other only if it starts with "\0asm". None is wasm_not_found; a CSP that forbids
// WebAssembly, wasm_blocked.
export default function init(input) {
  loaded ??= start(input).then(
    (exports) => {
      ready = true;
      return exports;
    },
    (e) => {
      loaded = undefined;
      throw e;
    },
  );
  return loaded;
}

let loaded;

async function start(input) {
  if (input === undefined) return find(places());
  // `{ module_or_path }`, or the bare value wasm-bindgen still takes (with a warning).
  const plain = input !== null && typeof input === "object" && Object.getPrototypeOf(input) === Object.prototype;
  const source = await (plain ? input.module_or_path : input);
  const fetchable = typeof source === "string" || source instanceof URL || (typeof Request === "function" && source instanceof Request);
  if (fetchable || (typeof Response === "function" && source instanceof Response)) return find([source]);
  return compile(source);
}

function places() {
  const here = new URL(import.meta.url);
  const beside = new URL("../pkg/superset_job_guard_bg.wasm", import.meta.url);
  const at = here.pathname.lastIndexOf("/node_modules/");
  const folder = at >= 0 ? own(here, here.pathname.slice(0, at + "/node_modules".length)) : null;
  const page = typeof location === "undefined" ? null : own(location.href, "/node_modules");
  // Served from a tool's folder in node_modules (Vite's node_modules/.vite/…): its package's
  // folder first. (pnpm's node_modules/.pnpm/… ends in a node_modules/superset-job-guard/.)
  const list = at >= 0 && here.pathname.startsWith("/node_modules/.", at) ? [folder, beside, page] : [beside, folder, page];
  // pkg/ under the page's base, where the README's Angular step copies it: first under
  // Angular's dev server (which rewrites `beside` to its .angular/ folder, where no .wasm is),
  // else last (a build under a sub-path, <base href="/app/">, where `beside` leaves the base).
  if (typeof document !== "undefined" && document.baseURI) {
    const base = new URL("pkg/superset_job_guard_bg.wasm", document.baseURI);
    if (beside.pathname.includes("/.angular/")) list.unshift(base);
    else list.push(base);
  }
  const seen = new Set();
  return list.filter((u) => u && !seen.has(u.href) && seen.add(u.href));
}

// Tries each of `sources` (URLs, Requests, Responses) until one answers WebAssembly.
async function find(sources) {
  const tried = [];
  for (const source of sources) {
    const where = source.href ?? source.url ?? String(source); // a URL, a Request or Response, a string
    let answer;
    try {
      if (source instanceof URL && source.protocol === "file:") {
        // Node's ES modules (Vitest, server rendering): fetch() cannot read files; fs can.
        const fs = globalThis.process?.getBuiltinModule?.("node:fs");
        if (!fs) throw new Error("no process.getBuiltinModule to read it (Node 20.16 or later)");
        const bytes = fs.readFileSync(source);
        if (isWasm(bytes)) return compile(bytes);
        tried.push(`${where} (not WebAssembly)`);
        continue;
      }
      answer = source instanceof Response ? source : await fetch(source);
    } catch (e) {
      tried.push(`${where} (${e?.code ?? e?.message ?? e})`);
      continue;
    }
    const type = answer.headers.get("content-type");
    if (!answer.ok) {
      tried.push(`${where} (${answer.status})`);
      continue;
    }
    // Served as application/wasm: compiled while it downloads. Anything else (a dev server's
    // HTML fallback) is read first, and compiled only if it is WebAssembly.
    if (/^application\/wasm\b/i.test(type ?? "")) return compile(answer);
    const bytes = new Uint8Array(await answer.arrayBuffer());
    if (isWasm(bytes)) return compile(bytes);
    tried.push(`${where} (${answer.status} ${type ?? "without a content-type"}, not WebAssembly)`);
  }
  throw guardError(
    "wasm_not_found",
    `superset-job-guard could not load its WebAssembly module; fetched: ${tried.join("; ") || "nothing"}. ` +
      "Serve node_modules/superset-job-guard/pkg/superset_job_guard_bg.wasm (as application/wasm) " +
      "and pass its URL: await init({ module_or_path: url }). Angular's ng build copies no .wasm: add " +
      '{ "glob": "superset_job_guard_bg.wasm", "input": "node_modules/superset-job-guard/pkg", "output": "pkg" } ' +
      "to angular.json's assets (README, Angular)",
  );
}

const isWasm = (b) => b.length >= 4 && b[0] === 0 && b[1] === 0x61 && b[2] === 0x73 && b[3] === 0x6d; // "\0asm"

async function compile(source) {
  try {
    return await load({ module_or_path: source });
  } catch (e) {
    // Chromium's, Firefox's and Safari's words for it (docs/building.md).
    const said = String(e?.message ?? "");
    if (!/Content Security Policy|blocked by CSP|unsafe-eval/i.test(said)) throw e;
    const error = guardError(
      "wasm_blocked",
      "The page's Content-Security-Policy does not allow WebAssembly: add 'wasm-unsafe-eval' to its " +
        "script-src (it allows WebAssembly and nothing else; 'unsafe-eval' would also allow eval). " +
        'On Superset, in superset_config.py: TALISMAN_CONFIG["content_security_policy"]["script-src"] = ' +
        `["'self'", "'strict-dynamic'", "'wasm-unsafe-eval'"]. The browser said: ${said}`,
    );
    error.cause = e;
    throw error;
  }
}
