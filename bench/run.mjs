// npm run bench: the release build in headless Chromium (Debian's), the guard against the
// plain-JS baseline; prints what a page loads (raw, gzip, brotli), ns/op medians and their
// ratio, writes target/bench/results.json, then the start-up figures (bench/startup.mjs).
// Arguments: `sizes=200,1000`, `rounds=5`, `loads=21`, and `compare=<folder>` (another build's
// js/ and pkg/, measured beside this one: bench/serve.mjs). `npm run bench` passes
// `compare=target/bench/before`, the commit before issue #43 (bench/before.mjs).
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import os from "node:os";

import { launch } from "../tests/e2e/browser.mjs";
import { median } from "./median.mjs";
import { compare, query, serve } from "./serve.mjs";
import { measure, sizes, summary } from "../scripts/size.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

// What a page loads: this build, the compared one, and the plain-JS baseline (one file).
{
  const baseline = measure(readFileSync(join(ROOT, "bench", "baseline.js")));
  console.log(`what a page loads: guard ${summary(sizes().at(-1))}`);
  if (compare) console.log(`                   compare ${summary(sizes(new URL(`file://${compare}/`)).at(-1))}`);
  console.log(`                   baseline ${summary(baseline)} (bench/baseline.js, unminified)\n`);
}
const server = await serve();
const params = [query, compare ? "compare=1" : ""].filter(Boolean).join("&");
const url = `${server.origin}/bench/index.html${params ? `?${params}` : ""}`;

const browser = await launch();
const page = await browser.newPage();
page.on("pageerror", (e) => console.error("page error:", e.message));
await page.goto(url);
await page.waitForFunction(() => window.benchResults, null, { timeout: 20 * 60_000, polling: 1000 });
const raw = await page.evaluate(() => window.benchResults);
const version = browser.version();
await browser.close();
server.close();

const rows = [];
for (const n of raw.sizes) {
  for (const [op, { guard, baseline }] of Object.entries(raw.samples[n])) {
    const g = median(guard);
    const b = median(baseline);
    const row = { op, jobs: n, guardNs: Math.round(g), baselineNs: Math.round(b), ratio: b > 0 ? g / b : null };
    if (raw.samples[n][op].compare?.length) row.compareNs = Math.round(median(raw.samples[n][op].compare));
    rows.push(row);
  }
}
rows.sort((a, b) => a.op.localeCompare(b.op) || a.jobs - b.jobs);

const pad = (s, w) => String(s).padStart(w);
// With `compare=<folder>`: that build's ns/op too, and this build's against it.
const more = (r) => (compare ? ` ${pad(r.compareNs.toLocaleString("en-US"), 14)} ${pad((r.guardNs / r.compareNs).toFixed(2), 13)}` : "");
console.log(
  `${"operation".padEnd(22)} ${pad("jobs", 6)} ${pad("guard ns/op", 12)} ${pad("baseline ns/op", 15)} ${pad("guard/baseline", 15)}${compare ? ` ${pad("compare ns/op", 14)} ${pad("guard/compare", 13)}` : ""}`,
);
for (const r of rows) {
  console.log(
    `${r.op.padEnd(22)} ${pad(r.jobs.toLocaleString("en-US"), 6)} ${pad(r.guardNs.toLocaleString("en-US"), 12)} ${pad(r.baselineNs.toLocaleString("en-US"), 15)} ${pad(r.ratio === null ? "-" : r.ratio.toFixed(2), 15)}${more(r)}`,
  );
}
// How checkCancel scales: the largest size against the smallest.
const [small, large] = [Math.min(...raw.sizes), Math.max(...raw.sizes)];
const at = (n) => rows.find((r) => r.op === "checkCancel (allowed)" && r.jobs === n);
if (small !== large && at(small) && at(large)) {
  const flat = at(large).guardNs / at(small).guardNs;
  console.log(`\ncheckCancel (allowed) ${large.toLocaleString("en-US")} jobs / ${small} jobs: ${flat.toFixed(2)}`);
}

const machine = `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`;
const results = {
  date: new Date().toISOString(),
  machine,
  browser: `Chromium ${version}`,
  compare,
  rounds: raw.rounds,
  rows,
  samples: raw.samples,
};
await mkdir(join(ROOT, "target", "bench"), { recursive: true });
await writeFile(join(ROOT, "target", "bench", "results.json"), JSON.stringify(results, null, 2));
console.log(`\n${results.date} · ${machine} · ${results.browser} · medians of ${raw.rounds} rounds`);
console.log("written: target/bench/results.json");

// Then the start-up figures (bench/startup.mjs, `loads=<n>`, 21 by default), and the bundled
// app's (bench/app-startup.mjs, `loads=<n>`, `repeats=<n>`), in the same run.
await import("./startup.mjs");
await import("./app-startup.mjs");
