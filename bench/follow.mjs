// npm run bench:follow: what following Superset's event stream costs the server and what it gives
// the user, in headless Chromium against the reference server (www/server.mjs), in 1, 2 and 5
// tabs of one browser context. Two modes (`mode=`):
//
// mode=wait (the default; issue: "requests per minute with 20 charts waiting in 1, 2 and 5
// tabs, against each tab polling for itself"). A bare page of the server's origin per tab (no
// demo app, so nothing calls follow() but waitFor itself); each tab starts its share of 20
// chart queries (chart i goes to tab i % tabs, and runs first + i * step ms on the server, so
// they end one after another) and awaits each with:
// - `guard.waitFor(body)` (the 202 body as it came; the guard records it, and runs follow()
//   while anything waits: one poller for the browser, navigator.locks), or
// - the baseline: each tab polls for itself the way Superset's frontend does, in plain JS: one
//   loop per tab while it has waiters, the first poll 500 ms after the first waiter, the wait
//   doubling while an answer brings no change to the tab's own waiters, up to 30 s, back to
//   500 ms when one does; the same endpoint and cursor the guard uses. `quiet=guard` (the
//   default) doubles as the guard's cadence does (core/follow.rs `Cadence::quiet`: after a
//   change 500, then 500, 1000, 2000 … while quiet), so that the two differ only in who polls;
//   `quiet=eager` doubles from the first quiet answer (500, 1000, 2000 …).
// Counted at the server (a 'request' listener on the reference server, so what reaches it):
// the event-stream requests (GET /api/v1/async_event/, or /api/v1/task/status_changes and
// /api/v1/task/<uuid>/status, and /api/v1/task/<uuid> reading a failure back) from the first
// chart's POST to the last waiter settling, per minute of that span; then TAIL_MS more after
// it (a poller that goes on when nothing waits). Time to settle: when the last waiter settled
// (from the first POST), and each waiter's lag after its job's final status on the server
// (the task's changedOn, or the async event's id, both the server's ms clock).
// Contracts: `contracts=task,async_event` (default both). Writes target/bench/wait.json.
//
// mode=follow (what this bench measured before waitFor): the demo dashboard (www/app.js, which
// calls guard.follow()), async_event contract:
// - requests per minute to the event stream with 10 running jobs (and with none), counted per
//   tab by Playwright over WINDOW_S seconds after the jobs start, with the tabs electing one
//   poller (navigator.locks) and, for comparison, without navigator.locks (each tab polls for
//   itself, as Superset's own frontend does);
// - the delay from a job's final event on the server (its Redis-style id is the server's
//   millisecond clock) to each tab's guard.jobs() showing it, against the poll interval then
//   (the gap between the poll that brought it and the one before).
// Writes target/bench/follow.json.
//
// Arguments: mode=wait|follow, tabs=1,2,5; wait: contracts=task,async_event charts=20
// first=3000 step=750 (ms) quiet=guard|eager; follow: window=60 (s).
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";

import { start } from "../www/server.mjs";
import { launch } from "../tests/e2e/browser.mjs";
import { open, signIn, startJob } from "../tests/e2e/dashboard.mjs";

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split("=")));
const MODE = args.mode ?? "wait";
if (MODE !== "wait" && MODE !== "follow") throw new Error(`mode=wait or mode=follow, not ${MODE}`);
const WINDOW_S = Number(args.window ?? 60);
const TABS = (args.tabs ?? "1,2,5").split(",").map(Number);
const JOBS = 10;
const CONTRACTS = (args.contracts ?? "task,async_event").split(",");
const CHARTS = Number(args.charts ?? 20);
const FIRST_MS = Number(args.first ?? 3000);
const STEP_MS = Number(args.step ?? 750);
const QUIET = args.quiet ?? "guard";
if (QUIET !== "guard" && QUIET !== "eager") throw new Error(`quiet=guard or quiet=eager, not ${QUIET}`);
const TAIL_MS = 3000;

const browser = await launch();
const STREAM = "/api/v1/async_event/";
const machine = () => `${os.type()} ${os.release()} ${os.arch()}, ${os.cpus()[0]?.model ?? "cpu"} × ${os.cpus().length}`;


// ---------------------------------------------------------------------------------------------
// mode=wait

/** What kind of event-stream request a path is, or null for any other. */
function streamKind(method, pathname) {
  if (method !== "GET") return null;
  if (pathname === "/api/v1/async_event/") return "async_event";
  if (pathname === "/api/v1/task/status_changes") return "status_changes";
  if (/^\/api\/v1\/task\/[^/]+\/status$/.test(pathname)) return "status";
  if (/^\/api\/v1\/task\/[^/]+$/.test(pathname)) return "task";
  return null;
}

/** In the page: signs in (first tab), reads the CSRF token, makes and signs in the guard. */
async function setUp({ mode, contract, tabId, first }) {
  if (first) {
    await fetch("/login", { method: "POST", headers: { "content-type": "application/json" }, body: '{"user":"1"}' });
  }
  const csrf = (await (await fetch("/api/v1/security/csrf_token/")).json()).result;
  window.bench = { mode, contract, tabId, csrf };
  if (mode === "guard") {
    const { default: init, JobGuard } = await import("/js/index.js");
    await init();
    const guard = new JobGuard({ contract, tabId });
    guard.login({ userId: 1 });
    window.bench.guard = guard;
  }
}

/** In the page: starts the tab's charts, awaits each; resolves when every one has settled. */
async function runCharts({ charts, quiet }) {
  const { mode, contract, tabId, csrf, guard } = window.bench;
  const post = async ({ name, durationMs }) => {
    const response = await fetch("/api/v1/chart/data", {
      method: "POST",
      headers: { "content-type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ chart: name, durationMs, tab_id: tabId }),
    });
    if (response.status !== 202) throw new Error(`chart data: HTTP ${response.status}`);
    return response.json();
  };

  // The baseline: Superset's way, one loop per tab while it has waiters.
  const TERMINAL = new Set(["success", "failure", "aborted", "timed_out", "done", "error", "cancelled"]);
  const loop = { waiters: new Map(), delay: 500, running: false, cursor: null, lastId: null };
  async function poll() {
    let changes;
    if (contract === "task") {
      const r = await fetch(`/api/v1/task/status_changes?cursor=${encodeURIComponent(loop.cursor)}`);
      const body = await r.json();
      loop.cursor = body.cursor;
      changes = Object.entries(body.statuses).map(([id, s]) => [id, s.status]);
    } else {
      const r = await fetch(loop.lastId ? `/api/v1/async_event/?last_id=${loop.lastId}` : "/api/v1/async_event/");
      const events = (await r.json()).result;
      if (events.length) loop.lastId = events[events.length - 1].id;
      changes = events.map((e) => [e.job_id, e.status]);
    }
    let progress = false;
    for (const [id, status] of changes) {
      const waiter = loop.waiters.get(id);
      if (!waiter || waiter.status === status) continue;
      progress = true;
      waiter.status = status;
      if (TERMINAL.has(status)) {
        loop.waiters.delete(id);
        waiter.resolve({ outcome: ["success", "done"].includes(status) ? "done" : "failed", jobIds: [id] });
      }
    }
    // quiet=guard: the wait after a quiet answer is the current one and the next is twice it
    // (the guard's cadence: after a change 500, 500, 1000, 2000 …); quiet=eager: twice it at once
    // (500, 1000, 2000 …).
    let wait;
    if (progress) wait = loop.delay = 500;
    else if (quiet === "eager") wait = loop.delay = Math.min(loop.delay * 2, 30_000);
    else [wait, loop.delay] = [loop.delay, Math.min(loop.delay * 2, 30_000)];
    if (loop.waiters.size) setTimeout(poll, wait);
    else loop.running = false;
  }
  const baselineWait = (body) =>
    new Promise((resolve) => {
      const id = contract === "task" ? body.task_ids[0] : body.job_id;
      if (contract === "task" && loop.cursor === null) loop.cursor = body.cursor;
      loop.waiters.set(id, { status: contract === "task" ? "pending" : body.status, resolve });
      if (!loop.running) {
        loop.running = true;
        loop.delay = 500;
        setTimeout(poll, loop.delay);
      }
    });

  return Promise.all(
    charts.map(async (chart) => {
      const body = await post(chart);
      const outcome = mode === "guard" ? await guard.waitFor(body) : await baselineWait(body);
      return { chart: chart.name, jobId: outcome.jobIds?.[0] ?? null, outcome: outcome.outcome, message: outcome.message, settledAt: Date.now() };
    }),
  );
}

/** One run: `n` tabs, `mode` "guard" or "baseline", on `contract`. */
async function waitRun(n, mode, contract) {
  const { server, url, app } = await start({ port: 0, contract });
  const seen = []; // [ms, kind]
  server.prependListener("request", (req) => {
    const kind = streamKind(req.method, new URL(req.url, "http://x").pathname);
    if (kind) seen.push([Date.now(), kind]);
  });
  const context = await browser.newContext();
  try {
    const pages = [];
    for (let i = 0; i < n; i++) {
      const page = await context.newPage();
      page.errors = [];
      page.on("pageerror", (e) => page.errors.push(String(e)));
      page.polls = [];
      page.on("request", (r) => {
        if (streamKind(r.method(), new URL(r.url()).pathname)) page.polls.push(Date.now());
      });
      // A blank document of the server's origin (its 404 page): nothing on it follows.
      await page.goto(`${url}bench-blank`);
      await page.evaluate(setUp, { mode, contract, tabId: `bench-tab-${i}`, first: i === 0 });
      pages.push(page);
    }
    const charts = Array.from({ length: CHARTS }, (_, i) => ({ name: `bench-${i}`, durationMs: FIRST_MS + i * STEP_MS }));
    seen.length = 0;
    const t0 = Date.now();
    const results = (
      await Promise.all(pages.map((p, k) => p.evaluate(runCharts, { charts: charts.filter((_, i) => i % n === k), quiet: QUIET })))
    ).flat();
    const tEnd = Math.max(...results.map((r) => r.settledAt));
    await new Promise((r) => setTimeout(r, Math.max(0, tEnd + TAIL_MS - Date.now())));

    // When each job ended on the server.
    const endedAt = new Map();
    if (contract === "task") for (const t of app.state.tasks.values()) endedAt.set(t.uuid, t.changedOn);
    else for (const e of app.state.events) if (e.status === "done" || e.status === "error") endedAt.set(e.job_id, Number(e.id.split("-")[0]));
    const lags = results.map((r) => r.settledAt - endedAt.get(r.jobId)).sort((a, b) => a - b);
    const during = seen.filter(([t]) => t >= t0 && t <= tEnd);
    const byKind = {};
    for (const [, kind] of during) byKind[kind] = (byKind[kind] ?? 0) + 1;
    const spanMs = tEnd - t0;
    return {
      tabs: n,
      mode,
      contract,
      requests: during.length,
      byKind,
      perMinute: (during.length * 60_000) / spanMs,
      after: seen.filter(([t]) => t > tEnd).length,
      pollingTabs: pages.filter((p) => p.polls.some((t) => t >= t0)).length,
      settleAllMs: spanMs,
      lastJobEndMs: Math.max(...endedAt.values()) - t0,
      lagMedianMs: lags[Math.floor(lags.length / 2)],
      lagMaxMs: lags[lags.length - 1],
      outcomes: results.reduce((o, r) => ({ ...o, [r.outcome]: (o[r.outcome] ?? 0) + 1 }), {}),
      pageErrors: pages.flatMap((p) => p.errors),
      // ms from the first POST: each stream request [at, kind], each job's end, each settle.
      timeline: {
        requests: seen.map(([t, kind]) => [t - t0, kind]),
        jobEnds: [...endedAt.values()].map((t) => t - t0).sort((a, b) => a - b),
        settled: results.map((r) => r.settledAt - t0).sort((a, b) => a - b),
      },
    };
  } finally {
    await context.close();
    server.close();
  }
}

async function waitMode() {
  const started = Date.now();
  const runs = [];
  for (const contract of CONTRACTS) {
    for (const n of TABS) {
      for (const mode of ["guard", "baseline"]) {
        const r = await waitRun(n, mode, contract);
        runs.push(r);
        const odd = [];
        if (r.outcomes.done !== CHARTS) odd.push(`outcomes ${JSON.stringify(r.outcomes)}`);
        if (r.after) odd.push(`${r.after} request(s) after the last waiter settled`);
        if (r.pageErrors.length) odd.push(`page errors: ${r.pageErrors.join("; ")}`);
        console.log(
          `${contract}, ${n} tab(s), ${mode}: ${r.requests} requests in ${(r.settleAllMs / 1000).toFixed(1)} s = ` +
            `${r.perMinute.toFixed(1)}/min ${JSON.stringify(r.byKind)} from ${r.pollingTabs} tab(s); last job ended at ` +
            `${(r.lastJobEndMs / 1000).toFixed(1)} s; lag median ${r.lagMedianMs} ms, max ${r.lagMaxMs} ms` +
            (odd.length ? ` !! ${odd.join(", ")}` : ""),
        );
      }
    }
  }
  const when = new Date().toISOString();
  const s = (ms) => (ms / 1000).toFixed(1);
  const lines = [
    "",
    `${CHARTS} charts (chart i runs ${FIRST_MS} + i × ${STEP_MS} ms: the last ends at ${s(FIRST_MS + (CHARTS - 1) * STEP_MS)} s), awaited in every tab until all settle; per-tab loops: quiet=${QUIET}.`,
    "requests: event-stream requests reaching the server from the first POST to the last waiter settling (per minute of that span); tabs: tabs that polled; settled: the last waiter, from the first POST; lag: a waiter after its job's final status on the server, median / max.",
    "",
    "| contract | tabs | waitFor: requests (per min) | tabs | settled | lag | per-tab loops: requests (per min) | tabs | settled | lag |",
    "|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const contract of CONTRACTS) {
    for (const n of TABS) {
      const g = runs.find((r) => r.contract === contract && r.tabs === n && r.mode === "guard");
      const b = runs.find((r) => r.contract === contract && r.tabs === n && r.mode === "baseline");
      const cell = (r) =>
        `${r.requests} (${r.perMinute.toFixed(1)}) | ${r.pollingTabs} | ${s(r.settleAllMs)} s | ${r.lagMedianMs} / ${r.lagMaxMs} ms`;
      lines.push(`| ${contract} | ${n} | ${cell(g)} | ${cell(b)} |`);
    }
  }
  lines.push("", `${when} · ${machine()} · Chromium ${browser.version()} · bench ${s(Date.now() - started)} s`);
  console.log(lines.join("\n"));
  await mkdir("target/bench", { recursive: true });
  const settings = { charts: CHARTS, firstMs: FIRST_MS, stepMs: STEP_MS, tailMs: TAIL_MS, quiet: QUIET };
  await writeFile("target/bench/wait.json", JSON.stringify({ when, machine: machine(), chromium: browser.version(), settings, runs }, null, 2));
  console.log("written: target/bench/wait.json");
}

// ---------------------------------------------------------------------------------------------
// mode=follow

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

async function followMode() {
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
  const when = new Date().toISOString();
  console.log(`\n${when} · ${machine()} · Chromium ${browser.version()} · window ${WINDOW_S} s`);
  await mkdir("target/bench", { recursive: true });
  await writeFile("target/bench/follow.json", JSON.stringify({ when, windowSeconds: WINDOW_S, rates: rows, delays: delayRows }, null, 2));
  console.log("written: target/bench/follow.json");
}

try {
  if (MODE === "wait") await waitMode();
  else await followMode();
} finally {
  await browser.close();
}
