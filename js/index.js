// The package's entry for every bundler and browser: wasm-pack's `--target web` build, with
// JobGuard wrapped (js/freeable.js), exports that answer a GuardError before init(), and an
// init() that finds the .wasm where a dev server or bundler left it behind, never compiles an
// answer that is not WebAssembly, and names a Content-Security-Policy that forbids it.
// docs/building.md says more.
import load, {
  JobGuard as Base,
  __freedError,
  classifyCancelResponse as classify,
  initSync as loadSync,
} from "../pkg/superset_job_guard.js";
import { freeable } from "./freeable.js";

export * from "../pkg/superset_job_guard.js";

// Whether the module is loaded: set once init() or initSync() has loaded it.
let ready = false;

/** An `Error` of the guard's shape (src/web/error.rs): `name` "GuardError" and a `code`. */
function guardError(code, message) {
  const error = new Error(message);
  error.name = "GuardError";
  error.code = code;
  return error;
}

function notInitialized(what) {
  return guardError(
    "not_initialized",
    `${what} was called before the guard's WebAssembly module was loaded: ` +
      'await init() (import init from "superset-job-guard") first, once per page',
  );
}

/**
 * Whether `error` was thrown by the guard: an object whose `name` is "GuardError" and whose
 * `code` is a string (src/web/error.rs's rule, in JS so that it answers before init(), and for
 * the errors init() itself rejects with). A getter that throws makes it `false`.
 */
export function isGuardError(error) {
  if (typeof error !== "object" || error === null) return false;
  try {
    return error.name === "GuardError" && typeof error.code === "string";
  } catch {
    return false;
  }
}

const Freeable = freeable(Base, __freedError);

/** The guard; `new JobGuard()` before init() throws the GuardError `not_initialized`. */
export class JobGuard extends Freeable {
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
  return exports;
}

const WASM = "superset_job_guard_bg.wasm";
// The package's own .wasm under a `node_modules/` folder at `base`; made at run time, so that
// no bundler takes the path for an asset of its own.
const own = (base, prefix) => new URL([prefix, "superset-job-guard", "pkg", WASM].join("/"), base);

/**
 * Loads the module; once per page (a second call gets the first one's promise; a failed load may
 * be tried again). Without an argument it tries, in order, each place the .wasm can be, and
 * compiles only an answer that is WebAssembly (status 2xx and the `\0asm` magic: a dev server's
 * HTML fallback or a 404 is skipped):
 *
 * - the .wasm beside the glue (`new URL("../pkg/…", import.meta.url)`, which webpack and Vite
 *   turn into their emitted asset);
 * - the package's folder in the `node_modules/` this file was served from: Vite's dev server
 *   pre-bundles the package into its cache folder (`node_modules/.vite/deps/` or any
 *   `cacheDir`, also behind `/@fs/`) without the .wasm (Vite's issue #8427) and serves the
 *   package's own files beside it;
 * - the page's `/node_modules/superset-job-guard/pkg/` (esbuild copies no assets).
 *
 * In Node (20.16 and later) the file is read from disk. Where none of them is WebAssembly it
 * rejects with the GuardError `wasm_not_found`, naming what was fetched; where the page's
 * Content-Security-Policy forbids WebAssembly, with `wasm_blocked`.
 */
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
  if (input === undefined) return find();
  // `{ module_or_path }`, or the bare value wasm-bindgen still takes (and warns about).
  const plain = input !== null && typeof input === "object" && Object.getPrototypeOf(input) === Object.prototype;
  const given = plain ? input.module_or_path : input;
  const source = await given;
  if (typeof source === "string" || source instanceof URL || (typeof Request === "function" && source instanceof Request)) {
    return find([typeof source === "string" ? source : source instanceof URL ? source.href : source]);
  }
  if (typeof Response === "function" && source instanceof Response) {
    return find([source]);
  }
  return compile(source);
}

/** The places the .wasm can be, in order (see init()), without repeats. */
function places() {
  const here = new URL(import.meta.url);
  const beside = new URL("../pkg/superset_job_guard_bg.wasm", import.meta.url);
  const at = here.pathname.lastIndexOf("/node_modules/");
  const inNodeModules = at >= 0 ? own(here, here.pathname.slice(0, at + "/node_modules".length)) : null;
  const page = typeof location === "undefined" ? null : own(location.href, "/node_modules");
  // Served from a tool's own folder inside node_modules (Vite's cache: node_modules/.vite/…),
  // which holds no .wasm: the package's folder first there. (pnpm's node_modules/.pnpm/… ends
  // in a node_modules/superset-job-guard/ of its own, found by `at`.)
  const cached = at >= 0 && here.pathname.startsWith("/node_modules/.", at);
  const list = cached ? [inNodeModules, beside, page] : [beside, inNodeModules, page];
  const seen = new Set();
  return list.filter((u) => u && !seen.has(u.href) && seen.add(u.href));
}

/** Tries each of `sources` (URLs, Requests or Responses) until one answers WebAssembly. */
async function find(sources = places()) {
  const tried = [];
  for (const source of sources) {
    const where = source instanceof URL ? source.href : typeof source === "string" ? source : source.url || "the given Response";
    let bytes = null;
    let response = null;
    try {
      if (source instanceof URL && source.protocol === "file:") {
        // Node's ES modules, Vitest, server rendering: fetch() cannot read files; Node's fs can.
        const fs = globalThis.process?.getBuiltinModule?.("node:fs");
        if (!fs) {
          tried.push(`${where} (a file, and this Node has no process.getBuiltinModule to read it: Node 20.16 or later)`);
          continue;
        }
        bytes = fs.readFileSync(source);
      } else {
        response = source instanceof Response ? source : await fetch(source);
      }
    } catch (e) {
      tried.push(`${where} (${e?.code ?? e?.message ?? e})`);
      continue;
    }
    if (bytes) {
      if (isWasm(bytes)) return compile(bytes);
      tried.push(`${where} (not WebAssembly)`);
      continue;
    }
    const type = response.headers.get("content-type");
    if (!response.ok) {
      tried.push(`${where} (${response.status})`);
      continue;
    }
    if (!isWasm(await head(response))) {
      tried.push(`${where} (${response.status} ${type ?? "without a content-type"}, not WebAssembly)`);
      continue;
    }
    // Streamed when served as application/wasm; otherwise as bytes (wasm-bindgen would warn).
    return compile(/^application\/wasm\b/i.test(type ?? "") ? response : await response.arrayBuffer());
  }
  throw guardError(
    "wasm_not_found",
    `superset-job-guard could not load its WebAssembly module; fetched: ${tried.join("; ")}. ` +
      "Serve node_modules/superset-job-guard/pkg/superset_job_guard_bg.wasm (as application/wasm) " +
      "and pass its URL: await init({ module_or_path: url })",
  );
}

const MAGIC = [0x00, 0x61, 0x73, 0x6d]; // "\0asm"

function isWasm(bytes) {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return view.length >= 4 && MAGIC.every((b, i) => view[i] === b);
}

/** The first bytes of `response`'s body, read from a clone (the response stays unread). */
async function head(response) {
  const body = response.clone().body;
  if (!body) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks = [];
  let length = 0;
  while (length < 4) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    length += value.length;
  }
  reader.cancel().catch(() => {});
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Compiles and instantiates; a Content-Security-Policy that forbids WebAssembly becomes the
 * GuardError `wasm_blocked`. */
async function compile(source) {
  try {
    return await load({ module_or_path: source });
  } catch (e) {
    // Chromium: CompileError "… because 'unsafe-eval' is not an allowed source of script in the
    // following Content Security Policy directive …"; Firefox ESR: CompileError "call to
    // WebAssembly.instantiateStreaming() blocked by CSP" (both seen here); Safari (not tried
    // here; as its users report it): EvalError "Refused to create a WebAssembly object because
    // 'unsafe-eval' …".
    const message = String(e?.message ?? "");
    if (/Content Security Policy|blocked by CSP|unsafe-eval/i.test(message)) {
      const error = guardError(
        "wasm_blocked",
        "The page's Content-Security-Policy does not allow WebAssembly: add 'wasm-unsafe-eval' to its " +
          "script-src (it allows WebAssembly and nothing else; 'unsafe-eval' would also allow eval). " +
          'On Superset, in superset_config.py: TALISMAN_CONFIG["content_security_policy"]["script-src"] = ' +
          `["'self'", "'strict-dynamic'", "'wasm-unsafe-eval'"]. The browser said: ${message}`,
      );
      error.cause = e;
      throw error;
    }
    throw e;
  }
}
