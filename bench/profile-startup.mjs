// Where a fresh page's first steps go: loads bench/startup.html (as `node bench/startup.mjs`
// does) under Chromium's tracing and sums the trace events of the page's main thread within
// each step (import, init, construct, login, recordJob, jobs), by name, over N loads.
// `node bench/profile-startup.mjs [guard|baseline] [loads] [--js-flags=...]`
import { chromium } from "playwright-core";

import { CHROMIUM } from "../tests/e2e/browser.mjs";
import { query, serve } from "./serve.mjs";

const [impl = "guard", loads = "5"] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const flags = process.argv.slice(2).filter((a) => a.startsWith("--"));

const server = await serve();
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", ...flags],
});
const CATEGORIES = ["v8", "v8.wasm", "devtools.timeline", "blink", "loading", "disabled-by-default-v8.compile"];
const STEPS = ["import", "init", "construct", "login", "recordJob", "jobs", "query"];
const sums = Object.fromEntries(STEPS.map((s) => [s, {}]));
const wall = Object.fromEntries(STEPS.map((s) => [s, 0]));
for (let i = 0; i < Number(loads); i++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await browser.startTracing(page, { categories: CATEGORIES });
  const reported = new Promise((resolve) => {
    page.on("console", (m) => m.text().startsWith("startup ") && resolve(JSON.parse(m.text().slice(8))));
  });
  await page.goto(`${server.origin}/bench/startup.html?impl=${impl}&${query}`, { waitUntil: "commit" });
  const { steps } = await reported; // (bench/startup.js says why the page is not asked)
  const events = JSON.parse((await browser.stopTracing()).toString()).traceEvents;
  await context.close();
  for (const s of STEPS) wall[s] += steps[s] / Number(loads);
  const stamps = events.filter((e) => e.name === "TimeStamp" && e.args?.data?.message);
  const at = Object.fromEntries(stamps.map((e) => [e.args.data.message, e]));
  const { pid, tid } = at.start;
  for (let k = 0; k < STEPS.length; k++) {
    const from = (at[k ? STEPS[k - 1] : "start"] ?? at.start).ts;
    const to = at[STEPS[k]].ts;
    // Events of the page's main thread plus V8's background compile threads of the same
    // process, which overlap the main thread's waits.
    for (const e of events) {
      if (e.ph !== "X" || e.pid !== pid || e.ts < from || e.ts >= to) continue;
      const name = e.tid === tid ? e.name : `(other thread) ${e.name}`;
      const sum = (sums[STEPS[k]][name] ??= { count: 0, ms: 0 });
      sum.count += 1 / Number(loads);
      sum.ms += e.dur / 1000 / Number(loads);
    }
  }
}
await browser.close();
server.close();
console.log(`${impl}, ${loads} fresh loads${flags.length ? `, ${flags.join(" ")}` : ""}: per step, mean wall time and the trace events in it (ms, count per load; nested events are counted in their parents too)`);
for (const s of STEPS) {
  console.log(`\n${s}: ${wall[s].toFixed(2)} ms`);
  const top = Object.entries(sums[s]).sort((a, b) => b[1].ms - a[1].ms).slice(0, 12);
  for (const [name, { count, ms }] of top) console.log(`  ${ms.toFixed(2).padStart(7)} ${count.toFixed(0).padStart(5)}  ${name}`);
}
