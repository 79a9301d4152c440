// The start-up part of `npm run bench`: each load in a fresh browser context (no HTTP cache, no
// compiled-code cache, empty localStorage), the package's entry as an app imports it against
// the plain-JS baseline, alternating; prints the median of each step and of the page's start-up
// (import + init() + first construct + login) and writes target/bench/startup.json.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import os from "node:os";

import { launch } from "../tests/e2e/browser.mjs";
import { median } from "./median.mjs";
import { compare, query, serve } from "./serve.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const LOADS = Number(process.argv.find((a) => a.startsWith("loads="))?.slice(6) ?? 21);
const server = await serve();
const base = `${server.origin}/bench/startup.html`;

const browser = await launch();
const STEPS = ["import", "init", "construct", "login", "recordJob", "jobs", "query"];
// "hints": the guard again, from a page that hints its files; "wasmHint": only its .wasm
// (bench/serve.mjs).
const IMPLS = ["guard", "hints", "wasmHint", ...(compare ? ["compare"] : []), "baseline"];
const PAGES = { hints: "startup-hints.html", wasmHint: "startup-wasm-hint.html" };
const samples = Object.fromEntries(IMPLS.map((impl) => [impl, []]));
for (let i = 0; i < LOADS; i++) {
  for (const impl of i % 2 ? IMPLS : [...IMPLS].reverse()) {
    const context = await browser.newContext();
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    // The page's own console message carries the figures; nothing is asked of the page while
    // it runs (bench/startup.js says why).
    const reported = new Promise((resolve) => {
      page.on("console", (m) => {
        if (m.type() === "warning" || m.type() === "error") errors.push(m.text());
        if (m.text().startsWith("startup ")) resolve(JSON.parse(m.text().slice("startup ".length)));
      });
      page.on("pageerror", () => resolve(null));
    });
    const url = `${PAGES[impl] ? base.replace("startup.html", PAGES[impl]) : base}?impl=${PAGES[impl] ? "guard" : impl}&${query}`;
    await page.goto(url, { waitUntil: "commit" });
    const result = await Promise.race([reported, new Promise((resolve) => setTimeout(resolve, 30_000, null))]);
    await context.close();
    if (!result || errors.length) throw new Error(`${impl} load ${i}: ${errors.join("; ") || "no result"}`);
    samples[impl].push(result.steps);
  }
}
const version = browser.version();
await browser.close();
server.close();

const startup = (s) => s.import + s.init + s.construct + s.login;
const rows = [
  ...STEPS.map((step) => [step, (s) => s[step]]),
  ["construct+login", (s) => s.construct + s.login],
  ["start-up", startup],
  ["navigation→login", (s) => s.navigation],
].map(
  ([name, of]) => {
    const g = median(samples.guard.map(of));
    const b = median(samples.baseline.map(of));
    const row = { step: name, guardMs: g, baselineMs: b, ratio: b > 0 ? g / b : null };
    row.hintsMs = median(samples.hints.map(of));
    row.wasmHintMs = median(samples.wasmHint.map(of));
    if (compare) row.compareMs = median(samples.compare.map(of));
    return row;
  },
);

const pad = (s, w) => String(s).padStart(w);
console.log(`\nstart-up, fresh browser context per load, medians of ${LOADS} loads each`);
const ratio = (a, b) => (b > 0 ? (a / b).toFixed(2) : "-");
console.log(
  `${"step".padEnd(18)} ${pad("guard ms", 10)} ${pad("baseline ms", 12)} ${pad("guard/baseline", 15)} ${pad("hinted ms", 10)} ${pad("hinted/baseline", 16)} ${pad(".wasm hint ms", 14)} ${pad("/baseline", 10)}${compare ? ` ${pad("compare ms", 11)} ${pad("compare/baseline", 17)}` : ""}`,
);
for (const r of rows) {
  console.log(
    `${r.step.padEnd(18)} ${pad(r.guardMs.toFixed(2), 10)} ${pad(r.baselineMs.toFixed(2), 12)} ${pad(ratio(r.guardMs, r.baselineMs), 15)} ${pad(r.hintsMs.toFixed(2), 10)} ${pad(ratio(r.hintsMs, r.baselineMs), 16)} ${pad(r.wasmHintMs.toFixed(2), 14)} ${pad(ratio(r.wasmHintMs, r.baselineMs), 10)}${compare ? ` ${pad(r.compareMs.toFixed(2), 11)} ${pad(ratio(r.compareMs, r.baselineMs), 17)}` : ""}`,
  );
}
const machine = `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`;
const results = { date: new Date().toISOString(), machine, browser: `Chromium ${version}`, compare, loads: LOADS, rows, samples };
await mkdir(join(ROOT, "target", "bench"), { recursive: true });
await writeFile(join(ROOT, "target", "bench", "startup.json"), JSON.stringify(results, null, 2));
console.log(`\n${results.date} · ${machine} · ${results.browser}`);
console.log("written: target/bench/startup.json");
