// The benchmarks' static server on 127.0.0.1: bench/, pkg/ and js/ of this checkout, each file
// with its type (the .wasm as application/wasm, so that it compiles while it downloads), and,
// with `compare=<folder>` on the command line, that folder's js/ and pkg/ (another build of the
// package, say the commit before a change) under /compare/, for the benches to run side by side.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };

/** The folder `compare=<folder>` names on the command line, if any. */
export const compare = (() => {
  const arg = process.argv.find((a) => a.startsWith("compare="));
  return arg ? resolve(arg.slice("compare=".length)) : null;
})();

/** The package's ES entry (package.json's `exports["."].default`) of the build in `root`. */
function entryOf(root) {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  return manifest.exports["."].default.replace(/^\.\//, "");
}

/**
 * The URLs of the entries the benches import: this checkout's (`guard`) and, with `compare`,
 * the other build's (`compare`), each as its package.json names it (pkg/index.js, the
 * single-file entry, since issue #43; js/index.js before).
 */
export const entries = {
  guard: `/${entryOf(ROOT)}`,
  ...(compare ? { compare: `/compare/${entryOf(compare)}` } : {}),
};

/** The command line's `name=value` arguments but `compare`, as a query string. */
export const query = [
  ...process.argv.slice(2).filter((a) => a.includes("=") && !a.startsWith("compare=")),
  ...Object.entries(entries).map(([k, v]) => `${k}Entry=${encodeURIComponent(v)}`),
].join("&");

function fileFor(path) {
  let root = ROOT;
  if (compare && path.startsWith("/compare/")) {
    root = compare + sep;
    path = path.slice("/compare".length);
  }
  const file = normalize(join(root, path));
  const dirs = root === ROOT ? ["bench", "pkg", "js"] : ["pkg", "js"];
  return dirs.some((dir) => file.startsWith(join(root, dir) + sep)) ? file : null;
}

/**
 * bench/startup.html with the hints the README's "Loading it fast" describes: a `preload` of the
 * .wasm (`wasmOnly`, what a bundled app or Vite's dev server uses), and for a page that serves
 * the package's files as they are, a `modulepreload` for each of its modules too, so that they
 * download at once instead of one import after another.
 */
async function withHints(wasmOnly) {
  // The single-file entry is one module (js/index.js's imports, before it, were four more).
  const modules = [entries.guard];
  const links = [
    ...(wasmOnly ? [] : modules.map((href) => `<link rel="modulepreload" href="${href}">`)),
    `<link rel="preload" href="/pkg/superset_job_guard_bg.wasm" as="fetch" type="application/wasm" crossorigin>`,
  ];
  const html = await readFile(join(ROOT, "bench", "startup.html"), "utf8");
  return html.replace("<head>", `<head>${links.join("")}`);
}

/** Starts the server; resolves to its origin. */
export async function serve() {
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://127.0.0.1").pathname);
    if (path === "/bench/startup-hints.html" || path === "/bench/startup-wasm-hint.html") {
      const html = await withHints(path.endsWith("wasm-hint.html"));
      return res.writeHead(200, { "content-type": "text/html" }).end(html);
    }
    // A chart's query as Superset's main answers a synchronous one (bench/startup.js): 100 rows
    // at once; its stop endpoint is there (the guard asks it once per page, with OPTIONS).
    if (path === "/api/v1/chart/data/stop" && req.method === "OPTIONS") {
      return res.writeHead(204, { allow: "OPTIONS, POST" }).end();
    }
    if (path === "/api/v1/chart/data" && req.method === "POST") {
      for await (const _ of req); // the body, read to its end
      const data = Array.from({ length: 100 }, (_, i) => ({ name: `row ${i}`, value: i }));
      const body = JSON.stringify({ result: [{ data, rowcount: 100, colnames: ["name", "value"] }] });
      return res.writeHead(200, { "content-type": "application/json" }).end(body);
    }
    const file = fileFor(path);
    try {
      if (!file) throw new Error("not served");
      const body = await readFile(file);
      res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return { origin: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}
