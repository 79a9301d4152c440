// npm run bench:follow: what follow() costs the server and what it gives the user, in headless
// Chromium against the reference server (www/server.mjs, async_event contract), the demo
// dashboard (www/app.js, which calls guard.follow()) open in 1, 2 and 5 tabs of one browser:
// - requests per minute to the event stream with 10 running jobs (and with none), counted per
//   tab by Playwright over WINDOW_S seconds after the jobs start, with the tabs electing one
//   poller (navigator.locks) and, for comparison, without navigator.locks (each tab polls for
//   itself, as Superset's own frontend does);
// - the delay from a job's final event on the server (its Redis-style id is the server's
//   millisecond clock) to each tab's guard.jobs() showing it, against the poll interval then
//   (the gap between the poll that brought it and the one before).
// Prints a table; writes target/bench/follow.json.
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";

import { start } from "../www/server.mjs";
import { launch } from "../tests/e2e/browser.mjs";
import { open, signIn, startJob } from "../tests/e2e/dashboard.mjs";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split("=")));
const WINDOW_S = Number(args.window ?? 60);
const TABS = (args.tabs ?? "1,2,5").split(",").map(Number);
const JOBS = 10;

const browser = await launch();
const STREAM = "/api/v1/async_event/";

async function tabs(url, n, { locks }) {
  const context = await browser.newContext();
  if (!locks) await context.addInitScript(() => delete Navigator.prototype.locks);
  const pages = [];
  for (let i = 0; i < n; i++) {
    const page = await open(browser, url, context);
    if (i === 0) await signIn(page, "1");
    page.polls = [];
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === STREAM) page.polls.push(Date.now());
    });
    pages.push(page);
  }
  return { context, pages };
}

/** Requests per minute to the event stream from `n` tabs with `jobs` running jobs. */
async function rate(n, jobs, locks) {
  const { server, url } = await start({ port: 0, jobDurationMs: (WINDOW_S + 30) * 1000, contract: "async_event" });
  try {
    const { context, pages } = await tabs(url, n, { locks });
    for (let i = 0; i < jobs; i++) await startJob(pages[0]);
    const from = Date.now();
    for (const p of pages) p.polls = p.polls.filter((t) => t >= from);
    await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
    const count = pages.reduce((sum, p) => sum + p.polls.filter((t) => t < from + WINDOW_S * 1000).length, 0);
    const polling = pages.filter((p) => p.polls.length > 0).length;
    await context.close();
    return { perMinute: (count * 60) / WINDOW_S, polling };
  } finally {
    server.close();
  }
}

/** Delays from jobs' final events to every tab's jobs() showing them. */
async function delays(n, durations) {
  const { server, url } = await start({ port: 0, jobDurationMs: 120_000, contract: "async_event" });
  try {
    const { context, pages } = await tabs(url, n, { locks: true });
    const out = [];
    for (const durationMs of durations) {
      const body = await pages[0].evaluate(async (durationMs) => {
        const csrf = (await (await fetch("/api/v1/security/csrf_token/")).json()).result;
        const response = await fetch("/api/v1/chart/data", {
          method: "POST",
          headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
          body: JSON.stringify({ chart: "bench", durationMs }),
        });
        const body = await response.json();
        window.dashboard.guard.recordJob(body);
        return body;
      }, durationMs);
      const seen = await Promise.all(
        pages.map((p) =>
          p.evaluate(async (id) => {
            for (;;) {
              const job = window.dashboard.guard.job(id);
              if (job?.status === "done") return Date.now();
              await new Promise((r) => setTimeout(r, 5));
            }
          }, body.job_id),
        ),
      );
      // The final event's id: "<server ms>-<seq>".
      const events = await pages[0].evaluate(async () => (await (await fetch("/api/v1/async_event/")).json()).result);
      const final = events.find((e) => e.job_id === body.job_id && e.status === "done");
      const at = Number(final.id.split("-")[0]);
      // Every tab's polls (one tab polls): the first at or after the event brought it.
      const polls = pages.flatMap((p) => p.polls).sort((a, b) => a - b);
      const bringing = polls.findIndex((t) => t >= at);
      const interval = bringing > 0 ? polls[bringing] - polls[bringing - 1] : null;
      out.push({ durationMs, delayMs: Math.max(...seen) - at, intervalMs: interval });
    }
    await context.close();
    return out;
  } finally {
    server.close();
  }
}

const rows = [];
for (const n of TABS) {
  const elected = await rate(n, JOBS, true);
  const perTab = await rate(n, JOBS, false);
  const idle = await rate(n, 0, true);
  rows.push({ tabs: n, elected, perTab, idle });
  console.log(
    `${n} tab(s), ${JOBS} running jobs: ${elected.perMinute.toFixed(1)} requests/min from ${elected.polling} polling tab(s); ` +
      `without navigator.locks ${perTab.perMinute.toFixed(1)}/min from ${perTab.polling}; no running job: ${idle.perMinute.toFixed(1)}/min`,
  );
}
const delayRows = [];
for (const n of TABS) {
  const d = await delays(n, [1700, 3300, 6100]);
  delayRows.push({ tabs: n, delays: d });
  for (const { durationMs, delayMs, intervalMs } of d) {
    console.log(
      `${n} tab(s): a job of ${durationMs} ms: seen by every tab ${delayMs} ms after its final event; the poll interval then ${intervalMs} ms (bound: interval + 100 ms: ${delayMs <= intervalMs + 100 ? "within" : "OVER"})`,
    );
  }
}
const version = browser.version();
await browser.close();
const when = new Date().toISOString();
console.log(`\n${when} · ${os.cpus()[0]?.model ?? "cpu"}, ${os.cpus().length} cores · Chromium ${version} · window ${WINDOW_S} s`);
await mkdir("target/bench", { recursive: true });
await writeFile("target/bench/follow.json", JSON.stringify({ when, windowSeconds: WINDOW_S, rates: rows, delays: delayRows }, null, 2));
console.log("written: target/bench/follow.json");
