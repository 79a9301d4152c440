// npm run size: the bytes a page loads for the ES-module build, raw and gzip -9.
import { readFileSync, readdirSync } from "node:fs";
import { gzipSync } from "node:zlib";

// Size is reported with every change (docs/measurements.md), not held under a ceiling: what
// users feel is start-up and per-call time, which `npm run bench` measures.
// The JS the glue imports (wasm-bindgen snippets: the shell's storage.js) loads with it.
const snippets = readdirSync(new URL("../pkg/snippets", import.meta.url), { recursive: true })
  .filter((f) => f.endsWith(".js"))
  .map((f) => ["snippet", `pkg/snippets/${f}`]);
const files = [
  ["wasm", "pkg/superset_job_guard_bg.wasm"],
  ["JS glue", "pkg/superset_job_guard.js"],
  ...snippets,
  // The package's entry, which wraps the glue's JobGuard (as shipped, not minified).
  ["entry", "js/index.js"],
  ["entry", "js/freeable.js"],
];
const rows = files.map(([what, path]) => {
  const bytes = readFileSync(new URL(`../${path}`, import.meta.url));
  return { what, path, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
});
const total = { what: "total", path: "", raw: 0, gzip: 0 };
for (const r of rows) {
  total.raw += r.raw;
  total.gzip += r.gzip;
}
const fmt = (n) => n.toLocaleString("en-US").padStart(9);
console.log(`${"".padEnd(8)} ${"raw".padStart(9)} ${"gzip -9".padStart(9)}  file`);
for (const r of [...rows, total]) {
  console.log(`${r.what.padEnd(8)} ${fmt(r.raw)} ${fmt(r.gzip)}  ${r.path}`);
}
const kib = (n) => (n / 1024).toFixed(1);
console.log(`\ngzip total ${kib(total.gzip)} KiB`);
