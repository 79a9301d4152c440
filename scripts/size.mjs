// npm run size (and a step of npm test): the bytes a page loads for the ES-module build, raw,
// gzip -9 and brotli (quality 11), as a server that compresses them sends them.
import { readFileSync } from "node:fs";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

// Size is reported with every change (docs/measurements.md), not held under a ceiling here: the
// targets are `npm run bench`'s, which prints these figures beside its timings.

const brotli = (bytes) =>
  brotliCompressSync(bytes, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length },
  }).length;

/**
 * What a page loads from the package built in `root` (a URL of its folder): the .wasm, the
 * entry package.json names (pkg/index.js, one file, since issue #43; js/index.js before) and
 * every module it imports by a relative path (before #43: the glue, its snippets, freeable.js).
 */
function pageFiles(root) {
  const manifest = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
  const entry = manifest.exports["."].default.replace(/^\.\//, "");
  const files = [["wasm", "pkg/superset_job_guard_bg.wasm"]];
  const seen = new Set();
  const visit = (path) => {
    if (seen.has(path)) return;
    seen.add(path);
    files.push([files.length === 1 ? "entry" : "module", path]);
    const text = readFileSync(new URL(path, root), "utf8");
    for (const [, spec] of text.matchAll(/(?:from|import)\s*["'](\.{1,2}\/[^"']+)["']/g)) {
      visit(new URL(spec, new URL(path, "file:///")).pathname.slice(1));
    }
  };
  visit(entry);
  return files;
}

/** `bytes`' raw, gzip -9 and brotli sizes. */
export const measure = (bytes) => ({ raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length, brotli: brotli(bytes) });

/** Each file's raw, gzip -9 and brotli sizes, and their total, for the build in `root`. */
export function sizes(root = new URL("..", import.meta.url)) {
  const rows = pageFiles(root).map(([what, path]) => ({ what, path, ...measure(readFileSync(new URL(path, root))) }));
  const total = { what: "total", path: "", raw: 0, gzip: 0, brotli: 0 };
  for (const r of rows) for (const k of ["raw", "gzip", "brotli"]) total[k] += r[k];
  return [...rows, total];
}

const kib = (n) => (n / 1024).toFixed(1);
/** The one-line summary of `sizes()`. */
export const summary = (total) =>
  `${kib(total.raw)} KiB raw, ${kib(total.gzip)} KiB gzip -9, ${kib(total.brotli)} KiB brotli`;

if (import.meta.url === `file://${process.argv[1]}`) {
  const fmt = (n) => n.toLocaleString("en-US").padStart(9);
  console.log(`${"".padEnd(8)} ${"raw".padStart(9)} ${"gzip -9".padStart(9)} ${"brotli".padStart(9)}  file`);
  const rows = sizes();
  for (const r of rows) console.log(`${r.what.padEnd(8)} ${fmt(r.raw)} ${fmt(r.gzip)} ${fmt(r.brotli)}  ${r.path}`);
  console.log(`\nwhat a page loads: ${summary(rows.at(-1))}`);
}
