// `npm run bench`'s last step: issue #49's table, current figures first, from what this run
// wrote (target/bench/results.json, startup.json, query.json, memory.json), each beside the
// commit before the issue (`compare`, built by bench/before.mjs) or Superset's own flow where
// that is the measure, and the target. A figure this run did not measure prints "-".
import { existsSync, readFileSync } from "node:fs";
import { gzipSync, brotliCompressSync, constants } from "node:zlib";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const read = (name) => {
  const file = join(ROOT, "target", "bench", name);
  return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : null;
};
const [results, startup, query, memory] = ["results.json", "startup.json", "query.json", "memory.json"].map(read);

/** What a page loads from a build folder: its entry and its .wasm, gzip -9 and brotli, KiB. */
function loads(dir) {
  const files = ["index.js", "superset_job_guard_bg.wasm"].map((f) => join(dir, f));
  if (!files.every(existsSync)) return null;
  const bytes = files.map((f) => readFileSync(f));
  const gzip = bytes.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0);
  const brotli = bytes.reduce(
    (n, b) => n + brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
    0,
  );
  return { gzip: gzip / 1024, brotli: brotli / 1024 };
}
const now = loads(join(ROOT, "pkg"));
const before = results?.compare ? loads(join(results.compare, "pkg")) : null;
const kib = (s) => (s ? `${s.gzip.toFixed(1)} KiB (brotli ${s.brotli.toFixed(1)})` : "-");

const step = (name) => startup?.rows.find((r) => r.step === name);
const times = (r, key = "guardMs") => (r && r.baselineMs > 0 ? `×${(r[key] / r.baselineMs).toFixed(2)}` : "-");
const op = (name, jobs) => results?.rows.find((r) => r.op === name && r.jobs === jobs);
const opRatio = (r, key) => (r && r[key] && r.baselineNs ? `×${(r[key] / r.baselineNs).toFixed(2)}` : "-");

const run = (mode, client) => query?.results.find((r) => r.mode === mode && r.client === client);
const polls = (r) => r?.requests?.poll ?? r?.requests?.["poll"] ?? 0;
const lastChart = (mode) => {
  const g = run(mode, "guard");
  const s = run(mode, "superset");
  if (!g || !s) return "-";
  return `${mode}: ${(g.lastChartAfterLastChangeMs / 1000).toFixed(2)} s, ${polls(g)} polls`;
};
const supersetChart = (mode) => {
  const s = run(mode, "superset");
  return s ? `${mode}: ${(s.lastChartAfterLastChangeMs / 1000).toFixed(2)} s, ${polls(s)} polls` : "-";
};
const running = (list, client) =>
  (list ?? [])
    .filter((r) => r.client === client)
    .map((r) => `${r.mode} ${r.supersededRunning500msAfterLastChange}`)
    .join(", ") || "-";

const rows = [
  ["what a page loads, gzip -9", kib(now), kib(before), "≤ 130 KiB (brotli reported)"],
  ["start-up vs the plain-JS guard", times(step("start-up")), times(step("start-up"), "compareMs"), "≤ 2.0×"],
  ["first construct + login", times(step("construct+login")), times(step("construct+login"), "compareMs"), "≤ 2.5×"],
  [
    "checkCancel, 200 jobs, records rewritten",
    opRatio(op("checkCancel (rewritten)", 200), "guardNs"),
    opRatio(op("checkCancel (rewritten)", 200), "compareNs"),
    "≤ 3×",
  ],
  [
    "recordJob, 200 jobs, records rewritten",
    opRatio(op("recordJob (rounds)", 200), "guardNs"),
    opRatio(op("recordJob (rounds)", 200), "compareNs"),
    "≤ 3×",
  ],
  [
    "bench:query last chart after the last change",
    ["async_event", "task"].map(lastChart).join("; "),
    `Superset's own flow: ${["async_event", "task"].map(supersetChart).join("; ")}`,
    "≤ Superset's own flow + 0.5 s, no more polls",
  ],
  [
    "superseded still running 0.5 s after the last change",
    `${running(query?.results, "guard")}; storm: ${running(query?.storms, "guard")}`,
    `Superset's own flow: ${running(query?.results, "superset")}; storm: ${running(query?.storms, "superset")}`,
    "0, every mode",
  ],
  [
    "wasm memory over 100,000 record/cancel cycles",
    memory ? `${memory.warm} → ${memory.last} pages from 10,000 cycles` : "-",
    "-",
    "flat once warm",
  ],
];

const widths = [0, 1, 2, 3].map((i) => Math.max(...[["measure", "now", "before / reference", "target"][i], ...rows.map((r) => r[i])].map((c) => c.length)));
const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(" | ")} |`;
console.log(`\nissue #49's table (now: this checkout; before: ${results?.compare ? "the compared build" : "-"})`);
console.log(line(["measure", "now", "before / reference", "target"]));
console.log(line(widths.map((w) => "-".repeat(w))));
for (const r of rows) console.log(line(r));
const when = [results?.date, startup?.date, query?.measured, memory?.date].filter(Boolean).join(", ");
console.log(`measured: ${when || "-"} · ${results?.machine ?? query?.machine ?? ""}`);
